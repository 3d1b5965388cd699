//! Parallel measurement on a simulated cluster of six nodes over a simulated clock (the
//! operator's own adapter, fed the objects a cluster would show each second:
//! `benchmatrix::fixtures::sim_cluster`). The figures are simulated seconds, so they are the
//! same on every machine; `cargo test -p benchmatrix --test parallel_sim -- --nocapture`
//! prints them (BENCHMARKS.md quotes them).
//!
//! A measurement takes one round: 5 s until its target is ready, 40 s of load.

use std::collections::BTreeSet;

use benchmatrix::fixtures::sim_cluster::{Interval, SimCluster, nodes};
use benchmatrix::fixtures::{connections, endpoint, phase};
use benchmatrix::resource::parallelism::Parallelism;
use benchmatrix::resource::spec::Variant;
use benchmatrix::resource::{BenchmarkRun, CellPhase, Configuration, Repeat, RunPhase};

const READY: i64 = 5;
const LOAD: i64 = 40;
const ROUND: f64 = (READY + LOAD) as f64;

/// `cells` one-replica 500m cells with a 500m load generator each: 1 CPU a measurement, so
/// each 2-CPU node is a slot of its own.
fn matrix(cells: usize, parallelism: Parallelism, repeat: u32) -> BenchmarkRun {
    let mut run = BenchmarkRun::sample()
        .named("sim")
        .in_namespace("ns")
        .with_uid("u1")
        .with_generation(1)
        .with_endpoints([endpoint("fast", "/fast")])
        .with_warmup("0s")
        .with_phases([phase("p", "40s", [connections("fast", 1)])])
        .in_parallel(parallelism)
        .repeated(Repeat::Times(repeat));
    for i in 1..=cells {
        run = run.with_cell(Configuration::named(&format!("c{i:02}")).cpu("500m"));
    }
    run.spec.loadgen.cpu = "500m".into();
    run
}

/// Runs `run` on six simulated nodes; the finished run, the intervals and the time it took.
fn simulate(run: BenchmarkRun) -> (BenchmarkRun, Vec<Interval>, i64) {
    let (done, cluster) = simulate_on(SimCluster::new(nodes(6, "2"), READY, LOAD), run);
    (done, cluster.intervals, cluster.now)
}

/// Runs `run` on `cluster`; the finished run and the cluster as it ended.
fn simulate_on(mut cluster: SimCluster, run: BenchmarkRun) -> (BenchmarkRun, SimCluster) {
    let done = cluster.run_to_end(run, 100_000).expect("the run ends");
    let status = done.status.as_ref().unwrap();
    assert_eq!(status.phase, RunPhase::Succeeded, "{:?}", status.message);
    assert!(
        status.cells.iter().all(|c| c.phase == CellPhase::Succeeded),
        "{:#?}",
        status.cells
    );
    (done, cluster)
}

/// No two measurements whose objects existed at the same time shared a node (targets and load
/// generators alike): checked over every pair of recorded intervals.
fn assert_no_shared_node(intervals: &[Interval], end: i64) {
    for (i, a) in intervals.iter().enumerate() {
        for b in &intervals[i + 1..] {
            let (a_to, b_to) = (a.to.unwrap_or(end), b.to.unwrap_or(end));
            let overlap = a.from < b_to && b.from < a_to;
            let shared: Vec<&String> = a.nodes.iter().filter(|n| b.nodes.contains(n)).collect();
            assert!(
                !overlap || shared.is_empty(),
                "{} [{}, {a_to}) and {} [{}, {b_to}) both ran on {shared:?}",
                a.name,
                a.from,
                b.name,
                b.from
            );
        }
    }
}

