//! The recommendation: which configuration meets the service level for the least reserved CPU.
//!
//! The cost of a cell is what it reserves: its CPU limit per replica times its replicas
//! (`CellStatus.reservedCpu`), which is what a cluster schedules and bills. It belongs to the
//! configuration, so no cell can look cheaper by serving less of the expensive work.
//!
//! The CPU a cell *used* per 1,000 requests is not a cost to rank by. Every cell of an
//! equal-budget matrix keeps its CPUs busy; the one whose closed loop starved the heavy endpoint
//! simply completed more cheap requests per CPU-second. So that figure
//! ([`cpu_per_1000_requests`]) is shown only as information, beside the rates each cell served.
//!
//! The service level is `spec.thresholds`. Among the cells that meet every threshold, the
//! smallest reservation wins; equal reservations (an equal-budget matrix) are decided by the
//! [`margin`], how far inside its thresholds a cell stayed. Without thresholds there is nothing
//! to meet, so nothing is recommended and the sentence lists what each cell traded
//! (`trades`).
//!
//! A run that searched (`spec.capacity`) is ranked by capacity instead: the most traffic held
//! at the SLO per reserved core (`capacity`).

mod capacity;
mod trades;

#[cfg(test)]
mod tests;

use std::cmp::Ordering;

use crate::engine::results::noise;
use crate::engine::results::repeat::total;
use crate::resource::bound::{SENTENCE_MAX, json_len};
use crate::resource::{CellPhase, CellStatus, Metric, RepetitionStatus, ThresholdResult, Verdict};

/// How far inside its thresholds a cell stayed: the smallest relative headroom over every
/// threshold judging it, and which threshold that was.
#[derive(Clone, Debug, PartialEq)]
pub struct Margin {
    /// `(limit - measured) / limit` for a figure that must stay low (latency, error rate),
    /// `(measured - limit) / limit` for one that must stay high (rps): 0.25 means the figure
    /// could move a quarter of the limit the wrong way and still pass.
    pub headroom: f64,
    /// That threshold in words, e.g. "mixed/fast p99 below 100ms".
    pub threshold: String,
}

/// A cell that meets every threshold but is not the recommended one.
#[derive(Clone, Debug, PartialEq)]
pub struct Alternative {
    /// The cell.
    pub cell: String,
    /// The CPU it reserves, in cores.
    pub reserved_cpu: f64,
    /// How much less CPU the recommended cell reserves, in percent of this cell's (0 when they
    /// reserve the same and the margin decided).
    pub percent_less: f64,
    /// Its margin on the thresholds.
    pub margin: Option<Margin>,
}

/// The outcome: the recommended cell, if any, what it beats and why others were passed over.
#[derive(Clone, Debug, PartialEq)]
pub struct Recommendation {
    /// The cell that meets every threshold with the least reserved CPU (the widest margin
    /// among equal reservations); None without thresholds or when no cell qualifies.
    pub cell: Option<String>,
    /// The CPU it reserves, in cores.
    pub reserved_cpu: Option<f64>,
    /// Its margin on the thresholds.
    pub margin: Option<Margin>,
    /// False when the run had no thresholds (then nothing is recommended).
    pub service_level: bool,
    /// How many thresholds judged the recommended cell (all passed).
    pub thresholds_met: usize,
    /// The other qualifying cells, in the order they rank.
    pub alternatives: Vec<Alternative>,
    /// Cells that could not be recommended, each with the reason.
    pub passed_over: Vec<(String, String)>,
    /// The whole answer in one line, for status.summary.recommendation and report.md.
    pub sentence: String,
}

impl Recommendation {
    /// Nothing recommended, `sentence` saying why; `service_level`: whether the run had
    /// thresholds.
    fn none(
        service_level: bool,
        passed_over: Vec<(String, String)>,
        sentence: String,
    ) -> Recommendation {
        Recommendation {
            cell: None,
            reserved_cpu: None,
            margin: None,
            service_level,
            thresholds_met: 0,
            alternatives: Vec::new(),
            passed_over,
            sentence,
        }
    }
}

/// Target CPU seconds per 1,000 requests of a cell: information shown beside the rates the
/// cell served (and compared by `benchmatrix compare` when the request mix is the same), never
/// a ranking of cells, since it falls when a cell serves fewer of the expensive requests.
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
    let per_repetition: Vec<f64> = RepetitionStatus::measured(&cell.repetitions)
        .filter_map(|r| per_1000(r.cpu_seconds_used?, total(&r.results, |x| x.requests)))
        .collect();
    if !per_repetition.is_empty() {
        return Some(CpuPer1000 {
            median: noise::median(&per_repetition),
            per_repetition,
        });
    }
    let cpu = cell.target.as_ref()?.cpu_seconds_used?;
    let median = per_1000(cpu, total(&cell.results, |r| r.requests))?;
    Some(CpuPer1000 {
        median,
        per_repetition: Vec::new(),
    })
}

