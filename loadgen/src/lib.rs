//! benchmatrix-loadgen: a phased HTTP/1.1 load generator with closed and open loops, HDR
//! percentiles and result documents that merge exactly.
//!
//! The workload and result types (`plan`, `result`) are shared with the operator, which embeds
//! [`plan::Workload`] in its CRD and reuses [`result::LatencyMs`] in its status.

pub mod cli;
pub mod conn;
pub mod duration;
pub mod histogram;
pub mod limits;
pub mod load;
pub mod plan;
pub mod preflight;
pub mod probe;
pub mod recorder;
pub mod request;
pub mod result;
pub mod strict_yaml;
pub mod summary;
pub mod target_url;
pub mod textual;
pub mod timeline;
