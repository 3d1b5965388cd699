//! Whether the next probe of a cell runs on the target its last probe ran on, and how long it
//! waits on it first.
//!
//! A target deployed afresh for every probe costs its start-up each time: a fraction of a
//! second locally, 5 to 20 s on a cluster (scheduling, image, readiness). So a cell keeps its
//! target from one probe to the next, as a sweep of rates on one target does, unless the last
//! probe left more backlog than a short wait drains. What the wait must cover:
//!
//! - the requests still unanswered when the probe ended (`probes[].backlog`, counted by the
//!   load generator, which also counts sends that never got a connection: the target holds at
//!   most that many), beyond those a target keeping up has in flight (the rate times the SLO's
//!   largest latency, which the probe's judge allows too). The target works them off at about
//!   the rate it answered during the probe, so they take `left / achieved` seconds; the wait
//!   allows twice that ([`DRAIN_ALLOWANCE`]), as a target past its knee can drain slower than
//!   it answered;
//! - plus [`SETTLE_BASE`], one second, for the last answers in flight and the connections to
//!   close. A probe that held leaves nothing else: its latency was within the SLO.
//!
//! A settle longer than a fresh target takes is not waited out: the target is removed and the
//! next probe gets a fresh one, which is as idle and ready sooner. What a fresh target takes is
//! measured, not guessed: the cell's latest probe on a fresh target waited
//! `capacity.freshTargetSeconds` for it, from its deployment to its load's start (scheduled,
//! started and ready: under a second locally, 1-2 s on a small cluster with the image present,
//! tens of seconds for a service that warms a JVM or pulls an image). A probe
//! that held leaves little beyond its requests in flight (its judge allows 2% of its sends),
//! so its settle is [`SETTLE_BASE`] or a second more, and it keeps its target unless a fresh
//! one is ready at once.
//! A backlog estimated to take more than [`MAX_DRAIN`] is never waited for, however slow a fresh
//! target is: the estimate is not trusted that far. Either way the next probe's warm-up at its
//! own rate (`workload.warmup`) comes before anything is measured.

use std::time::Duration;

use crate::resource::CellStatus;
use crate::resource::capacity::{CapacitySpec, ProbeStatus};
use crate::resource::conditions::secs_of;

/// The wait after every probe before the next on the same target.
pub const SETTLE_BASE: Duration = Duration::from_secs(1);

/// How many times the estimated drain time the wait allows.
pub const DRAIN_ALLOWANCE: f64 = 2.0;

/// The longest estimated drain a kept target is waited for.
pub const MAX_DRAIN: Duration = Duration::from_secs(30);

/// The seconds to wait on the target `last` ran on before the next probe, or `None` when the
/// next probe gets a fresh target: reuse is off, the backlog is too large to wait for, or the
/// wait would be longer than a fresh target took (`fresh_secs`, when one was measured).
/// `probe_secs` is the length of the probe's measured phase.
pub fn settle_after(
    spec: &CapacitySpec,
    last: &ProbeStatus,
    probe_secs: f64,
    fresh_secs: Option<u32>,
) -> Option<u32> {
    if !spec.reuse_target {
        return None;
    }
    let in_flight = last.rate * super::probe::answer_secs(spec);
    let drain = drain_secs(last, probe_secs, in_flight)?;
    if drain > MAX_DRAIN.as_secs_f64() {
        return None;
    }
    let wait = (SETTLE_BASE.as_secs_f64() + DRAIN_ALLOWANCE * drain).ceil() as u32;
    let base = SETTLE_BASE.as_secs() as u32;
    match fresh_secs {
        Some(fresh) if wait > fresh.max(base) => None,
        _ => Some(wait),
    }
}

/// Until when (seconds since the epoch) cell `c` waits on its kept target before its next
/// probe: the settle its last probe asked for (`capacity.settleSeconds`) from the step's start
/// (that probe's end, `stepStartTime`); `None` when the next probe does not run on a kept
/// target. Derived, not kept: the two figures it comes from are in the status.
pub fn settled_at(c: &CellStatus) -> Option<i64> {
    let secs = c.capacity.as_ref()?.settle_seconds?;
    Some(secs_of(c.step_started()?) + i64::from(secs))
}