/// The margin of a cell on its `verdicts`: the smallest relative headroom over them (see
/// [`Margin::headroom`]). A verdict without a measured figure or with a limit of 0 (such as
/// `rps: {above: 0}`) has no relative headroom and is left out; None when none is left.
pub fn margin(verdicts: &[&ThresholdResult]) -> Option<Margin> {
    let mut tightest: Option<Margin> = None;
    for v in verdicts {
        let (Some(measured), Some(limit), Some(metric)) =
            (v.measured, v.limit, Metric::from_key(&v.figure))
        else {
            continue;
        };
        if limit <= 0.0 {
            continue;
        }
        let headroom = if metric.higher_is_better() {
            (measured - limit) / limit
        } else {
            (limit - measured) / limit
        };
        if tightest.as_ref().is_none_or(|t| headroom < t.headroom) {
            tightest = Some(Margin {
                headroom,
                threshold: v.threshold.clone(),
            });
        }
    }
    tightest
}

/// A cell that met every threshold judging it.
#[derive(Clone)]
struct Candidate {
    cell: String,
    reserved_cpu: f64,
    margin: Option<Margin>,
    thresholds_met: usize,
}

impl Candidate {
    /// See [`millis`].
    fn millis(&self) -> i64 {
        millis(self.reserved_cpu)
    }
}

/// A reservation in whole millicores, so that equal configurations compare equal.
fn millis(cores: f64) -> i64 {
    (cores * 1000.0).round() as i64
}

