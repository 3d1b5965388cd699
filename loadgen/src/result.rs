//! The result document: what a run measured, per phase and stream, in a form that several
//! load-generator processes can [`merge`] exactly.
//!
//! Conventions: JSON names are camelCase; latencies in `latencyMs` objects are fractional
//! milliseconds; histograms are carried compact (see [`crate::histogram`]) and hold
//! microseconds, the one unit every recorder uses.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::histogram::{self, HistogramError, LatencyHistogram};

/// Version of the result document's shape; [`merge`] refuses to mix versions.
pub const RESULT_VERSION: u32 = 1;

/// A whole run: every measured phase, in order (warm-up is not reported).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// Shape version of this document (currently 1).
    pub version: u32,
    /// Base URL of the target that was loaded.
    pub target: String,
    /// Load-generator threads used (summed over merged documents).
    pub threads: u32,
    /// Number of load-generator processes whose results this document holds (1 unless merged).
    pub generators: u32,
    /// The measured phases in the order they ran.
    pub phases: Vec<PhaseResult>,
    /// Seconds the check before the load took (every address answering, see the plan's
    /// `preflight`), before the warm-up began; not part of any phase. The longest, when
    /// merged. Absent when the plan asked for no check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight_seconds: Option<f64>,
}

/// One measured phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseResult {
    /// Phase name from the workload.
    pub name: String,
    /// Measured length of the phase in seconds (the longest, when merged).
    pub duration_secs: f64,
    /// One entry per stream (endpoint) of the phase.
    pub streams: Vec<StreamResult>,
    /// The target's `/stats` per replica at the start and end of the phase; empty when the
    /// target does not offer `/stats`.
    #[serde(default)]
    pub target_stats: Vec<ReplicaStats>,
    /// Wall-clock time the phase began, in milliseconds since the Unix epoch (the earliest,
    /// when merged): what resource figures read from outside the target (the kubelet's) are
    /// lined up with. Absent in results of older load generators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_ms: Option<i64>,
}

/// Whether a stream ran closed loop (fixed connections) or open loop (fixed rate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StreamMode {
    /// Fixed connections, each sending when its previous answer arrived.
    #[default]
    Closed,
    /// Fixed rate; latency from the intended send time.
    Open,
}

/// What one stream (the load on one endpoint in one phase) measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamResult {
    /// Endpoint name from the workload.
    pub endpoint: String,
    /// Closed or open loop.
    pub mode: StreamMode,
    /// Requests that finished during the phase, successful or not.
    pub requests: u64,
    /// Requests among `requests` that failed: a transport error or a status the endpoint's
    /// successCodes do not list (default: anything outside 2xx).
    pub errors: u64,
    /// Successful requests per second over the phase (`requests - errors` over `durationSecs`;
    /// summed when merged, since merged generators ran at the same time).
    pub rps: f64,
    /// Latency of the successful requests (`requests - errors` samples). Open loop: measured
    /// from the intended send time (coordinated omission corrected); closed loop: from the
    /// actual send. Absent when no request succeeded: no sample, no figure (never zeros).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "latency_of_samples"
    )]
    pub latency_ms: Option<LatencyMs>,
    /// Failed requests by kind.
    pub errors_by_kind: ErrorsByKind,
    /// Requests still waiting for an answer (or, open loop, for a free connection) when the
    /// phase ended; they were cut and are not counted in `requests`.
    #[serde(default)]
    pub in_flight_at_end: u64,
    /// TCP connections opened during the phase (reconnects after errors included).
    #[serde(default)]
    pub connections_opened: u64,
    /// One point per second of the phase.
    #[serde(default)]
    pub timeline: Vec<TimelinePoint>,
    /// The latency histogram behind `latencyMs`: microseconds, HdrHistogram V2 + deflate,
    /// base64. Merging adds these exactly.
    pub histogram: String,
    /// Open loop only: the requests per second the schedule asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rps: Option<f64>,
    /// Open loop only: sends that started more than 2 ms after their intended time (no free
    /// connection, or the generator itself was behind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_sends: Option<u64>,
    /// Open loop only: latency measured from the actual send, as a closed-loop tool would
    /// report it; compare with `latencyMs` to see what coordinated omission hides. Absent,
    /// like `latencyMs`, when no request succeeded.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "latency_of_samples"
    )]
    pub uncorrected_latency_ms: Option<LatencyMs>,
    /// Open loop only: the histogram behind `uncorrectedLatencyMs` (same encoding as
    /// `histogram`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected_histogram: Option<String>,
}

