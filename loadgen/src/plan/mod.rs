//! What to run: the workload (endpoints, warm-up, phases, streams) and the plan file around it.
//!
//! The operator embeds [`Workload`] in the `BenchmarkRun` CRD as `spec.workload`, so every field
//! carries a doc comment (it becomes `kubectl explain` text) and the types avoid
//! `deny_unknown_fields`: a structural schema with `additionalProperties: false` is awkward in
//! Kubernetes. Unknown fields are reported by [`parse_plan_file`] instead.
//!
//! The types are in `workload` and `file`; what they cannot express is checked in `validate`,
//! which uses the endpoint checks of [`crate::request::check`]. Those read the types only, so
//! the dependency between the plan and the request checks runs one way.

mod file;
mod validate;
mod workload;

pub use crate::duration::{DURATION_PATTERN, Duration, ParseDurationError};
pub use crate::request::{Header, HeaderValueFrom, SecretKeyRef, SuccessCode};
pub use crate::strict_yaml::FieldError;
pub use file::{PlanFile, Preflight, parse_plan_file};
pub use workload::{DEFAULT_TIMEOUT, Endpoint, LoadMode, Phase, Spread, Stream, Workload};

#[cfg(test)]
mod tests;
