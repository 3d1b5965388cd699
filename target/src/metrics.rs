//! `/metrics`: the target's figures in the OpenMetrics text format, through a
//! `prometheus-client` registry, so names, types, units, label escaping and the closing
//! `# EOF` follow the format by construction instead of by hand-written text.
//!
//! Two kinds of metric live in the registry:
//!
//! - The event-loop lag histogram, a real histogram the loops observe into as they measure.
//! - Everything else, read at scrape time by `StatsCollector` from the counters and samples in
//!   [`Stats`]. Those atomics are what `/stats` reads too and what the connection code, the pool
//!   and the request counter already update; a second set of `prometheus-client` counters
//!   would double the bookkeeping on every request and could drift from `/stats`. The sampled
//!   figures (CPU, RSS, throttling) are read fresh for the scrape, as `/stats` does.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeGaugeValue, EncodeMetric,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

use crate::connection::ConnectionCounters;
use crate::stats::{Stats, StatsDoc};

/// The Content-Type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Prefix of every metric name.
const PREFIX: &str = "benchmatrix_target";

/// The registry behind `/metrics` of one target process.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
}

impl Metrics {
    /// A registry over `stats`: the lag histogram, the figures read at scrape time, and an info
    /// metric with the mode and where the CPU limit came from.
    pub fn new(stats: Arc<Stats>) -> Self {
        let mut registry = Registry::default();
        let doc = stats.snapshot();
        // `benchmatrix_target_info{mode=...,quota_source=...} 1`: the library appends `_info`.
        registry.register(
            PREFIX,
            "Mode and where the CPU limit came from",
            Info::new(vec![
                ("mode".to_string(), doc.mode),
                ("quota_source".to_string(), doc.quota_source),
            ]),
        );
        let target = registry.sub_registry_with_prefix(PREFIX);
        target.register_with_unit(
            "loop_lag",
            "How late each event loop's 10 ms timer fired, every observation since start",
            Unit::Seconds,
            stats.lag_buckets().clone(),
        );
        target.register_collector(Box::new(StatsCollector { stats }));
        Metrics { registry }
    }

    /// The metrics now, in the OpenMetrics text format ([`CONTENT_TYPE`]).
    ///
    /// Cheap enough for an event loop: one CPU/RSS sample (a `getrusage` and a read of
    /// `/proc/self/status`), the cgroup's `cpu.stat`, and a few kilobytes of text.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing into a String cannot fail; an encoding error would be a bug in a metric.
        if let Err(e) = encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "cannot encode the target's metrics");
        }
        out
    }
}

/// Reads [`Stats`] at each scrape and encodes its figures: one snapshot per scrape, so the
/// figures of one exposition belong together.
struct StatsCollector {
    stats: Arc<Stats>,
}

impl fmt::Debug for StatsCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StatsCollector").finish_non_exhaustive()
    }
}

impl Collector for StatsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let d = self.stats.snapshot();
        let e = &mut encoder;
        // Help texts are written as given here (the registry adds the full stop only to
        // metrics registered with it), so they carry their own.
        encode_usage(e, &d)?;
        encode_cpus(e, &d)?;
        encode_pool(e, &d, &self.stats)?;
        encode_connections(e, &self.stats.connections)?;
        encode_throttling(e, &d)?;
        gauge(
            e,
            "uptime",
            "Time since start.",
            Some(Unit::Seconds),
            d.uptime_seconds,
        )
    }
}

/// What the process has served and used: requests, CPU time, memory and event-loop lag.
fn encode_usage(e: &mut DescriptorEncoder, d: &StatsDoc) -> fmt::Result {
    counter(
        e,
        "requests_served",
        "Responses sent on the main port.",
        None,
        d.requests_served,
    )?;
    let seconds = Some(Unit::Seconds);
    counter(
        e,
        "cpu",
        "Process CPU time (user+system).",
        seconds.clone(),
        d.cpu_seconds_used,
    )?;
    let bytes = Some(Unit::Bytes);
    gauge(e, "rss", "Resident set size.", bytes.clone(), d.rss_bytes)?;
    gauge(
        e,
        "rss_peak",
        "Peak resident set size (VmHWM).",
        bytes,
        d.rss_peak_bytes,
    )?;
    let lag_max = d.loop_lag_max_ms / 1e3;
    gauge(
        e,
        "loop_lag_max",
        "Longest event-loop lag since start.",
        seconds.clone(),
        lag_max,
    )?;
    if let Some(p99) = d.loop_lag_p99_ms {
        let help = "99th percentile event-loop lag since start.";
        gauge(e, "loop_lag_p99", help, seconds, p99 / 1e3)?;
    }
    Ok(())
}

/// The CPUs the process may use: the machine's, and what the quota and affinity allow.
fn encode_cpus(e: &mut DescriptorEncoder, d: &StatsDoc) -> fmt::Result {
    gauge(
        e,
        "host_cpus",
        "Online CPUs of the machine.",
        None,
        d.host_cpus,
    )?;
    let help = "CPUs the quota and affinity allow.";
    gauge(e, "detected_cpus", help, None, d.detected_cpus)?;
    if let Some(q) = d.cpu_quota {
        gauge(
            e,
            "cpu_quota",
            "CFS quota in cores.",
            Some(Unit::Other("cores".into())),
            q,
        )?;
    }
    Ok(())
}

