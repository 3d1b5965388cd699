//! What people use to start runs and read their results: the kubectl plugin, reports and
//! charts, the live progress display and the comparison of two runs. They read statuses;
//! none reaches into an executor.

pub mod compare;
pub mod kubectl;
pub mod progress;
pub mod report;
