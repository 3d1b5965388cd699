//! Per-second timelines: workers send each second's counts; this merges them across workers,
//! yields progress lines as soon as every worker has reported a second, and builds the
//! timeline points of the result.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::histogram::{self, LatencyHistogram, TIMELINE_SIGFIG};
use crate::recorder::SecondCounts;
use crate::result::{TimelinePoint, timeline_point};

/// One line of `--progress-json`: one per second of each phase, then one as the phase ends.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Phase name (`"warmup"` during warm-up).
    pub phase: String,
    /// Whole seconds since the phase started, at the end of the reported second (on the
    /// phase's last line, the phase's length, rounded).
    pub elapsed_secs: u32,
    /// True on the phase's last line, whose figures are the whole phase's (the same as its
    /// result: rps over the phase, percentiles of all its successful requests).
    pub ended: bool,
    /// One entry per stream.
    pub streams: Vec<StreamProgress>,
}

/// A stream's state in a progress line. The operator reads it back (its progress display): a
/// field it does not know is ignored and one missing defaults, so the two may differ by a
/// version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StreamProgress {
    /// Endpoint name.
    pub endpoint: String,
    /// Requests finished since the phase started.
    pub requests: u64,
    /// Successful requests per second in the last second (over the phase, when it ended).
    pub rps: f64,
    /// Median latency in the last second (over the phase, when it ended), milliseconds;
    /// `None` without a successful request there: no latency, never 0.
    pub p50_ms: Option<f64>,
    /// 99th percentile latency, as `p50_ms`.
    pub p99_ms: Option<f64>,
    /// Failed requests since the phase started.
    pub errors: u64,
}

impl StreamProgress {
    /// A stream's figures over a whole phase: its requests and errors, its throughput and the
    /// percentiles of its successful requests (`latency`, none without one).
    pub fn over_phase(
        endpoint: &str,
        requests: u64,
        errors: u64,
        rps: f64,
        latency: Option<crate::result::LatencyMs>,
    ) -> StreamProgress {
        StreamProgress {
            endpoint: endpoint.to_owned(),
            requests,
            rps,
            p50_ms: latency.map(|l| l.p50),
            p99_ms: latency.map(|l| l.p99),
            errors,
        }
    }
}

impl Progress {
    /// The last line of phase `r`: its figures over the whole phase.
    pub fn ended(r: &crate::result::PhaseResult) -> Progress {
        Progress {
            phase: r.name.clone(),
            elapsed_secs: r.duration_secs.round() as u32,
            ended: true,
            streams: r
                .streams
                .iter()
                .map(|s| {
                    StreamProgress::over_phase(
                        &s.endpoint,
                        s.requests,
                        s.errors,
                        s.rps,
                        s.latency_ms,
                    )
                })
                .collect(),
        }
    }
}

struct Second {
    reports: usize,
    streams: Vec<SecondCounts>,
}

/// Merges per-worker seconds for one phase.
///
/// A second's histograms are kept only until every worker has reported it; then it becomes a
/// timeline point (a few hundred bytes), so memory grows with seconds, not with requests, and
/// only by the size of the finished points.
pub struct TimelineBuilder {
    phase: String,
    endpoints: Vec<String>,
    workers: usize,
    seconds: BTreeMap<u32, Second>,
    finished: BTreeMap<u32, Vec<TimelinePoint>>,
    totals: Vec<(u64, u64)>,
    next_progress: u32,
}

impl TimelineBuilder {
    /// A builder for a phase with these stream endpoints and worker count.
    pub fn new(phase: &str, endpoints: Vec<String>, workers: usize) -> Self {
        let n = endpoints.len();
        Self {
            phase: phase.to_owned(),
            endpoints,
            workers,
            seconds: BTreeMap::new(),
            finished: BTreeMap::new(),
            totals: vec![(0, 0); n],
            next_progress: 0,
        }
    }

