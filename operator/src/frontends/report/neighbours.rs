//! The Neighbours section: the measurements whose node had more CPU use outside the
//! measurement's own pods than `spec.placement.neighbourCpuLimit` (status `neighbours[].busy`),
//! from the kubelet figures the operator reads. A local run records no nodes, and gets no
//! section. Pure.

use std::fmt::Write;

use crate::resource::BenchmarkRunStatus;
use crate::resource::status::Neighbours;

/// One node of one measurement: the cell, its repetition (`None`: measured once), the node.
struct NodeSeen<'a> {
    cell: &'a str,
    repetition: Option<u32>,
    node: &'a Neighbours,
}

/// Every node of every measurement that recorded its neighbours, in the status's order.
fn seen(status: &BenchmarkRunStatus) -> Vec<NodeSeen<'_>> {
    let mut out = Vec::new();
    for c in &status.cells {
        for node in &c.neighbours {
            out.push(NodeSeen {
                cell: &c.name,
                repetition: None,
                node,
            });
        }
        for r in &c.repetitions {
            for node in &r.neighbours {
                out.push(NodeSeen {
                    cell: &c.name,
                    repetition: Some(r.repetition),
                    node,
                });
            }
        }
    }
    out
}

/// The pods listed, "other/busy 0.600, a/b 0.010 (+3 more)".
fn pods(n: &Neighbours) -> String {
    let mut listed: Vec<String> = n
        .pods
        .iter()
        .map(|p| format!("{} {:.3}", p.pod, p.cpu))
        .collect();
    if listed.is_empty() {
        listed.push(super::ABSENT.to_owned());
    }
    let more = n
        .more_pods
        .map(|m| format!(" (+{m} more)"))
        .unwrap_or_default();
    format!("{}{more}", listed.join(", "))
}

