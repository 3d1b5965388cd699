//! The `BenchmarkRun` resource: spec, status and conditions, plus resource quantities.
//!
//! Shared by the operator and the local runner: both read the same spec and write the same
//! status document.

pub mod conditions;
pub mod pod_template;
pub mod quantity;
pub mod repeat;
pub mod spec;
pub mod status;
pub mod thresholds;

pub use quantity::Quantity;
pub use repeat::Repeat;
pub use spec::{
    Axes, BenchmarkRun, BenchmarkRunSpec, CleanupPolicy, Configuration, Duration, EnvVar,
    LoadgenSpec, Mode, Placement, PoolSize, TargetSpec, Timeouts, Workload,
};
pub use status::{
    BenchmarkRunStatus, CellPhase, CellPrecision, CellRatio, CellResult, CellStatus, Comparison,
    Enforcement, FigureSpread, Interference, LatencyMs, RepetitionStatus, ReplicaPhaseShare,
    ReplicaShare, RunPhase, Spread, Summary, TargetStats,
};
pub use thresholds::{
    Bound, ErrorRateLimit, LatencyLimit, Metric, RpsLimit, Threshold, ThresholdResult, Verdict,
};
