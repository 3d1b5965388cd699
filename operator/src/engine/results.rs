//! From a load generator's result document to a cell's status, and from the cells to the run's
//! summary.
//!
//! Pure, and shared by the operator and the local runner, so both write the same figures.
//! Percentiles are never averaged here: a cell's document is already exact (several load
//! generators are merged histogram by histogram in the loadgen crate before this runs).
//! Which figures may be ranked is decided in [`trust`].

pub mod figure;
pub mod noise;
pub mod paired;
pub mod precision;
pub mod repeat;
pub mod trust;
pub mod until_precise;
pub mod variants;

use std::collections::BTreeMap;

use benchmatrix_loadgen::result::{RunResult, StatsSnapshot};

use crate::resource::status::Percentile;
use crate::resource::status::SOURCE_TARGET;
use crate::resource::{
    CellPhase, CellRatio, CellResult, CellStatus, Comparison, Interference, ReplicaPhaseShare,
    ReplicaShare, Summary, TargetStats,
};
use trust::{Exclusion, RANKED};

/// One status entry per phase and endpoint of the document, in document order.
pub fn cell_results(result: &RunResult) -> Vec<CellResult> {
    result
        .phases
        .iter()
        .flat_map(|phase| {
            phase.streams.iter().map(move |s| {
                let samples = s.samples();
                CellResult {
                    phase: phase.name.clone(),
                    endpoint: s.endpoint.clone(),
                    requests: s.requests,
                    errors: s.errors,
                    samples,
                    rps: finite(s.rps),
                    latency_ms: s.latency_ms.filter(|_| samples > 0),
                    unsupported_percentiles: Percentile::unsupported_by(samples),
                    spread: None,
                }
            })
        })
        .collect()
}

/// Each stream's latency histogram as the load generator wrote it, keyed "phase/endpoint" (see
/// [`histogram_key`](crate::resource::status::histogram_key)), for merging a cell's repetitions exactly.
pub fn histograms(result: &RunResult) -> std::collections::BTreeMap<String, String> {
    result
        .phases
        .iter()
        .flat_map(|phase| {
            phase.streams.iter().map(move |s| {
                (
                    crate::resource::status::histogram_key(&phase.name, &s.endpoint),
                    s.histogram.clone(),
                )
            })
        })
        .filter(|(_, h)| !h.is_empty())
        .collect()
}

