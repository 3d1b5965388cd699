//! The node sets of a parallel run (`spec.parallelism`): which nodes each slot's measurements
//! are pinned to, so that no two measurements share a node. Pure.
//!
//! The usable nodes are the Ready ones that `spec.placement` lets the run's pods use (its node
//! selector and tolerations; a cordoned node is not), in name order. A measurement needs room
//! for every pod it makes at once: its replicas x cpu (and memory) plus its load generators.
//! The sets are cut from the usable nodes in order, each as small as holds the most demanding
//! cell that fits the usable nodes at all (the packing of `fit::can_pack`), so every cell fits
//! every set; a cell that fits no set fits no nodes, and `fit::fits` fails it `Unschedulable`
//! with the arithmetic before any pod is made. `auto` takes every set; a number at most that
//! many; nodes left over after the last set are not used.
//!
//! Allocatable is each node's allocatable less what pods other than benchmark runs' already
//! request there ([`super::requested`]): a node that also runs the operator, DNS or anyone's
//! pods holds less than its allocatable, and a slot cut from allocatable alone could not hold
//! its measurement (its load generator stayed Pending). Whether a cell can *ever* fit stays the
//! fit check's question, against allocatable (`fit::fits`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;

use super::fit::{self, Allocatable, CellRequests, PodRequest};
use crate::engine::machine::SlotsSeen;
use crate::resource::ValidatedRun;

/// The node sets of `run`, from `nodes` (`None`: the operator may not list them) and what
/// other pods request on them (`None`: not known).
pub fn node_sets(
    v: &ValidatedRun,
    nodes: Option<&[Node]>,
    requested: Option<&BTreeMap<String, PodRequest>>,
) -> SlotsSeen {
    let asked = v.spec().parallelism.most() as usize;
    let Some(nodes) = nodes else {
        return one_at_a_time(
            "the operator may not list nodes, so it cannot keep measurements on nodes of their \
             own",
        );
    };
    let requests: Vec<CellRequests> = v
        .cells()
        .iter()
        .filter_map(|c| CellRequests::of(v.spec(), c))
        .collect();
    let Some(first) = requests.first() else {
        return one_at_a_time("no cell");
    };
    let mut usable: Vec<Allocatable> = nodes
        .iter()
        .filter(|n| ready(n) && fit::refusal(n, first).is_none())
        .filter_map(fit::allocatable)
        .map(|c| free_of(c, requested))
        .collect();
    usable.sort_by(|a, b| a.name.cmp(&b.name));
    let fitting: Vec<&CellRequests> = requests
        .iter()
        .filter(|r| fit::can_pack(r, &usable))
        .collect();
    if fitting.is_empty() {
        return one_at_a_time(&format!(
            "{} Ready node(s) match spec.placement and no cell fits them{}",
            usable.len(),
            if requested.is_some() {
                " beside what other pods request there"
            } else {
                ""
            }
        ));
    }
    let mut sets: Vec<Vec<String>> = Vec::new();
    let mut current: Vec<Allocatable> = Vec::new();
    for node in &usable {
        if sets.len() == asked {
            break;
        }
        current.push(node.clone());
        if fitting.iter().all(|r| fit::can_pack(r, &current)) {
            sets.push(current.drain(..).map(|c| c.name).collect());
        }
    }
    let (cpu, memory) = most_needed(&fitting);
    let per_set = sets.iter().map(Vec::len).max().unwrap_or(0);
    SlotsSeen {
        message: format!(
            "{} Ready, schedulable node(s) match spec.placement; a measurement needs up to {} \
             CPU and {} MiB (replicas x cpu plus its load generators) {}, so each slot has {} \
             node(s)",
            usable.len(),
            cpu as f64 / 1000.0,
            memory >> 20,
            match requested {
                Some(_) => "of what other pods leave free",
                None => "of the nodes' allocatable (other pods' requests unknown)",
            },
            per_set
        ),
        node_sets: sets,
    }
}

/// `node` with what other pods request on it taken off.
fn free_of(node: Allocatable, requested: Option<&BTreeMap<String, PodRequest>>) -> Allocatable {
    let Some(taken) = requested.and_then(|r| r.get(&node.name)) else {
        return node;
    };
    Allocatable {
        cpu_millis: node.cpu_millis.saturating_sub(taken.cpu_millis),
        memory_bytes: node.memory_bytes.saturating_sub(taken.memory_bytes),
        name: node.name,
    }
}

fn one_at_a_time(why: &str) -> SlotsSeen {
    SlotsSeen {
        node_sets: Vec::new(),
        message: format!("{why}: the cells are measured one at a time"),
    }
}

/// The most CPU (millicores) and memory (bytes) any one measurement asks for in all.
fn most_needed(requests: &[&CellRequests]) -> (u64, u64) {
    let total = |r: &CellRequests| {
        (
            r.target.cpu_millis * u64::from(r.replicas)
                + r.loadgen.cpu_millis * u64::from(r.loadgens),
            r.target.memory_bytes * u64::from(r.replicas)
                + r.loadgen.memory_bytes * u64::from(r.loadgens),
        )
    };
    requests
        .iter()
        .map(|r| total(r))
        .fold((0, 0), |(c, m), (c2, m2)| (c.max(c2), m.max(m2)))
}

/// True when the node's Ready condition is True.
fn ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[cfg(test)]
mod tests;
