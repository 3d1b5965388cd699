//! A repeated cell's figures: each repetition's results folded into one set of figures, the
//! medians, with the spread beside them.
//!
//! The unit of evidence is a repetition, not a request: a closed loop can lock into a
//! different steady state on each run, moving every request of that run together, so the
//! figure reported is the median over repetitions and the spread shows how far runs moved.
//! Counts (requests, errors, samples, CPU seconds) are totals over the repetitions, so rates
//! such as CPU per request stay consistent.

use std::collections::BTreeMap;

use benchmatrix_loadgen::histogram;

use crate::resource::status::Percentile;
use crate::resource::status::{FigureSpread, Spread, histogram_key};
use crate::resource::{CellResult, LatencyMs, RepetitionStatus, TargetStats};

use super::noise::spread_of;
use crate::resource::rounding::round3;

/// The cell's histograms after one more successful repetition: the first repetition's as the
/// load generator wrote them, then each stream's sum with the latest repetition's (exact).
/// A stream leaves the map for good when a repetition has no readable histogram of it or the
/// sum encodes to more than `cap` characters, as the API server writes them; its merged
/// latency is then absent rather than the merge of only some repetitions.
pub fn fold_histograms(
    so_far: &mut BTreeMap<String, String>,
    latest: &BTreeMap<String, String>,
    first: bool,
    cap: usize,
) {
    let fits = |h: &String| crate::resource::bound::json_len(h) <= cap;
    if first {
        *so_far = latest
            .iter()
            .filter(|(_, h)| fits(h))
            .map(|(k, h)| (k.clone(), h.clone()))
            .collect();
        return;
    }
    so_far.retain(|key, sum| {
        let added = latest.get(key).and_then(|h| {
            let mut total = histogram::decode(sum).ok()?;
            histogram::add(&mut total, &histogram::decode(h).ok()?).ok()?;
            Some(histogram::encode(&total))
        });
        match added {
            Some(h) if fits(&h) => {
                *sum = h;
                true
            }
            _ => false,
        }
    });
}

