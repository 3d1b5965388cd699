//! What else ran on a measurement's nodes: the node's CPU use outside the measurement's own
//! pods over its measured phases, and the other pods that used it. Pure functions from the
//! kubelet's `/metrics/resource` text to figures (the sampler in `reader` scrapes it).
//!
//! `/metrics/resource` has `node_cpu_usage_seconds_total` (the whole node: every pod, the
//! kubelet, the container runtime, the system) and `pod_cpu_usage_seconds_total{namespace,pod}`
//! for every pod the kubelet runs, each stamped with when the stats were taken. Over a window,
//! the foreign CPU is the node counter's growth less the growth of the measurement's own pods'
//! counters (its target replicas and load generators), in cores on average. The other pods are
//! listed by their own counters' growth.
//!
//! The kubelet refreshes the node's figure only every 10-15 s (cadvisor's housekeeping of the
//! root cgroup) and stamps it with when it took it, so the node counter is never interpolated:
//! the figures are over the span between two of its samples around the window (`windowSeconds`
//! says how long), with the pods' counters, refreshed far more often, interpolated at those two
//! instants; and given when that span overlaps the window (by a second at least). A pod first seen after the window's start started then (every scrape lists every running
//! pod), so its counter counts from zero; a pod last seen before the window's end stopped then.
//! A pod counter that goes down (its cgroup was made anew) counts from zero again after it.

use std::collections::{BTreeMap, VecDeque};

use super::figures::Window;
use super::parse::samples;
use crate::resource::rounding::round3;
use crate::resource::status::{NeighbourPod, Neighbours};

/// At most this many points per series; past it every other point is dropped (the first and
/// the last kept), so a long load keeps its whole span at a coarser step (a counter is
/// interpolated between points, so a coarser step costs little over a long load). With
/// [`MAX_PODS`] this bounds a node's samples near 1 MiB, whatever the load's length.
pub const MAX_SERIES_POINTS: usize = 256;

/// At most this many pods are followed per node (a node runs at most 110 by default); pods
/// seen beyond it are counted, not followed.
pub const MAX_PODS: usize = 256;

/// The most other pods a measurement's node lists in the status, largest first.
pub const LISTED_PODS: usize = crate::resource::bound::NEIGHBOUR_PODS_MAX;

/// One series of a counter: (ms since the epoch, value), sorted, one point per timestamp.
type Series = VecDeque<(i64, f64)>;

/// What one scrape of `/metrics/resource` said about the node and its pods.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeScrape {
    /// `node_cpu_usage_seconds_total`: (ms, core-seconds).
    pub node: Option<(i64, f64)>,
    /// `pod_cpu_usage_seconds_total`: ("namespace/name", ms, core-seconds).
    pub pods: Vec<(String, i64, f64)>,
}

/// The node and pod series of a `/metrics/resource` body; samples without a timestamp are taken
/// at `now_ms`.
pub fn node_scrape(text: &str, now_ms: i64) -> NodeScrape {
    let mut out = NodeScrape::default();
    for s in samples(text) {
        if !s.value.is_finite() || s.value < 0.0 {
            continue;
        }
        let at = s.timestamp_ms.unwrap_or(now_ms);
        match s.name {
            "node_cpu_usage_seconds_total" => out.node = Some((at, s.value)),
            "pod_cpu_usage_seconds_total" => {
                if let (Some(ns), Some(pod)) = (s.label("namespace"), s.label("pod")) {
                    out.pods.push((format!("{ns}/{pod}"), at, s.value));
                }
            }
            _ => {}
        }
    }
    out
}

/// A node's CPU counter and its pods' over the sampling.
#[derive(Debug, Clone, Default)]
pub struct NodeSamples {
    node: Series,
    pods: BTreeMap<String, Series>,
    /// The pods the first scrape listed: they ran before the sampling began.
    from_start: std::collections::BTreeSet<String>,
    /// Scrapes filed.
    scrapes: usize,
    /// Pods seen beyond [`MAX_PODS`], not followed.
    unfollowed: usize,
}

impl NodeSamples {
    /// Files one scrape.
    pub fn push(&mut self, scrape: NodeScrape) {
        if let Some(point) = scrape.node {
            add(&mut self.node, point);
        }
        for (pod, at, v) in scrape.pods {
            if !self.pods.contains_key(&pod) && self.pods.len() >= MAX_PODS {
                self.unfollowed += 1;
                continue;
            }
            if self.scrapes == 0 {
                self.from_start.insert(pod.clone());
            }
            add(self.pods.entry(pod).or_default(), (at, v));
        }
        self.scrapes += 1;
    }

    /// Whether no node sample was kept.
    pub fn is_empty(&self) -> bool {
        self.node.is_empty()
    }
}

/// Adds a point in time order (a repeated timestamp is the same stats: kept once), thinning
/// the series past [`MAX_SERIES_POINTS`].
fn add(series: &mut Series, point: (i64, f64)) {
    match series.binary_search_by_key(&point.0, |p| p.0) {
        Ok(_) => {}
        Err(i) => series.insert(i, point),
    }
    if series.len() > MAX_SERIES_POINTS {
        let last = series.len() - 1;
        let mut i = 0;
        series.retain(|_| {
            let keep = i % 2 == 0 || i == last;
            i += 1;
            keep
        });
    }
}

