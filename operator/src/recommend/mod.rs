//! The recommendation: which configuration meets the service level at the lowest CPU.
//!
//! CPU is the target's CPU seconds over the measured phases per 1,000 requests completed in
//! them, so cells that served different amounts of work compare fairly. The service level is
//! `spec.thresholds`; without thresholds every cell that succeeded qualifies and the sentence
//! says there was no service level.

use crate::api::{CellPhase, CellStatus, ThresholdResult, Verdict};
use crate::results::noise;

/// A cell that qualified but costs more than the recommended one.
#[derive(Clone, Debug, PartialEq)]
pub struct Alternative {
    /// The cell.
    pub cell: String,
    /// Its target CPU seconds per 1,000 requests.
    pub cpu_per_1000: f64,
    /// How much less CPU the recommended cell uses, in percent of this cell's.
    pub percent_less: f64,
}

/// The outcome: the recommended cell, if any, what it beats and why others were passed over.
#[derive(Clone, Debug, PartialEq)]
pub struct Recommendation {
    /// The cell that meets every threshold at the lowest CPU; None when no cell qualifies.
    pub cell: Option<String>,
    /// Its target CPU seconds per 1,000 requests.
    pub cpu_per_1000: Option<f64>,
    /// False when the run had no thresholds (any cell that succeeded qualifies).
    pub service_level: bool,
    /// How many thresholds judged the recommended cell (all passed).
    pub thresholds_met: usize,
    /// The other qualifying cells, cheapest first.
    pub alternatives: Vec<Alternative>,
    /// Cells that could not be recommended, each with the reason.
    pub passed_over: Vec<(String, String)>,
    /// The whole answer in one line, for status.summary.recommendation and report.md.
    pub sentence: String,
}

/// Target CPU seconds per 1,000 requests of a cell: the figure the recommendation and
/// `benchmatrix compare` rank cells by.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuPer1000 {
    /// The median over the repetitions, or the cell's own figure when it was not repeated.
    pub median: f64,
    /// Each successful repetition's own figure (its CPU over its requests), in the order
    /// measured; empty when the cell was not repeated.
    pub per_repetition: Vec<f64>,
}

impl CpuPer1000 {
    /// True when the repetitions spread more than 2x (the rule of `FigureSpread.unstable`).
    pub fn unstable(&self) -> bool {
        let v = &self.per_repetition;
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        !v.is_empty() && noise::is_unstable(min, max)
    }
}

/// Target CPU seconds per 1,000 requests of a cell. With repetitions, the cell's request
/// counts are totals over them while its CPU may not be, so each repetition's own CPU and
/// requests give one value and the median of those counts. Otherwise `target.cpuSecondsUsed`
/// over the requests of every measured phase and endpoint. None when the CPU was not reported
/// or nothing completed.
pub fn cpu_per_1000_requests(cell: &CellStatus) -> Option<CpuPer1000> {
    let per_1000 = |cpu: f64, requests: u64| (requests > 0).then(|| cpu / requests as f64 * 1000.0);
    let per_repetition: Vec<f64> = cell
        .repetitions
        .iter()
        .filter(|r| r.phase == CellPhase::Succeeded)
        .filter_map(|r| {
            per_1000(
                r.cpu_seconds_used?,
                r.results.iter().map(|x| x.requests).sum(),
            )
        })
        .collect();
    if !per_repetition.is_empty() {
        return Some(CpuPer1000 {
            median: noise::median(&per_repetition),
            per_repetition,
        });
    }
    let cpu = cell.target.as_ref()?.cpu_seconds_used?;
    let median = per_1000(cpu, cell.results.iter().map(|r| r.requests).sum())?;
    Some(CpuPer1000 {
        median,
        per_repetition: Vec::new(),
    })
}