/// Latency percentiles in fractional milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LatencyMs {
    /// Median latency in milliseconds.
    pub p50: f64,
    /// 90th percentile in milliseconds.
    pub p90: f64,
    /// 99th percentile in milliseconds.
    pub p99: f64,
    /// 99.9th percentile in milliseconds.
    pub p999: f64,
    /// Largest latency in milliseconds.
    pub max: f64,
    /// Mean latency in milliseconds.
    pub mean: f64,
}

impl LatencyMs {
    /// Percentiles of a microsecond histogram; `None` for an empty one (no sample, no figure).
    pub fn from_histogram(h: &LatencyHistogram) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        let q = |q: f64| histogram::micros_to_ms(h.value_at_quantile(q));
        Some(Self {
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max: histogram::micros_to_ms(h.max()),
            mean: h.mean() / 1000.0,
        })
    }

    /// The value of one percentile.
    pub fn get(&self, p: Percentile) -> f64 {
        match p {
            Percentile::P50 => self.p50,
            Percentile::P90 => self.p90,
            Percentile::P99 => self.p99,
            Percentile::P999 => self.p999,
        }
    }
}

/// Reads an optional `latencyMs`, taking the all-zero block that documents written before
/// latencies became optional carried for a stream without samples as absent. Real figures are
/// never all zero: the histogram records every latency as at least 1 µs.
pub fn latency_of_samples<'de, D>(d: D) -> Result<Option<LatencyMs>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let l = Option::<LatencyMs>::deserialize(d)?;
    Ok(l.filter(|l| *l != LatencyMs::default()))
}

/// A percentile, named as its latencyMs field is: p50, p90, p99 or p999.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum Percentile {
    /// The median.
    #[serde(rename = "p50")]
    P50,
    /// The 90th percentile.
    #[serde(rename = "p90")]
    P90,
    /// The 99th percentile.
    #[serde(rename = "p99")]
    P99,
    /// The 99.9th percentile.
    #[serde(rename = "p999")]
    P999,
}

impl Percentile {
    /// Every percentile, lowest first.
    pub const ALL: [Percentile; 4] = [Self::P50, Self::P90, Self::P99, Self::P999];

    /// The fewest samples that support this percentile: pN needs 1 / (1 - N) of them (p90: 10,
    /// p99: 100, p99.9: 1000), so that at least one sample lies above it. From fewer, the
    /// "percentile" is just one of the largest samples (with 4 samples, p99 = p99.9 = max).
    pub fn min_samples(self) -> u64 {
        match self {
            Self::P50 => 2,
            Self::P90 => 10,
            Self::P99 => 100,
            Self::P999 => 1000,
        }
    }

    /// The percentiles `samples` samples cannot support, lowest first.
    pub fn unsupported_by(samples: u64) -> Vec<Percentile> {
        Self::ALL
            .into_iter()
            .filter(|p| samples < p.min_samples())
            .collect()
    }

    /// The name as figures are labelled: "p50", "p90", "p99", "p99.9".
    pub fn label(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P90 => "p90",
            Self::P99 => "p99",
            Self::P999 => "p99.9",
        }
    }
}

impl std::fmt::Display for Percentile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// Failed requests by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorsByKind {
    /// The TCP connection could not be opened (refused, unreachable, connect timed out).
    pub connect: u64,
    /// No complete answer within the request timeout; the connection was cut.
    pub timeout: u64,
    /// The connection was reset or closed by the target before the answer was complete.
    pub reset: u64,
    /// Answers with a 4xx status that the endpoint's successCodes do not list.
    pub status4xx: u64,
    /// Answers with a 5xx status that the endpoint's successCodes do not list.
    pub status5xx: u64,
    /// Answers with any other status the endpoint's successCodes do not list: 1xx, 3xx, or a
    /// 2xx when the list names only some.
    pub status_other: u64,
    /// Anything else, such as an answer that is not valid HTTP/1.1.
    pub other: u64,
}