/// The wider margin first; a cell without a measurable margin after one with a margin.
fn by_margin(a: &Option<Margin>, b: &Option<Margin>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => b.headroom.total_cmp(&a.headroom),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Names the configuration that meets every threshold for the least reserved CPU (CPU limit
/// times replicas), equal reservations decided by the wider [`margin`] and then by the order
/// of the matrix. `results` are [`crate::engine::verdict::judge::evaluate`]'s verdicts; empty means the run
/// had no thresholds, and then nothing is recommended (see `trades`).
///
/// A cell qualifies when it succeeded, at least one threshold judged it and every verdict on
/// it passed (a cell no threshold names is not known to meet the service level), no figure
/// those verdicts rest on is unstable over the repetitions, and its reservation is recorded.
/// The CPU it used plays no part. A run whose cells searched for their capacity is
/// recommended by `capacity::recommend` instead.
pub fn recommend(cells: &[CellStatus], results: &[ThresholdResult]) -> Recommendation {
    if let Some(ranking) = crate::engine::capacity::rank::rank(cells) {
        return capacity::recommend(ranking, results);
    }
    if results.is_empty() {
        return trades::without_service_level(cells);
    }
    let mut qualified: Vec<Candidate> = Vec::new();
    let mut passed_over = Vec::new();
    for cell in cells {
        let verdicts: Vec<&ThresholdResult> =
            results.iter().filter(|r| r.cell == cell.name).collect();
        match qualify(cell, &verdicts) {
            Ok(candidate) => qualified.push(candidate),
            Err(why) => passed_over.push((cell.name.clone(), why)),
        }
    }
    // Stable sort: at an equal reservation and margin the earlier cell in the matrix wins.
    qualified.sort_by(|a, b| {
        a.millis()
            .cmp(&b.millis())
            .then_with(|| by_margin(&a.margin, &b.margin))
    });
    let Some((best, rest)) = qualified.split_first() else {
        return Recommendation::none(
            true,
            passed_over,
            "No configuration meets every threshold with stable figures, so none is \
             recommended."
                .to_owned(),
        );
    };
    let alternatives = alternatives(best, rest);
    let thresholds_in_run = results
        .iter()
        .map(|r| r.index)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let sentence = sentence(best, rest, &alternatives, thresholds_in_run);
    Recommendation {
        cell: Some(best.cell.clone()),
        reserved_cpu: Some(best.reserved_cpu),
        margin: best.margin.clone(),
        service_level: true,
        thresholds_met: best.thresholds_met,
        alternatives,
        passed_over,
        sentence,
    }
}

/// `cell` as a candidate when it qualifies on its `verdicts` (see [`recommend`]), else why it
/// does not.
fn qualify(cell: &CellStatus, verdicts: &[&ThresholdResult]) -> Result<Candidate, String> {
    if cell.phase != CellPhase::Succeeded {
        Err(format!("it did not succeed ({})", cell.phase))
    } else if verdicts.is_empty() {
        Err("no threshold judges it".to_owned())
    } else if let Some(failed) = verdicts.iter().find(|r| r.verdict == Verdict::Fail) {
        Err(format!("it fails {}", failed.threshold))
    } else if let Some(shaky) = verdicts.iter().find(|r| r.unstable) {
        Err(format!(
            "its figure for {} is unstable over the repetitions",
            shaky.threshold
        ))
    } else if let Some(reserved_cpu) = cell.reserved_cpu {
        Ok(Candidate {
            cell: cell.name.clone(),
            reserved_cpu,
            margin: margin(verdicts),
            thresholds_met: verdicts.len(),
        })
    } else {
        Err("its reserved CPU is not recorded (cells[].reservedCpu)".to_owned())
    }
}

/// The qualifying cells after `best`, as they rank (`rest`), each with how much less `best`
/// reserves.
fn alternatives(best: &Candidate, rest: &[Candidate]) -> Vec<Alternative> {
    rest.iter()
        .map(|c| Alternative {
            cell: c.cell.clone(),
            reserved_cpu: c.reserved_cpu,
            percent_less: if c.reserved_cpu > 0.0 {
                (c.reserved_cpu - best.reserved_cpu) / c.reserved_cpu * 100.0
            } else {
                0.0
            },
            margin: c.margin.clone(),
        })
        .collect()
}

/// The recommendation in one line: the cell, its reservation, the cells it ties with (and the
/// margins that decided) or the cells it reserves less than (and its own margin).
fn sentence(
    best: &Candidate,
    rest: &[Candidate],
    alternatives: &[Alternative],
    thresholds_in_run: usize,
) -> String {
    // Each threshold judges a cell at most once, so `thresholds_met` counts thresholds.
    let which = match (
        best.thresholds_met,
        best.thresholds_met == thresholds_in_run,
    ) {
        (1, true) => "the only threshold".to_owned(),
        (n, true) => format!("all {n} thresholds"),
        (1, false) => "the 1 threshold that applies to it".to_owned(),
        (n, false) => format!("all {n} thresholds that apply to it"),
    };
    let tied = rest
        .iter()
        .take_while(|c| c.millis() == best.millis())
        .count();
    let costlier: Vec<String> = alternatives[tied..]
        .iter()
        .map(|a| {
            format!(
                "{:.0}% less than {} ({})",
                a.percent_less,
                a.cell,
                cpus(a.reserved_cpu)
            )
        })
        .collect();
    let mut head = format!(
        "{} meets {which} with the smallest CPU reservation (CPU limit x replicas), {}",
        best.cell,
        cpus(best.reserved_cpu)
    );
    if tied == 0 {
        if costlier.is_empty() {
            return format!(
                "{head}, the only configuration that does; its margin, the least headroom on \
                 any of its thresholds, is {}.",
                margin_text(&best.margin)
            );
        }
        head.push_str(": ");
        let tail = format!(
            "; its margin, the least headroom on any of its thresholds, is {}.",
            margin_text(&best.margin)
        );
        return bounded(&head, &costlier, ", ", &tail);
    }
    let names: Vec<&str> = rest[..tied].iter().map(|c| c.cell.as_str()).collect();
    let against: Vec<String> = rest[..tied]
        .iter()
        .map(|c| format!("{} {}", c.cell, margin_text(&c.margin)))
        .collect();
    let equal = by_margin(&best.margin, &rest[0].margin) == Ordering::Equal;
    head.push_str(&format!(
        ", as {} {}; of these it has the widest margin, the least headroom on any of a cell's \
         thresholds: {}{}, against ",
        if names.len() == 1 { "does" } else { "do" },
        names.join(", "),
        margin_text(&best.margin),
        if equal {
            " (equal to the next: it comes first in the matrix)"
        } else {
            ""
        }
    ));
    let mut s = bounded(&head, &against, ", ", "");
    if !costlier.is_empty() {
        s = bounded(&format!("{s}; it reserves "), &costlier, ", ", "");
    }
    s.push('.');
    s
}

/// A margin as the sentence shows it: "23% (mixed/fast p99 below 100ms)".
fn margin_text(margin: &Option<Margin>) -> String {
    match margin {
        Some(m) => format!("{} ({})", percent(m.headroom), m.threshold),
        None => "no measurable margin".to_owned(),
    }
}

/// A fraction as a percentage: whole percent from 10%, one decimal below.
fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p.abs() >= 10.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// Cores as the sentence shows them: "1 CPU", "0.5 CPU", "2 CPUs", "1.998 CPUs".
pub(crate) fn cpus(cores: f64) -> String {
    let text = format!("{cores:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    let unit = if cores <= 1.0 { "CPU" } else { "CPUs" };
    format!("{text} {unit}")
}

/// `head`, then as many of `parts` (joined by `sep`) as keep the whole within the status's
/// sentence limit, then "and N more" for the rest, then `tail`. So a large matrix ends its
/// sentence cleanly rather than being cut off mid-word by the status bound.
fn bounded(head: &str, parts: &[String], sep: &str, tail: &str) -> String {
    let mut out = head.to_owned();
    for (i, part) in parts.iter().enumerate() {
        let joined = if i == 0 {
            part.clone()
        } else {
            format!("{sep}{part}")
        };
        let left = parts.len() - i - 1;
        // Room for this part, the note about the parts after it, and the tail.
        let note = if left > 0 {
            format!("{sep}and {left} more")
        } else {
            String::new()
        };
        if json_len(&out) + json_len(&joined) + json_len(&note) + json_len(tail) > SENTENCE_MAX {
            out.push_str(&format!(
                "{}and {} more",
                if i == 0 { "" } else { sep },
                parts.len() - i
            ));
            out.push_str(tail);
            return out;
        }
        out.push_str(&joined);
    }
    out.push_str(tail);
    out
}