/// Names the configuration that meets every threshold at the lowest target CPU per 1,000
/// requests. `results` are [`crate::thresholds::evaluate`]'s verdicts; empty means the run had
/// no thresholds, and then every cell that succeeded qualifies.
///
/// A cell qualifies when it succeeded, at least one threshold judged it and every verdict on
/// it passed (a cell no threshold names is not known to meet the service level), and neither
/// a figure those verdicts rest on nor its CPU figure is unstable over the repetitions.
pub fn recommend(cells: &[CellStatus], results: &[ThresholdResult]) -> Recommendation {
    let service_level = !results.is_empty();
    let mut qualified: Vec<(String, f64, usize)> = Vec::new();
    let mut passed_over = Vec::new();
    for cell in cells {
        let verdicts: Vec<&ThresholdResult> =
            results.iter().filter(|r| r.cell == cell.name).collect();
        let why_not = if cell.phase != CellPhase::Succeeded {
            Some(format!("it did not succeed ({})", cell.phase))
        } else if service_level && verdicts.is_empty() {
            Some("no threshold judges it".to_owned())
        } else if let Some(failed) = verdicts.iter().find(|r| r.verdict == Verdict::Fail) {
            Some(format!("it fails {}", failed.threshold))
        } else if let Some(shaky) = verdicts.iter().find(|r| r.unstable) {
            Some(format!(
                "its figure for {} is unstable over the repetitions",
                shaky.threshold
            ))
        } else {
            match cpu_per_1000_requests(cell) {
                None => Some("its CPU use was not reported".to_owned()),
                Some(cpu) if cpu.unstable() => {
                    Some("its CPU per request is unstable over the repetitions".to_owned())
                }
                Some(cpu) => {
                    qualified.push((cell.name.clone(), cpu.median, verdicts.len()));
                    None
                }
            }
        };
        if let Some(why) = why_not {
            passed_over.push((cell.name.clone(), why));
        }
    }
    // Stable sort: on equal CPU the earlier cell in the matrix wins.
    qualified.sort_by(|a, b| a.1.total_cmp(&b.1));
    let Some((best, best_cpu, met)) = qualified.first().cloned() else {
        let sentence = if service_level {
            "No configuration meets every threshold with stable figures, so none is recommended."
                .to_owned()
        } else {
            "No configuration succeeded with a stable CPU figure, so none is recommended."
                .to_owned()
        };
        return Recommendation {
            cell: None,
            cpu_per_1000: None,
            service_level,
            thresholds_met: 0,
            alternatives: Vec::new(),
            passed_over,
            sentence,
        };
    };
    let alternatives: Vec<Alternative> = qualified[1..]
        .iter()
        .map(|(cell, cpu, _)| Alternative {
            cell: cell.clone(),
            cpu_per_1000: *cpu,
            percent_less: if *cpu > 0.0 {
                (cpu - best_cpu) / cpu * 100.0
            } else {
                0.0
            },
        })
        .collect();
    let thresholds_in_run = results
        .iter()
        .map(|r| r.index)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let lead = if service_level {
        // Each threshold judges a cell at most once, so `met` counts thresholds.
        let which = match (met, met == thresholds_in_run) {
            (1, true) => "the only threshold".to_owned(),
            (n, true) => format!("all {n} thresholds"),
            (1, false) => "the 1 threshold that applies to it".to_owned(),
            (n, false) => format!("all {n} thresholds that apply to it"),
        };
        format!("{best} meets {which} at {best_cpu:.2} CPU-s per 1000 requests")
    } else {
        format!(
            "No service level was given (spec.thresholds); by CPU alone, {best} uses the least: \
             {best_cpu:.2} CPU-s per 1000 requests"
        )
    };
    let tail = if alternatives.is_empty() {
        if service_level {
            ", the only configuration that does".to_owned()
        } else {
            ", the only configuration measured".to_owned()
        }
    } else {
        let parts: Vec<String> = alternatives
            .iter()
            .map(|a| format!("{:.0}% less than {}", a.percent_less, a.cell))
            .collect();
        format!(", {}", parts.join(", "))
    };
    Recommendation {
        cell: Some(best),
        cpu_per_1000: Some(best_cpu),
        service_level,
        thresholds_met: met,
        alternatives,
        passed_over,
        sentence: format!("{lead}{tail}."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{CellResult, RepetitionStatus, TargetStats};

    /// A succeeded cell that served `requests` requests with `cpu` target CPU seconds.
    fn cell(name: &str, cpu: f64, requests: u64) -> CellStatus {
        CellStatus {
            name: name.into(),
            phase: CellPhase::Succeeded,
            target: Some(TargetStats {
                cpu_seconds_used: Some(cpu),
                ..TargetStats::default()
            }),
            // Split over two streams: the CPU is per request of every measured stream.
            results: vec![
                CellResult {
                    phase: "mixed".into(),
                    endpoint: "fast".into(),
                    requests: requests - requests / 4,
                    ..CellResult::default()
                },
                CellResult {
                    phase: "mixed".into(),
                    endpoint: "slow".into(),
                    requests: requests / 4,
                    ..CellResult::default()
                },
            ],
            ..CellStatus::default()
        }
    }

    fn verdict(index: u32, cell: &str, verdict: Verdict) -> ThresholdResult {
        ThresholdResult {
            index,
            threshold: format!("threshold {index}"),
            cell: cell.into(),
            phase: "mixed".into(),
            endpoint: "fast".into(),
            verdict,
            ..ThresholdResult::default()
        }
    }

    /// Every cell judged by thresholds 0..3, passing unless listed in `failing`.
    fn all_judged(cells: &[CellStatus], failing: &[&str]) -> Vec<ThresholdResult> {
        let mut out = Vec::new();
        for i in 0..3 {
            for c in cells {
                let v = if failing.contains(&c.name.as_str()) && i == 1 {
                    Verdict::Fail
                } else {
                    Verdict::Pass
                };
                out.push(verdict(i, &c.name, v));
            }
        }
        out
    }

    #[test]
    fn recommends_the_lowest_cpu_among_cells_that_meet_every_threshold() {
        // CPU-s per 1000 requests: single-x1 0.20 (but fails), single-x2 0.66, pool-x1 0.50,
        // pool-x2 0.41.
        let cells = vec![
            cell("single-x1", 2.0, 10_000),
            cell("single-x2", 6.6, 10_000),
            cell("pool-x1", 5.0, 10_000),
            cell("pool-x2", 4.1, 10_000),
        ];
        let results = all_judged(&cells, &["single-x1"]);
        let r = recommend(&cells, &results);
        assert_eq!(r.cell.as_deref(), Some("pool-x2"));
        assert!((r.cpu_per_1000.unwrap() - 0.41).abs() < 1e-9);
        assert_eq!(r.thresholds_met, 3);
        assert_eq!(
            r.alternatives
                .iter()
                .map(|a| a.cell.as_str())
                .collect::<Vec<_>>(),
            vec!["pool-x1", "single-x2"]
        );
        // (0.66 - 0.41) / 0.66 = 37.9%; (0.50 - 0.41) / 0.50 = 18%.
        assert_eq!(
            r.sentence,
            "pool-x2 meets all 3 thresholds at 0.41 CPU-s per 1000 requests, 18% less than \
             pool-x1, 38% less than single-x2."
        );
        assert_eq!(
            r.passed_over,
            vec![("single-x1".to_owned(), "it fails threshold 1".to_owned())]
        );
    }

    #[test]
    fn recommend_skips_a_cell_whose_deciding_figure_is_unstable() {
        let cells = vec![cell("pool-x1", 5.0, 10_000), cell("pool-x2", 4.1, 10_000)];
        let mut results = all_judged(&cells, &[]);
        results
            .iter_mut()
            .find(|r| r.cell == "pool-x2" && r.index == 2)
            .unwrap()
            .unstable = true;
        let r = recommend(&cells, &results);
        assert_eq!(r.cell.as_deref(), Some("pool-x1"));
        assert_eq!(r.passed_over[0].0, "pool-x2");
        assert!(
            r.passed_over[0].1.contains("unstable"),
            "{:?}",
            r.passed_over
        );
        assert!(r.sentence.ends_with(", the only configuration that does."));
    }

    #[test]
    fn recommend_uses_each_repetitions_own_cpu_and_refuses_an_unstable_one() {
        let rep = |n: u32, cpu: f64, requests: u64| RepetitionStatus {
            repetition: n,
            phase: CellPhase::Succeeded,
            cpu_seconds_used: Some(cpu),
            results: vec![CellResult {
                requests,
                ..CellResult::default()
            }],
            ..RepetitionStatus::default()
        };
        // Steady: 0.40, 0.42, 0.44 CPU-s per 1000 requests, median 0.42. The cell's own
        // totals (3 repetitions' requests against one repetition's CPU) would say 0.14.
        let mut steady = cell("steady", 4.2, 30_000);
        steady.repetitions = vec![
            rep(1, 4.0, 10_000),
            rep(2, 4.2, 10_000),
            rep(3, 4.4, 10_000),
        ];
        // Shaky: 0.10 to 0.30, cheaper at the median (0.2) but spread 3x.
        let mut shaky = cell("shaky", 2.0, 30_000);
        shaky.repetitions = vec![
            rep(1, 1.0, 10_000),
            rep(2, 2.0, 10_000),
            rep(3, 3.0, 10_000),
        ];
        let cpu = cpu_per_1000_requests(&steady).unwrap();
        assert!((cpu.median - 0.42).abs() < 1e-9, "{cpu:?}");
        assert!(!cpu.unstable());
        let cells = vec![shaky, steady];
        let r = recommend(&cells, &[]);
        assert_eq!(r.cell.as_deref(), Some("steady"));
        assert!(!r.service_level);
        assert_eq!(
            r.passed_over,
            vec![(
                "shaky".to_owned(),
                "its CPU per request is unstable over the repetitions".to_owned()
            )]
        );
    }

    #[test]
    fn without_thresholds_recommend_by_cpu_among_succeeded_cells_and_say_so() {
        let mut failed = cell("single-x1", 1.0, 10_000);
        failed.phase = CellPhase::Failed;
        let cells = vec![
            failed,
            cell("single-x2", 6.6, 10_000),
            cell("pool-x2", 4.1, 10_000),
        ];
        let r = recommend(&cells, &[]);
        assert_eq!(r.cell.as_deref(), Some("pool-x2"));
        assert_eq!(
            r.sentence,
            "No service level was given (spec.thresholds); by CPU alone, pool-x2 uses the \
             least: 0.41 CPU-s per 1000 requests, 38% less than single-x2."
        );
        assert_eq!(r.passed_over[0].0, "single-x1");
    }

    #[test]
    fn recommend_nothing_when_no_cell_meets_the_thresholds() {
        let cells = vec![cell("a", 1.0, 1000), cell("b", 2.0, 1000)];
        let results = all_judged(&cells, &["a", "b"]);
        let r = recommend(&cells, &results);
        assert_eq!(r.cell, None);
        assert_eq!(
            r.sentence,
            "No configuration meets every threshold with stable figures, so none is recommended."
        );
    }

    #[test]
    fn recommend_passes_over_a_cell_no_threshold_judges() {
        let cells = vec![cell("single-x1", 1.0, 10_000), cell("pool-x1", 5.0, 10_000)];
        let results = vec![verdict(0, "pool-x1", Verdict::Pass)];
        let r = recommend(&cells, &results);
        assert_eq!(r.cell.as_deref(), Some("pool-x1"));
        assert_eq!(
            r.passed_over,
            vec![("single-x1".to_owned(), "no threshold judges it".to_owned())]
        );
        assert_eq!(
            r.sentence,
            "pool-x1 meets the only threshold at 0.50 CPU-s per 1000 requests, the only \
             configuration that does."
        );
    }
}
