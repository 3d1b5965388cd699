//! Condition types, reasons, and the one function that sets a condition.
//!
//! `lastTransitionTime` moves only when a condition's status changes, as the API conventions
//! require; a changed reason or message alone keeps the time. Callers use the returned flag to
//! skip a status patch when nothing but timestamps would change.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// The spec passed validation (False: the message names the field).
pub const SPEC_VALID: &str = "SpecValid";
/// The run is doing work (True while a cell is deployed or measured, False when queued or done).
pub const PROGRESSING: &str = "Progressing";
/// Every cell has ended.
pub const COMPLETE: &str = "Complete";
/// At least one cell failed (the message names the most recent one and its cause).
pub const CELL_FAILED: &str = "CellFailed";
/// Every threshold of spec.thresholds held on every cell it applies to (False: the message
/// names the failed ones). Set when the run finishes; absent when the spec has no thresholds,
/// so `kubectl wait --for=condition=ThresholdsMet` waits for a verdict.
pub const THRESHOLDS_MET: &str = "ThresholdsMet";

/// Reasons (CamelCase words, as the API conventions ask).
pub mod reason {
    /// The spec is valid.
    pub const VALID: &str = "Valid";
    /// The spec is invalid.
    pub const INVALID_SPEC: &str = "InvalidSpec";
    /// Waiting for another run to finish (max active runs reached).
    pub const QUEUED: &str = "Queued";
    /// A cell is running.
    pub const CELL_RUNNING: &str = "CellRunning";
    /// The run has finished.
    pub const FINISHED: &str = "Finished";
    /// Every cell succeeded.
    pub const ALL_SUCCEEDED: &str = "AllCellsSucceeded";
    /// Some cells failed.
    pub const SOME_FAILED: &str = "SomeCellsFailed";
    /// The run stopped at a failed cell.
    pub const STOPPED: &str = "StoppedOnFailure";
    /// No cell was measured: every cell failed.
    pub const NO_CELL_MEASURED: &str = "NoCellMeasured";
    /// The run was stopped by a signal (local runs).
    pub const INTERRUPTED: &str = "Interrupted";
    /// No cell has failed.
    pub const NO_FAILURES: &str = "NoFailures";
    /// The spec changed while the run was running (the change is refused until it ends).
    pub const SPEC_CHANGED: &str = "SpecChangedWhileRunning";
    /// Every threshold held (condition ThresholdsMet).
    pub const THRESHOLDS_PASSED: &str = "ThresholdsPassed";
    /// At least one threshold failed on at least one cell (condition ThresholdsMet).
    pub const THRESHOLDS_FAILED: &str = "ThresholdsFailed";
}

/// Failure reasons written into a cell, by the operator and the local runner alike.
pub mod cause {
    /// The image could not be pulled.
    pub const IMAGE_PULL: &str = "ImagePullBackOff";
    /// The target did not become ready in time.
    pub const NEVER_READY: &str = "NeverReady";
    /// A container ran out of memory.
    pub const OOM_KILLED: &str = "OOMKilled";
    /// The target container keeps crashing.
    pub const CRASH_LOOP: &str = "CrashLoopBackOff";
    /// The load generator failed.
    pub const LOADGEN_FAILED: &str = "LoadgenFailed";
    /// An address the load was to go to (the Service, or a replica's with `roundRobin`) did
    /// not answer the load generator's check before the warm-up within `timeouts.ready`.
    pub const TARGET_UNREACHABLE: &str = "TargetUnreachable";
    /// The result document could not be read.
    pub const RESULT_UNPARSABLE: &str = "ResultUnparsable";
    /// The load generator ran past its deadline.
    pub const TIMEOUT: &str = "Timeout";
    /// A child object was found in a state the operator cannot use (e.g. no ClusterIP).
    pub const CHILD_BROKEN: &str = "ChildBroken";
    /// A replica exited (locally: the process or one of its own; on a cluster: a target pod
    /// restarted, or was deleted, evicted or replaced) while the cell ran.
    pub const REPLICA_EXITED: &str = "ReplicaExited";
    /// The cell's pods cannot be placed: they can never fit the nodes they may use, or the
    /// scheduler reported a pod unschedulable.
    pub const UNSCHEDULABLE: &str = "Unschedulable";
    /// On a cluster: pods of the previous cell still ran when the ready timeout had passed
    /// since it ended, so this cell could not start without sharing their CPU.
    pub const PREVIOUS_PODS_LINGERING: &str = "PreviousPodsLingering";
    /// Locally: a replica or the load generator could not be started.
    pub const SPAWN_FAILED: &str = "SpawnFailed";
    /// Locally: the cell's cgroup could not be made or its quota set.
    pub const CGROUP_FAILED: &str = "CgroupFailed";
    /// Locally: a replica of a `roundRobin` cell answered on an address other than its own.
    pub const WRONG_ADDRESS: &str = "WrongAddress";
    /// Locally: the run was stopped by a signal while the cell ran.
    pub const INTERRUPTED: &str = "Interrupted";

