//! benchmatrix: the BenchmarkRun resource, its operator, the local matrix runner and reports.

pub mod admin;
pub mod api;
pub mod cli;
pub mod compare;
pub mod controller;
pub mod crdgen;
pub mod engine;
#[cfg(any(test, feature = "test-fixtures"))]
pub mod fixtures;
pub mod kubectl;
pub mod kubelet;
pub mod local;
pub mod matrix;
pub mod metrics;
pub mod outcome;
pub mod progress;
pub mod recommend;
pub mod report;
pub mod results;
pub mod size;
pub mod telemetry;
pub mod thresholds;
pub mod validate;