/// How much a pod's counter grew over `w`: before its first sample it stood at that sample's
/// value when it already ran (`ran_before`: listed by the first scrape; a measurement's target
/// idles until its load), else at zero (it started since); after its last it stopped; and a
/// counter that goes down counts from zero again (so the growth is the sum of the rises, and of
/// each value after a fall).
pub fn pod_growth(series: &Series, w: Window, ran_before: bool) -> f64 {
    let (Some(first), Some(last)) = (series.front(), series.back()) else {
        return 0.0;
    };
    let at = |t: i64| -> f64 {
        if t < first.0 {
            return if ran_before { first.1 } else { 0.0 };
        }
        if t >= last.0 {
            return last.1;
        }
        let i = series.partition_point(|p| p.0 <= t);
        let ((t0, v0), (t1, v1)) = (series[i - 1], series[i]);
        if v1 < v0 {
            // Made anew in between: the old counter's value stands until then.
            v0
        } else {
            v0 + (v1 - v0) * (t - t0) as f64 / (t1 - t0) as f64
        }
    };
    let mut points = vec![at(w.start_ms)];
    points.extend(
        series
            .iter()
            .filter(|p| p.0 > w.start_ms && p.0 < w.end_ms)
            .map(|p| p.1),
    );
    points.push(at(w.end_ms));
    points
        .windows(2)
        .map(|p| if p[1] >= p[0] { p[1] - p[0] } else { p[1] })
        .sum()
}

/// What else used node `node`'s CPU over `w`: `own` are the measurement's pods
/// ("namespace/name"). `busy` is left false ([`flag`] sets it).
pub fn neighbours(node: &str, samples: &NodeSamples, w: Window, own: &[String]) -> Neighbours {
    let missing = |why: String| Neighbours {
        node: node.to_owned(),
        missing: Some(why),
        ..Neighbours::default()
    };
    let (a, b) = match node_span(samples, w) {
        Ok(span) => span,
        Err(why) => return missing(why),
    };
    let node_growth = b.1 - a.1;
    let w = Window {
        start_ms: a.0,
        end_ms: b.0,
    };
    let seconds = (b.0 - a.0) as f64 / 1000.0;
    let (own_growth, others) = pods_growth(samples, w, own);
    let more = others.len().saturating_sub(LISTED_PODS) + samples.unfollowed;
    // Stats taken a little apart can leave the own pods' growth a hair above the node's.
    let foreign = (node_growth - own_growth).max(0.0) / seconds;
    Neighbours {
        node: node.to_owned(),
        foreign_cpu: Some(round3(foreign)),
        window_seconds: Some(crate::resource::rounding::round1(seconds)),
        busy: false,
        pods: others
            .into_iter()
            .take(LISTED_PODS)
            .map(|(pod, grew)| NeighbourPod {
                pod,
                cpu: round3(grew / seconds),
            })
            .collect(),
        more_pods: (more > 0).then_some(more as u32),
        missing: None,
    }
}

/// One sample of a CPU counter: (milliseconds, CPU-seconds).
type CpuSample = (i64, f64);

/// The two node samples the figures of [`neighbours`] span, or why there are none.
///
/// The kubelet refreshes the node's figure only every 10-15 s, and stamps it with when it took
/// it; interpolating it between samples so far apart would spread the measurement's own load,
/// which starts and stops inside such a gap, over the gap. So the figures are over the span
/// between two node samples themselves, the last at or before the phases' start and the first
/// at or after their end (else the last one there is), the own pods' counters (sampled every
/// second) taken at the same two instants: an estimate of the other use around the phases,
/// given when the span overlaps them by a second at least.
fn node_span(samples: &NodeSamples, w: Window) -> Result<(CpuSample, CpuSample), String> {
    if w.end_ms <= w.start_ms {
        return Err(format!(
            "empty window ({} ms to {} ms)",
            w.start_ms, w.end_ms
        ));
    }
    let series = &samples.node;
    if series.is_empty() {
        return Err("no node CPU samples from /metrics/resource".into());
    }
    let a = series
        .iter()
        .rev()
        .find(|p| p.0 <= w.start_ms)
        .or(series.front())
        .copied()
        .unwrap_or_default();
    let b = series
        .iter()
        .find(|p| p.0 >= w.end_ms)
        .or(series.back())
        .copied()
        .unwrap_or_default();
    let phases = w.end_ms - w.start_ms;
    let covered = b.0.min(w.end_ms) - a.0.max(w.start_ms);
    if b.0 - a.0 < 1000 || covered < 1000 {
        return Err(format!(
            "the node's CPU samples (refreshed by the kubelet every 10-15 s) cover {:.1} s of \
             the {:.1} s of measured phases",
            covered.max(0) as f64 / 1000.0,
            phases as f64 / 1000.0
        ));
    }
    if series
        .iter()
        .zip(series.iter().skip(1))
        .any(|(x, y)| y.1 < x.1)
    {
        return Err("the node's CPU counter went down (the node restarted)".into());
    }
    Ok((a, b))
}

/// Over `w`: how much CPU time the `own` pods used together, and each other pod seen in `w`
/// with what it used, the most first.
fn pods_growth(samples: &NodeSamples, w: Window, own: &[String]) -> (f64, Vec<(String, f64)>) {
    let mut own_growth = 0.0;
    let mut others: Vec<(String, f64)> = Vec::new();
    for (pod, series) in &samples.pods {
        let grew = pod_growth(series, w, samples.from_start.contains(pod));
        if own.contains(pod) {
            own_growth += grew;
        } else if series.back().is_some_and(|p| p.0 > w.start_ms)
            && series.front().is_some_and(|p| p.0 < w.end_ms)
        {
            others.push((pod.clone(), grew));
        }
    }
    others.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    (own_growth, others)
}

/// Marks the nodes whose foreign CPU is above `limit_cores`.
pub fn flag(all: &mut [Neighbours], limit_cores: f64) {
    for n in all {
        n.busy = n.foreign_cpu.is_some_and(|f| f > limit_cores);
    }
}

#[cfg(test)]
mod tests;