/// What the target reported about itself over the run, from the per-phase `/stats` snapshots.
///
/// Sums are over replicas (memory, CPU seconds, throttling are per process); the quota fields
/// are per replica and taken from the first replica that reported them. `None` when the
/// target offered no `/stats` at all.
pub fn target_stats(result: &RunResult) -> Option<TargetStats> {
    // Per replica address: its first and last snapshot, its peak RSS, its CPU seconds.
    #[derive(Default)]
    struct Replica<'a> {
        first: Option<&'a StatsSnapshot>,
        last: Option<&'a StatsSnapshot>,
        peak_rss: Option<f64>,
        cpu_seconds: Option<f64>,
        phases: Vec<ReplicaPhaseShare>,
    }
    let mut replicas: BTreeMap<&str, Replica<'_>> = BTreeMap::new();
    for phase in &result.phases {
        for r in &phase.target_stats {
            let entry = replicas.entry(r.address.as_str()).or_default();
            for snap in [r.start.as_ref(), r.end.as_ref()].into_iter().flatten() {
                entry.first.get_or_insert(snap);
                entry.last = Some(snap);
                if let Some(peak) = snap.rss_peak_bytes.or(snap.rss_bytes) {
                    entry.peak_rss = Some(entry.peak_rss.map_or(peak, |p: f64| p.max(peak)));
                }
            }
            if let Some(cpu) = r.cpu_seconds_in_phase {
                entry.cpu_seconds = Some(entry.cpu_seconds.unwrap_or(0.0) + cpu);
            }
            entry.phases.push(ReplicaPhaseShare {
                phase: phase.name.clone(),
                cpu_seconds_used: r.cpu_seconds_in_phase,
                requests_served: r.requests_served_in_phase,
            });
        }
    }
    replicas.retain(|_, r| r.first.is_some());
    if replicas.is_empty() {
        return None;
    }
    let any = |f: fn(&StatsSnapshot) -> Option<f64>| {
        replicas.values().filter_map(|r| r.first.and_then(f)).next()
    };
    let sum = |f: &dyn Fn(&Replica<'_>) -> Option<f64>| -> Option<f64> {
        let values: Vec<f64> = replicas.values().filter_map(f).collect();
        (!values.is_empty()).then(|| values.iter().sum())
    };
    let counter_delta = |f: fn(&StatsSnapshot) -> Option<f64>| {
        sum(&|r: &Replica<'_>| Some(f(r.last?)? - f(r.first?)?))
    };
    Some(TargetStats {
        replicas: Some(replicas.len() as u32),
        host_cpus: any(|s| s.host_cpus).map(|v| v.round() as u32),
        detected_cpus: any(|s| s.detected_cpus).map(|v| v.round() as u32),
        cpu_quota: any(|s| s.cpu_quota),
        quota_source: replicas
            .values()
            .filter_map(|r| r.first.and_then(|s| s.quota_source.clone()))
            .next(),
        mode: replicas
            .values()
            .filter_map(|r| r.first.and_then(|s| s.mode.clone()))
            .next(),
        pool_size: any(|s| s.pool_size).map(|v| v.round() as u32),
        idle_rss_bytes: sum(&|r: &Replica<'_>| r.first?.rss_bytes).map(|v| v.round() as u64),
        peak_rss_bytes: sum(&|r: &Replica<'_>| r.peak_rss).map(|v| v.round() as u64),
        cpu_seconds_used: sum(&|r: &Replica<'_>| r.cpu_seconds),
        throttled_periods: counter_delta(|s| s.throttled_periods).map(|v| v.max(0.0) as u64),
        throttled_seconds: counter_delta(|s| s.throttled_seconds).map(|v| v.max(0.0)),
        source: Some(SOURCE_TARGET.into()),
        // Only worth a table when several replicas each answered on their own address.
        per_replica: if replicas.len() > 1 {
            replicas
                .iter()
                .map(|(address, r)| ReplicaShare {
                    replica: (*address).to_owned(),
                    phases: r.phases.clone(),
                })
                .collect()
        } else {
            Vec::new()
        },
        ..TargetStats::default()
    })
}

/// The comparison across cells: per phase and endpoint the best cell by p99 and every cell's
/// ratio to it; per cell the interference ratio of each endpoint measured alone and mixed; and
/// the streams that need a longer phase.
///
/// Only Succeeded cells take part, and only streams that [`trust`] ranks decide the best cell
/// or carry a ratio; the others are listed with the reason they were not ranked. When the
/// cells were repeated, a cell whose p99 does not differ from the best's ([`noise::differ`])
/// is marked `withinNoiseOf` instead of being ranked against it; cells run once are ranked
/// as measured.
pub fn summarize(cells: &[CellStatus]) -> Summary {
    // A searched cell's results are its confirmation probe at the rate it held, which differs
    // from cell to cell: its latencies are not comparable with another cell's, so capacity
    // ranks it instead (`engine::capacity::rank`).
    let measured: Vec<&CellStatus> = cells
        .iter()
        .filter(|c| c.phase == CellPhase::Succeeded && c.capacity.is_none())
        .collect();

    // (phase, endpoint) pairs in the order they first appear.
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for cell in &measured {
        for r in &cell.results {
            let key = (r.phase.as_str(), r.endpoint.as_str());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }

    let comparisons = keys
        .into_iter()
        .map(|(phase, endpoint)| compare(&measured, phase, endpoint))
        .collect();

    let mut interference = Vec::new();
    let mut needs_longer_phase = Vec::new();
    for cell in &measured {
        interference.extend(cell_interference(cell));
        for r in &cell.results {
            if let Some(e) = trust::exclusion(r).filter(|e| e.needs_longer_phase()) {
                let mut line = format!("{} {}/{}: {e}", cell.name, r.phase, r.endpoint);
                if let Some(secs) = trust::seconds_for_enough_samples(r) {
                    line.push_str(&format!(
                        " (a phase of about {:.0} s at {:.1}/s)",
                        secs.ceil(),
                        r.rps
                    ));
                }
                needs_longer_phase.push(line);
            }
        }
    }
    Summary {
        comparisons,
        interference,
        needs_longer_phase,
        recommendation: None,
    }
}

/// The cells measured on (phase, endpoint): the best among the ranked ones and each cell's
/// ratio to it, or the reason it was not ranked.
fn compare(measured: &[&CellStatus], phase: &str, endpoint: &str) -> Comparison {
    let entries: Vec<(&str, &CellResult, Result<f64, Exclusion>)> = measured
        .iter()
        .filter_map(|c| {
            c.results
                .iter()
                .find(|r| r.phase == phase && r.endpoint == endpoint)
                .map(|r| (c.name.as_str(), r, trust::ranked_p99(r)))
        })
        .collect();
    // Lowest p99 wins; ties go to the higher throughput, then to the earlier cell.
    let best = entries
        .iter()
        .filter_map(|(cell, r, p99)| Some((*cell, *r, *p99.as_ref().ok()?)))
        .reduce(|a, b| {
            if b.2 < a.2 || (b.2 == a.2 && b.1.rps > a.1.rps) {
                b
            } else {
                a
            }
        });
    let within_noise = best
        .map(|(best_cell, b, _)| within_noise_of_best(&entries, best_cell, b))
        .unwrap_or_default();
    Comparison {
        phase: phase.to_owned(),
        endpoint: endpoint.to_owned(),
        best_cell: best.map(|(cell, _, _)| cell.to_owned()),
        cells: entries
            .iter()
            .map(|(cell, r, p99)| {
                let ranked = match (p99, best) {
                    (Ok(p99), Some((_, b, best_p99))) => Some((*p99, b, best_p99)),
                    _ => None,
                };
                let within_noise_of = match best {
                    Some((best_cell, _, _)) if best_cell == *cell => {
                        within_noise.first().map(|c| (*c).to_owned())
                    }
                    Some((best_cell, _, _)) if within_noise.contains(cell) => {
                        Some(best_cell.to_owned())
                    }
                    _ => None,
                };
                CellRatio {
                    within_noise_of,
                    cell: (*cell).to_owned(),
                    samples: r.samples,
                    p99_ms: r.latency_ms.map(|l| l.get(RANKED)),
                    p99_ratio: ranked.map(|(p99, _, best_p99)| ratio(p99, best_p99)),
                    rps: r.rps,
                    rps_ratio: ranked.map(|(_, b, _)| ratio(r.rps, b.rps)),
                    excluded: p99.as_ref().err().map(ToString::to_string),
                }
            })
            .collect(),
    }
}

/// The ranked cells other than the best whose p99 does not differ from the best's over the
/// repetitions (see [`noise::differ`]), in matrix order. Empty when the cells ran once: a
/// single run has no spread to judge by, and is ranked as measured.
fn within_noise_of_best<'a>(
    entries: &[(&'a str, &CellResult, Result<f64, Exclusion>)],
    best_cell: &str,
    best: &CellResult,
) -> Vec<&'a str> {
    let key = noise::figure_key(RANKED);
    let Some(best_values) = trust::figure(best, key).map(|s| &s.values) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|(cell, _, p99)| *cell != best_cell && p99.is_ok())
        .filter_map(|(cell, r, _)| {
            let values = &trust::figure(r, key)?.values;
            let d = noise::differ(best_values, values, true, noise::MIN_PRACTICAL_CHANGE);
            (d.direction == noise::Direction::WithinNoise).then_some(*cell)
        })
        .collect()
}

/// For one cell: each endpoint that ran alone in some phase ("solo") and alongside other
/// endpoints in a later phase ("mixed"): mixed p99 over solo p99, when both are ranked.
fn cell_interference(cell: &CellStatus) -> Vec<Interference> {
    let mut phases: Vec<(&str, Vec<&CellResult>)> = Vec::new();
    for r in &cell.results {
        match phases.iter_mut().find(|(p, _)| *p == r.phase) {
            Some((_, rs)) => rs.push(r),
            None => phases.push((r.phase.as_str(), vec![r])),
        }
    }
    let mut out = Vec::new();
    for (i, (solo_phase, solo)) in phases.iter().enumerate() {
        let [alone] = solo.as_slice() else { continue };
        let mixed = phases[i + 1..].iter().find_map(|(p, rs)| {
            (rs.len() > 1)
                .then(|| rs.iter().find(|r| r.endpoint == alone.endpoint))
                .flatten()
                .map(|r| (*p, *r))
        });
        let Some((mixed_phase, m)) = mixed else {
            continue;
        };
        let (ratio, excluded) = match (trust::ranked_p99(alone), trust::ranked_p99(m)) {
            (Ok(solo), Ok(mixed)) => (Some(ratio(mixed, solo)), None),
            (Err(e), _) => (None, Some(format!("solo: {e}"))),
            (_, Err(e)) => (None, Some(format!("mixed: {e}"))),
        };
        out.push(Interference {
            cell: cell.name.clone(),
            endpoint: alone.endpoint.clone(),
            solo_phase: (*solo_phase).to_owned(),
            mixed_phase: mixed_phase.to_owned(),
            solo_p99_ms: alone.latency_ms.map(|l| l.get(RANKED)),
            mixed_p99_ms: m.latency_ms.map(|l| l.get(RANKED)),
            ratio,
            excluded,
        });
    }
    out
}

/// One line for `kubectl get`: the best cell of the last phase's first endpoint, e.g.
/// `mixed/fast: pool-x1 p99 3.1ms (single-x1 11.2x)` naming the worst ranked cell's ratio
/// too; `mixed/fast: no cell ranked (...)` when none of them could be.
pub fn headline(summary: &Summary) -> Option<String> {
    let last_phase = summary.comparisons.last()?.phase.clone();
    let cmp = summary.comparisons.iter().find(|c| c.phase == last_phase)?;
    let Some(best_cell) = &cmp.best_cell else {
        let short_of_samples = cmp.cells.iter().all(|c| {
            let stream = format!("{} {}/{}: ", c.cell, cmp.phase, cmp.endpoint);
            summary
                .needs_longer_phase
                .iter()
                .any(|l| l.starts_with(&stream))
        });
        let unstable = cmp.cells.iter().all(|c| {
            c.excluded
                .as_deref()
                .is_some_and(|e| e.starts_with("unstable over repetitions"))
        });
        let why = if short_of_samples {
            "too few samples: run the phase longer"
        } else if unstable {
            "unstable over repetitions: repeat more or lengthen the phase"
        } else {
            "too few samples or too many errors"
        };
        return Some(format!(
            "{}/{}: no cell ranked ({why})",
            cmp.phase, cmp.endpoint
        ));
    };
    let best = cmp.cells.iter().find(|c| &c.cell == best_cell)?;
    // The best and the cells within noise of it: no winner among them.
    let tied: Vec<&CellRatio> = cmp
        .cells
        .iter()
        .filter(|c| &c.cell == best_cell || c.within_noise_of.as_ref() == Some(best_cell))
        .collect();
    let mut line = if tied.len() > 1 {
        let figures: Vec<String> = tied
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let p99 = round_sig(c.p99_ms?);
                Some(if i == 0 {
                    format!("{} p99 {p99}ms", c.cell)
                } else {
                    format!("{} {p99}ms", c.cell)
                })
            })
            .collect();
        format!(
            "{}/{}: no clear winner, within noise: {}",
            cmp.phase,
            cmp.endpoint,
            figures.join(", ")
        )
    } else {
        format!(
            "{}/{}: {} p99 {}ms",
            cmp.phase,
            cmp.endpoint,
            best_cell,
            round_sig(best.p99_ms?)
        )
    };
    if let Some((worst, worst_ratio)) = cmp
        .cells
        .iter()
        .filter_map(|c| Some((c, c.p99_ratio?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .filter(|(w, _)| !tied.iter().any(|t| t.cell == w.cell))
    {
        line.push_str(&format!(" ({} {}x)", worst.cell, round_sig(worst_ratio)));
    }
    Some(line)
}

/// `a / b`, defined as 1.0 when both are zero and capped where `b` is zero (a JSON document
/// cannot carry infinity).
fn ratio(a: f64, b: f64) -> f64 {
    const CAP: f64 = 1e9;
    if b > 0.0 {
        finite(a / b)
    } else if a > 0.0 {
        CAP
    } else {
        1.0
    }
}

/// NaN and infinity become 0 (status documents are JSON).
fn finite(v: f64) -> f64 {
    if v.is_finite() { v } else { 0.0 }
}

/// Three significant figures, for the headline.
fn round_sig(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests;
