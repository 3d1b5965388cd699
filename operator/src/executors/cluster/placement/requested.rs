//! What other pods already request on each node, for cutting a parallel run's node sets
//! ([`super::slots`]). Pure.
//!
//! A node set is only a slot if a measurement fits into what the scheduler will give it: the
//! node's allocatable less the requests of the pods already bound there. Counting allocatable
//! alone made a node that also runs the operator (or DNS, or anyone's pods) a slot that could
//! not hold the load generator: its pod stayed Pending and the measurement failed. Pods of
//! benchmark runs are not counted: they come and go with measurements, and the queue keeps runs
//! that could share a node apart.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};

use super::fit::PodRequest;
use crate::resource::labels::RUN_LABEL;
use crate::resource::quantity::parse_quantity;

/// Per node name, the CPU and memory requested by the pods bound to it that still hold their
/// requests (not Succeeded or Failed) and are not a benchmark run's.
pub fn requested_by_others(pods: &[Pod]) -> BTreeMap<String, PodRequest> {
    let mut by_node: BTreeMap<String, PodRequest> = BTreeMap::new();
    for pod in pods {
        let finished = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|p| p == "Succeeded" || p == "Failed");
        let ours = pod
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(RUN_LABEL));
        let Some(spec) = &pod.spec else { continue };
        let Some(node) = &spec.node_name else {
            continue;
        };
        if finished || ours {
            continue;
        }
        let request = pod_request(&spec.containers, spec.init_containers.as_deref());
        let sum = by_node.entry(node.clone()).or_insert(PodRequest {
            cpu_millis: 0,
            memory_bytes: 0,
        });
        sum.cpu_millis += request.cpu_millis;
        sum.memory_bytes += request.memory_bytes;
    }
    by_node
}

/// A pod's effective request as the scheduler counts it: the sum over its containers, or the
/// largest init container's when that is more (init containers run one at a time, first).
fn pod_request(containers: &[Container], init: Option<&[Container]>) -> PodRequest {
    let of = |c: &Container, key: &str| -> f64 {
        c.resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get(key))
            .and_then(|q| parse_quantity(&q.0).ok())
            .unwrap_or(0.0)
    };
    let sum = |key: &str| containers.iter().map(|c| of(c, key)).sum::<f64>();
    let init_max = |key: &str| {
        init.unwrap_or_default()
            .iter()
            .map(|c| of(c, key))
            .fold(0.0, f64::max)
    };
    PodRequest {
        cpu_millis: (sum("cpu").max(init_max("cpu")) * 1000.0).round() as u64,
        memory_bytes: sum("memory").max(init_max("memory")).round() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(node: Option<&str>, phase: &str, labels: serde_json::Value, cpu: &[&str]) -> Pod {
        with_init(node, phase, labels, cpu, "0")
    }

    fn with_init(
        node: Option<&str>,
        phase: &str,
        labels: serde_json::Value,
        cpu: &[&str],
        init_cpu: &str,
    ) -> Pod {
        let containers: Vec<_> = cpu
            .iter()
            .map(|c| json!({"name": "c", "resources": {"requests": {"cpu": c, "memory": "64Mi"}}}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "p", "labels": labels},
            "spec": {"nodeName": node, "containers": containers,
                "initContainers": [{"name": "init", "resources": {"requests": {"cpu": init_cpu}}}]},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    #[test]
    fn counts_running_and_pending_pods_on_their_nodes_but_not_benchmarks_or_finished_ones() {
        let pods = [
            // The operator itself: two containers, 50m + 100m.
            pod(
                Some("n1"),
                "Running",
                json!({"app": "op"}),
                &["50m", "100m"],
            ),
            // An init container asking more than the containers: it counts.
            with_init(Some("n1"), "Pending", json!({}), &["100m"], "300m"),
            // A finished Job's pod holds nothing.
            pod(Some("n1"), "Succeeded", json!({}), &["2"]),
            // A benchmark's own pod is not a neighbour's request.
            pod(Some("n2"), "Running", json!({RUN_LABEL: "r"}), &["500m"]),
            // Not bound to a node yet.
            pod(None, "Pending", json!({}), &["1"]),
            pod(Some("n2"), "Running", json!({}), &["1.5"]),
        ];
        let by_node = requested_by_others(&pods);
        assert_eq!(by_node["n1"].cpu_millis, 150 + 300);
        assert_eq!(by_node["n1"].memory_bytes, 3 * (64 << 20));
        assert_eq!(by_node["n2"].cpu_millis, 1500);
        assert_eq!(by_node.len(), 2);
    }
}
