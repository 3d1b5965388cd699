//! benchmatrix: the BenchmarkRun resource, its operator, the local matrix runner and reports.

pub mod api;
pub mod cli;
pub mod crdgen;
pub mod local;
pub mod plan;
pub mod report;
pub mod results;
pub mod validate;
