//! An endpoint's requests as bytes, built once per run ([`build`]), and how a header value
//! kept in a Secret reaches the load generator ([`secrets`]). What an endpoint may send (its
//! method, headers, body and success codes) is the plan's (`crate::plan`), and checked there.
//!
//! A secret value is never written into a plan file: the operator and `benchmatrix run` replace
//! each `valueFrom.secretKeyRef` by `valueFrom.env`, the name of an environment variable of the
//! load generator process, and give the process that variable (a pod's `secretKeyRef` env on a
//! cluster, a file of `--secrets DIR` locally).

pub mod build;
pub mod secrets;

pub use build::{HeaderValues, Prepared};