    /// Adds one worker's report for `second`; returns the progress lines that became complete.
    pub fn add(&mut self, second: u32, streams: Vec<(usize, SecondCounts)>) -> Vec<Progress> {
        let n = self.endpoints.len();
        let entry = self.seconds.entry(second).or_insert_with(|| Second {
            reports: 0,
            streams: (0..n).map(|_| SecondCounts::new()).collect(),
        });
        entry.reports += 1;
        for (i, s) in streams {
            let slot = &mut entry.streams[i];
            slot.requests += s.requests;
            slot.errors += s.errors;
            // Same precision and bounds, so this is exact and cannot fail.
            let _ = slot.hist.add(&s.hist);
        }
        let mut out = Vec::new();
        while self
            .seconds
            .get(&self.next_progress)
            .is_some_and(|sec| sec.reports >= self.workers)
        {
            let second = self.next_progress;
            let Some(sec) = self.seconds.remove(&second) else {
                break;
            };
            let mut streams = Vec::with_capacity(n);
            let mut points = Vec::with_capacity(n);
            for (i, s) in sec.streams.iter().enumerate() {
                self.totals[i].0 += s.requests;
                self.totals[i].1 += s.errors;
                let ok = (s.requests - s.errors) as f64;
                let point = timeline_point(second, s.requests, s.errors, ok, &s.hist);
                // The point carries 0 for a second without a success; the line says "none".
                let latency = |v: f64| (s.requests > s.errors).then_some(v);
                streams.push(StreamProgress {
                    endpoint: self.endpoints[i].clone(),
                    requests: self.totals[i].0,
                    rps: ok,
                    p50_ms: latency(point.p50_ms),
                    p99_ms: latency(point.p99_ms),
                    errors: self.totals[i].1,
                });
                points.push(point);
            }
            self.finished.insert(second, points);
            self.next_progress += 1;
            out.push(Progress {
                phase: self.phase.clone(),
                elapsed_secs: self.next_progress,
                ended: false,
                streams,
            });
        }
        out
    }

    /// The timeline points of stream `i`; `duration_secs` sizes the last, partial second.
    pub fn points(&self, i: usize, duration_secs: f64) -> Vec<TimelinePoint> {
        let empty: LatencyHistogram = histogram::new_histogram(TIMELINE_SIGFIG);
        let last = duration_secs.ceil().max(1.0) as u32;
        (0..last)
            .map(|second| {
                let width = (duration_secs - second as f64).clamp(1e-3, 1.0);
                let mut p = if let Some(points) = self.finished.get(&second) {
                    points[i].clone()
                } else if let Some(s) = self.seconds.get(&second) {
                    // Not every worker reported this second (only if one failed): use what came.
                    let c = &s.streams[i];
                    timeline_point(second, c.requests, c.errors, 0.0, &c.hist)
                } else {
                    timeline_point(second, 0, 0, 0.0, &empty)
                };
                p.rps = (p.requests - p.errors) as f64 / width;
                p
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::record;

    fn counts(requests: u64, errors: u64, latency: u64) -> SecondCounts {
        let mut c = SecondCounts::new();
        c.requests = requests;
        c.errors = errors;
        for _ in 0..requests - errors {
            record(&mut c.hist, latency);
        }
        c
    }

    #[test]
    fn progress_waits_for_every_worker_and_points_merge() {
        let mut b = TimelineBuilder::new("p", vec!["a".into()], 2);
        assert!(b.add(0, vec![(0, counts(10, 1, 1000))]).is_empty());
        let lines = b.add(0, vec![(0, counts(5, 0, 3000))]);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].streams[0].requests, 15);
        assert_eq!(lines[0].streams[0].errors, 1);
        assert_eq!(lines[0].elapsed_secs, 1);
        // 2 significant figures: 3 ms is recorded in the bucket up to 3.007 ms.
        assert_eq!(lines[0].streams[0].p99_ms, Some(3.007));
        // A second whose every request failed has no latency, not a p99 of 0.
        b.add(1, vec![(0, counts(2, 2, 0))]);
        let lines = b.add(1, vec![(0, counts(1, 1, 0))]);
        assert_eq!(lines[0].streams[0].errors, 4);
        assert_eq!(lines[0].streams[0].p50_ms, None);
        assert_eq!(lines[0].streams[0].p99_ms, None);
        let points = b.points(0, 2.5);
        assert_eq!(points.len(), 3);
        assert_eq!(points[0].requests, 15);
        assert_eq!(points[0].rps, 14.0);
        assert_eq!(points[1].requests, 3);
        assert_eq!(points[2].requests, 0);
    }
}
