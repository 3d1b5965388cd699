//! What the operator measures and tells: its own metrics ([`metrics`], with
//! [`robustness_metrics`], served on `/metrics` beside the figures of finished runs from
//! [`crate::run_metrics`]), the target containers' CPU, throttling and memory read from the
//! kubelets ([`kubelet`]), the runs' Events ([`events`]) and its logs ([`logging`]).

pub mod events;
pub mod kubelet;
pub mod logging;
pub mod metrics;
pub mod robustness_metrics;
