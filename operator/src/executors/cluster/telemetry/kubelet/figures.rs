//! A container's readings over time, and the figures of a window (a cell's measured phase).

use std::collections::VecDeque;

use serde::Serialize;

use super::parse::{Reading, Source};
use crate::resource::rounding::round3;

/// At most this many points per series; the oldest go first (a sampler polling every second
/// keeps over an hour, bounded whatever the run's length).
pub const MAX_POINTS: usize = 4096;

/// One container's readings, one series per [`Source`], each sorted by time, one point per
/// timestamp (a repeated scrape of unchanged stats adds nothing).
#[derive(Debug, Clone, Default)]
pub struct Samples {
    resource: VecDeque<Reading>,
    cadvisor: VecDeque<Reading>,
}

impl Samples {
    /// Adds a reading to its source's series. A reading at a timestamp already held only fills
    /// the fields that point lacked.
    pub fn push(&mut self, r: Reading) {
        let series = match r.source {
            Source::Resource => &mut self.resource,
            Source::Cadvisor => &mut self.cadvisor,
        };
        match series.binary_search_by_key(&r.at_ms, |p| p.at_ms) {
            Ok(i) => {
                let p = &mut series[i];
                p.cpu_seconds = p.cpu_seconds.or(r.cpu_seconds);
                p.working_set_bytes = p.working_set_bytes.or(r.working_set_bytes);
                p.cfs_periods = p.cfs_periods.or(r.cfs_periods);
                p.throttled_periods = p.throttled_periods.or(r.throttled_periods);
                p.throttled_seconds = p.throttled_seconds.or(r.throttled_seconds);
                p.max_usage_bytes = p.max_usage_bytes.or(r.max_usage_bytes);
                p.cpu_limit_cores = p.cpu_limit_cores.or(r.cpu_limit_cores);
            }
            Err(i) => {
                series.insert(i, r);
                if series.len() > MAX_POINTS {
                    series.pop_front();
                }
            }
        }
    }

    /// The number of points held per source: (resource, cadvisor).
    pub fn len(&self) -> (usize, usize) {
        (self.resource.len(), self.cadvisor.len())
    }

    /// Whether no reading was kept.
    pub fn is_empty(&self) -> bool {
        self.resource.is_empty() && self.cadvisor.is_empty()
    }
}

/// A time window in ms since the epoch, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Start, ms.
    pub start_ms: i64,
    /// End, ms.
    pub end_ms: i64,
}

/// What a container (or, summed, a cell's replicas) used over a window. Every `None` has its
/// reason in `missing`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerFigures {
    /// CPU time used in the window, core-seconds.
    pub cpu_seconds: Option<f64>,
    /// CFS enforcement periods in the window (cadvisor's counters weighed by the CPU used).
    pub cfs_periods: Option<u64>,
    /// Of those, periods in which the container was throttled.
    pub throttled_periods: Option<u64>,
    /// Time spent throttled in the window, seconds (3 decimals).
    pub throttled_seconds: Option<f64>,
    /// How much of the window lies between the two cadvisor samples the throttling figures were
    /// weighed from, seconds (the smallest over replicas); the rest is carried by the CPU
    /// counter.
    pub throttle_covered_seconds: Option<f64>,
    /// Working set before the load: the last sample at or before the window's start.
    pub memory_idle_bytes: Option<u64>,
    /// Highest working set sampled in the window.
    pub memory_peak_bytes: Option<u64>,
    /// The CFS quota in cores, from cadvisor's last sample; `None` without a limit.
    pub cpu_limit_cores: Option<f64>,
    /// Why each absent figure is absent, e.g. `"cpuSeconds: container restarted"`.
    pub missing: Vec<String>,
}