/// A kind of failure, as counted in [`ErrorsByKind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// See [`ErrorsByKind::connect`].
    Connect,
    /// See [`ErrorsByKind::timeout`].
    Timeout,
    /// See [`ErrorsByKind::reset`].
    Reset,
    /// See [`ErrorsByKind::status4xx`].
    Status4xx,
    /// See [`ErrorsByKind::status5xx`].
    Status5xx,
    /// See [`ErrorsByKind::status_other`].
    StatusOther,
    /// See [`ErrorsByKind::other`].
    Other,
}

impl ErrorKind {
    /// The kind an answer is counted under when its endpoint's success codes leave its
    /// status out: by class, with 1xx, 3xx and an unlisted 2xx as [`ErrorKind::StatusOther`].
    pub fn of_unlisted_status(status: u16) -> Self {
        match status {
            400..=499 => Self::Status4xx,
            500..=599 => Self::Status5xx,
            _ => Self::StatusOther,
        }
    }
}

impl ErrorsByKind {
    /// Counts one failure of `kind`.
    #[inline]
    pub fn count(&mut self, kind: ErrorKind) {
        *self.slot(kind) += 1;
    }

    fn slot(&mut self, kind: ErrorKind) -> &mut u64 {
        match kind {
            ErrorKind::Connect => &mut self.connect,
            ErrorKind::Timeout => &mut self.timeout,
            ErrorKind::Reset => &mut self.reset,
            ErrorKind::Status4xx => &mut self.status4xx,
            ErrorKind::Status5xx => &mut self.status5xx,
            ErrorKind::StatusOther => &mut self.status_other,
            ErrorKind::Other => &mut self.other,
        }
    }

    /// Sum of all kinds.
    pub fn total(&self) -> u64 {
        self.connect
            + self.timeout
            + self.reset
            + self.status4xx
            + self.status5xx
            + self.status_other
            + self.other
    }

    /// Adds another set of counts.
    pub fn add(&mut self, o: &ErrorsByKind) {
        self.connect += o.connect;
        self.timeout += o.timeout;
        self.reset += o.reset;
        self.status4xx += o.status4xx;
        self.status5xx += o.status5xx;
        self.status_other += o.status_other;
        self.other += o.other;
    }

    /// Non-zero kinds as `(name, count)` pairs, for summaries.
    pub fn nonzero(&self) -> Vec<(&'static str, u64)> {
        [
            ("connect", self.connect),
            ("timeout", self.timeout),
            ("reset", self.reset),
            ("status4xx", self.status4xx),
            ("status5xx", self.status5xx),
            ("statusOther", self.status_other),
            ("other", self.other),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    }
}

/// One second of a stream's timeline (requests attributed by completion time).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelinePoint {
    /// Seconds since the phase started (this point covers `[second, second + 1)`).
    pub second: u32,
    /// Requests that finished in this second.
    pub requests: u64,
    /// Failed requests among them.
    pub errors: u64,
    /// Successful requests per second in this second.
    pub rps: f64,
    /// Median latency of this second's successful requests, milliseconds (0 when the second
    /// had none: `requests == errors`).
    pub p50_ms: f64,
    /// 99th percentile latency of this second's successful requests, milliseconds (0 when the
    /// second had none).
    pub p99_ms: f64,
    /// This second's histogram (2 significant figures, microseconds, same encoding as
    /// `StreamResult.histogram`), so merged timelines stay exact.
    pub histogram: String,
}

/// The target's own report for one replica at the phase boundaries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaStats {
    /// Replica address ("IP:PORT"), or the target URL when no replicas were listed.
    pub address: String,
    /// `/stats` read just before the phase started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StatsSnapshot>,
    /// `/stats` read just after the phase ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<StatsSnapshot>,
    /// CPU seconds the replica used during the phase (`end - start`), when both are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds_in_phase: Option<f64>,
    /// Requests the replica served during the phase (`end - start`), when both are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_served_in_phase: Option<f64>,
    /// Why a snapshot is missing (e.g. the target has no `/stats`); not a run failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The fields of the target's `/stats` JSON that results keep. Every field is optional, and
