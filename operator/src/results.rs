//! From a load generator's result document to a cell's status, and from the cells to the run's
//! summary.
//!
//! Pure, and shared by the operator and the local runner, so both write the same figures.
//! Percentiles are never averaged here: a cell's document is already exact (several load
//! generators are merged histogram by histogram in the loadgen crate before this runs).

use std::collections::BTreeMap;

use benchmatrix_loadgen::result::{RunResult, TargetStats as ReplicaSnapshot};

use crate::api::{
    BenchmarkRunStatus, CellPhase, CellRatio, CellResult, CellStatus, Comparison, Interference,
    ReplicaPhaseShare, ReplicaShare, Summary, TargetStats,
};

/// One status entry per phase and endpoint of the document, in document order.
pub fn cell_results(result: &RunResult) -> Vec<CellResult> {
    result
        .phases
        .iter()
        .flat_map(|phase| {
            phase.streams.iter().map(move |s| CellResult {
                phase: phase.name.clone(),
                endpoint: s.endpoint.clone(),
                requests: s.requests,
                errors: s.errors,
                rps: finite(s.rps),
                latency_ms: s.latency_ms,
            })
        })
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
        first: Option<&'a ReplicaSnapshot>,
        last: Option<&'a ReplicaSnapshot>,
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
    let any = |f: fn(&ReplicaSnapshot) -> Option<f64>| {
        replicas.values().filter_map(|r| r.first.and_then(f)).next()
    };
    let sum = |f: &dyn Fn(&Replica<'_>) -> Option<f64>| -> Option<f64> {
        let values: Vec<f64> = replicas.values().filter_map(f).collect();
        (!values.is_empty()).then(|| values.iter().sum())
    };
    let counter_delta = |f: fn(&ReplicaSnapshot) -> Option<f64>| {
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
    })
}

/// The comparison across cells: per phase and endpoint the best cell by p99 and every cell's
/// ratio to it; per cell the interference ratio of each endpoint measured alone and mixed.
///
/// Only Succeeded cells with at least one completed request take part.
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

    let mut comparisons = Vec::new();
    for (phase, endpoint) in keys {
        let entries: Vec<(&str, &CellResult)> = measured
            .iter()
            .filter_map(|c| {
                c.results
                    .iter()
                    .find(|r| r.phase == phase && r.endpoint == endpoint && r.requests > 0)
                    .map(|r| (c.name.as_str(), r))
            })
            .collect();
        // Lowest p99 wins; ties go to the higher throughput, then to the earlier cell.
        let Some(&(best_cell, best)) = entries.iter().reduce(|a, b| {
            let (pa, pb) = (a.1.latency_ms.p99, b.1.latency_ms.p99);
            if pb < pa || (pb == pa && b.1.rps > a.1.rps) {
                b
            } else {
                a
            }
        }) else {
            continue;
        };
        comparisons.push(Comparison {
            phase: phase.to_owned(),
            endpoint: endpoint.to_owned(),
            best_cell: best_cell.to_owned(),
            cells: entries
                .iter()
                .map(|(cell, r)| CellRatio {
                    cell: (*cell).to_owned(),
                    p99_ms: r.latency_ms.p99,
                    p99_ratio: ratio(r.latency_ms.p99, best.latency_ms.p99),
                    rps: r.rps,
                    rps_ratio: ratio(r.rps, best.rps),
                })
                .collect(),
        });
    }

    let mut interference = Vec::new();
    for cell in &measured {
        interference.extend(cell_interference(cell));
    }
    Summary {
        comparisons,
        interference,
    }
}

/// For one cell: each endpoint that ran alone in some phase ("solo") and alongside other
/// endpoints in a later phase ("mixed"): mixed p99 over solo p99.
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
        if alone.requests == 0 {
            continue;
        }
        let mixed = phases[i + 1..].iter().find_map(|(p, rs)| {
            (rs.len() > 1)
                .then(|| {
                    rs.iter()
                        .find(|r| r.endpoint == alone.endpoint && r.requests > 0)
                })
                .flatten()
                .map(|r| (*p, *r))
        });
        if let Some((mixed_phase, m)) = mixed {
            out.push(Interference {
                cell: cell.name.clone(),
                endpoint: alone.endpoint.clone(),
                solo_phase: (*solo_phase).to_owned(),
                mixed_phase: mixed_phase.to_owned(),
                solo_p99_ms: alone.latency_ms.p99,
                mixed_p99_ms: m.latency_ms.p99,
                ratio: ratio(m.latency_ms.p99, alone.latency_ms.p99),
            });
        }
    }
    out
}