/// The figures of one container over `w`; see the module doc for where each comes from.
pub fn figures(samples: &Samples, w: Window) -> ContainerFigures {
    let mut f = ContainerFigures {
        cpu_limit_cores: samples
            .cadvisor
            .iter()
            .rev()
            .find_map(|p| p.cpu_limit_cores),
        ..Default::default()
    };
    if w.end_ms <= w.start_ms {
        f.missing.push(format!(
            "all: empty window ({} ms to {} ms)",
            w.start_ms, w.end_ms
        ));
        return f;
    }
    let cpu = cpu_seconds(&samples.resource, w);
    match &cpu {
        Ok(v) => f.cpu_seconds = Some(*v),
        Err(why) => f.missing.push(format!("cpuSeconds: {why}")),
    }
    match throttling(
        &samples.cadvisor,
        &samples.resource,
        w,
        cpu.as_ref().ok().copied(),
    ) {
        Ok(t) => {
            f.cfs_periods = Some(t.periods);
            f.throttled_periods = Some(t.throttled);
            f.throttled_seconds = Some(t.throttled_seconds);
            f.throttle_covered_seconds = Some(t.covered_seconds);
        }
        Err(why) => f.missing.push(format!("throttling: {why}")),
    }
    let ws: Vec<(i64, u64)> = samples
        .resource
        .iter()
        .filter_map(|p| Some((p.at_ms, p.working_set_bytes?)))
        .collect();
    let inside = || {
        ws.iter()
            .filter(|(t, _)| (w.start_ms..=w.end_ms).contains(t))
    };
    f.memory_idle_bytes = ws
        .iter()
        .rev()
        .find(|(t, _)| *t <= w.start_ms)
        .or_else(|| inside().next())
        .map(|(_, b)| *b);
    f.memory_peak_bytes = inside().map(|(_, b)| *b).max();
    if f.memory_idle_bytes.is_none() {
        f.missing
            .push("memoryIdleBytes: no working-set sample at or before the window's end".into());
    }
    if f.memory_peak_bytes.is_none() {
        f.missing
            .push("memoryPeakBytes: no working-set sample within the window".into());
    }
    f
}

/// The usage counter interpolated at both ends, never extrapolated.
fn cpu_seconds(series: &VecDeque<Reading>, w: Window) -> Result<f64, String> {
    let pts: Vec<(i64, f64)> = series
        .iter()
        .filter_map(|p| Some((p.at_ms, p.cpu_seconds?)))
        .collect();
    let (Some(first), Some(last)) = (pts.first(), pts.last()) else {
        return Err("no CPU samples from /metrics/resource".into());
    };
    if w.start_ms < first.0 {
        return Err(format!(
            "first CPU sample is {} ms after the window's start (no extrapolation)",
            first.0 - w.start_ms
        ));
    }
    if w.end_ms > last.0 {
        return Err(format!(
            "last CPU sample is {} ms before the window's end (no extrapolation)",
            w.end_ms - last.0
        ));
    }
    // The points from the one at or before the start to the one at or after the end.
    let lo = pts.partition_point(|p| p.0 <= w.start_ms) - 1;
    let hi = pts.partition_point(|p| p.0 < w.end_ms);
    let used = &pts[lo..=hi];
    if used.windows(2).any(|p| p[1].1 < p[0].1) {
        return Err("container restarted".into());
    }
    // `used` has two points at least (end > start); interpolate in the pair around `t`.
    let at = |t: i64| {
        let i = used.partition_point(|p| p.0 <= t).clamp(1, used.len() - 1);
        let ((t0, v0), (t1, v1)) = (used[i - 1], used[i]);
        v0 + (v1 - v0) * (t - t0) as f64 / (t1 - t0) as f64
    };
    Ok(at(w.end_ms) - at(w.start_ms))
}

/// The throttling figures of a window.
struct Throttling {
    periods: u64,
    throttled: u64,
    throttled_seconds: f64,
    covered_seconds: f64,
}