/// numbers are read as floats, so any target (the built-in one, the Node example, a user's) that
/// offers some of these names works.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct StatsSnapshot {
    /// Concurrency mode reported by the target (single, threads, pool, or a target's own name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// CPUs of the host the replica runs on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<f64>,
    /// CPUs the replica detected as usable (quota or affinity).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detected_cpus: Option<f64>,
    /// CPU quota in cores; absent or null when unlimited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_quota: Option<f64>,
    /// Where the quota was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota_source: Option<String>,
    /// CPU workers in the pool (0 without a pool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<f64>,
    /// Event-loop threads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_threads: Option<f64>,
    /// Requests served since start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_served: Option<f64>,
    /// CPU seconds used since start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_seconds_used: Option<f64>,
    /// Resident memory now, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<f64>,
    /// Peak resident memory, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_peak_bytes: Option<f64>,
    /// Largest event-loop lag seen, milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_lag_max_ms: Option<f64>,
    /// 99th percentile event-loop lag, milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_lag_p99_ms: Option<f64>,
    /// Pool queue depth now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<f64>,
    /// Largest pool queue depth seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_peak: Option<f64>,
    /// Requests refused because the pool queue was full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<f64>,
    /// Pool tasks that missed their deadline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed_out: Option<f64>,
    /// CFS periods in which the replica was throttled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<f64>,
    /// Seconds the replica spent throttled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_seconds: Option<f64>,
    /// Seconds since the replica started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uptime_seconds: Option<f64>,
}

/// Why documents could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no result documents to merge")]
    Empty,
    /// Documents of different shape versions.
    #[error("result document versions differ ({0} and {1})")]
    Version(u32, u32),
    /// The documents describe different phase sequences.
    #[error("documents ran different phases: {0}")]
    Phases(String),
    /// A carried histogram is unreadable.
    #[error("{context}: {source}")]
    Histogram {
        /// Which histogram.
        context: String,
        /// What went wrong.
        source: HistogramError,
    },
}

fn add_in(context: &str, into: &mut LatencyHistogram, text: &str) -> Result<(), MergeError> {
    let wrap = |source| MergeError::Histogram {
        context: context.to_owned(),
        source,
    };
    let h = histogram::decode(text).map_err(wrap)?;
    histogram::add(into, &h).map_err(wrap)
}

/// Combines results of load generators that ran the same workload at the same time.
///
/// Histograms are added (so percentiles are exact, never averaged), counts and rates are summed,
/// the phase length is the longest, and replica statistics are kept once per address.
pub fn merge(docs: &[RunResult]) -> Result<RunResult, MergeError> {
    let first = docs.first().ok_or(MergeError::Empty)?;
    for d in docs {
        if d.version != first.version {
            return Err(MergeError::Version(first.version, d.version));
        }
        let names = |r: &RunResult| r.phases.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        if names(d) != names(first) {
            return Err(MergeError::Phases(format!(
                "{:?} vs {:?}",
                names(first),
                names(d)
            )));
        }
    }
    let mut out = RunResult {
        version: first.version,
        target: first.target.clone(),
        threads: docs.iter().map(|d| d.threads).sum(),
        generators: docs.iter().map(|d| d.generators.max(1)).sum(),
        phases: Vec::with_capacity(first.phases.len()),
        // The generators checked at the same time; the load was held up by the slowest.
        preflight_seconds: docs
            .iter()
            .filter_map(|d| d.preflight_seconds)
            .reduce(f64::max),
    };
    for (pi, phase) in first.phases.iter().enumerate() {
        let parts: Vec<&PhaseResult> = docs.iter().map(|d| &d.phases[pi]).collect();
        out.phases.push(merge_phase(&phase.name, &parts)?);
    }
    Ok(out)
}

