//! The report's charts from a status: p99 per configuration for each phase and endpoint,
//! throughput per configuration, and each endpoint's p99 second by second. A repeated cell's
//! bars are its medians with each repetition's value on them; the latency-over-time chart
//! says which repetition it shows.

use super::{RawCell, phase_endpoints, result_of, svg};
use crate::engine::results::noise::{RPS, figure_key};
use crate::resource::status::Percentile;
use crate::resource::{BenchmarkRunStatus, CellResult};

/// Each repetition's value of figure `key` of `r`, in the order measured; empty when the cell
/// ran once.
fn repetition_values(r: Option<&CellResult>, key: &str) -> Vec<f64> {
    r.and_then(|r| crate::engine::results::trust::figure(r, key))
        .map(|f| f.values.clone())
        .unwrap_or_default()
}

/// Chart files for a status: (file name, SVG text). A capacity run gets its answer (held
/// rate per configuration, a hockey stick per cell) instead of the p99 bars: each cell's p99
/// there is measured at its own held rate, a comparison that says nothing.
pub fn charts(status: &BenchmarkRunStatus, raw: &[RawCell]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let searched = status.cells.iter().any(|c| c.capacity.is_some());
    if searched {
        out.extend(super::capacity_chart::chart(status));
        for c in &status.cells {
            if let Some(cap) = c.capacity.as_ref().filter(|cap| !cap.probes.is_empty()) {
                out.push((
                    format!("capacity-{}.svg", file_part(&c.name)),
                    super::hockey::hockey_stick(&c.name, cap),
                ));
            }
        }
    } else {
        out.extend(p99_charts(status));
        out.extend(throughput_charts(status));
    }
    out.extend(super::sizing_map::chart(status));
    out.extend(super::forest::variants_chart(status, None));
    out.extend(latency_over_time(raw));
    out
}

/// Why `cell` has no bar for (phase, endpoint): failed, too few samples, no latency.
fn missing_reason(
    cell: &crate::resource::CellStatus,
    r: Option<&CellResult>,
    p99: bool,
) -> Option<String> {
    if cell.phase == crate::resource::CellPhase::Failed {
        return Some(format!(
            "failed: {}",
            cell.reason.as_deref().unwrap_or("see report")
        ));
    }
    let r = r?;
    if r.latency_ms.is_none() {
        return Some("no successful request".into());
    }
    (p99 && !r.supports(Percentile::P99)).then(|| {
        format!(
            "too few samples: {} of {}",
            r.samples,
            Percentile::P99.min_samples()
        )
    })
}

/// p99 per configuration, one chart per phase and endpoint.
fn p99_charts(status: &BenchmarkRunStatus) -> Vec<(String, String)> {
    let series: Vec<String> = status.cells.iter().map(|c| c.name.clone()).collect();
    let mut out = Vec::new();
    for (phase, endpoint) in phase_endpoints(status) {
        let results: Vec<Option<&CellResult>> = status
            .cells
            .iter()
            .map(|c| result_of(status, &c.name, &phase, &endpoint))
            .collect();
        // Only a p99 its samples support gets a bar: a bar looks like a measurement.
        let supported: Vec<Option<&CellResult>> = results
            .iter()
            .map(|r| r.filter(|r| r.supports(Percentile::P99)))
            .collect();
        let group = svg::BarGroup {
            label: format!("{phase} / {endpoint}"),
            values: supported
                .iter()
                .map(|r| Some(r.as_ref()?.latency_ms?.p99))
                .collect(),
            repetitions: supported
                .iter()
                .map(|r| repetition_values(*r, figure_key(Percentile::P99)))
                .collect(),
            missing: status
                .cells
                .iter()
                .zip(&results)
                .map(|(c, r)| missing_reason(c, *r, true))
                .collect(),
        };
        out.push((
            format!("p99-{}-{}.svg", file_part(&phase), file_part(&endpoint)),
            svg::bar_chart(
                &format!("p99 latency, {endpoint} in phase {phase} (lower is better)"),
                "p99 latency (ms)",
                &series,
                &[group],
            ),
        ));
    }
    out
}

