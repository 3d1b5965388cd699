//! From a load generator's result document to a cell's status, and from the cells to the run's
//! summary.
//!
//! Pure, and shared by the operator and the local runner, so both write the same figures.
//! Percentiles are never averaged here: a cell's document is already exact (several load
//! generators are merged histogram by histogram in the loadgen crate before this runs).
//! Which figures may be ranked is decided in [`trust`].

pub mod noise;
pub mod precision;
pub mod repeat;
pub mod trust;

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
    let measured: Vec<&CellStatus> = cells
        .iter()
        .filter(|c| c.phase == CellPhase::Succeeded)
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
mod tests {
    use super::*;
    use benchmatrix_loadgen::result::{LatencyMs, PhaseResult, ReplicaStats, StreamResult};

    fn lat(p99: f64) -> LatencyMs {
        LatencyMs {
            p50: p99 / 2.0,
            p90: p99 * 0.8,
            p99,
            p999: p99 * 1.2,
            max: p99 * 1.5,
            mean: p99 / 2.0,
        }
    }

    fn result(name: &str, endpoint: &str, p99: f64, rps: f64) -> CellResult {
        counts(
            CellResult {
                phase: name.into(),
                endpoint: endpoint.into(),
                rps,
                latency_ms: Some(lat(p99)),
                ..Default::default()
            },
            100,
            0,
        )
    }

    /// `r` with these request and error counts, and what follows from them.
    fn counts(r: CellResult, requests: u64, errors: u64) -> CellResult {
        let samples = requests - errors;
        CellResult {
            requests,
            errors,
            samples,
            latency_ms: r.latency_ms.filter(|_| samples > 0),
            unsupported_percentiles: Percentile::unsupported_by(samples),
            spread: None,
            ..r
        }
    }

    fn seeds_like() -> Vec<CellStatus> {
        vec![
            CellStatus::succeeded("single-x1").with_results(vec![
                result("fast-only", "fast", 10.0, 150.0),
                result("mixed", "fast", 400.0, 5.0),
                result("mixed", "slow", 800.0, 2.5),
            ]),
            CellStatus::succeeded("pool-x1").with_results(vec![
                result("fast-only", "fast", 10.0, 160.0),
                result("mixed", "fast", 20.0, 80.0),
                result("mixed", "slow", 900.0, 2.4),
            ]),
            CellStatus {
                name: "broken".into(),
                phase: CellPhase::Failed,
                ..Default::default()
            },
        ]
    }

    #[test]
    fn the_best_cell_has_the_lowest_p99_and_ratios_are_relative_to_it() {
        let summary = summarize(&seeds_like());
        assert_eq!(summary.comparisons.len(), 3);
        let mixed_fast = &summary.comparisons[1];
        assert_eq!(
            (mixed_fast.phase.as_str(), mixed_fast.endpoint.as_str()),
            ("mixed", "fast")
        );
        assert_eq!(mixed_fast.best_cell.as_deref(), Some("pool-x1"));
        let single = &mixed_fast.cells[0];
        assert_eq!(single.cell, "single-x1");
        assert!((single.p99_ratio.unwrap() - 20.0).abs() < 1e-9);
        assert!((single.rps_ratio.unwrap() - 5.0 / 80.0).abs() < 1e-9);
        // A failed cell takes no part.
        assert!(mixed_fast.cells.iter().all(|c| c.cell != "broken"));
    }

    #[test]
    fn ties_on_p99_go_to_the_higher_throughput() {
        let summary = summarize(&seeds_like());
        assert_eq!(summary.comparisons[0].best_cell.as_deref(), Some("pool-x1"));
    }

