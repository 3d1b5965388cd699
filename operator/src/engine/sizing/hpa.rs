//! The autoscaler's CPU target for the chosen configuration.
//!
//! A HorizontalPodAutoscaler computes `desired = ceil(current x utilization / target)` and acts
//! only when utilization / target leaves [0.9, 1.1] (its default tolerance). The chosen
//! configuration's CPU use per replica at its held rate, over its request, is `u`; its use
//! grows about in proportion to the rate. To add a replica before the load reaches the held
//! rate less the margin (so that p99 never crosses the SLO while the new replica starts), the
//! scale-up must trigger at `u / (1 + margin)`: with the tolerance, the target is
//! `u / ((1 + margin) x 1.1)`. It stops being true for another traffic mix (a heavier mix
//! uses more CPU per request and crosses the SLO at a lower utilization), for replicas that
//! start slowly (the margin must cover the load's growth during a start), and for a service
//! whose latency is not bound by CPU.

use crate::resource::CellStatus;
use crate::resource::capacity::CapacitySpec;
use crate::resource::matrix::Cell;
use crate::resource::rounding::round3;
use crate::resource::sizing::{HpaTarget, SizingSpec};

/// The autoscaler's tolerance around its target.
pub const TOLERANCE: f64 = 0.1;

/// The target for `cell` (the chosen configuration, its status holding the figures of its
/// confirmation at the held rate); None when the target reported no CPU use.
pub fn target(
    status: &CellStatus,
    cell: &Cell,
    capacity: &CapacitySpec,
    spec: &SizingSpec,
) -> Option<HpaTarget> {
    let used = status.target.as_ref()?.cpu_seconds_used?;
    let per_replica = cell.cpu.cpu_cores().ok()?;
    let seconds = capacity.probe_duration.get().as_secs_f64();
    if per_replica <= 0.0 || seconds <= 0.0 {
        return None;
    }
    let utilization = used / (seconds * f64::from(cell.replicas) * per_replica);
    let target = utilization / ((1.0 + spec.margin.fraction()) * (1.0 + TOLERANCE));
    Some(HpaTarget {
        utilization_at_held: round3(utilization),
        target_utilization: ((target * 100.0).floor() as u32).clamp(1, 100),
        min_replicas: cell.replicas,
        max_replicas: (cell.replicas * 2).max(cell.replicas + 1),
    })
}