fn merge_phase(name: &str, parts: &[&PhaseResult]) -> Result<PhaseResult, MergeError> {
    let duration_secs = parts.iter().map(|p| p.duration_secs).fold(0.0, f64::max);
    // Streams in first-seen order, grouped by endpoint.
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&StreamResult>> = BTreeMap::new();
    for p in parts {
        for s in &p.streams {
            if !groups.contains_key(&s.endpoint) {
                order.push(s.endpoint.clone());
            }
            groups.entry(s.endpoint.clone()).or_default().push(s);
        }
    }
    let mut streams = Vec::with_capacity(order.len());
    for endpoint in order {
        streams.push(merge_stream(name, &groups[&endpoint])?);
    }
    let mut target_stats: Vec<ReplicaStats> = Vec::new();
    for p in parts {
        for r in &p.target_stats {
            match target_stats.iter_mut().find(|t| t.address == r.address) {
                Some(existing) if existing.error.is_some() && r.error.is_none() => {
                    *existing = r.clone()
                }
                Some(_) => {}
                None => target_stats.push(r.clone()),
            }
        }
    }
    Ok(PhaseResult {
        name: name.to_owned(),
        duration_secs,
        streams,
        target_stats,
        started_unix_ms: parts.iter().filter_map(|p| p.started_unix_ms).min(),
    })
}

fn merge_stream(phase: &str, parts: &[&StreamResult]) -> Result<StreamResult, MergeError> {
    let first = parts[0];
    let ctx = |what: &str| format!("phase {phase:?} endpoint {:?} {what}", first.endpoint);
    let mut hist = histogram::new_histogram(histogram::PHASE_SIGFIG);
    let mut uncorrected: Option<LatencyHistogram> = None;
    let mut out = StreamResult {
        endpoint: first.endpoint.clone(),
        mode: first.mode,
        ..Default::default()
    };
    let mut seconds: BTreeMap<u32, (u64, u64, f64, LatencyHistogram)> = BTreeMap::new();
    for s in parts {
        out.requests += s.requests;
        out.errors += s.errors;
        out.rps += s.rps;
        out.errors_by_kind.add(&s.errors_by_kind);
        out.in_flight_at_end += s.in_flight_at_end;
        out.connections_opened += s.connections_opened;
        add_in(&ctx("histogram"), &mut hist, &s.histogram)?;
        if let Some(o) = s.offered_rps {
            out.offered_rps = Some(out.offered_rps.unwrap_or(0.0) + o);
        }
        if let Some(l) = s.late_sends {
            out.late_sends = Some(out.late_sends.unwrap_or(0) + l);
        }
        if let Some(text) = &s.uncorrected_histogram {
            let u = uncorrected
                .get_or_insert_with(|| histogram::new_histogram(histogram::PHASE_SIGFIG));
            add_in(&ctx("uncorrectedHistogram"), u, text)?;
        }
        for point in &s.timeline {
            let entry = seconds.entry(point.second).or_insert_with(|| {
                (
                    0,
                    0,
                    0.0,
                    histogram::new_histogram(histogram::TIMELINE_SIGFIG),
                )
            });
            entry.0 += point.requests;
            entry.1 += point.errors;
            entry.2 += point.rps;
            add_in(&ctx("timeline histogram"), &mut entry.3, &point.histogram)?;
        }
    }
    out.latency_ms = LatencyMs::from_histogram(&hist);
    out.histogram = histogram::encode(&hist);
    if let Some(u) = uncorrected {
        out.uncorrected_latency_ms = LatencyMs::from_histogram(&u);
        out.uncorrected_histogram = Some(histogram::encode(&u));
    }
    out.timeline = seconds
        .into_iter()
        .map(|(second, (requests, errors, rps, h))| {
            timeline_point(second, requests, errors, rps, &h)
        })
        .collect();
    Ok(out)
}

/// Builds a timeline point from its counts and histogram.
pub fn timeline_point(
    second: u32,
    requests: u64,
    errors: u64,
    rps: f64,
    h: &LatencyHistogram,
) -> TimelinePoint {
    // A second without a success has no latency; its points carry 0 and `requests == errors`.
    let l = LatencyMs::from_histogram(h).unwrap_or_default();
    TimelinePoint {
        second,
        requests,
        errors,
        rps,
        p50_ms: l.p50,
        p99_ms: l.p99,
        histogram: histogram::encode(h),
    }
}

