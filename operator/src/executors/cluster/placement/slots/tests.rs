use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::node_sets;
use crate::executors::cluster::placement::fit::PodRequest;
use crate::resource::BenchmarkRun;
use crate::resource::ValidatedRun;
use crate::resource::parallelism::Parallelism;
use crate::resource::spec::Configuration;

/// A node of `cpu` CPUs and 8 GiB, Ready or not.
pub fn node(name: &str, cpu: &str, ready: bool) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(BTreeMap::from([
                ("cpu".to_owned(), K8sQuantity(cpu.into())),
                ("memory".to_owned(), K8sQuantity("8Gi".into())),
            ])),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..NodeCondition::default()
            }]),
            ..NodeStatus::default()
        }),
    }
}

fn run(parallelism: Parallelism, replicas: u32, cpu: &str) -> BenchmarkRun {
    let mut run = BenchmarkRun::sample()
        .with_cell(Configuration::named("a").replicas(replicas).cpu(cpu))
        .with_cell(Configuration::named("b").replicas(1).cpu("250m"))
        .in_parallel(parallelism);
    run.spec.loadgen.cpu = "500m".into();
    run
}

/// `run` validated as the operator validates it.
fn validated(run: &BenchmarkRun) -> ValidatedRun {
    ValidatedRun::for_cluster(run.clone()).unwrap()
}

fn sets(run: &BenchmarkRun, nodes: &[Node]) -> Vec<Vec<String>> {
    node_sets(&validated(run), Some(nodes), None).node_sets
}

#[test]
fn auto_takes_a_set_per_node_that_holds_a_measurement_and_a_count_at_most_that_many() {
    let six: Vec<Node> = (1..=6).map(|i| node(&format!("n{i}"), "2", true)).collect();
    let auto = run(Parallelism::Auto, 1, "1");
    assert_eq!(
        sets(&auto, &six),
        (1..=6).map(|i| vec![format!("n{i}")]).collect::<Vec<_>>()
    );
    let seen = node_sets(&validated(&auto), Some(&six), None);
    assert!(
        seen.message.contains("needs up to 1.5 CPU") && seen.message.contains("1 node(s)"),
        "{}",
        seen.message
    );
    assert_eq!(sets(&run(Parallelism::Count(4), 1, "1"), &six).len(), 4);
}

#[test]
fn a_measurement_larger_than_a_node_gets_as_many_nodes_as_it_needs() {
    // 2 x 1 CPU + 500m of load generator: 2.5 CPU, two nodes of 2 CPUs a set.
    let six: Vec<Node> = (1..=6).map(|i| node(&format!("n{i}"), "2", true)).collect();
    assert_eq!(
        sets(&run(Parallelism::Auto, 2, "1"), &six),
        vec![
            vec!["n1".to_owned(), "n2".into()],
            vec!["n3".into(), "n4".into()],
            vec!["n5".into(), "n6".into()],
        ]
    );
}

#[test]
fn nodes_not_ready_or_refused_by_placement_are_not_used_and_unlisted_nodes_mean_one_at_a_time() {
    let mut nodes = vec![
        node("a", "2", true),
        node("b", "2", false),
        node("c", "2", true),
    ];
    nodes[2].spec.as_mut().unwrap().unschedulable = Some(true);
    let r = run(Parallelism::Auto, 1, "1");
    assert_eq!(sets(&r, &nodes), vec![vec!["a".to_owned()]]);
    let none = node_sets(&validated(&r), None, None);
    assert!(none.node_sets.is_empty());
    assert!(none.message.contains("one at a time"), "{}", none.message);
    // A cell that fits no node leaves the others their sets; it fails on its own (fit).
    let huge = run(Parallelism::Auto, 1, "64");
    assert_eq!(sets(&huge, &nodes), vec![vec!["a".to_owned()]]);
}

/// Seen on a real cluster of two 1-CPU nodes: the operator's own pod (50m) on one of them left
/// 950m, too little for a 500m target beside a 500m load generator. That node alone is no slot;
/// with it and the other node together, one is.
#[test]
fn what_other_pods_request_is_taken_off_before_the_sets_are_cut() {
    let two = [node("n1", "1", true), node("n2", "1", true)];
    let mut r = BenchmarkRun::sample()
        .with_cell(Configuration::named("a").replicas(1).cpu("500m"))
        .in_parallel(Parallelism::Count(2));
    r.spec.loadgen.cpu = "500m".into();
    let operator = BTreeMap::from([(
        "n1".to_owned(),
        PodRequest {
            cpu_millis: 50,
            memory_bytes: 64 << 20,
        },
    )]);
    let unknown = node_sets(&validated(&r), Some(&two), None);
    assert_eq!(unknown.node_sets, [["n1"], ["n2"]]);
    assert!(
        unknown.message.contains("other pods' requests unknown"),
        "{}",
        unknown.message
    );
    let seen = node_sets(&validated(&r), Some(&two), Some(&operator));
    assert_eq!(seen.node_sets, [["n1", "n2"]]);
    assert!(
        seen.message.contains("what other pods leave free"),
        "{}",
        seen.message
    );
    // A 400m load generator fits beside the operator: two slots again.
    r.spec.loadgen.cpu = "400m".into();
    let smaller = node_sets(&validated(&r), Some(&two), Some(&operator));
    assert_eq!(smaller.node_sets, [["n1"], ["n2"]]);
}