/// The CPU counter at `t`, interpolated between the fresh samples around it. Before the first
/// sample and after the last it is taken as flat: the sampler starts with the load (before the
/// load generator's warm-up) and ends with the result, and the target idles outside the load.
fn cpu_at(pts: &[(i64, f64)], t: i64) -> Option<f64> {
    let (first, last) = (pts.first()?, pts.last()?);
    if t <= first.0 {
        return Some(first.1);
    }
    if t >= last.0 {
        return Some(last.1);
    }
    let i = pts.partition_point(|p| p.0 <= t);
    let ((t0, v0), (t1, v1)) = (pts[i - 1], pts[i]);
    Some(v0 + (v1 - v0) * (t - t0) as f64 / (t1 - t0) as f64)
}

/// The CFS counters over the window, from cadvisor's slow samples weighted by the fresh CPU
/// counter.
///
/// cadvisor refreshes a container's stats every 10 to 20 s (its housekeeping interval with
/// jitter), so a 25 s window often holds only one of its samples: differencing the samples inside
/// the window, as this once did, left a cell without throttling figures about one time in three.
/// Instead the counters' growth between the first and last cadvisor samples held (whose span
/// takes in the window, or most of it: the first scrape, at the load's start, returns the
/// container's last sample from before it) is divided by the CPU seconds used over that same
/// span, and multiplied by the CPU seconds used in the window. The CFS counters advance only while
/// the container runs, as its CPU counter does, so a span that runs into the idle time before or
/// after the load, or a load that varies, weighs each second by the work done in it rather than
/// by its length. The CPU counter comes from `/metrics/resource`, sampled every second.
fn throttling(
    series: &VecDeque<Reading>,
    resource: &VecDeque<Reading>,
    w: Window,
    cpu_in_window: Option<f64>,
) -> Result<Throttling, String> {
    let pts: Vec<(i64, u64, u64, f64)> = series
        .iter()
        .filter_map(|p| {
            Some((
                p.at_ms,
                p.cfs_periods?,
                p.throttled_periods?,
                p.throttled_seconds?,
            ))
        })
        .collect();
    let [a, .., b] = pts.as_slice() else {
        return Err(format!(
            "{} cadvisor sample(s) of the container while the load ran; two are needed (the \
             kubelet refreshes them every 10-20 s, so the load was shorter than that, or \
             /metrics/cadvisor could not be read)",
            pts.len()
        ));
    };
    if pts
        .windows(2)
        .any(|p| p[1].1 < p[0].1 || p[1].2 < p[0].2 || p[1].3 < p[0].3)
    {
        return Err("container restarted".into());
    }
    let covered = (b.0.min(w.end_ms) - a.0.max(w.start_ms)).max(0);
    if covered < 1000 {
        return Err(format!(
            "the cadvisor samples ({} ms to {} ms) do not reach into the window ({} ms to {} ms)",
            a.0, b.0, w.start_ms, w.end_ms
        ));
    }
    let Some(window_cpu) = cpu_in_window else {
        return Err("it is weighted by the window's CPU seconds, which are missing".into());
    };
    let cpu: Vec<(i64, f64)> = resource
        .iter()
        .filter_map(|p| Some((p.at_ms, p.cpu_seconds?)))
        .collect();
    let (Some(cpu_a), Some(cpu_b)) = (cpu_at(&cpu, a.0), cpu_at(&cpu, b.0)) else {
        return Err("no CPU samples from /metrics/resource to weigh the counters by".into());
    };
    let span_cpu = cpu_b - cpu_a;
    let grew = (b.1 - a.1, b.2 - a.2, b.3 - a.3);
    if span_cpu <= 1e-6 {
        // No work between the samples: the counters cannot have moved either, unless the two
        // sources disagree, which is said rather than divided by zero.
        return if grew.0 == 0 {
            Ok(Throttling {
                periods: 0,
                throttled: 0,
                throttled_seconds: 0.0,
                covered_seconds: covered as f64 / 1000.0,
            })
        } else {
            Err("the CFS counters grew while the CPU counter did not".into())
        };
    }
    let scale = window_cpu / span_cpu;
    Ok(Throttling {
        periods: (grew.0 as f64 * scale).round() as u64,
        throttled: (grew.1 as f64 * scale).round() as u64,
        throttled_seconds: round3(grew.2 * scale),
        covered_seconds: covered as f64 / 1000.0,
    })
}

