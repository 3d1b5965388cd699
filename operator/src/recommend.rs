//! The recommendation: which configuration meets the service level at the lowest CPU.
//!
//! CPU is the target's CPU seconds over the measured phases per 1,000 requests completed in
//! them, so cells that served different amounts of work compare fairly. The service level is
//! `spec.thresholds`; without thresholds every cell that succeeded qualifies and the sentence
//! says there was no service level.

use crate::api::{CellPhase, CellStatus, ThresholdResult, Verdict};

/// A repeated figure whose largest value is more than this many times its smallest is
/// unstable (the same rule as `FigureSpread.unstable`).
const UNSTABLE_SPREAD: f64 = 2.0;

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

/// Target CPU seconds per 1,000 requests of a cell, and whether that figure is unstable.
///
/// With repetitions, the cell's request counts are totals over them while its CPU may not be,
/// so each repetition's own CPU and requests give one value and the median of those counts;
/// their spread decides stability. Otherwise `target.cpuSecondsUsed` over the requests of
/// every measured phase and endpoint. None when the CPU was not reported or nothing completed.
pub fn cpu_per_1000_requests(cell: &CellStatus) -> Option<(f64, bool)> {
    let per_1000 = |cpu: f64, requests: u64| (requests > 0).then(|| cpu / requests as f64 * 1000.0);
    let mut reps: Vec<f64> = cell
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
    if reps.len() >= 2 {
        reps.sort_by(f64::total_cmp);
        let mid = reps.len() / 2;
        let median = if reps.len() % 2 == 1 {
            reps[mid]
        } else {
            (reps[mid - 1] + reps[mid]) / 2.0
        };
        let (min, max) = (reps[0], reps[reps.len() - 1]);
        let unstable = min <= 0.0 || max / min > UNSTABLE_SPREAD;
        return Some((median, unstable));
    }
    let cpu = cell.target.as_ref()?.cpu_seconds_used?;
    per_1000(cpu, cell.results.iter().map(|r| r.requests).sum()).map(|v| (v, false))
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
                Some((_, true)) => {
                    Some("its CPU per request is unstable over the repetitions".to_owned())
                }
                Some((cpu, false)) => {
                    qualified.push((cell.name.clone(), cpu, verdicts.len()));
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
