//! Statuses of repeated runs for the report's tests, made the way the engine makes them: each
//! repetition's results, merged by [`crate::results::repeat::merge`].

use std::collections::BTreeMap;

use crate::api::status::Percentile;
use crate::api::{
    BenchmarkRunStatus, CellPhase, CellResult, CellStatus, LatencyMs, RepetitionStatus,
};

/// One stream of a cell: its phase and endpoint, requests and errors per repetition, and each
/// repetition's rps and p99 (its other percentiles follow from the p99).
pub struct Stream<'a> {
    /// Phase name.
    pub phase: &'a str,
    /// Endpoint name.
    pub endpoint: &'a str,
    /// Requests per repetition.
    pub requests: u64,
    /// Errors per repetition.
    pub errors: u64,
    /// Each repetition's rps.
    pub rps: &'a [f64],
    /// Each repetition's p99, milliseconds.
    pub p99: &'a [f64],
}

/// A cell measured `streams[..].rps.len()` times.
pub fn cell(name: &str, streams: &[Stream]) -> CellStatus {
    let n = streams.first().map_or(0, |s| s.rps.len());
    let repetitions: Vec<RepetitionStatus> = (0..n)
        .map(|k| RepetitionStatus {
            repetition: k as u32 + 1,
            phase: CellPhase::Succeeded,
            results: streams.iter().map(|s| result(s, k)).collect(),
            ..Default::default()
        })
        .collect();
    CellStatus {
        name: name.into(),
        phase: CellPhase::Succeeded,
        results: crate::results::repeat::merge(&repetitions, &BTreeMap::new()),
        repetitions,
        ..Default::default()
    }
}

fn result(s: &Stream, k: usize) -> CellResult {
    let samples = s.requests - s.errors;
    let p99 = s.p99[k];
    CellResult {
        phase: s.phase.into(),
        endpoint: s.endpoint.into(),
        requests: s.requests,
        errors: s.errors,
        samples,
        rps: s.rps[k],
        latency_ms: (samples > 0).then_some(LatencyMs {
            p50: p99 / 3.0,
            p90: p99 / 1.5,
            p99,
            p999: p99 * 1.2,
            max: p99 * 1.3,
            mean: p99 / 2.5,
        }),
        unsupported_percentiles: Percentile::unsupported_by(samples),
        spread: None,
    }
}

/// A status of `cells`, with its summary as the engine writes it.
pub fn status(cells: Vec<CellStatus>) -> BenchmarkRunStatus {
    let mut status = BenchmarkRunStatus {
        cells,
        ..Default::default()
    };
    status.summary = Some(crate::results::summarize(&status.cells));
    status
}
