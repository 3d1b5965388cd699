//! Putting the load on the target: worker threads running the closed and open loops, phases back
//! to back, and the result document.
//!
//! Each worker is an OS thread with its own current-thread tokio runtime (no work stealing, no
//! cross-thread wake-ups on the request path; `worker`). The coordinating thread hands each
//! worker its share of a phase (connections round-robin; open-loop schedules interleaved),
//! merges the per-second reports into progress lines and timelines, adds the workers'
//! histograms when the phase ends (`phase`), and takes the target's `/stats` between phases
//! (every replica at once, so a boundary costs at most one probe timeout; `stats`).

mod closed;
mod exchange;
mod open;
mod phase;
mod stats;
mod worker;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use crate::plan::{Preflight, Spread, Workload};
use crate::preflight;
use crate::request::{self, HeaderValues, Prepared};
use crate::result::{RESULT_VERSION, RunResult};
use crate::target_url::TargetUrl;
use crate::timeline::Progress;

/// Name of the warm-up in progress lines.
pub const WARMUP_PHASE: &str = "warmup";

/// Default cap on the connections one open-loop stream may hold open, across all workers.
pub const DEFAULT_OPEN_MAX_CONNECTIONS: usize = 1000;

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Where to send requests.
    pub target: TargetUrl,
    /// What to send.
    pub workload: Workload,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Replica addresses whose `/stats` are read; empty means the target itself.
    pub replicas: Vec<String>,
    /// Where each replica's `/stats` is read instead, in the order of `replicas` (a target's
    /// statistics port); empty means `replicas` themselves. See
    /// [`crate::plan::PlanFile::stats_addresses`].
    pub stats_addresses: Vec<String>,
    /// Path of the statistics endpoint; `None` turns snapshots off.
    pub stats_path: Option<String>,
    /// Cap on the connections of each open-loop stream (all workers together).
    pub open_max_connections: usize,
    /// This generator's place among the generators sharing the workload (round-robin spread).
    pub share: GeneratorShare,
    /// The check that every address answers before the load; `None` starts it at once.
    pub preflight: Option<Preflight>,
    /// Header values the workload names by environment variable (`valueFrom.env`), read
    /// before the run by [`HeaderValues::read`].
    pub header_values: HeaderValues,
}

/// Which of `count` load generators this is; see [`crate::plan::PlanFile::generator_index`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneratorShare {
    /// 0-based.
    pub index: usize,
    /// At least 1.
    pub count: usize,
}

impl Default for GeneratorShare {
    fn default() -> Self {
        GeneratorShare { index: 0, count: 1 }
    }
}

impl GeneratorShare {
    /// The address of this generator's `k`-th connection: connection `index + k * count` of
    /// the whole workload, dealt over `addrs` in turn.
    fn pick(&self, addrs: &[SocketAddr], k: usize) -> SocketAddr {
        addrs[(self.index + k * self.count.max(1)) % addrs.len()]
    }
}

/// Why a run could not be carried out (as opposed to requests failing, which are results).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The target's host name did not resolve.
    #[error("cannot resolve target {0}: {1}")]
    Resolve(String, String),
    /// A worker thread could not start or stopped answering.
    #[error("load-generator worker failed: {0}")]
    Worker(String),
    /// An address of the load did not answer the check before it (see [`crate::preflight`]);
    /// the message starts with [`preflight::UNREACHABLE`].
    #[error("target unreachable: {0}")]
    Unreachable(String),
    /// An endpoint's request could not be built (a header value that was not read).
    #[error("cannot build the request: {0}")]
    Request(String),
}

/// Runs the whole workload and returns the result document; `on_progress` gets one line per
/// second per phase (warm-up included, under [`WARMUP_PHASE`]) and one as each phase ends.
pub fn run(cfg: &RunConfig, on_progress: &mut dyn FnMut(&Progress)) -> Result<RunResult, RunError> {
    // Before anything else, so the check is outside the warm-up and every phase, and a name
    // that resolves only once the target is up is resolved after it.
    let preflight_seconds = match &cfg.preflight {
        Some(p) => Some(check_addresses(cfg, p)?),
        None => None,
    };
    let addrs = load_authorities(cfg)
        .iter()
        .map(|a| resolve(a))
        .collect::<Result<Vec<_>, _>>()?;
    let threads = cfg.threads.max(1);
    let (workers, msgs) = worker::start(threads)?;
    let requests = build_requests(cfg)?;
    let ctx = phase::PhaseCtx {
        cfg,
        addrs,
        timeout: cfg.workload.timeout_or_default().get(),
        requests: &requests,
        workers: &workers,
        msgs: &msgs,
    };
    let phases = ctx.run_all(on_progress);
    // After a failure a worker may be the thing that is stuck, so it is left behind rather
    // than joined: the run still ends on time.
    worker::stop(workers, phases.is_ok());
    Ok(RunResult {
        version: RESULT_VERSION,
        target: cfg.target.to_string(),
        threads: threads as u32,
        generators: 1,
        phases: phases?,
        preflight_seconds,
    })
}

/// Each endpoint's request, made here once; the connection loops only write its bytes.
fn build_requests(cfg: &RunConfig) -> Result<Vec<Arc<Prepared>>, RunError> {
    cfg.workload
        .endpoints
        .iter()
        .map(|e| {
            request::build::build(
                &cfg.target.host_header(),
                &cfg.target.join(&e.path),
                e,
                &cfg.header_values,
            )
            .map(Arc::new)
            .map_err(RunError::Request)
        })
        .collect()
}

/// The addresses connections will go to: each replica's with `roundRobin` spread, else the
/// target's one address.
fn load_authorities(cfg: &RunConfig) -> Vec<String> {
    match cfg.workload.spread {
        Spread::RoundRobin if !cfg.replicas.is_empty() => cfg.replicas.clone(),
        _ => vec![cfg.target.socket_authority()],
    }
}

/// Waits until every address of the load answers `p`; the seconds it took, rounded to
/// milliseconds.
fn check_addresses(cfg: &RunConfig, p: &Preflight) -> Result<f64, RunError> {
    let check = preflight::Check {
        path: p.path.clone(),
        host_header: cfg.target.host_header(),
        timeout: p.timeout.get(),
    };
    let took =
        preflight::wait_for(&load_authorities(cfg), &check).map_err(RunError::Unreachable)?;
    Ok((took.as_secs_f64() * 1000.0).round() / 1000.0)
}

/// The first address `authority` ("HOST:PORT") resolves to.
fn resolve(authority: &str) -> Result<SocketAddr, RunError> {
    authority
        .to_socket_addrs()
        .map_err(|e| RunError::Resolve(authority.to_owned(), e.to_string()))?
        .next()
        .ok_or_else(|| RunError::Resolve(authority.to_owned(), "no address".into()))
}
