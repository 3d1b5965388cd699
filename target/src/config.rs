//! Flags and environment: what the operator, the local runner and people pass in. A flag wins
//! over its environment variable (clap's `env`), and anything malformed is refused up front
//! with exit code 2 rather than discovered mid-benchmark.

use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

use clap::{Parser, ValueEnum};

// The operator's BenchmarkRun spec embeds this very type (`mode`, `axes.modes`): the doc
// comment on the enum is the CRD's `kubectl explain` text (keep it one line, schemars turns a
// second paragraph into a title), and the variant docs are the `--mode` help.
/// Concurrency mode of the built-in target.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    ValueEnum,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One event-loop thread; CPU work runs inline and blocks it (plain Node).
    #[default]
    Single,
    /// N event-loop threads, CPU work inline (Node's cluster, in one process).
    Threads,
    /// One event-loop thread plus a fixed pool of CPU workers (Node's worker_threads).
    Pool,
}

impl Mode {
    /// The name used on the command line and in `/stats`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Single => "single",
            Mode::Threads => "threads",
            Mode::Pool => "pool",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which CPU work goes to the pool in `pool` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Offload {
    /// Work expected to cost at least the offload threshold (as in the seeds' Node app).
    Heavy,
    /// Every CPU request.
    All,
}

/// `auto` (from the detected CPU limit) or an explicit count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// As many as the CPU quota allows.
    Auto,
    /// Exactly this many.
    Fixed(usize),
}

impl Count {
    /// The count, with `auto` meaning `detected`.
    pub fn resolve(self, detected: usize) -> usize {
        match self {
            Count::Auto => detected.max(1),
            Count::Fixed(n) => n,
        }
    }
}

impl FromStr for Count {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Count::Auto);
        }
        match s.parse::<usize>() {
            Ok(n) if (1..=1024).contains(&n) => Ok(Count::Fixed(n)),
            _ => Err(format!(
                "expected `auto` or a whole number from 1 to 1024, got `{s}`"
            )),
        }
    }
}

/// Parses "500ms", "10s", "2m", "1m30s" or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("expected a duration like `10s`, `500ms` or `1m30s`, got `{s}`");
    let s = s.trim();
    if s.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let value: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        total += match unit {
            "ms" => Duration::from_millis(value),
            "s" => Duration::from_secs(value),
            "m" => Duration::from_secs(value * 60),
            "h" => Duration::from_secs(value * 3600),
            _ => return Err(bad()),
        };
    }
    Ok(total)
}

/// Parses a timeout: a duration as [`parse_duration`] reads it, more than zero.
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!("must be more than zero, got `{s}`"));
    }
    Ok(d)
}

/// Parses the stats port: `off`, or a TCP port number (0 = any free port).
pub fn parse_stats_port(s: &str) -> Result<StatsPort, String> {
    if s.trim().eq_ignore_ascii_case("off") {
        return Ok(StatsPort::Off);
    }
    s.trim()
        .parse::<u16>()
        .map(StatsPort::Port)
        .map_err(|_| format!("expected `off` or a port number from 0 to 65535, got `{s}`"))
}

/// Whether and where the statistics listener runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsPort {
    /// No statistics listener; `/stats` is served on the main port only.
    Off,
    /// Listen on this port (0 = any free port, announced as `statsPort` in `/stats`).
    Port(u16),
}

