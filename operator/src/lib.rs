//! benchmatrix: the BenchmarkRun resource, its operator, the local matrix runner and reports.

pub mod cli;
pub mod engine;
pub mod executors;
#[cfg(any(test, feature = "test-fixtures"))]
pub mod fixtures;
pub mod frontends;
pub mod resource;
pub mod run_metrics;