/// One result per phase and endpoint over the successful repetitions, in the order the
/// streams first appear: medians of rps and of each latency percentile, totals of the counts,
/// and the spread of every figure; `histograms` are the streams' sums over the repetitions
/// ([`fold_histograms`]), read into each spread's merged latency.
pub fn merge(
    repetitions: &[RepetitionStatus],
    histograms: &BTreeMap<String, String>,
) -> Vec<CellResult> {
    let measured: Vec<&RepetitionStatus> = RepetitionStatus::measured(repetitions).collect();
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in &measured {
        for res in &r.results {
            let key = (res.phase.clone(), res.endpoint.clone());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    keys.iter()
        .map(|(phase, endpoint)| {
            let runs: Vec<(&RepetitionStatus, &CellResult)> = measured
                .iter()
                .filter_map(|r| {
                    let res = r
                        .results
                        .iter()
                        .find(|x| &x.phase == phase && &x.endpoint == endpoint)?;
                    Some((*r, res))
                })
                .collect();
            let merged = histograms
                .get(&histogram_key(phase, endpoint))
                .and_then(|h| histogram::decode(h).ok())
                .and_then(|h| LatencyMs::from_histogram(&h));
            merge_stream(phase, endpoint, &runs, merged)
        })
        .collect()
}

fn merge_stream(
    phase: &str,
    endpoint: &str,
    runs: &[(&RepetitionStatus, &CellResult)],
    merged_latency_ms: Option<LatencyMs>,
) -> CellResult {
    let results: Vec<&CellResult> = runs.iter().map(|(_, r)| *r).collect();
    let mut figures = BTreeMap::new();
    let mut put = |name: &str, values: Vec<f64>| {
        if !values.is_empty() {
            figures.insert(name.to_owned(), spread_of(&values));
        }
    };
    put("rps", results.iter().map(|r| r.rps).collect());
    put(
        "errorRate",
        results
            .iter()
            .map(|r| {
                if r.requests == 0 {
                    0.0
                } else {
                    r.errors as f64 / r.requests as f64
                }
            })
            .collect(),
    );
    let latencies: Vec<&LatencyMs> = results
        .iter()
        .filter_map(|r| r.latency_ms.as_ref())
        .collect();
    type Pick = fn(&LatencyMs) -> f64;
    let picks: [(&str, Pick); 6] = [
        ("p50", |l| l.p50),
        ("p90", |l| l.p90),
        ("p99", |l| l.p99),
        ("p999", |l| l.p999),
        ("max", |l| l.max),
        ("mean", |l| l.mean),
    ];
    for (name, pick) in picks {
        put(name, latencies.iter().map(|l| pick(l)).collect());
    }
    let median = |name: &str| figures.get(name).map_or(0.0, |f: &FigureSpread| f.median);
    let latency_ms = (!latencies.is_empty()).then(|| LatencyMs {
        p50: median("p50"),
        p90: median("p90"),
        p99: median("p99"),
        p999: median("p999"),
        max: median("max"),
        mean: median("mean"),
    });
    // The samples are all the repetitions' together, and a percentile counts as supported when
    // they are enough for it: their histograms merge exactly (spread.mergedLatencyMs), and how
    // far each repetition's own figure moved, small samples included, is the spread, which
    // decides whether cells differ at all.
    let samples = total(results.iter().copied(), |r| r.samples);
    CellResult {
        phase: phase.to_owned(),
        endpoint: endpoint.to_owned(),
        requests: total(results.iter().copied(), |r| r.requests),
        errors: total(results.iter().copied(), |r| r.errors),
        samples,
        rps: median("rps"),
        latency_ms: latency_ms.filter(|_| samples > 0),
        unsupported_percentiles: Percentile::unsupported_by(samples),
        spread: Some(Spread {
            repetitions: runs.len() as u32,
            merged_latency_ms,
            figures,
        }),
    }
}

/// The total of one count over `results`, saturating: a status may hold any count its schema
/// admits, and a report of it must never overflow.
pub fn total<'a>(
    results: impl IntoIterator<Item = &'a CellResult>,
    count: impl Fn(&CellResult) -> u64,
) -> u64 {
    results.into_iter().map(count).fold(0, u64::saturating_add)
}

/// The target's figures after one more repetition: CPU seconds and throttling add up over the
/// repetitions; the rest (replicas, quota, memory, per-replica shares) is the latest
/// repetition's, with the peak memory the highest seen.
pub fn add_target(so_far: Option<TargetStats>, latest: Option<TargetStats>) -> Option<TargetStats> {
    let Some(mut latest) = latest else {
        return so_far;
    };
    let Some(prev) = so_far else {
        return Some(latest);
    };
    let add = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(round3(a + b)),
        (a, b) => a.or(b),
    };
    latest.cpu_seconds_used = add(prev.cpu_seconds_used, latest.cpu_seconds_used);
    latest.throttled_seconds = add(prev.throttled_seconds, latest.throttled_seconds);
    let add_counts = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    latest.throttled_periods = add_counts(prev.throttled_periods, latest.throttled_periods);
    latest.cfs_periods = add_counts(prev.cfs_periods, latest.cfs_periods);
    latest.throttle_covered_seconds = add(
        prev.throttle_covered_seconds,
        latest.throttle_covered_seconds,
    );
    latest.self_reported_cpu_seconds = add(
        prev.self_reported_cpu_seconds,
        latest.self_reported_cpu_seconds,
    );
    // The check of the kubelet against the target holds for the sums as for each repetition.
    latest.cpu_difference_percent =
        match (latest.cpu_seconds_used, latest.self_reported_cpu_seconds) {
            (Some(k), Some(own)) if own > 0.0 && latest.cpu_difference_percent.is_some() => {
                Some(((k - own) / own * 1000.0).round() / 10.0)
            }
            _ => None,
        };
    latest.peak_rss_bytes = prev.peak_rss_bytes.max(latest.peak_rss_bytes);
    latest.working_set_peak_bytes = prev
        .working_set_peak_bytes
        .max(latest.working_set_peak_bytes);
    latest.note = latest.note.or(prev.note);
    Some(latest)
}

#[cfg(test)]
mod counts_tests {
    use super::*;
    use crate::resource::CellPhase;

    /// A status may hold any count its schema admits (an older or another writer's, or one
    /// built to the size model's limit): the totals over repetitions saturate, and a report of
    /// it never panics on an overflow.
    #[test]
    fn totals_over_repetitions_saturate_instead_of_overflowing() {
        let huge = |repetition| RepetitionStatus {
            repetition,
            phase: CellPhase::Succeeded,
            results: vec![CellResult {
                phase: "p".into(),
                endpoint: "e".into(),
                requests: u64::MAX,
                errors: u64::MAX,
                samples: u64::MAX,
                ..CellResult::default()
            }],
            ..RepetitionStatus::default()
        };
        let merged = merge(&[huge(1), huge(2)], &BTreeMap::new());
        assert_eq!(merged.len(), 1);
        assert_eq!(
            (merged[0].requests, merged[0].errors, merged[0].samples),
            (u64::MAX, u64::MAX, u64::MAX)
        );
    }
}