/// The CPU pool and the event-loop threads: sizes, the queue, refusals and replacements.
fn encode_pool(e: &mut DescriptorEncoder, d: &StatsDoc, stats: &Stats) -> fmt::Result {
    gauge(e, "pool_size", "CPU pool workers.", None, d.pool_size)?;
    gauge(
        e,
        "loop_threads",
        "Event-loop threads.",
        None,
        d.loop_threads,
    )?;
    let help = "Tasks waiting for a pool worker.";
    gauge(e, "pool_queue_depth", help, None, d.queue_depth)?;
    let help = "Most tasks ever waiting at once.";
    gauge(e, "pool_queue_peak", help, None, d.queue_peak)?;
    let help = "Requests refused because the queue was full.";
    counter(e, "pool_rejected", help, None, d.rejected)?;
    let help = "Pool tasks failed at their CPU deadline.";
    counter(e, "pool_timed_out", help, None, d.timed_out)?;
    let help = "Workers replaced after a timed-out task.";
    let replaced = stats.workers_replaced.load(Relaxed);
    counter(e, "pool_workers_replaced", help, None, replaced)
}

/// The main port's connections: open, refused, and closed by either timeout.
fn encode_connections(e: &mut DescriptorEncoder, conns: &ConnectionCounters) -> fmt::Result {
    let help = "Connections open on the main port.";
    gauge(e, "connections_open", help, None, conns.open.load(Relaxed))?;
    let help = "Connections answered 503 because the connection limit was reached.";
    counter(
        e,
        "connections_refused",
        help,
        None,
        conns.refused.load(Relaxed),
    )?;
    let help = "Connections closed because a request head did not arrive within the header \
                timeout.";
    let header_timeouts = conns.header_timeouts.load(Relaxed);
    counter(
        e,
        "connections_header_timeouts",
        help,
        None,
        header_timeouts,
    )?;
    let help = "Connections closed after the idle timeout (idle, or a client reading nothing).";
    let idle_timeouts = conns.idle_timeouts.load(Relaxed);
    counter(e, "connections_idle_timeouts", help, None, idle_timeouts)
}

/// The cgroup's CFS throttling, when the cgroup reports it.
fn encode_throttling(e: &mut DescriptorEncoder, d: &StatsDoc) -> fmt::Result {
    if let Some(p) = d.throttled_periods {
        let help = "CFS periods in which the cgroup was throttled.";
        counter(e, "cpu_throttled_periods", help, None, p)?;
    }
    if let Some(s) = d.throttled_seconds {
        let help = "Time the cgroup was throttled.";
        counter(e, "cpu_throttled", help, Some(Unit::Seconds), s)?;
    }
    Ok(())
}

/// Encodes one counter; the library names its sample `NAME[_UNIT]_total`.
fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    value: impl EncodeCounterValue,
) -> fmt::Result {
    encode_metric(encoder, name, help, unit, ConstCounter::new(value))
}

/// Encodes one gauge, named `NAME[_UNIT]`.
fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    value: impl EncodeGaugeValue,
) -> fmt::Result {
    encode_metric(encoder, name, help, unit, ConstGauge::new(value))
}

/// Encodes `metric` under its descriptor: name, help, unit and the metric's type.
fn encode_metric(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    metric: impl EncodeMetric,
) -> fmt::Result {
    metric.encode(encoder.encode_descriptor(name, help, unit.as_ref(), metric.metric_type())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;
    use std::path::Path;
    use std::time::Duration;

    fn stats() -> Arc<Stats> {
        let limit = benchmatrix_quota::detect_in(Path::new("/nonexistent"), None, 2);
        Arc::new(Stats::new(Mode::Threads, limit, 0, 2))
    }

    #[test]
    fn names_units_and_types_follow_openmetrics() {
        let stats = stats();
        stats.requests_served.fetch_add(3, Relaxed);
        let text = Metrics::new(Arc::clone(&stats)).render();
        for line in [
            "# TYPE benchmatrix_target_requests_served counter\n",
            "benchmatrix_target_requests_served_total 3\n",
            "# TYPE benchmatrix_target_cpu_seconds counter\n",
            "# UNIT benchmatrix_target_cpu_seconds seconds\n",
            "# TYPE benchmatrix_target_rss_bytes gauge\n",
            "# UNIT benchmatrix_target_rss_bytes bytes\n",
            "# TYPE benchmatrix_target_loop_lag_seconds histogram\n",
            "benchmatrix_target_loop_threads 2\n",
            "# TYPE benchmatrix_target info\n",
            "benchmatrix_target_info{mode=\"threads\",quota_source=\"host\"} 1\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
        // No cgroup under the fake root: unknown figures are left out, not reported as zero.
        assert!(!text.contains("cpu_throttled"), "{text}");
        assert!(!text.contains("cpu_quota"), "{text}");
    }

    #[test]
    fn lag_lands_in_the_bucket_of_its_size() {
        let stats = stats();
        let metrics = Metrics::new(Arc::clone(&stats));
        stats.record_lag(Duration::from_micros(700));
        stats.record_lag(Duration::from_millis(300));
        let text = metrics.render();
        let lag = "benchmatrix_target_loop_lag_seconds";
        for line in [
            format!("{lag}_bucket{{le=\"0.0005\"}} 0\n"),
            format!("{lag}_bucket{{le=\"0.001\"}} 1\n"),
            format!("{lag}_bucket{{le=\"0.256\"}} 1\n"),
            format!("{lag}_bucket{{le=\"0.512\"}} 2\n"),
            format!("{lag}_bucket{{le=\"+Inf\"}} 2\n"),
            format!("{lag}_count 2\n"),
            "benchmatrix_target_loop_lag_max_seconds 0.3\n".to_string(),
        ] {
            assert!(text.contains(&line), "missing {line:?} in\n{text}");
        }
    }
}