    #[test]
    fn interference_is_mixed_p99_over_solo_p99() {
        let summary = summarize(&seeds_like());
        let single = summary
            .interference
            .iter()
            .find(|i| i.cell == "single-x1")
            .unwrap();
        assert_eq!(single.endpoint, "fast");
        assert_eq!(
            (single.solo_phase.as_str(), single.mixed_phase.as_str()),
            ("fast-only", "mixed")
        );
        assert!((single.ratio.unwrap() - 40.0).abs() < 1e-9);
        let pool = summary
            .interference
            .iter()
            .find(|i| i.cell == "pool-x1")
            .unwrap();
        assert!((pool.ratio.unwrap() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn headline_names_the_best_and_the_worst_ratio() {
        let summary = summarize(&seeds_like());
        assert_eq!(
            headline(&summary).unwrap(),
            "mixed/fast: pool-x1 p99 20.0ms (single-x1 20.0x)"
        );
    }

    /// `r` as the median of repetitions whose p99 took `p99s` (the other figures steady).
    fn repeated(r: CellResult, p99s: &[f64]) -> CellResult {
        let spread = noise::spread_of(p99s);
        let mut figures = BTreeMap::new();
        figures.insert(
            noise::RPS.to_owned(),
            noise::spread_of(&vec![r.rps; p99s.len()]),
        );
        let latency = r.latency_ms.map(|l| LatencyMs {
            p99: spread.median,
            ..l
        });
        figures.insert("p99".to_owned(), spread);
        CellResult {
            latency_ms: latency,
            spread: Some(crate::resource::Spread {
                repetitions: p99s.len() as u32,
                figures,
                merged_latency_ms: None,
            }),
            ..r
        }
    }

    /// mixed/fast of three cells repeated five times: pool-x1 and pool-x2 overlap (exact
    /// Mann-Whitney p = 0.69), single-x1 is far slower in every repetition.
    fn repeated_cells(x1: &[f64], x2: &[f64]) -> Vec<CellStatus> {
        let stream = |p99s: &[f64], rps| repeated(result("mixed", "fast", 0.0, rps), p99s);
        vec![
            CellStatus::succeeded("single-x1")
                .with_results(vec![stream(&[400.0, 410.0, 395.0, 420.0, 405.0], 5.0)]),
            CellStatus::succeeded("pool-x1").with_results(vec![stream(x1, 80.0)]),
            CellStatus::succeeded("pool-x2").with_results(vec![stream(x2, 82.0)]),
        ]
    }

    const X1: [f64; 5] = [20.0, 23.0, 19.0, 22.0, 21.0];
    const X2: [f64; 5] = [21.5, 20.5, 22.5, 19.5, 24.0];

    #[test]
    fn cells_within_noise_are_not_ranked_against_each_other() {
        let summary = summarize(&repeated_cells(&X1, &X2));
        let cmp = &summary.comparisons[0];
        // The lowest median stays the reference of the ratios...
        assert_eq!(cmp.best_cell.as_deref(), Some("pool-x1"));
        let by = |name: &str| cmp.cells.iter().find(|c| c.cell == name).unwrap();
        // ...but it is no winner over pool-x2, and the headline names none.
        assert_eq!(by("pool-x2").within_noise_of.as_deref(), Some("pool-x1"));
        assert_eq!(by("pool-x1").within_noise_of.as_deref(), Some("pool-x2"));
        assert_eq!(by("single-x1").within_noise_of, None);
        let line = headline(&summary).unwrap();
        assert_eq!(
            line,
            "mixed/fast: no clear winner, within noise: pool-x1 p99 21.0ms, pool-x2 21.5ms \
             (single-x1 19.3x)"
        );
    }

    #[test]
    fn a_difference_beyond_the_noise_is_ranked() {
        let far: Vec<f64> = X2.iter().map(|v| v * 1.5).collect();
        let summary = summarize(&repeated_cells(&X1, &far));
        let cmp = &summary.comparisons[0];
        assert_eq!(cmp.best_cell.as_deref(), Some("pool-x1"));
        assert!(
            cmp.cells.iter().all(|c| c.within_noise_of.is_none()),
            "{cmp:?}"
        );
        assert_eq!(
            headline(&summary).unwrap(),
            "mixed/fast: pool-x1 p99 21.0ms (single-x1 19.3x)"
        );
    }

    /// The autocannon p99s (183, 827, 825 ms): the lowest median would not win if it
    /// were stable; unstable, it is not ranked at all.
    #[test]
    fn an_unstable_figure_never_decides_a_ranking() {
        let mut cells = repeated_cells(&X1, &X2);
        cells.push(CellStatus::succeeded("lucky").with_results(vec![repeated(
            result("mixed", "fast", 0.0, 90.0),
            &[3.0, 30.0, 2.0, 3.5, 2.5],
        )]));
        let summary = summarize(&cells);
        let cmp = &summary.comparisons[0];
        assert_eq!(cmp.best_cell.as_deref(), Some("pool-x1"));
        let lucky = cmp.cells.iter().find(|c| c.cell == "lucky").unwrap();
        assert_eq!(lucky.p99_ratio, None);
        assert_eq!(
            lucky.excluded.as_deref(),
            Some(
                "unstable over repetitions: p99 from 2.0 to 30.0 ms (15.0x); repeat more or \
                 lengthen the phase"
            )
        );
        assert!(summary.needs_longer_phase.is_empty(), "{summary:?}");
    }

    /// A Succeeded cell whose mixed/fast stream failed every request (p99 reads 0.0).
    fn with_dead_cell() -> Vec<CellStatus> {
        let mut cells = seeds_like();
        let dead = counts(result("mixed", "fast", 0.0, 0.0), 100, 100);
        cells.push(
            CellStatus::succeeded("dead")
                .with_results(vec![result("fast-only", "fast", 10.0, 150.0), dead]),
        );
        cells
    }

    #[test]
    fn a_stream_whose_every_request_failed_is_not_best_nor_in_the_headline() {
        let summary = summarize(&with_dead_cell());
        let mixed_fast = &summary.comparisons[1];
        assert_eq!(mixed_fast.best_cell.as_deref(), Some("pool-x1"));
        let line = headline(&summary).unwrap();
        assert!(!line.contains("dead"), "{line}");
        let json = serde_json::to_value(&summary).unwrap();
        let dead = json["comparisons"][1]["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["cell"] == "dead")
            .unwrap()
            .clone();
        assert!(dead.get("p99Ratio").is_none(), "{dead}");
        assert_eq!(dead["excluded"], "all 100 requests failed", "{dead}");
    }

    #[test]
    fn four_samples_do_not_rank_and_the_summary_names_the_stream() {
        let mut cells = seeds_like();
        let few = counts(result("mixed", "slow", 1.0, 2.0), 4, 0);
        cells.push(CellStatus::succeeded("pool-x4").with_results(vec![few]));
        let summary = summarize(&cells);
        let mixed_slow = summary
            .comparisons
            .iter()
            .find(|c| c.phase == "mixed" && c.endpoint == "slow")
            .unwrap();
        assert_eq!(mixed_slow.best_cell.as_deref(), Some("single-x1"));
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(
            json["needsLongerPhase"],
            serde_json::json!([
                "pool-x4 mixed/slow: 4 samples; p99 needs 100 (a phase of about 50 s at 2.0/s)"
            ]),
            "{json}"
        );
        let status = serde_json::to_value(&cell_results_of(&few_samples_doc())[0]).unwrap();
        assert_eq!(status["samples"], 4, "{status}");
        assert_eq!(
            status["unsupportedPercentiles"],
            serde_json::json!(["p90", "p99", "p999"]),
            "{status}"
        );
    }

    #[test]
    fn the_headline_says_why_no_cell_is_ranked() {
        let short = |name: &str, requests| {
            CellStatus::succeeded(name).with_results(vec![counts(
                result("mixed", "fast", 5.0, 2.0),
                requests,
                0,
            )])
        };
        let summary = summarize(&[short("a", 4), short("b", 60)]);
        assert_eq!(
            headline(&summary).unwrap(),
            "mixed/fast: no cell ranked (too few samples: run the phase longer)"
        );
        let failing = CellStatus::succeeded("c").with_results(vec![counts(
            result("mixed", "fast", 5.0, 2.0),
            400,
            300,
        )]);
        let summary = summarize(&[short("a", 4), failing]);
        assert_eq!(
            headline(&summary).unwrap(),
            "mixed/fast: no cell ranked (too few samples or too many errors)"
        );
    }

    #[test]
    fn no_interference_ratio_from_an_unsupported_p99() {
        let mut cells = seeds_like();
        cells[0].results[0] = counts(result("fast-only", "fast", 1.0, 150.0), 30, 0);
        let summary = summarize(&cells);
        let single = summary
            .interference
            .iter()
            .find(|i| i.cell == "single-x1")
            .unwrap();
        let json = serde_json::to_value(single).unwrap();
        assert!(json.get("ratio").is_none(), "{json}");
        assert_eq!(
            json["excluded"], "solo: 30 samples; p99 needs 100",
            "{json}"
        );
    }

    #[test]
    fn a_stream_with_no_completed_request_has_no_latency_in_status() {
        let mut d = few_samples_doc();
        let s = &mut d.phases[0].streams[0];
        s.requests = 0;
        s.rps = 0.0;
        s.latency_ms = None;
        let json = serde_json::to_value(&cell_results_of(&d)[0]).unwrap();
        assert!(json.get("latencyMs").is_none(), "{json}");
        assert_eq!(json["samples"], 0, "{json}");
    }

    fn cell_results_of(d: &RunResult) -> Vec<CellResult> {
        cell_results(d)
    }

    /// One mixed/slow stream with 4 successful requests.
    fn few_samples_doc() -> RunResult {
        RunResult {
            version: 1,
            phases: vec![PhaseResult {
                name: "mixed".into(),
                duration_secs: 2.0,
                streams: vec![StreamResult {
                    endpoint: "slow".into(),
                    requests: 4,
                    rps: 2.0,
                    latency_ms: Some(lat(1990.0)),
                    ..Default::default()
                }],
                target_stats: vec![],
                started_unix_ms: None,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn zero_latencies_never_make_infinite_ratios() {
        assert_eq!(ratio(0.0, 0.0), 1.0);
        assert!(ratio(1.0, 0.0).is_finite());
        assert_eq!(finite(f64::NAN), 0.0);
    }

    fn snapshot(rss: f64, peak: f64, throttled: f64) -> StatsSnapshot {
        StatsSnapshot {
            mode: Some("pool".into()),
            host_cpus: Some(8.0),
            detected_cpus: Some(1.0),
            cpu_quota: Some(0.5),
            quota_source: Some("/sys/fs/cgroup/cpu.max".into()),
            pool_size: Some(1.0),
            rss_bytes: Some(rss),
            rss_peak_bytes: Some(peak),
            throttled_periods: Some(throttled),
            ..Default::default()
        }
    }

    fn doc() -> RunResult {
        let replica =
            |addr: &str, start: StatsSnapshot, end: StatsSnapshot, cpu: f64| ReplicaStats {
                address: addr.into(),
                start: Some(start),
                end: Some(end),
                cpu_seconds_in_phase: Some(cpu),
                ..Default::default()
            };
        let stream = |endpoint: &str, p99: f64| StreamResult {
            endpoint: endpoint.into(),
            requests: 50,
            errors: 1,
            rps: 10.0,
            latency_ms: Some(lat(p99)),
            ..Default::default()
        };
        RunResult {
            version: 1,
            phases: vec![
                PhaseResult {
                    name: "fast-only".into(),
                    duration_secs: 5.0,
                    streams: vec![stream("fast", 3.0)],
                    target_stats: vec![
                        replica(
                            "a",
                            snapshot(10.0, 10.0, 0.0),
                            snapshot(12.0, 15.0, 4.0),
                            1.0,
                        ),
                        replica(
                            "b",
                            snapshot(20.0, 20.0, 0.0),
                            snapshot(22.0, 25.0, 6.0),
                            2.0,
                        ),
                    ],
                    started_unix_ms: None,
                },
                PhaseResult {
                    name: "mixed".into(),
                    duration_secs: 5.0,
                    streams: vec![stream("fast", 9.0), stream("slow", 300.0)],
                    target_stats: vec![
                        replica(
                            "a",
                            snapshot(12.0, 15.0, 4.0),
                            snapshot(13.0, 40.0, 10.0),
                            2.5,
                        ),
                        replica(
                            "b",
                            snapshot(22.0, 25.0, 6.0),
                            snapshot(23.0, 30.0, 8.0),
                            2.5,
                        ),
                    ],
                    started_unix_ms: None,
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn results_follow_the_document_order() {
        let rs = cell_results(&doc());
        let keys: Vec<_> = rs
            .iter()
            .map(|r| (r.phase.as_str(), r.endpoint.as_str()))
            .collect();
        assert_eq!(
            keys,
            [("fast-only", "fast"), ("mixed", "fast"), ("mixed", "slow")]
        );
        assert_eq!(rs[2].latency_ms.unwrap().p99, 300.0);
        assert_eq!(rs[0].errors, 1);
    }

    #[test]
    fn target_stats_sum_over_replicas_and_difference_counters() {
        let t = target_stats(&doc()).unwrap();
        assert_eq!(t.replicas, Some(2));
        assert_eq!(t.detected_cpus, Some(1));
        assert_eq!(t.cpu_quota, Some(0.5));
        assert_eq!(t.idle_rss_bytes, Some(30));
        assert_eq!(t.peak_rss_bytes, Some(40 + 30));
        assert_eq!(t.cpu_seconds_used, Some(8.0));
        assert_eq!(t.throttled_periods, Some(10 + 8));
        // Per replica and phase: its own CPU.
        let cpu: Vec<_> = t
            .per_replica
            .iter()
            .map(|r| {
                let p: Vec<_> = r
                    .phases
                    .iter()
                    .map(|p| (p.phase.as_str(), p.cpu_seconds_used))
                    .collect();
                (r.replica.as_str(), p)
            })
            .collect();
        assert_eq!(
            cpu,
            [
                ("a", vec![("fast-only", Some(1.0)), ("mixed", Some(2.5))]),
                ("b", vec![("fast-only", Some(2.0)), ("mixed", Some(2.5))])
            ]
        );
    }

    #[test]
    fn no_stats_means_no_target_figures() {
        let mut d = doc();
        for p in &mut d.phases {
            p.target_stats.clear();
        }
        assert_eq!(target_stats(&d), None);
    }
}
