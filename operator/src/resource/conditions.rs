//! Condition types, reasons, and the one function that sets a condition.
//!
//! `lastTransitionTime` moves only when a condition's status changes, as the API conventions
//! require; a changed reason or message alone keeps the time.

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

/// Why a condition is as it is (CamelCase words, as the API conventions ask). A failed cell's
/// CellFailed condition carries its [`Cause`] instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The spec is valid.
    Valid,
    /// The spec is invalid.
    InvalidSpec,
    /// Waiting for another run to finish (max active runs reached).
    Queued,
    /// A cell is running.
    CellRunning,
    /// The run has finished.
    Finished,
    /// Every cell succeeded.
    AllSucceeded,
    /// Some cells failed.
    SomeFailed,
    /// The run stopped at a failed cell.
    Stopped,
    /// No cell was measured: every cell failed.
    NoCellMeasured,
    /// The cells were measured, but a capacity search ended without a capacity, or the sizing
    /// chose no configuration: the run's question is left open.
    NoAnswer,
    /// The run was stopped by a signal (local runs).
    Interrupted,
    /// No cell has failed.
    NoFailures,
    /// The spec changed while the run was running (the change is refused until it ends).
    SpecChanged,
    /// Every threshold held (condition ThresholdsMet).
    ThresholdsPassed,
    /// At least one threshold failed on at least one cell (condition ThresholdsMet).
    ThresholdsFailed,
    /// A run's image is not on the operator's allow-list (condition SpecValid).
    ImageNotAllowed,
    /// A run's image is not a valid image reference, whatever the allow-list (SpecValid).
    InvalidImageReference,
}

impl Reason {
    /// The word written into the condition, e.g. `AllCellsSucceeded`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Valid => "Valid",
            Reason::InvalidSpec => "InvalidSpec",
            Reason::Queued => "Queued",
            Reason::CellRunning => "CellRunning",
            Reason::Finished => "Finished",
            Reason::AllSucceeded => "AllCellsSucceeded",
            Reason::SomeFailed => "SomeCellsFailed",
            Reason::Stopped => "StoppedOnFailure",
            Reason::NoCellMeasured => "NoCellMeasured",
            Reason::NoAnswer => "NoAnswer",
            Reason::Interrupted => "Interrupted",
            Reason::NoFailures => "NoFailures",
            Reason::SpecChanged => "SpecChangedWhileRunning",
            Reason::ThresholdsPassed => "ThresholdsPassed",
            Reason::ThresholdsFailed => "ThresholdsFailed",
            Reason::ImageNotAllowed => "ImageNotAllowed",
            Reason::InvalidImageReference => "InvalidImageReference",
        }
    }
}