    /// The cause of a load generator that exited with an error, from its last words (its last
    /// log line on a cluster, its last lines of output locally): [`TARGET_UNREACHABLE`] when
    /// its check before the load failed, else [`LOADGEN_FAILED`].
    pub fn of_loadgen_failure(words: &str) -> &'static str {
        if words.contains(benchmatrix_loadgen::preflight::UNREACHABLE) {
            TARGET_UNREACHABLE
        } else {
            LOADGEN_FAILED
        }
    }
}

/// Condition status strings.
pub mod status {
    /// The condition holds.
    pub const TRUE: &str = "True";
    /// The condition does not hold.
    pub const FALSE: &str = "False";
}

/// Sets condition `type_` in `conditions`, returning whether anything but timestamps changed.
///
/// `lastTransitionTime` is `now` for a new condition or a changed status, otherwise kept.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: impl Into<String>,
    observed_generation: Option<i64>,
    now: &Time,
) -> bool {
    let message = message.into();
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            let changed = existing.status != status
                || existing.reason != reason
                || existing.message != message
                || existing.observed_generation != observed_generation;
            if existing.status != status {
                existing.last_transition_time = now.clone();
            }
            existing.status = status.to_owned();
            existing.reason = reason.to_owned();
            existing.message = message;
            existing.observed_generation = observed_generation;
            changed
        }
        None => {
            conditions.push(Condition {
                type_: type_.to_owned(),
                status: status.to_owned(),
                reason: reason.to_owned(),
                message,
                observed_generation,
                last_transition_time: now.clone(),
            });
            true
        }
    }
}

/// The condition of type `type_`, if set.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Current wall-clock time as a Kubernetes `Time` (whole microseconds would be finer than the
/// API server keeps; it stores seconds).
pub fn now() -> Time {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    time_from_secs(since_epoch.as_secs() as i64)
}

/// A `Time` at `secs` seconds since the Unix epoch (clamped to the representable range).
pub fn time_from_secs(secs: i64) -> Time {
    let ts = k8s_openapi::jiff::Timestamp::from_second(secs)
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    Time(ts)
}

/// Seconds since the Unix epoch of a `Time`.
pub fn secs_of(time: &Time) -> i64 {
    time.0.as_second()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_when_the_status_changes() {
        let mut conds = Vec::new();
        let t1 = time_from_secs(100);
        let t2 = time_from_secs(200);
        let t3 = time_from_secs(300);
        assert!(set_condition(
            &mut conds,
            PROGRESSING,
            status::TRUE,
            reason::CELL_RUNNING,
            "cell a",
            Some(1),
            &t1
        ));
        // New message, same status: changed, time kept.
        assert!(set_condition(
            &mut conds,
            PROGRESSING,
            status::TRUE,
            reason::CELL_RUNNING,
            "cell b",
            Some(1),
            &t2
        ));
        assert_eq!(conds[0].last_transition_time, t1);
        // Nothing new: not changed.
        assert!(!set_condition(
            &mut conds,
            PROGRESSING,
            status::TRUE,
            reason::CELL_RUNNING,
            "cell b",
            Some(1),
            &t3
        ));
        assert_eq!(conds[0].last_transition_time, t1);
        // Status flips: time moves.
        assert!(set_condition(
            &mut conds,
            PROGRESSING,
            status::FALSE,
            reason::FINISHED,
            "done",
            Some(1),
            &t3
        ));
        assert_eq!(conds[0].last_transition_time, t3);
        assert_eq!(conds.len(), 1);
    }

    #[test]
    fn a_load_generator_error_is_target_unreachable_only_when_its_check_failed() {
        use benchmatrix_loadgen::engine::EngineError;
        // The words as the load generator prints them, read from its own error type.
        let words = |e: EngineError| format!("error: {e}");
        let unreachable = EngineError::Unreachable("http://10.0.0.1:8080 did not answer".into());
        assert_eq!(
            cause::of_loadgen_failure(&words(unreachable)),
            cause::TARGET_UNREACHABLE
        );
        let other = EngineError::Worker("a worker thread has stopped".into());
        assert_eq!(
            cause::of_loadgen_failure(&words(other)),
            cause::LOADGEN_FAILED
        );
        assert_eq!(
            cause::of_loadgen_failure("error: no request succeeded"),
            cause::LOADGEN_FAILED
        );
    }
}
