//! Where a cell's resource figures come from, and how the kubelet's figures join what the
//! target said about itself.
//!
//! On a cluster, the kubelet of each target pod's node measures the target container from
//! outside, for any image; the built-in target (and the Express example) also report their own
//! CPU seconds on `/stats`. When both exist the kubelet's figures are used, and the target's own
//! CPU seconds are kept beside them with the difference: both measure the same processes over
//! the same phases, so they should agree within a few percent, a check of each against the
//! other. What only the target knows (the quota it detected, its mode and pool) stays its own.

use super::ContainerFigures;
use crate::resource::TargetStats;
use crate::resource::rounding::{round1, round3};
use crate::resource::status::SOURCE_KUBELET;

/// The target's figures with the kubelet's joined in. `kubelet` is None when the operator
/// does not read kubelets or sampled nothing for this repetition (it restarted meanwhile).
pub fn with_kubelet(
    target: Option<TargetStats>,
    kubelet: Option<&ContainerFigures>,
) -> Option<TargetStats> {
    let Some(k) = kubelet else {
        return target;
    };
    let mut t = target.unwrap_or_default();
    let own_cpu = t.cpu_seconds_used;
    if let Some(cpu) = k.cpu_seconds {
        t.source = Some(SOURCE_KUBELET.into());
        t.cpu_seconds_used = Some(round3(cpu));
        t.self_reported_cpu_seconds = own_cpu;
        t.cpu_difference_percent = own_cpu
            .filter(|own| *own > 0.0)
            .map(|own| round1((cpu - own) / own * 100.0));
        // Throttling is the kubelet's too, or none: the target's own counters (read inside
        // its container) would mix two sources in one cell.
        t.throttled_periods = k.throttled_periods;
        t.throttled_seconds = k.throttled_seconds.map(round3);
        t.cfs_periods = k.cfs_periods;
        t.throttle_covered_seconds = k.throttle_covered_seconds.map(round1);
    }
    t.working_set_idle_bytes = k.memory_idle_bytes;
    t.working_set_peak_bytes = k.memory_peak_bytes;
    if !k.missing.is_empty() {
        t.note = Some(format!("kubelet: {}", k.missing.join("; ")));
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::status::SOURCE_TARGET;

    fn kubelet(cpu: Option<f64>) -> ContainerFigures {
        ContainerFigures {
            cpu_seconds: cpu,
            cfs_periods: Some(3000),
            throttled_periods: Some(600),
            throttled_seconds: Some(12.5),
            throttle_covered_seconds: Some(20.0),
            memory_idle_bytes: Some(10 << 20),
            memory_peak_bytes: Some(30 << 20),
            ..ContainerFigures::default()
        }
    }

    fn own(cpu: f64) -> TargetStats {
        TargetStats {
            source: Some(SOURCE_TARGET.into()),
            cpu_seconds_used: Some(cpu),
            throttled_periods: Some(1),
            mode: Some("single".into()),
            ..TargetStats::default()
        }
    }

    #[test]
    fn the_kubelets_figures_are_used_and_the_targets_own_cpu_is_checked_against_them() {
        let t = with_kubelet(Some(own(20.0)), Some(&kubelet(Some(20.6)))).unwrap();
        assert_eq!(t.source.as_deref(), Some("kubelet"));
        assert_eq!(t.cpu_seconds_used, Some(20.6));
        assert_eq!(t.self_reported_cpu_seconds, Some(20.0));
        assert_eq!(t.cpu_difference_percent, Some(3.0));
        assert_eq!(
            t.throttled_periods,
            Some(600),
            "the kubelet's, not the target's"
        );
        assert_eq!(t.cfs_periods, Some(3000));
        assert_eq!(t.working_set_peak_bytes, Some(30 << 20));
        assert_eq!(
            t.mode.as_deref(),
            Some("single"),
            "what only the target knows stays"
        );
        assert_eq!(t.note, None);
    }

    #[test]
    fn an_image_without_stats_gets_the_kubelets_figures_alone() {
        let t = with_kubelet(None, Some(&kubelet(Some(5.0)))).unwrap();
        assert_eq!(t.source.as_deref(), Some("kubelet"));
        assert_eq!(t.cpu_seconds_used, Some(5.0));
        assert_eq!(t.self_reported_cpu_seconds, None);
        assert_eq!(t.cpu_difference_percent, None);
    }

    #[test]
    fn without_the_kubelets_cpu_the_targets_figures_stay_and_the_reason_is_said() {
        let mut k = kubelet(None);
        k.missing = vec!["cpuSeconds: container restarted".into()];
        let t = with_kubelet(Some(own(20.0)), Some(&k)).unwrap();
        assert_eq!(t.source.as_deref(), Some("target"));
        assert_eq!(t.cpu_seconds_used, Some(20.0));
        assert_eq!(t.throttled_periods, Some(1));
        assert_eq!(
            t.note.as_deref(),
            Some("kubelet: cpuSeconds: container restarted")
        );
        assert_eq!(with_kubelet(Some(own(1.0)), None), Some(own(1.0)));
    }
}
