//! The `BenchmarkRun` resource: what a user writes (the spec) and what a run's status can hold,
//! with everything worked out from the spec alone: validation, the matrix, the largest status a
//! spec can lead to, and the CRD.
//!
//! The lowest wing: it imports nothing of the engine, the executors or the front-ends, and all
//! of them read the same spec and write (or show) the same status document through it.

/// Implements `JsonSchema` for a type whose schema is written out by hand (in the syntax of
/// `schemars::json_schema!`) under the type's own name: the types whose YAML form (an integer or
/// a string, an integer or an object, any object) no derived schema describes.
macro_rules! written_schema {
    ($ty:ident, $schema:tt) => {
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!($schema)
            }
        }
    };
}

pub mod bound;
pub mod capacity;
pub mod conditions;
pub mod crdgen;
pub mod labels;
pub mod matrix;
pub mod measure;
pub mod parallelism;
pub mod pod_template;
pub mod quantity;
pub mod reference;
pub mod repeat;
pub mod rounding;
pub mod settings;
pub mod size;
pub mod sizing;
pub mod spec;
pub mod status;
pub mod thresholds;
pub mod validate;
mod validated;

pub use measure::Measure;
pub use quantity::Quantity;
pub use repeat::Repeat;
pub use settings::{EnvVar, Mode, PoolSize};
pub use spec::{
    Axes, BenchmarkRun, BenchmarkRunSpec, CleanupPolicy, Configuration, Duration, LoadgenSpec,
    Placement, TargetOf, TargetSpec, Timeouts, Variant, Workload,
};
pub use status::{
    BenchmarkRunStatus, CellPhase, CellPrecision, CellRatio, CellResult, CellStatus, Comparison,
    Enforcement, FigureSpread, Interference, LatencyMs, RepetitionStatus, ReplicaPhaseShare,
    ReplicaShare, RunPhase, Spread, Summary, TargetStats,
};
pub use thresholds::{
    Bound, ErrorRateLimit, LatencyLimit, Metric, RpsLimit, Threshold, ThresholdResult, Verdict,
};
pub use validated::{ValidatedRun, preflight};
