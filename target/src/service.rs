//! The state every handler shares: the resolved settings, the counters, the pool and the fib
//! calibration. The routers in [`crate::app`] hand it to the handlers in [`crate::handlers`].

use std::sync::Arc;

use crate::config::{Mode, Offload};
use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::stats::Stats;

/// The settings handlers need, resolved from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Concurrency mode.
    pub mode: Mode,
    /// CPU ms of `/fast`.
    pub fast_ms: u64,
    /// CPU ms of `/slow`.
    pub slow_ms: u64,
    /// What `pool` mode offloads.
    pub offload: Offload,
    /// Work expected to cost at least this many CPU ms is heavy.
    pub offload_threshold_ms: u64,
    /// CPU deadline of a pool task, for error messages.
    pub task_deadline_ms: u64,
}

/// What handlers share: settings, counters, the pool (in `pool` mode) and the fib calibration.
pub struct Service {
    /// Resolved settings.
    pub settings: Settings,
    /// Counters and samples.
    pub stats: Arc<Stats>,
    /// The `/metrics` registry over `stats`.
    pub metrics: Metrics,
    /// The CPU pool; `None` outside `pool` mode.
    pub pool: Option<Pool>,
    /// Measured cost of one recursive fib call, for estimating `/fib` cost.
    pub fib_ns_per_call: f64,
}

/// Cheap-to-clone handle on the [`Service`].
pub type AppState = Arc<Service>;