/// `## Neighbours` when measurements recorded their nodes' neighbours (a cluster run); else
/// nothing.
pub fn render(status: &BenchmarkRunStatus) -> String {
    let all = seen(status);
    if all.is_empty() {
        return String::new();
    }
    let mut o = String::from("\n## Neighbours\n\n");
    o.push_str(
        "Each measurement's nodes' CPU use outside its own pods (its target replicas and load \
         generators) around its measured phases, in cores on average over the window between two \
         of the node's own samples, from the kubelet's /metrics/resource. A measurement is flagged busy above \
         spec.placement.neighbourCpuLimit.\n\n",
    );
    let busy: Vec<&NodeSeen> = all.iter().filter(|s| s.node.busy).collect();
    if busy.is_empty() {
        let most = all
            .iter()
            .filter_map(|s| Some((s, s.node.foreign_cpu?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match most {
            Some((s, cpu)) => {
                let _ = writeln!(
                    o,
                    "No measurement was flagged: the most other use was {cpu:.3} CPU, on {} \
                     ({}).",
                    s.node.node,
                    which(s)
                );
            }
            None => o.push_str("No measurement was flagged.\n"),
        }
    } else {
        let _ = writeln!(
            o,
            "**{} measurement node(s) had a busy neighbour**: their figures may carry another \
             workload's load.\n",
            busy.len()
        );
        o.push_str(
            "| cell | repetition | node | other CPU | window (s) | top other pods |\n\
             |---|---|---|---|---|---|\n",
        );
        for s in &busy {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {:.3} | {} | {} |",
                s.cell,
                s.repetition
                    .map_or_else(|| super::ABSENT.to_owned(), |r| r.to_string()),
                s.node.node,
                s.node.foreign_cpu.unwrap_or_default(),
                s.node
                    .window_seconds
                    .map_or_else(|| super::ABSENT.to_owned(), |w| format!("{w:.1}")),
                pods(s.node)
            );
        }
    }
    let missing: Vec<&NodeSeen> = all.iter().filter(|s| s.node.missing.is_some()).collect();
    if let Some(first) = missing.first() {
        let _ = writeln!(
            o,
            "\n{} of {} measurement node(s) have no figures; the first ({}, {}): {}",
            missing.len(),
            all.len(),
            which(first),
            first.node.node,
            first.node.missing.as_deref().unwrap_or_default()
        );
    }
    o
}

/// "cell a repetition 2", or "cell a" measured once.
fn which(s: &NodeSeen) -> String {
    match s.repetition {
        Some(r) => format!("cell {} repetition {r}", s.cell),
        None => format!("cell {}", s.cell),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::CellPhase;
    use crate::resource::status::{CellStatus, NeighbourPod, RepetitionStatus};

    fn node(name: &str, cpu: f64, busy: bool) -> Neighbours {
        Neighbours {
            node: name.into(),
            foreign_cpu: Some(cpu),
            window_seconds: Some(25.0),
            busy,
            pods: vec![
                NeighbourPod {
                    pod: "other/busy".into(),
                    cpu: cpu - 0.05,
                },
                NeighbourPod {
                    pod: "kube-system/coredns-1".into(),
                    cpu: 0.004,
                },
            ],
            more_pods: Some(6),
            missing: None,
        }
    }

    fn rep(n: u32, neighbours: Vec<Neighbours>) -> RepetitionStatus {
        RepetitionStatus {
            repetition: n,
            phase: CellPhase::Succeeded,
            neighbours,
            ..RepetitionStatus::default()
        }
    }

    fn status(reps: Vec<RepetitionStatus>) -> BenchmarkRunStatus {
        BenchmarkRunStatus {
            cells: vec![CellStatus {
                name: "single-x1".into(),
                repetitions: reps,
                ..CellStatus::default()
            }],
            ..BenchmarkRunStatus::default()
        }
    }

    #[test]
    fn a_busy_measurement_is_listed_with_its_node_figure_and_top_pods() {
        let s = status(vec![
            rep(1, vec![node("n1", 0.65, true)]),
            rep(2, vec![node("n2", 0.02, false)]),
        ]);
        let text = render(&s);
        assert!(text.starts_with("\n## Neighbours\n"), "{text}");
        assert!(
            text.contains("**1 measurement node(s) had a busy neighbour**"),
            "{text}"
        );
        assert!(
            text.contains(
                "| single-x1 | 1 | n1 | 0.650 | 25.0 | other/busy 0.600, \
                 kube-system/coredns-1 0.004 (+6 more) |"
            ),
            "{text}"
        );
        assert!(!text.contains("| n2 |"), "only the flagged: {text}");
    }

    #[test]
    fn none_flagged_says_so_with_the_most_seen_and_missing_figures_say_why() {
        let gone = Neighbours {
            node: "n3".into(),
            missing: Some("kubelet of node n3 (10.0.0.3:10250) /metrics/resource: 403".into()),
            ..Neighbours::default()
        };
        let mut s = status(vec![
            rep(1, vec![node("n1", 0.02, false)]),
            rep(2, vec![node("n2", 0.12, false), gone]),
        ]);
        let text = render(&s);
        assert!(
            text.contains(
                "No measurement was flagged: the most other use was 0.120 CPU, on n2 (cell \
                 single-x1 repetition 2)."
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "1 of 3 measurement node(s) have no figures; the first (cell single-x1 \
                 repetition 2, n3): kubelet of node n3"
            ),
            "{text}"
        );
        // Measured once: the cell's own entry, no repetition.
        s.cells[0].repetitions.clear();
        s.cells[0].neighbours = vec![node("n1", 0.4, true)];
        assert!(render(&s).contains("| single-x1 | — | n1 | 0.400 |"));
    }

    #[test]
    fn a_local_run_has_no_section() {
        let s = status(vec![rep(1, Vec::new())]);
        assert_eq!(render(&s), "");
        assert_eq!(render(&BenchmarkRunStatus::default()), "");
    }
}
