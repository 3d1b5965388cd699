//! What to run: the workload (endpoints, warm-up, phases, streams) and the plan file around it.
//!
//! The operator embeds [`Workload`] in the `BenchmarkRun` CRD as `spec.workload`, so every field
//! carries a doc comment (it becomes `kubectl explain` text) and the types avoid
//! `deny_unknown_fields`: a structural schema with `additionalProperties: false` is awkward in
//! Kubernetes. Unknown fields are reported by [`parse_plan_file`] instead.
//!
//! The types are in `workload`, `http` (headers and methods), `success` (the answers that
//! count) and `file`; what they cannot express is checked in `validate`, with each endpoint's
//! own checks in [`check`]. The request builder (`crate::request`) reads the plan; the plan
//! reads nothing of it.

pub mod check;
mod file;
mod http;
mod success;
mod validate;
mod workload;

pub use crate::duration::{DURATION_PATTERN, Duration, ParseDurationError};
pub use crate::strict_yaml::FieldError;
pub use file::{PlanFile, Preflight, parse_plan_file};
pub use http::{
    DEFAULT_METHOD, Header, HeaderValueFrom, OWNED_HEADERS, SecretKeyRef, answer_has_no_body,
    body_refused, content_anticipated,
};
pub use success::{SuccessCode, SuccessSet};
pub use workload::{DEFAULT_TIMEOUT, Endpoint, LoadMode, Phase, Spread, Stream, Workload};

#[cfg(test)]
mod tests;