/// The figures of a cell's replicas together: CPU, periods, throttling and memory summed (memory
/// too: the cell's footprint is every replica's), the covered span the shortest. A figure is
/// `None` if any replica's is, and every replica's reasons are kept, prefixed with its index.
pub fn sum_replicas(replicas: &[ContainerFigures]) -> ContainerFigures {
    if replicas.is_empty() {
        return ContainerFigures {
            missing: vec!["all: no replicas".into()],
            ..Default::default()
        };
    }
    fn all<T: Copy>(
        rs: &[ContainerFigures],
        get: impl Fn(&ContainerFigures) -> Option<T>,
        fold: impl Fn(T, T) -> T,
    ) -> Option<T> {
        rs.iter()
            .map(&get)
            .reduce(|a, b| Some(fold(a?, b?)))
            .flatten()
    }
    ContainerFigures {
        cpu_seconds: all(replicas, |f| f.cpu_seconds, |a, b| a + b),
        cfs_periods: all(replicas, |f| f.cfs_periods, |a, b| a + b),
        throttled_periods: all(replicas, |f| f.throttled_periods, |a, b| a + b),
        throttled_seconds: all(replicas, |f| f.throttled_seconds, |a, b| round3(a + b)),
        throttle_covered_seconds: all(replicas, |f| f.throttle_covered_seconds, f64::min),
        memory_idle_bytes: all(replicas, |f| f.memory_idle_bytes, |a, b| a + b),
        memory_peak_bytes: all(replicas, |f| f.memory_peak_bytes, |a, b| a + b),
        cpu_limit_cores: all(replicas, |f| f.cpu_limit_cores, |a, b| a + b),
        missing: replicas
            .iter()
            .enumerate()
            .flat_map(|(i, f)| f.missing.iter().map(move |m| format!("replica {i}: {m}")))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(at_ms: i64, secs: f64) -> Reading {
        Reading {
            cpu_seconds: Some(secs),
            ..Reading::new(Source::Resource, at_ms)
        }
    }

    fn window(start_s: f64, end_s: f64) -> Window {
        Window {
            start_ms: (start_s * 1000.0) as i64,
            end_ms: (end_s * 1000.0) as i64,
        }
    }

    /// A counter growing 2.0 core-s/s, sampled about every second with jitter.
    fn two_cores() -> Samples {
        let mut s = Samples::default();
        for (i, jitter) in [0, 130, -90, 240, 10, -200, 60, 310, -40, 170, 0, 90]
            .into_iter()
            .enumerate()
        {
            let t = i as i64 * 1000 + jitter + 500;
            s.push(cpu(t, 2.0 * t as f64 / 1000.0));
        }
        s
    }

    #[test]
    fn cpu_is_interpolated_between_the_bracketing_samples() {
        let f = figures(&two_cores(), window(3.5, 9.5));
        assert!((f.cpu_seconds.unwrap() - 12.0).abs() < 1e-9, "{f:?}");
        // A window starting on a sample; the nearest samples' difference would give 6.48.
        let f = figures(
            &two_cores(),
            Window {
                start_ms: 500,
                end_ms: 3810,
            },
        );
        assert!((f.cpu_seconds.unwrap() - 6.62).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn cpu_refuses_to_extrapolate() {
        for (w, side) in [(window(0.2, 5.0), "start"), (window(3.0, 11.8), "end")] {
            let f = figures(&two_cores(), w);
            assert_eq!(f.cpu_seconds, None);
            assert!(
                f.missing.iter().any(|m| m.starts_with("cpuSeconds:")
                    && m.contains("no extrapolation")
                    && m.contains(side)),
                "{f:?}"
            );
        }
    }

    #[test]
    fn a_counter_reset_inside_the_window_is_a_restart() {
        let mut s = two_cores();
        s.push(cpu(6200, 0.1)); // the counter starts again from zero at 6.2 s
        let f = figures(&s, window(3.5, 9.5));
        assert_eq!(f.cpu_seconds, None);
        assert!(
            f.missing
                .contains(&"cpuSeconds: container restarted".to_string()),
            "{f:?}"
        );
        // A reset outside the window does not matter.
        assert!(figures(&s, window(0.7, 5.0)).cpu_seconds.is_some());
    }

    /// A container that idles until 0 s, then works half a core and is throttled 9 periods of
    /// its 10 a second until `load_ends` s, then idles again; CPU sampled every second from 0 s,
    /// cadvisor at `cadvisor` (seconds, any order).
    fn throttled_load(load_ends: i64, cadvisor: &[i64]) -> Samples {
        let busy = |t_ms: i64| t_ms.clamp(0, load_ends * 1000);
        let mut s = Samples::default();
        for t in 0..=(load_ends + 15) {
            s.push(cpu(t * 1000, 100.0 + 0.5 * busy(t * 1000) as f64 / 1000.0));
        }
        for &t in cadvisor {
            let b = busy(t * 1000) as u64;
            s.push(Reading {
                cfs_periods: Some(5000 + 10 * b / 1000),
                throttled_periods: Some(700 + 9 * b / 1000),
                throttled_seconds: Some(3.0 + 0.45 * b as f64 / 1000.0),
                cpu_limit_cores: Some(0.5),
                ..Reading::new(Source::Cadvisor, t * 1000)
            });
        }
        s
    }

    #[test]
    fn throttling_of_a_25_s_phase_with_one_cadvisor_sample_inside_is_there() {
        // What a real cluster showed: cadvisor 19 s apart, so the 25 s window (5-30 s, after
        // a 5 s warm-up) holds one sample (at 16 s); the one before comes from the first
        // scrape, taken as the load starts.
        let s = throttled_load(30, &[-3, 16]);
        let f = figures(&s, window(5.0, 30.0));
        assert_eq!(f.cpu_seconds, Some(12.5), "{f:?}");
        assert_eq!(f.cfs_periods, Some(250), "{f:?}");
        assert_eq!(f.throttled_periods, Some(225), "{f:?}");
        assert_eq!(f.throttled_seconds, Some(11.25), "{f:?}");
        assert_eq!(f.throttle_covered_seconds, Some(11.0));
        assert_eq!(f.cpu_limit_cores, Some(0.5));
        assert!(
            !f.missing.iter().any(|m| m.starts_with("throttling")),
            "{f:?}"
        );
    }

    #[test]
    fn idle_time_around_the_load_does_not_dilute_throttling() {
        // Samples from the idle time before the load to 12 s after it: scaled by time, the
        // 45 s between them would give 25/45 of the growth; weighed by CPU, all of it.
        let s = throttled_load(30, &[-3, 42]);
        let f = figures(&s, window(5.0, 30.0));
        assert_eq!(f.throttled_periods, Some(225), "{f:?}");
        assert_eq!(f.throttle_covered_seconds, Some(25.0));
        // Several samples inside: the same figure.
        let f = figures(&throttled_load(30, &[-3, 8, 19, 29, 41]), window(5.0, 30.0));
        assert_eq!(f.throttled_periods, Some(225), "{f:?}");
    }

    #[test]
    fn throttling_says_why_it_is_missing() {
        let why = |s: &Samples, w: Window| {
            let f = figures(s, w);
            assert_eq!((f.cfs_periods, f.throttled_periods), (None, None));
            f.missing
                .into_iter()
                .find(|m| m.starts_with("throttling: "))
                .expect("a reason")
        };
        let one = why(&throttled_load(30, &[16]), window(5.0, 30.0));
        assert!(one.contains("1 cadvisor sample(s)"), "{one}");
        let before = why(&throttled_load(30, &[-9, -3]), window(5.0, 30.0));
        assert!(before.contains("do not reach into the window"), "{before}");
        let mut restarted = throttled_load(30, &[-3, 16]);
        restarted.push(Reading {
            cfs_periods: Some(3),
            throttled_periods: Some(1),
            throttled_seconds: Some(0.0),
            ..Reading::new(Source::Cadvisor, 25_000)
        });
        assert!(why(&restarted, window(5.0, 30.0)).contains("container restarted"));
        let mut no_cpu = throttled_load(30, &[-3, 16]);
        no_cpu.resource.clear();
        let no_cpu = why(&no_cpu, window(5.0, 30.0));
        assert!(
            no_cpu.contains("CPU seconds, which are missing"),
            "{no_cpu}"
        );
    }

    #[test]
    fn memory_idle_is_before_the_window_and_peak_is_inside_it() {
        let mut s = Samples::default();
        for (t, mib) in [
            (0, 30),
            (1000, 31),
            (2000, 80),
            (3000, 95),
            (4000, 60),
            (5000, 200),
        ] {
            s.push(Reading {
                working_set_bytes: Some(mib << 20),
                ..Reading::new(Source::Resource, t)
            });
        }
        let f = figures(
            &s,
            Window {
                start_ms: 1500,
                end_ms: 4500,
            },
        );
        assert_eq!(f.memory_idle_bytes, Some(31 << 20));
        assert_eq!(f.memory_peak_bytes, Some(95 << 20));
        // Nothing before the start: the first sample in the window stands in for idle.
        let f = figures(
            &s,
            Window {
                start_ms: -500,
                end_ms: 1200,
            },
        );
        assert_eq!(
            (f.memory_idle_bytes, f.memory_peak_bytes),
            (Some(30 << 20), Some(31 << 20))
        );
    }

    #[test]
    fn series_are_deduplicated_sorted_and_bounded() {
        let mut s = Samples::default();
        s.push(cpu(2000, 4.0));
        s.push(cpu(1000, 2.0));
        s.push(Reading {
            working_set_bytes: Some(7),
            ..cpu(2000, 99.0)
        }); // same stats, re-scraped
        assert_eq!(s.len(), (2, 0));
        assert_eq!(s.resource[1].cpu_seconds, Some(4.0));
        assert_eq!(s.resource[1].working_set_bytes, Some(7));
        for t in 0..(MAX_POINTS as i64 + 10) {
            s.push(cpu(10_000 + t, t as f64));
        }
        assert_eq!(s.len(), (MAX_POINTS, 0));
        assert_eq!(s.resource[0].at_ms, 10_010);
    }

    #[test]
    fn replicas_are_summed_and_any_missing_figure_is_missing() {
        let mut a = figures(&throttled_load(30, &[-3, 16]), window(5.0, 30.0));
        a.cpu_seconds = Some(1.25);
        a.memory_idle_bytes = Some(10);
        a.memory_peak_bytes = Some(20);
        a.missing.clear();
        let mut b = a.clone();
        b.throttle_covered_seconds = Some(10.0);
        let sum = sum_replicas(&[a.clone(), b]);
        assert_eq!(
            (sum.cpu_seconds, sum.cfs_periods, sum.throttled_seconds),
            (Some(2.5), Some(500), Some(22.5))
        );
        assert_eq!(
            (sum.memory_idle_bytes, sum.memory_peak_bytes),
            (Some(20), Some(40))
        );
        assert_eq!(
            (sum.throttle_covered_seconds, sum.cpu_limit_cores),
            (Some(10.0), Some(1.0))
        );
        let c = figures(&throttled_load(30, &[16]), window(5.0, 30.0));
        let sum = sum_replicas(&[a, c]);
        assert_eq!(
            (sum.cpu_seconds, sum.cfs_periods, sum.cpu_limit_cores),
            (Some(13.75), None, Some(1.0))
        );
        assert!(
            sum.missing
                .iter()
                .any(|m| m.starts_with("replica 1: throttling: 1 cadvisor sample(s)")),
            "{sum:?}"
        );
        assert_eq!(sum_replicas(&[]).missing, ["all: no replicas"]);
    }
}
