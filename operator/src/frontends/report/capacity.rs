//! The capacity search's results (`spec.capacity`): per cell the rate held, the rate failed,
//! what limited it and the capacity per reserved CPU, then every probe; in report.md and in the
//! lines a finished run prints.

use std::fmt::Write;

use crate::engine::capacity::probe::rate_text;
use crate::resource::BenchmarkRunStatus;
use crate::resource::capacity::{CapacityStatus, ProbeStatus};
use crate::resource::thresholds::figure_text;

/// Cells that searched, with their search.
fn searched(status: &BenchmarkRunStatus) -> Vec<(&str, Option<f64>, &CapacityStatus)> {
    status
        .cells
        .iter()
        .filter_map(|c| Some((c.name.as_str(), c.reserved_cpu, c.capacity.as_ref()?)))
        .collect()
}

fn rate(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{} rps", rate_text(r)))
}

/// The capacity, or why there is none, in a table cell.
pub(super) fn capacity_text(cap: &CapacityStatus) -> String {
    match (cap.found, cap.held_rate) {
        (true, Some(h)) => match (cap.held_rate_low, cap.held_rate_high) {
            (Some(low), Some(high)) => format!(
                "{} rps ({}–{} over {} rounds)",
                rate_text(h),
                rate_text(low),
                rate_text(high),
                cap.rounds.len()
            ),
            _ => format!("{} rps", rate_text(h)),
        },
        _ if cap.searching() => "searching".into(),
        // Only a sizing check probed it (a rule-out): it was never searched.
        _ if cap.check.is_some() && cap.probes.iter().all(|p| p.check.is_some()) => {
            "not searched".into()
        }
        _ => "none found".into(),
    }
}

/// Requests per second held per reserved core, where a capacity was found.
fn per_cpu(cap: &CapacityStatus, reserved: Option<f64>) -> Option<f64> {
    let held = cap.held_rate.filter(|_| cap.found)?;
    let cores = reserved.filter(|c| *c > 0.0)?;
    Some(held / cores)
}

/// The lines a finished run prints about its searches: one per cell.
pub fn closing_lines(status: &BenchmarkRunStatus) -> Vec<String> {
    let cells = searched(status);
    if cells.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![String::new(), "capacity at the SLO:".to_owned()];
    for (name, reserved, cap) in cells {
        let per = per_cpu(cap, reserved)
            .map(|p| format!(", {p:.1} rps per reserved CPU"))
            .unwrap_or_default();
        lines.push(format!(
            "  {name}: {}{per} — {}",
            capacity_text(cap),
            said(cap)
        ));
    }
    lines
}

/// What a cell's search said, or for a cell that only a sizing check probed (a rule-out
/// probe, with no search of its own), what the check said.
fn said(cap: &CapacityStatus) -> &str {
    match &cap.check {
        Some(check) if cap.message.is_empty() => &check.message,
        _ => &cap.message,
    }
}

/// The report's Capacity section: a table of the cells, then each cell's probes.
pub fn render(status: &BenchmarkRunStatus) -> String {
    let cells = searched(status);
    if cells.is_empty() {
        return String::new();
    }
    let mut o = String::new();
    let _ = writeln!(o, "\n## Capacity at the SLO\n");
    let _ = writeln!(
        o,
        "The highest total rate each cell held at spec.capacity.slo: the rate held (confirmed \
         by a second probe), the lowest rate that failed, and what failed there. Each probe is \
         one open-loop phase, on the previous probe's target after a settle or on a fresh one \
         (column target). With spec.repeat each round is a whole search on a fresh target; the \
         capacity is the median of the rounds' held rates, with the 95% interval of that \
         median.\n"
    );
    let _ = writeln!(
        o,
        "| cell | capacity | held | failed | per reserved CPU | limited by | probes |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|");
    for (name, reserved, cap) in &cells {
        let _ = writeln!(
            o,
            "| {name} | {} | {} | {} | {} | {} | {} |",
            capacity_text(cap),
            rate(cap.held_rate),
            rate(cap.failed_rate),
            per_cpu(cap, *reserved).map_or("-".into(), |p| format!("{p:.1} rps")),
            cap.limiting.as_deref().unwrap_or("-"),
            cap.probes.len()
        );
    }
    for (name, _, cap) in &cells {
        let _ = writeln!(o, "\n### {name}: {}\n", said(cap));
        for r in &cap.rounds {
            let _ = writeln!(
                o,
                "- round {}: {} (held {}, failed {}, {} probes)",
                r.round,
                if r.found { "capacity" } else { "no capacity" },
                rate(r.held_rate),
                rate(r.failed_rate),
                cap.probes_in_round(r.round)
            );
        }
        if !cap.rounds.is_empty() {
            let _ = writeln!(o);
        }
        let _ = writeln!(
            o,
            "| probe | target | rate | achieved | on time | backlog | SLO figures | verdict |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|---|---|---|");
        for p in &cap.probes {
            let _ = writeln!(o, "{}", probe_row(p));
        }
    }
    o
}

fn probe_row(p: &ProbeStatus) -> String {
    let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0));
    let figures: Vec<String> = p
        .figures
        .iter()
        .map(|f| {
            let metric = crate::resource::Metric::from_key(&f.figure);
            let shown = match (metric, f.measured) {
                (Some(m), Some(v)) => figure_text(m, v),
                _ => "none".into(),
            };
            let mark = if f.pass { "" } else { " ✗" };
            format!("{} {} {shown}{mark}", f.endpoint, f.figure)
        })
        .collect();
    let mut verdict = p.verdict.to_string();
    if p.close {
        verdict.push_str(" (close)");
    }
    if let Some(why) = &p.why {
        verdict.push_str(&format!(": {why}"));
    }
    // Which target the probe ran on: one deployed for it, or the last probe's, kept.
    let target = match p.settle_seconds {
        Some(s) => format!("kept, {s} s settle"),
        None => "fresh".into(),
    };
    let number = match p.round {
        Some(r) => format!("{} (round {r})", p.probe),
        None => p.probe.to_string(),
    };
    format!(
        "| {number} | {target} | {} rps | {:.1} rps | {} | {} | {} | {} |",
        rate_text(p.rate),
        p.achieved,
        pct(p.sent_on_time),
        pct(p.backlog),
        figures.join(", "),
        verdict
    )
}