/// Throughput per configuration, one chart per phase (its endpoints side by side): phases
/// offer different loads, so their rates do not share an axis.
fn throughput_charts(status: &BenchmarkRunStatus) -> Vec<(String, String)> {
    let series: Vec<String> = status.cells.iter().map(|c| c.name.clone()).collect();
    let pairs = phase_endpoints(status);
    let mut phases: Vec<&str> = Vec::new();
    for (p, _) in &pairs {
        if !phases.contains(&p.as_str()) {
            phases.push(p);
        }
    }
    phases
        .into_iter()
        .map(|phase| {
            let groups: Vec<svg::BarGroup> = pairs
                .iter()
                .filter(|(p, _)| p == phase)
                .map(|(_, endpoint)| {
                    let results: Vec<Option<&CellResult>> = status
                        .cells
                        .iter()
                        .map(|c| result_of(status, &c.name, phase, endpoint))
                        .collect();
                    svg::BarGroup {
                        values: results.iter().map(|r| r.map(|r| r.rps)).collect(),
                        repetitions: results.iter().map(|r| repetition_values(*r, RPS)).collect(),
                        missing: status
                            .cells
                            .iter()
                            .zip(&results)
                            .map(|(c, r)| missing_reason(c, *r, false))
                            .collect(),
                        label: endpoint.clone(),
                    }
                })
                .collect();
            (
                format!("throughput-{}.svg", file_part(phase)),
                svg::bar_chart(
                    &format!("Throughput per configuration in phase {phase} (higher is better)"),
                    "requests per second",
                    &series,
                    &groups,
                ),
            )
        })
        .collect()
}

/// Each endpoint's p99 second by second, one line per cell from the repetition `raw` holds
/// of it; the title says which.
fn latency_over_time(raw: &[RawCell]) -> Vec<(String, String)> {
    let mut endpoints: Vec<String> = Vec::new();
    for r in raw {
        for p in &r.result.phases {
            for s in &p.streams {
                if !endpoints.contains(&s.endpoint) {
                    endpoints.push(s.endpoint.clone());
                }
            }
        }
    }
    let which = which_repetition(raw);
    let mut out = Vec::new();
    for endpoint in endpoints {
        let mut lines = Vec::new();
        let mut markers = Vec::new();
        for r in raw {
            let mut offset = 0.0;
            let mut points = Vec::new();
            for p in &r.result.phases {
                if lines.is_empty() {
                    markers.push((offset, p.name.clone()));
                }
                if let Some(s) = p.streams.iter().find(|s| s.endpoint == endpoint) {
                    points.extend(
                        s.timeline
                            .iter()
                            // Seconds with a success; the others have no latency.
                            .filter(|t| t.requests > t.errors)
                            .map(|t| (offset + f64::from(t.second) + 0.5, t.p99_ms)),
                    );
                }
                offset += p.duration_secs;
            }
            let label = match (&which, r.repetition) {
                // Cells at different repetitions each say theirs.
                (Which::Each, Some((k, n))) => format!("{} (rep {k}/{n})", r.cell),
                _ => r.cell.clone(),
            };
            lines.push(svg::Line { label, points });
        }
        let of = match &which {
            Which::Once => String::new(),
            Which::Same(k, n) => format!(", repetition {k} of {n}"),
            Which::Each => ", each cell's latest repetition".into(),
        };
        out.push((
            format!("latency-over-time-{}.svg", file_part(&endpoint)),
            svg::line_chart(
                &format!("p99 latency of {endpoint}, second by second{of}"),
                "p99 of the second (ms, log scale)",
                &lines,
                &markers,
            ),
        ));
    }
    out
}

/// Which repetition the timelines of `raw` are from.
#[derive(Debug, Clone, PartialEq)]
enum Which {
    /// The cells ran once.
    Once,
    /// Every cell's repetition `k` of `n`.
    Same(u32, u32),
    /// Cells at different (or unknown) repetitions: each cell's latest.
    Each,
}

fn which_repetition(raw: &[RawCell]) -> Which {
    let reps: Vec<Option<(u32, u32)>> = raw.iter().map(|r| r.repetition).collect();
    match reps.first() {
        None | Some(None) if reps.iter().all(Option::is_none) => Which::Once,
        Some(Some((k, n))) if reps.iter().all(|r| *r == Some((*k, *n))) => Which::Same(*k, *n),
        _ => Which::Each,
    }
}

/// A file-name-safe version of a phase or endpoint name.
pub fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