/// A status word's string form (`as_str`) as a reference, as text, and for comparing with
/// the word a status holds.
macro_rules! status_word {
    ($word:ident) => {
        impl AsRef<str> for $word {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        #[doc = concat!(
                                                    "A status word compares equal to the [`",
                                                    stringify!($word),
                                                    "`] it was written from."
                                                )]
        impl PartialEq<$word> for String {
            fn eq(&self, other: &$word) -> bool {
                self == other.as_str()
            }
        }

        impl std::fmt::Display for $word {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

status_word!(Reason);

/// Why a cell failed: written into the cell's `reason` (and the CellFailed condition's), by the
/// operator and the local runner alike. The string form is the API's word and never changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// The image could not be pulled.
    ImagePull,
    /// The target did not become ready in time.
    NeverReady,
    /// A container ran out of memory.
    OomKilled,
    /// The target container keeps crashing.
    CrashLoop,
    /// The load generator failed.
    LoadgenFailed,
    /// An address the load was to go to (the Service, or a replica's with `roundRobin`) did
    /// not answer the load generator's check before the warm-up within `timeouts.ready`.
    TargetUnreachable,
    /// The result document could not be read.
    ResultUnparsable,
    /// The load generator ran past its deadline.
    Timeout,
    /// A child object was found in a state the operator cannot use (e.g. no ClusterIP).
    ChildBroken,
    /// A replica exited (locally: the process or one of its own; on a cluster: a target pod
    /// restarted, or was deleted, evicted or replaced) while the cell ran.
    ReplicaExited,
    /// The cell's pods cannot be placed: they can never fit the nodes they may use, or the
    /// scheduler reported a pod unschedulable.
    Unschedulable,
    /// On a cluster: pods of the previous cell still ran when the ready timeout had passed
    /// since it ended, so this cell could not start without sharing their CPU.
    PreviousPodsLingering,
    /// Locally: a replica or the load generator could not be started.
    SpawnFailed,
    /// Locally: the cell's cgroup could not be made or its quota set.
    CgroupFailed,
    /// Locally: a replica of a `roundRobin` cell answered on an address other than its own.
    WrongAddress,
    /// Locally: the run was stopped by a signal while the cell ran.
    Interrupted,
}

impl Cause {
    /// Every cause, in the order the docs list them.
    pub const ALL: [Cause; 16] = [
        Cause::ImagePull,
        Cause::NeverReady,
        Cause::OomKilled,
        Cause::CrashLoop,
        Cause::LoadgenFailed,
        Cause::TargetUnreachable,
        Cause::ResultUnparsable,
        Cause::Timeout,
        Cause::ChildBroken,
        Cause::ReplicaExited,
        Cause::Unschedulable,
        Cause::PreviousPodsLingering,
        Cause::SpawnFailed,
        Cause::CgroupFailed,
        Cause::WrongAddress,
        Cause::Interrupted,
    ];

    /// The word written into the status, e.g. `NeverReady`.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::ImagePull => "ImagePullBackOff",
            Cause::NeverReady => "NeverReady",
            Cause::OomKilled => "OOMKilled",
            Cause::CrashLoop => "CrashLoopBackOff",
            Cause::LoadgenFailed => "LoadgenFailed",
            Cause::TargetUnreachable => "TargetUnreachable",
            Cause::ResultUnparsable => "ResultUnparsable",
            Cause::Timeout => "Timeout",
            Cause::ChildBroken => "ChildBroken",
            Cause::ReplicaExited => "ReplicaExited",
            Cause::Unschedulable => "Unschedulable",
            Cause::PreviousPodsLingering => "PreviousPodsLingering",
            Cause::SpawnFailed => "SpawnFailed",
            Cause::CgroupFailed => "CgroupFailed",
            Cause::WrongAddress => "WrongAddress",
            Cause::Interrupted => "Interrupted",
        }
    }

    /// The cause of a load generator that exited with an error, from its last words (its last
    /// log line on a cluster, its last lines of output locally): [`Cause::TargetUnreachable`]
    /// when its check before the load failed, else [`Cause::LoadgenFailed`].
    pub fn of_loadgen_failure(words: &str) -> Cause {
        if words.contains(benchmatrix_loadgen::preflight::UNREACHABLE) {
            Cause::TargetUnreachable
        } else {
            Cause::LoadgenFailed
        }
    }
}

status_word!(Cause);

/// Condition status strings.
pub mod status {
    /// The condition holds.
    pub const TRUE: &str = "True";
    /// The condition does not hold.
    pub const FALSE: &str = "False";
}

/// Sets condition `type_` in `conditions`.
///
/// `lastTransitionTime` is `now` for a new condition or a changed status, otherwise kept.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: &str,
    reason: impl AsRef<str>,
    message: impl Into<String>,
    observed_generation: Option<i64>,
    now: &Time,
) {
    let message = message.into();
    let reason = reason.as_ref();
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            if existing.status != status {
                existing.last_transition_time = now.clone();
            }
            existing.status = status.to_owned();
            existing.reason = reason.to_owned();
            existing.message = message;
            existing.observed_generation = observed_generation;
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
mod tests;
