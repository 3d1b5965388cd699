//! What the target knows about itself: counters, the latest CPU/RSS sample, event-loop lag, and
//! the cgroup's throttling — served as `/stats` JSON, and at `/metrics` through
//! [`crate::metrics`].

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use benchmatrix_quota::CpuLimit;
use hdrhistogram::Histogram;
use prometheus_client::metrics::histogram::{Histogram as LagBuckets, exponential_buckets};
use serde::Serialize;

use crate::config::Mode;
use crate::connection::ConnectionCounters;

/// How often CPU and RSS are sampled, as the seeds do.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(200);
/// How often each loop's lag timer is due. Node's `monitorEventLoopDelay` uses 10 ms too.
pub const LAG_EVERY: Duration = Duration::from_millis(10);

/// Shared counters and samples. Everything is atomic or briefly locked: any loop thread or
/// pool worker may update it.
pub struct Stats {
    mode: Mode,
    limit: CpuLimit,
    pool_size: usize,
    loop_threads: usize,
    started: Instant,
    /// Responses sent, every endpoint included.
    pub requests_served: AtomicU64,
    /// Tasks waiting for a pool worker right now.
    pub queue_depth: AtomicUsize,
    /// The most tasks that ever waited at once.
    pub queue_peak: AtomicUsize,
    /// Requests refused with 503 because the queue was full.
    pub rejected: AtomicU64,
    /// Pool tasks that passed their CPU deadline (504).
    pub timed_out: AtomicU64,
    /// Pool workers started to replace one whose task timed out.
    pub workers_replaced: AtomicU64,
    cpu_seconds_bits: AtomicU64,
    rss_bytes: AtomicU64,
    rss_peak_bytes: AtomicU64,
    lag: Mutex<Histogram<u32>>,
    lag_buckets: LagBuckets,
    lag_max_us: AtomicU64,
    stats_port: Option<u16>,
    /// Connections of the main port (open, refused, closed by a timeout).
    pub connections: Arc<ConnectionCounters>,
}

/// The `/stats` document. Field names are a shared contract (contracts.md); do not rename.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatsDoc {
    /// `single`, `threads` or `pool`.
    pub mode: String,
    /// Online CPUs of the machine.
    pub host_cpus: usize,
    /// CPUs the process may use (quota rounded up, affinity, host: the smallest).
    pub detected_cpus: usize,
    /// The CFS quota in cores; null when unlimited.
    pub cpu_quota: Option<f64>,
    /// Which file decided `detectedCpus`, or "affinity"/"host".
    pub quota_source: String,
    /// Pool workers (0 when there is no pool).
    pub pool_size: usize,
    /// Event-loop threads.
    pub loop_threads: usize,
    /// Responses sent since start.
    pub requests_served: u64,
    /// CPU time (user + system) of the whole process since start, in seconds.
    pub cpu_seconds_used: f64,
    /// Resident set size now.
    pub rss_bytes: u64,
    /// Peak resident set size (the kernel's VmHWM).
    pub rss_peak_bytes: u64,
    /// Longest event-loop lag seen since start, in ms.
    pub loop_lag_max_ms: f64,
    /// 99th percentile of event-loop lag since start, in ms; null before the first sample.
    pub loop_lag_p99_ms: Option<f64>,
    /// Tasks waiting for a pool worker now.
    pub queue_depth: usize,
    /// Most tasks ever waiting at once.
    pub queue_peak: usize,
    /// Requests refused with 503 (queue full).
    pub rejected: u64,
    /// Pool tasks failed with 504 (CPU deadline).
    pub timed_out: u64,
    /// Enforcement periods in which the cgroup was throttled; null when not readable.
    pub throttled_periods: Option<u64>,
    /// Time the cgroup spent throttled, in seconds; null when not readable.
    pub throttled_seconds: Option<f64>,
    /// Seconds since the process started serving.
    pub uptime_seconds: f64,
    /// Port of the statistics listener, which serves this document from a thread of its own
    /// (busy event loops cannot delay it); null when there is none.
    pub stats_port: Option<u16>,
}

impl Stats {
    /// Fresh counters for a process in `mode` with this CPU limit and sizing.
    pub fn new(mode: Mode, limit: CpuLimit, pool_size: usize, loop_threads: usize) -> Self {
        // Lag from 1 µs to 10 minutes at 2 significant digits: ~1% resolution in a few KiB.
        let lag = Histogram::new_with_bounds(1, 600_000_000, 2)
            .expect("static histogram bounds are valid");
        let stats = Stats {
            mode,
            limit,
            pool_size,
            loop_threads,
            started: Instant::now(),
            requests_served: AtomicU64::new(0),
            queue_depth: AtomicUsize::new(0),
            queue_peak: AtomicUsize::new(0),
            rejected: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            workers_replaced: AtomicU64::new(0),
            cpu_seconds_bits: AtomicU64::new(0),
            rss_bytes: AtomicU64::new(0),
            rss_peak_bytes: AtomicU64::new(0),
            lag: Mutex::new(lag),
            lag_buckets: LagBuckets::new(lag_bucket_bounds()),
            lag_max_us: AtomicU64::new(0),
            stats_port: None,
            connections: Arc::new(ConnectionCounters::default()),
        };
        stats.sample();
        stats
    }

