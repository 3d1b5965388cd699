use super::*;
use crate::resource::status::{CellStatus, LatencyMs};
use crate::resource::{CellPhase, CellResult};

fn rep(node: &str, p99: f64, rps: f64) -> RepetitionStatus {
    RepetitionStatus {
        phase: CellPhase::Succeeded,
        nodes: vec![node.into()],
        results: vec![CellResult {
            phase: "p".into(),
            endpoint: "fast".into(),
            rps,
            latency_ms: Some(LatencyMs {
                p99,
                ..LatencyMs::default()
            }),
            ..CellResult::default()
        }],
        ..RepetitionStatus::default()
    }
}

fn cell(name: &str, reps: Vec<RepetitionStatus>) -> CellStatus {
    CellStatus {
        name: name.into(),
        phase: CellPhase::Succeeded,
        repetitions: reps,
        ..CellStatus::default()
    }
}

#[test]
fn a_slow_node_is_flagged_with_the_cells_own_differences_divided_out() {
    // Cell a is ten times slower than b; on n2 both are 12% slower than on n1.
    let status = BenchmarkRunStatus {
        cells: vec![
            cell(
                "a",
                vec![
                    rep("n1", 10.0, 100.0),
                    rep("n2", 11.2, 100.0),
                    rep("n1", 10.0, 100.0),
                ],
            ),
            cell(
                "b",
                vec![
                    rep("n2", 1.12, 900.0),
                    rep("n1", 1.0, 900.0),
                    rep("n2", 1.12, 900.0),
                ],
            ),
        ],
        ..BenchmarkRunStatus::default()
    };
    let effects = node_effects(&status);
    assert_eq!(effects.len(), 2);
    assert_eq!(effects[0].node, "n1");
    assert_eq!(effects[0].cells, 2);
    let (n1, n2) = (effects[0].ratios[0].unwrap(), effects[1].ratios[0].unwrap());
    assert!((n2 / n1 - 1.12).abs() < 0.01, "{n1} {n2}");
    assert_eq!(effects[1].ratios[1], Some(1.0), "rps the same on both");
    let flagged = flags(&effects);
    assert_eq!(
        flagged,
        [
            "n1: p99 11% below the other nodes across 2 cell(s)",
            "n2: p99 12% above the other nodes across 2 cell(s)"
        ]
    );
    let md = render(&status);
    assert!(
        md.contains("## Node effects") && md.contains("| n2 | 1.0"),
        "{md}"
    );
}

#[test]
fn nodes_alike_are_not_flagged_and_one_node_gives_no_table() {
    let alike = BenchmarkRunStatus {
        cells: vec![cell(
            "a",
            vec![
                rep("n1", 10.0, 100.0),
                rep("n2", 10.2, 99.0),
                rep("n1", 10.1, 100.0),
            ],
        )],
        ..BenchmarkRunStatus::default()
    };
    assert!(flags(&node_effects(&alike)).is_empty());
    assert!(render(&alike).contains("No node sits more than 5%"));
    let one = BenchmarkRunStatus {
        cells: vec![cell(
            "a",
            vec![rep("n1", 10.0, 100.0), rep("n1", 11.0, 100.0)],
        )],
        ..BenchmarkRunStatus::default()
    };
    assert_eq!(render(&one), "");
}
