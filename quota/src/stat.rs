//! Throttling counters from a cgroup's `cpu.stat`: latency next to throttling is what explains
//! a quota (a request that needs 12 ms of CPU can take 100 ms when its period's quota is spent).

use std::path::Path;

use serde::Serialize;

/// The CFS bandwidth counters of one cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuStat {
    /// Enforcement periods that have elapsed with runnable tasks (`nr_periods`).
    pub periods: u64,
    /// Periods in which the cgroup used up its quota and was throttled (`nr_throttled`).
    pub throttled_periods: u64,
    /// Total time the cgroup's tasks were throttled, in seconds (v1 `throttled_time` in
    /// nanoseconds, v2 `throttled_usec` in microseconds).
    pub throttled_seconds: f64,
}

/// Reads a `cpu.stat` file (v1 or v2 format). `None` when the file is unreadable or has no
/// throttling counters — cgroup v2's root `cpu.stat`, and v2 without the cpu controller, list
/// only usage, and "no counter" must not read as "never throttled".
pub fn read_cpu_stat(path: &Path) -> Option<CpuStat> {
    parse_cpu_stat(&std::fs::read_to_string(path).ok()?)
}

/// Parses the text of a `cpu.stat` file; see [`read_cpu_stat`].
pub fn parse_cpu_stat(text: &str) -> Option<CpuStat> {
    let mut periods = None;
    let mut throttled = None;
    let mut seconds = None;
    for line in text.lines() {
        let mut kv = line.split_whitespace();
        let (Some(key), Some(value)) = (kv.next(), kv.next()) else {
            continue;
        };
        let Ok(value) = value.parse::<u64>() else {
            continue;
        };
        match key {
            "nr_periods" => periods = Some(value),
            "nr_throttled" => throttled = Some(value),
            "throttled_time" => seconds = Some(value as f64 / 1e9),
            "throttled_usec" => seconds = Some(value as f64 / 1e6),
            _ => {}
        }
    }
    Some(CpuStat {
        periods: periods.unwrap_or(0),
        throttled_periods: throttled?,
        throttled_seconds: seconds?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_counts_nanoseconds() {
        let s =
            parse_cpu_stat("nr_periods 10\nnr_throttled 3\nthrottled_time 1500000000\n").unwrap();
        assert_eq!(s.periods, 10);
        assert_eq!(s.throttled_periods, 3);
        assert!((s.throttled_seconds - 1.5).abs() < 1e-12);
    }

    #[test]
    fn v2_counts_microseconds() {
        let s = parse_cpu_stat(
            "usage_usec 5\nuser_usec 3\nsystem_usec 2\nnr_periods 7\nnr_throttled 2\nthrottled_usec 250000\n",
        )
        .unwrap();
        assert_eq!(s.throttled_periods, 2);
        assert!((s.throttled_seconds - 0.25).abs() < 1e-12);
    }

    #[test]
    fn usage_only_file_has_no_throttling_figures() {
        assert_eq!(parse_cpu_stat("usage_usec 5\nuser_usec 3\n"), None);
    }
}