    /// The same, announcing a statistics listener on `port` in `/stats`.
    pub fn with_stats_port(mut self, port: u16) -> Self {
        self.stats_port = Some(port);
        self
    }

    /// The CPU limit detected at start.
    pub fn limit(&self) -> &CpuLimit {
        &self.limit
    }

    /// Reads the process's CPU time and RSS now.
    pub fn sample(&self) {
        if let Some(cpu) = process_cpu_seconds() {
            self.cpu_seconds_bits.store(cpu.to_bits(), Relaxed);
        }
        let (rss, peak) = memory();
        if let Some(rss) = rss {
            self.rss_bytes.store(rss, Relaxed);
            self.rss_peak_bytes.fetch_max(rss, Relaxed);
        }
        if let Some(peak) = peak {
            self.rss_peak_bytes.fetch_max(peak, Relaxed);
        }
    }

    /// Every lag observation in fixed buckets, for `/metrics` (the HDR histogram beside it
    /// gives `/stats` its percentile).
    pub fn lag_buckets(&self) -> &LagBuckets {
        &self.lag_buckets
    }

    /// Records one lag observation (how late a loop's timer fired).
    pub fn record_lag(&self, lag: Duration) {
        self.lag_buckets.observe(lag.as_secs_f64());
        let us = (lag.as_micros() as u64).max(1);
        self.lag_max_us.fetch_max(us, Relaxed);
        if let Ok(mut h) = self.lag.lock() {
            // Values beyond the bound are clamped rather than lost.
            h.saturating_record(us);
        }
    }

    /// Notes one more task waiting for a worker.
    pub fn queue_push(&self) {
        let now = self.queue_depth.fetch_add(1, Relaxed) + 1;
        self.queue_peak.fetch_max(now, Relaxed);
    }

    /// Notes one task leaving the queue.
    pub fn queue_pop(&self) {
        self.queue_depth.fetch_sub(1, Relaxed);
    }

    /// The `/stats` document as of now (takes a fresh CPU/RSS sample first).
    pub fn snapshot(&self) -> StatsDoc {
        self.sample();
        let p99 = self
            .lag
            .lock()
            .ok()
            .and_then(|h| (!h.is_empty()).then(|| h.value_at_quantile(0.99) as f64 / 1e3));
        let throttling = benchmatrix_quota::throttling(&self.limit);
        StatsDoc {
            mode: self.mode.as_str().to_string(),
            host_cpus: self.limit.host_cpus,
            detected_cpus: self.limit.detected_cpus,
            cpu_quota: self.limit.quota_cores,
            quota_source: self.limit.source.clone(),
            pool_size: self.pool_size,
            loop_threads: self.loop_threads,
            requests_served: self.requests_served.load(Relaxed),
            cpu_seconds_used: f64::from_bits(self.cpu_seconds_bits.load(Relaxed)),
            rss_bytes: self.rss_bytes.load(Relaxed),
            rss_peak_bytes: self.rss_peak_bytes.load(Relaxed),
            loop_lag_max_ms: self.lag_max_us.load(Relaxed) as f64 / 1e3,
            loop_lag_p99_ms: p99,
            queue_depth: self.queue_depth.load(Relaxed),
            queue_peak: self.queue_peak.load(Relaxed),
            rejected: self.rejected.load(Relaxed),
            timed_out: self.timed_out.load(Relaxed),
            throttled_periods: throttling.map(|t| t.throttled_periods),
            throttled_seconds: throttling.map(|t| t.throttled_seconds),
            uptime_seconds: self.started.elapsed().as_secs_f64(),
            stats_port: self.stats_port,
        }
    }
}

/// Bucket bounds of the lag histogram: 0.5 ms to about 33 s, doubling. An idle loop lands in
/// the lowest buckets (tokio's timer has 1 ms granularity); the top one holds the longest CPU
/// work a request may do inline (30 s, `MAX_CPU_MS`).
fn lag_bucket_bounds() -> impl Iterator<Item = f64> {
    exponential_buckets(0.0005, 2.0, 17)
}

/// User + system CPU time of the whole process.
fn process_cpu_seconds() -> Option<f64> {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// (VmRSS, VmHWM) from /proc/self/status, in bytes.
fn memory() -> (Option<u64>, Option<u64>) {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return (None, None);
    };
    let field = |name: &str| {
        status.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.trim();
            let kb: u64 = rest.trim_end_matches("kB").trim().parse().ok()?;
            Some(kb * 1024)
        })
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Measures this loop's lag forever: sleeps until a deadline and records how late it woke.
/// Run one per event-loop thread; a loop busy with inline CPU work wakes late by exactly the
/// time it was blocked. Tokio's timer has 1 ms granularity, so an idle loop shows up to ~1 ms.
pub async fn watch_loop_lag(stats: std::sync::Arc<Stats>) {
    loop {
        let due = tokio::time::Instant::now() + LAG_EVERY;
        tokio::time::sleep_until(due).await;
        stats.record_lag(tokio::time::Instant::now().saturating_duration_since(due));
    }
}

/// Samples CPU and RSS every [`SAMPLE_EVERY`] forever, so the peak RSS and CPU figures are
/// current even when nobody asks for `/stats`.
pub async fn sample_forever(stats: std::sync::Arc<Stats>) {
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        stats.sample();
    }
}