/// The estimated seconds the target takes to work off what `p` left unanswered beyond the
/// `in_flight` requests any target keeping up has; `None` when it cannot be told (the load
/// generator did not report its backlog, or nothing was answered).
fn drain_secs(p: &ProbeStatus, probe_secs: f64, in_flight: f64) -> Option<f64> {
    let backlog = p.backlog?;
    let left = backlog * p.rate * probe_secs - in_flight;
    if left < 1.0 {
        return Some(0.0);
    }
    (p.achieved > 0.0).then(|| left / p.achieved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::capacity::ProbeVerdict;

    fn spec(reuse: bool) -> CapacitySpec {
        let mut s: CapacitySpec =
            serde_yaml::from_str("slo: [{endpoint: fast, p99: {below: 100ms}}]").unwrap();
        s.reuse_target = reuse;
        s
    }

    fn probe(rate: f64, achieved: f64, backlog: Option<f64>) -> ProbeStatus {
        ProbeStatus {
            rate,
            achieved,
            backlog,
            verdict: ProbeVerdict::Failed,
            ..ProbeStatus::default()
        }
    }

    /// A probe that held keeps its target after the base settle, even where a fresh one is
    /// ready at once (locally, in well under a second).
    #[test]
    fn a_probe_that_kept_up_leaves_its_target_after_the_base_settle() {
        let held = probe(40.0, 40.0, Some(0.0005));
        assert_eq!(settle_after(&spec(true), &held, 10.0, None), Some(1));
        assert_eq!(settle_after(&spec(true), &held, 10.0, Some(0)), Some(1));
        assert_eq!(settle_after(&spec(false), &held, 10.0, None), None);
        // 50 rps answered in about 30 ms: 2 of the 500 sends in flight at the end, what a
        // target keeping up has (up to 50 x 0.1 s under this SLO), not a backlog.
        let in_flight = probe(50.0, 49.7, Some(0.004));
        assert_eq!(
            settle_after(&spec(true), &in_flight, 10.0, Some(0)),
            Some(1)
        );
    }

    /// 60 rps offered to a target answering 47 for 10 s: 5% of the 600 sends (30) unanswered,
    /// 24 beyond the 6 in flight within the SLO's 100 ms, take 24 / 47 = 0.51 s to work off;
    /// the wait allows twice that plus a second.
    #[test]
    fn a_small_backlog_is_waited_for_twice_its_drain_time() {
        let past = probe(60.0, 47.0, Some(0.05));
        assert_eq!(settle_after(&spec(true), &past, 10.0, None), Some(3));
        assert_eq!(settle_after(&spec(true), &past, 10.0, Some(3)), Some(3));
    }

    /// 80 rps against 47 for 10 s: 330 unanswered take 7 s, a 15 s settle. Where a fresh
    /// target took 2 s (a small cluster) the next probe gets one; where it took 40 s (a slow
    /// starter) it waits on the kept one. Past 30 s of backlog it never waits.
    #[test]
    fn a_settle_longer_than_a_fresh_target_takes_gets_a_fresh_target() {
        let far = probe(80.0, 47.0, Some(0.41));
        assert_eq!(settle_after(&spec(true), &far, 10.0, Some(2)), None);
        assert_eq!(settle_after(&spec(true), &far, 10.0, Some(40)), Some(15));
        let huge = probe(400.0, 47.0, Some(0.85));
        assert_eq!(settle_after(&spec(true), &huge, 10.0, Some(600)), None);
        let silent = probe(80.0, 0.0, Some(0.9));
        assert_eq!(settle_after(&spec(true), &silent, 10.0, None), None);
        let unknown = probe(80.0, 47.0, None);
        assert_eq!(settle_after(&spec(true), &unknown, 10.0, None), None);
    }
}
