//! The `BenchmarkRun` resource: spec, status and conditions.