#[test]
fn twenty_four_cells_on_six_nodes_take_four_rounds_not_twenty_four() {
    let (one, _, serial) = simulate(matrix(24, Parallelism::Count(1), 1));
    let (auto, intervals, parallel) = simulate(matrix(24, Parallelism::Auto, 1));
    let p = auto.status.as_ref().unwrap().parallelism.as_ref().unwrap();
    println!(
        "24 cells, 6 nodes: parallelism 1 took {serial} s ({:.2} rounds), auto {parallel} s \
         ({:.2} rounds) in {} slots ({})",
        serial as f64 / ROUND,
        parallel as f64 / ROUND,
        p.slots,
        p.message
    );
    assert!(one.status.as_ref().unwrap().parallelism.is_none());
    assert_eq!(p.slots, 6);
    assert!(serial as f64 / ROUND >= 24.0);
    assert!(parallel as f64 / ROUND <= 4.5, "{parallel} s");
    assert_eq!(intervals.len(), 24);
    assert_no_shared_node(&intervals, parallel);
    // Every measurement was pinned to one node of its own.
    assert!(
        intervals.iter().all(|i| i.nodes.len() == 1),
        "{intervals:?}"
    );
}

#[test]
fn repeated_three_times_every_cell_is_measured_on_at_least_two_nodes() {
    let (run, intervals, took) = simulate(matrix(24, Parallelism::Auto, 3));
    assert_no_shared_node(&intervals, took);
    let status = run.status.unwrap();
    let mut fewest = usize::MAX;
    for c in &status.cells {
        let nodes: BTreeSet<&String> = c.repetitions.iter().flat_map(|r| &r.nodes).collect();
        assert_eq!(c.repetitions.len(), 3, "{}", c.name);
        assert!(
            c.repetitions.iter().all(|r| r.nodes.len() == 1),
            "{}: a node per repetition",
            c.name
        );
        assert!(nodes.len() >= 2, "{} measured only on {nodes:?}", c.name);
        fewest = fewest.min(nodes.len());
    }
    println!(
        "24 cells x repeat 3, auto on 6 nodes: {took} s ({:.2} rounds of 72 measurements); \
         every cell on at least {fewest} nodes",
        took as f64 / ROUND
    );
    assert!(took as f64 / ROUND <= 12.5, "{took} s");
}

#[test]
fn a_configurations_variants_share_their_rounds_nodes_in_a_parallel_run() {
    let mut run = matrix(4, Parallelism::Auto, 2);
    run = run
        .with_variant(Variant::named("base").image("img:a"))
        .with_variant(Variant::named("next").image("img:b"));
    let (done, intervals, took) = simulate(run);
    assert_no_shared_node(&intervals, took);
    let status = done.status.unwrap();
    for configuration in ["c01", "c02", "c03", "c04"] {
        let variants: Vec<_> = status
            .cells
            .iter()
            .filter(|c| c.configuration.as_deref() == Some(configuration))
            .collect();
        assert_eq!(variants.len(), 2);
        for round in 1..=2u32 {
            let on: Vec<&Vec<String>> = variants
                .iter()
                .map(|c| &c.repetitions[round as usize - 1].nodes)
                .collect();
            assert_eq!(on[0], on[1], "{configuration} round {round}");
        }
    }
    // 4 configurations x 2 variants x 2 rounds, 4 at once: 4 rounds of time, not 16.
    println!("4 configurations x 2 variants x repeat 2, auto on 6 nodes: {took} s");
    assert!(took as f64 / ROUND <= 4.5, "{took} s");
}

/// With several measurements in flight the run's message names every one of them, not only
/// the cell deployed last.
#[test]
fn the_runs_message_names_every_cell_in_flight() {
    let cluster = SimCluster::new(nodes(2, "2"), READY, LOAD);
    let (_, cluster) = simulate_on(cluster, matrix(4, Parallelism::Count(2), 1));
    assert!(
        cluster
            .messages
            .iter()
            .any(|m| m == "running cell c02 (2/4) (and cell c01 (1/4))"),
        "{:#?}",
        cluster.messages
    );
    assert!(
        !cluster.messages.iter().any(|m| m.contains("and cells")),
        "never more than two in flight at parallelism 2: {:#?}",
        cluster.messages
    );
}