/// The command line of the target (also `benchmatrix target ...`).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "benchmatrix-target",
    about = "The HTTP service under test: one event loop, several loops, or a loop with a CPU worker pool",
    version
)]
pub struct Args {
    /// Concurrency mode.
    #[arg(long, env = "BENCH_MODE", value_enum, default_value = "single")]
    pub mode: Mode,
    /// TCP port to listen on (0 = any free port; the chosen one is printed).
    #[arg(
        long,
        env = "PORT",
        default_value_t = 8080,
        allow_negative_numbers = true
    )]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, env = "BENCH_HOST", default_value = "0.0.0.0")]
    pub host: IpAddr,
    /// Event-loop threads in `threads` mode: `auto` (from the CPU quota) or a number.
    #[arg(long, env = "BENCH_THREADS", default_value = "auto")]
    pub threads: Count,
    /// CPU workers in `pool` mode: `auto` (from the CPU quota) or a number.
    #[arg(long = "pool-size", env = "BENCH_POOL_SIZE", default_value = "auto")]
    pub pool_size: Count,
    /// Tasks that may wait for a pool worker; beyond this, requests get 503 + Retry-After.
    #[arg(long = "queue-depth", env = "BENCH_QUEUE_DEPTH", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub queue_depth: u32,
    /// What goes to the pool: `heavy` (at or above the threshold) or `all` CPU work.
    #[arg(long, env = "BENCH_OFFLOAD", value_enum, default_value = "heavy")]
    pub offload: Offload,
    /// Work expected to cost at least this many ms of CPU is heavy.
    #[arg(
        long = "offload-threshold-ms",
        env = "BENCH_OFFLOAD_THRESHOLD_MS",
        default_value_t = 50
    )]
    pub offload_threshold_ms: u64,
    /// CPU milliseconds burned by `/fast`.
    #[arg(long = "fast-ms", env = "BENCH_FAST_MS", default_value_t = 12,
          value_parser = clap::value_parser!(u64).range(0..=30_000))]
    pub fast_ms: u64,
    /// CPU milliseconds burned by `/slow`.
    #[arg(long = "slow-ms", env = "BENCH_SLOW_MS", default_value_t = 380,
          value_parser = clap::value_parser!(u64).range(0..=30_000))]
    pub slow_ms: u64,
    /// CPU time a pool task may use before it fails with 504 and its worker is replaced.
    #[arg(long = "task-deadline-ms", env = "BENCH_TASK_DEADLINE_MS", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub task_deadline_ms: u64,
    /// How long in-flight requests may run after SIGTERM/SIGINT before the process exits.
    #[arg(long = "grace-period", env = "BENCH_GRACE_PERIOD", default_value = "10s",
          value_parser = parse_duration)]
    pub grace_period: Duration,
    /// Time a client has to send a whole request head, from its first byte (or, on a new
    /// connection, from the connection's acceptance); then the connection is closed.
    #[arg(long = "header-timeout", env = "BENCH_HEADER_TIMEOUT", default_value = "10s",
          value_parser = parse_timeout)]
    pub header_timeout: Duration,
    /// Time a keep-alive connection may stay idle (no request in flight, none begun) before it
    /// is closed.
    #[arg(long = "idle-timeout", env = "BENCH_IDLE_TIMEOUT", default_value = "60s",
          value_parser = parse_timeout)]
    pub idle_timeout: Duration,
    /// Open connections the process accepts at once (all loops together); beyond this a new
    /// connection gets 503 + Retry-After and is closed.
    #[arg(long = "max-connections", env = "BENCH_MAX_CONNECTIONS", default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,
    /// Port of a statistics listener (`/stats`, `/healthz`, `/metrics`) served by a thread of
    /// its own, so busy event loops cannot delay it: `off`, or a port (0 = any free port).
    #[arg(long = "stats-port", env = "BENCH_STATS_PORT", default_value = "off",
          value_parser = parse_stats_port)]
    pub stats_port: StatsPort,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(parse_timeout("1s"), Ok(Duration::from_secs(1)));
        assert!(parse_timeout("0s").is_err());
        assert!(parse_timeout("0").is_err());
    }

    #[test]
    fn stats_ports() {
        assert_eq!(parse_stats_port("off"), Ok(StatsPort::Off));
        assert_eq!(parse_stats_port("0"), Ok(StatsPort::Port(0)));
        assert_eq!(parse_stats_port("9091"), Ok(StatsPort::Port(9091)));
        assert!(parse_stats_port("70000").is_err());
        assert!(parse_stats_port("on").is_err());
    }

    #[test]
    fn counts() {
        assert_eq!("auto".parse(), Ok(Count::Auto));
        assert_eq!("3".parse(), Ok(Count::Fixed(3)));
        assert!("0".parse::<Count>().is_err());
        assert!("many".parse::<Count>().is_err());
        assert_eq!(Count::Auto.resolve(2), 2);
        assert_eq!(Count::Fixed(5).resolve(2), 5);
    }

    #[test]
    fn flags_parse_with_defaults() {
        let a = Args::try_parse_from(["t", "--mode", "pool", "--port", "0"]).unwrap();
        assert_eq!(a.mode, Mode::Pool);
        assert_eq!(a.fast_ms, 12);
        assert_eq!(a.slow_ms, 380);
        assert_eq!(a.offload_threshold_ms, 50);
        assert_eq!(a.grace_period, Duration::from_secs(10));
        assert_eq!(a.header_timeout, Duration::from_secs(10));
        assert_eq!(a.idle_timeout, Duration::from_secs(60));
        assert_eq!(a.max_connections, 4096);
        assert_eq!(a.stats_port, StatsPort::Off);
        assert!(Args::try_parse_from(["t", "--mode", "cluster"]).is_err());
        assert!(Args::try_parse_from(["t", "--port", "70000"]).is_err());
    }
}