/// One line for `kubectl get`: the best cell of the last phase's first endpoint, e.g.
/// `mixed/fast: pool-x1 p99 3.1ms (single-x1 11.2x)` naming the worst cell's ratio too.
pub fn headline(summary: &Summary) -> Option<String> {
    let last_phase = summary.comparisons.last()?.phase.clone();
    let cmp = summary.comparisons.iter().find(|c| c.phase == last_phase)?;
    let best = cmp.cells.iter().find(|c| c.cell == cmp.best_cell)?;
    let mut line = format!(
        "{}/{}: {} p99 {}ms",
        cmp.phase,
        cmp.endpoint,
        cmp.best_cell,
        round_sig(best.p99_ms)
    );
    if let Some(worst) = cmp
        .cells
        .iter()
        .max_by(|a, b| a.p99_ratio.total_cmp(&b.p99_ratio))
        .filter(|w| w.cell != cmp.best_cell)
    {
        line.push_str(&format!(
            " ({} {}x)",
            worst.cell,
            round_sig(worst.p99_ratio)
        ));
    }
    Some(line)
}

/// "done/total" for the printer column.
pub fn progress(status: &BenchmarkRunStatus) -> String {
    let done = status
        .cells
        .iter()
        .filter(|c| c.phase.is_finished())
        .count();
    format!("{done}/{}", status.cells.len())
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
        CellResult {
            phase: name.into(),
            endpoint: endpoint.into(),
            requests: 100,
            errors: 0,
            rps,
            latency_ms: lat(p99),
        }
    }

    fn cell(name: &str, results: Vec<CellResult>) -> CellStatus {
        CellStatus {
            name: name.into(),
            phase: CellPhase::Succeeded,
            results,
            ..Default::default()
        }
    }

    fn seeds_like() -> Vec<CellStatus> {
        vec![
            cell(
                "single-x1",
                vec![
                    result("fast-only", "fast", 10.0, 150.0),
                    result("mixed", "fast", 400.0, 5.0),
                    result("mixed", "slow", 800.0, 2.5),
                ],
            ),
            cell(
                "pool-x1",
                vec![
                    result("fast-only", "fast", 10.0, 160.0),
                    result("mixed", "fast", 20.0, 80.0),
                    result("mixed", "slow", 900.0, 2.4),
                ],
            ),
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
        assert_eq!(mixed_fast.best_cell, "pool-x1");
        let single = &mixed_fast.cells[0];
        assert_eq!(single.cell, "single-x1");
        assert!((single.p99_ratio - 20.0).abs() < 1e-9);
        assert!((single.rps_ratio - 5.0 / 80.0).abs() < 1e-9);
        // A failed cell takes no part.
        assert!(mixed_fast.cells.iter().all(|c| c.cell != "broken"));
    }

    #[test]
    fn ties_on_p99_go_to_the_higher_throughput() {
        let summary = summarize(&seeds_like());
        assert_eq!(summary.comparisons[0].best_cell, "pool-x1");
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
        assert!((single.ratio - 40.0).abs() < 1e-9);
        let pool = summary
            .interference
            .iter()
            .find(|i| i.cell == "pool-x1")
            .unwrap();
        assert!((pool.ratio - 2.0).abs() < 1e-9);
    }

    #[test]
    fn headline_names_the_best_and_the_worst_ratio() {
        let summary = summarize(&seeds_like());
        assert_eq!(
            headline(&summary).unwrap(),
            "mixed/fast: pool-x1 p99 20.0ms (single-x1 20.0x)"
        );
    }

    #[test]
    fn zero_latencies_never_make_infinite_ratios() {
        assert_eq!(ratio(0.0, 0.0), 1.0);
        assert!(ratio(1.0, 0.0).is_finite());
        assert_eq!(finite(f64::NAN), 0.0);
    }

    fn snapshot(rss: f64, peak: f64, throttled: f64) -> ReplicaSnapshot {
        ReplicaSnapshot {
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
            |addr: &str, start: ReplicaSnapshot, end: ReplicaSnapshot, cpu: f64| ReplicaStats {
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
            latency_ms: lat(p99),
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
        assert_eq!(rs[2].latency_ms.p99, 300.0);
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
