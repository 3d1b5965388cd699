//! benchmatrix: the BenchmarkRun resource, its operator, the local matrix runner and reports.

pub mod api;
pub mod cli;
pub mod local;
pub mod report;
