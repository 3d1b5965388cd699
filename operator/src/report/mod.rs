//! Tables and charts rendered from a BenchmarkRun status.