impl StreamResult {
    /// Samples behind `latency_ms`: the successful requests, each of which has its latency in
    /// `histogram`.
    pub fn samples(&self) -> u64 {
        self.requests.saturating_sub(self.errors)
    }
}

impl RunResult {
    /// Total successful requests over all phases and streams (the CLI's exit code uses this).
    pub fn successful_requests(&self) -> u64 {
        self.phases
            .iter()
            .flat_map(|p| &p.streams)
            .map(|s| s.requests.saturating_sub(s.errors))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::{PHASE_SIGFIG, TIMELINE_SIGFIG, new_histogram, record};

    fn stream(endpoint: &str, samples: &[u64], errors: u64) -> StreamResult {
        let mut h = new_histogram(PHASE_SIGFIG);
        let mut t = new_histogram(TIMELINE_SIGFIG);
        for &v in samples {
            record(&mut h, v);
            record(&mut t, v);
        }
        StreamResult {
            endpoint: endpoint.into(),
            requests: samples.len() as u64 + errors,
            errors,
            rps: samples.len() as f64,
            latency_ms: LatencyMs::from_histogram(&h),
            errors_by_kind: ErrorsByKind {
                status5xx: errors,
                ..Default::default()
            },
            histogram: histogram::encode(&h),
            timeline: vec![timeline_point(
                0,
                samples.len() as u64,
                errors,
                samples.len() as f64,
                &t,
            )],
            ..Default::default()
        }
    }

    fn doc(samples: &[u64], errors: u64) -> RunResult {
        RunResult {
            version: RESULT_VERSION,
            target: "http://t".into(),
            threads: 1,
            generators: 1,
            phases: vec![PhaseResult {
                name: "p".into(),
                duration_secs: 1.0,
                streams: vec![stream("fast", samples, errors)],
                target_stats: vec![],
                started_unix_ms: None,
            }],
            preflight_seconds: None,
        }
    }

    #[test]
    fn merge_equals_the_histogram_of_the_combined_samples() {
        let a: Vec<u64> = (1..=1000).map(|i| i * 37 % 5000 + 100).collect();
        let b: Vec<u64> = (1..=700).map(|i| i * 911 % 90_000 + 20_000).collect();
        let merged = merge(&[doc(&a, 3), doc(&b, 4)]).unwrap();
        let all: Vec<u64> = a.iter().chain(&b).copied().collect();
        let truth = stream("fast", &all, 7);
        let m = &merged.phases[0].streams[0];
        assert_eq!(m.requests, truth.requests);
        assert_eq!(m.errors, 7);
        assert_eq!(m.errors_by_kind.status5xx, 7);
        assert_eq!(m.latency_ms, truth.latency_ms);
        assert_eq!(m.histogram, truth.histogram);
        assert_eq!(m.timeline[0].histogram, truth.timeline[0].histogram);
        assert_eq!(m.timeline[0].p99_ms, truth.timeline[0].p99_ms);
        assert_eq!(merged.generators, 2);
        assert_eq!(merged.threads, 2);
    }

    #[test]
    fn merged_preflight_is_the_slowest_generators_and_absent_when_none_checked() {
        let with = |s: Option<f64>| RunResult {
            preflight_seconds: s,
            ..doc(&[1], 0)
        };
        let merged = merge(&[with(Some(0.2)), with(Some(1.5)), with(None)]).unwrap();
        assert_eq!(merged.preflight_seconds, Some(1.5));
        let merged = merge(&[with(None), with(None)]).unwrap();
        assert_eq!(merged.preflight_seconds, None);
        let json = serde_json::to_string(&with(Some(0.3))).unwrap();
        assert!(json.contains("\"preflightSeconds\":0.3"), "{json}");
        assert!(
            !serde_json::to_string(&with(None))
                .unwrap()
                .contains("preflight")
        );
    }

    #[test]
    fn merge_refuses_different_phases() {
        let mut other = doc(&[1], 0);
        other.phases[0].name = "q".into();
        assert!(matches!(
            merge(&[doc(&[1], 0), other]),
            Err(MergeError::Phases(_))
        ));
        assert!(matches!(merge(&[]), Err(MergeError::Empty)));
    }

    #[test]
    fn documents_round_trip_through_json_in_camel_case() {
        let d = doc(&[1500, 2500], 1);
        let json = serde_json::to_string(&d).unwrap();
        for name in [
            "\"latencyMs\"",
            "\"errorsByKind\"",
            "\"durationSecs\"",
            "\"p999\"",
            "\"status5xx\"",
        ] {
            assert!(json.contains(name), "{name} missing in {json}");
        }
        let back: RunResult = serde_json::from_str(&json).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn a_stream_without_samples_has_no_latency_in_old_or_new_documents() {
        let d = doc(&[], 5);
        let s = &d.phases[0].streams[0];
        assert_eq!((s.samples(), s.latency_ms), (0, None));
        let json = serde_json::to_value(&d).unwrap();
        assert!(json["phases"][0]["streams"][0].get("latencyMs").is_none());
        // Documents written before latencies became optional carry zeros: read as absent.
        let mut old = json.clone();
        old["phases"][0]["streams"][0]["latencyMs"] =
            serde_json::to_value(LatencyMs::default()).unwrap();
        let back: RunResult = serde_json::from_value(old).unwrap();
        assert_eq!(back.phases[0].streams[0].latency_ms, None);
        let merged = merge(&[d.clone(), d]).unwrap();
        assert_eq!(merged.phases[0].streams[0].latency_ms, None);
    }

    #[test]
    fn percentiles_need_one_over_their_tail_in_samples() {
        assert_eq!(
            Percentile::unsupported_by(4),
            [Percentile::P90, Percentile::P99, Percentile::P999]
        );
        assert_eq!(
            Percentile::unsupported_by(99).last(),
            Some(&Percentile::P999)
        );
        assert_eq!(Percentile::unsupported_by(999), [Percentile::P999]);
        assert!(Percentile::unsupported_by(1000).is_empty());
        assert_eq!(Percentile::unsupported_by(0), Percentile::ALL);
        assert_eq!(
            serde_json::to_string(&Percentile::P999).unwrap(),
            "\"p999\""
        );
    }

    #[test]
    fn status_codes_map_to_kinds() {
        assert_eq!(ErrorKind::of_unlisted_status(204), ErrorKind::StatusOther);
        assert_eq!(ErrorKind::of_unlisted_status(404), ErrorKind::Status4xx);
        assert_eq!(ErrorKind::of_unlisted_status(503), ErrorKind::Status5xx);
        assert_eq!(ErrorKind::of_unlisted_status(302), ErrorKind::StatusOther);
    }
}

#[cfg(test)]
mod schema_tests {
    use serde_json::Value;

    /// Every property of every object in `schema` has a description (field doc comments become
    /// `kubectl explain` text in the operator's CRD).
    fn undocumented(schema: &Value, at: &str, out: &mut Vec<String>, seen: &mut usize) {
        match schema {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    for (name, prop) in props {
                        *seen += 1;
                        if prop.get("description").is_none() {
                            out.push(format!("{at}.{name}"));
                        }
                    }
                }
                for (k, v) in map {
                    undocumented(v, &format!("{at}/{k}"), out, seen);
                }
            }
            Value::Array(items) => {
                for v in items {
                    undocumented(v, at, out, seen);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_field_of_the_shared_types_is_documented() {
        for (schema, fields) in [
            (
                serde_json::to_value(schemars::schema_for!(crate::plan::PlanFile)).unwrap(),
                15,
            ),
            (
                serde_json::to_value(schemars::schema_for!(super::RunResult)).unwrap(),
                60,
            ),
        ] {
            let (mut missing, mut seen) = (Vec::new(), 0);
            undocumented(&schema, "", &mut missing, &mut seen);
            assert!(
                missing.is_empty(),
                "fields without a doc comment: {missing:?}"
            );
            assert!(seen >= fields, "only {seen} properties found: {schema}");
        }
    }
}
