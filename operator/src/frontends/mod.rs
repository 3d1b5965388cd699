//! What people use to start runs and read their results: the kubectl plugin, reports and
//! charts, the live progress display, the comparison of two runs and of the variants of one,
//! and the figures of saved runs for Prometheus (`benchmatrix metrics`). They read statuses;
//! none reaches into an executor.

pub mod compare;
pub mod file_kind;
pub mod kubectl;
pub mod metrics;
pub mod outputs;
pub mod progress;
pub mod report;
pub mod size;
pub mod variants;
