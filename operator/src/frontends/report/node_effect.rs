//! The node-effect table: whether some node measures differently from the others. A parallel
//! run (`spec.parallelism`) rotates each cell's repetitions over node sets, and the status
//! records the nodes of every repetition; so per node, and for each figure, the median across
//! cells of (the cell's median on that node) / (the cell's median on all nodes) says how that
//! node compares, with the cells' own differences divided out. A node that sits more than the
//! minimum practical change (5%) away from the median of the others is flagged, e.g.
//! "realk8s-node2: p99 12% above the other nodes across 4 cells". Pure.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::engine::results::noise::{MIN_PRACTICAL_CHANGE, median};
use crate::resource::BenchmarkRunStatus;
use crate::resource::status::RepetitionStatus;

/// The figures compared: p99 latency (lower is better) and throughput.
const FIGURES: [&str; 2] = ["p99", "rps"];

/// One node (or node set, "a+b") against all nodes, per figure.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeEffect {
    /// The node, or the nodes of a set joined by "+".
    pub node: String,
    /// Per figure of `FIGURES`, the median across cells of (the cell's median on this node)
    /// / (its median on all nodes); `None` without a measured value.
    pub ratios: [Option<f64>; 2],
    /// Cells measured on this node.
    pub cells: usize,
}

/// Each node's effect, in name order; empty when fewer than two nodes measured.
pub fn node_effects(status: &BenchmarkRunStatus) -> Vec<NodeEffect> {
    // node -> figure -> each (cell, stream)'s ratio; node -> cells
    let mut ratios: BTreeMap<String, [Vec<f64>; 2]> = BTreeMap::new();
    let mut cells: BTreeMap<String, usize> = BTreeMap::new();
    for c in &status.cells {
        let measured: Vec<&RepetitionStatus> = RepetitionStatus::measured(&c.repetitions)
            .filter(|r| !r.nodes.is_empty())
            .collect();
        let mut nodes: Vec<String> = measured.iter().map(|r| r.nodes.join("+")).collect();
        nodes.sort();
        nodes.dedup();
        if nodes.len() < 2 {
            // One node only: nothing to divide out the cell's own figure with.
            continue;
        }
        for node in &nodes {
            *cells.entry(node.clone()).or_default() += 1;
        }
        for (f, figure) in FIGURES.iter().enumerate() {
            for stream in streams(&measured) {
                let all: Vec<f64> = measured
                    .iter()
                    .filter_map(|r| value(r, &stream, figure))
                    .collect();
                if all.is_empty() {
                    continue;
                }
                let overall = median(&all);
                if overall <= 0.0 {
                    continue;
                }
                for node in &nodes {
                    let here: Vec<f64> = measured
                        .iter()
                        .filter(|r| r.nodes.join("+") == *node)
                        .filter_map(|r| value(r, &stream, figure))
                        .collect();
                    if !here.is_empty() {
                        ratios.entry(node.clone()).or_default()[f].push(median(&here) / overall);
                    }
                }
            }
        }
    }
    if ratios.len() < 2 {
        return Vec::new();
    }
    ratios
        .into_iter()
        .map(|(node, per)| NodeEffect {
            cells: cells.get(&node).copied().unwrap_or(0),
            ratios: per.map(|v| (!v.is_empty()).then(|| median(&v))),
            node,
        })
        .collect()
}

/// Every "phase/endpoint" the repetitions measured.
fn streams(reps: &[&RepetitionStatus]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = reps
        .iter()
        .flat_map(|r| {
            r.results
                .iter()
                .map(|x| (x.phase.clone(), x.endpoint.clone()))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn value(r: &RepetitionStatus, (phase, endpoint): &(String, String), figure: &str) -> Option<f64> {
    let res = r
        .results
        .iter()
        .find(|x| &x.phase == phase && &x.endpoint == endpoint)?;
    match figure {
        "p99" => res.latency_ms.as_ref().map(|l| l.p99),
        _ => Some(res.rps),
    }
}

/// The nodes that sit more than the minimum practical change away from the others, in
/// sentences: "realk8s-node2: p99 12% above the other nodes across 4 cells".
pub fn flags(effects: &[NodeEffect]) -> Vec<String> {
    let mut out = Vec::new();
    for e in effects {
        for (f, figure) in FIGURES.iter().enumerate() {
            let Some(mine) = e.ratios[f] else { continue };
            let others: Vec<f64> = effects
                .iter()
                .filter(|o| o.node != e.node)
                .filter_map(|o| o.ratios[f])
                .collect();
            if others.is_empty() {
                continue;
            }
            let change = mine / median(&others) - 1.0;
            if change.abs() > MIN_PRACTICAL_CHANGE {
                out.push(format!(
                    "{}: {figure} {:.0}% {} the other nodes across {} cell(s)",
                    e.node,
                    change.abs() * 100.0,
                    if change > 0.0 { "above" } else { "below" },
                    e.cells
                ));
            }
        }
    }
    out
}

/// `## Node effects`, when repetitions ran on two or more nodes; else nothing.
pub fn render(status: &BenchmarkRunStatus) -> String {
    let effects = node_effects(status);
    if effects.is_empty() {
        return String::new();
    }
    let mut o = String::from("\n## Node effects\n\n");
    o.push_str(
        "Per node, the median across cells of (the cell's median on that node) / (its median on \
         all nodes): 1.00 is a node like the others.\n\n",
    );
    o.push_str("| node | p99 vs all nodes | rps vs all nodes | cells |\n|---|---|---|---|\n");
    let ratio = |r: Option<f64>| r.map_or_else(|| super::ABSENT.to_owned(), |r| format!("{r:.2}"));
    for e in &effects {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            e.node,
            ratio(e.ratios[0]),
            ratio(e.ratios[1]),
            e.cells
        );
    }
    let flagged = flags(&effects);
    if flagged.is_empty() {
        let _ = writeln!(
            o,
            "\nNo node sits more than {:.0}% away from the others.",
            MIN_PRACTICAL_CHANGE * 100.0
        );
    } else {
        o.push('\n');
        for f in flagged {
            let _ = writeln!(o, "- **{f}**");
        }
    }
    o
}

#[cfg(test)]
mod tests;
