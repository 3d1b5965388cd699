//! Putting the load on the target: worker threads running the closed and open loops, phases back
//! to back, and the result document.
//!
//! Each worker is an OS thread with its own current-thread tokio runtime (no work stealing, no
//! cross-thread wake-ups on the request path). The coordinating thread hands each worker its
//! share of a phase (connections round-robin; open-loop schedules interleaved), merges the
//! per-second reports into progress lines and timelines, adds the workers' histograms when the
//! phase ends, and takes the target's `/stats` between phases (every replica at once, so a
//! boundary costs at most one probe timeout).

mod closed;
mod open;

use std::cell::RefCell;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use tokio::task::LocalSet;

use crate::histogram;
use crate::plan::{LoadMode, Phase, Preflight, Spread, Workload};
use crate::recorder::{Recorder, SecondCounts, StreamTotals};
use crate::request::{self, HeaderValues, Prepared, SuccessSet};
use crate::result::{
    LatencyMs, PhaseResult, RESULT_VERSION, ReplicaStats, RunResult, StreamMode, StreamResult,
};
use crate::target_url::TargetUrl;
use crate::timeline::{Progress, TimelineBuilder};
use crate::{preflight, probe};

/// Name of the warm-up in progress lines.
pub const WARMUP_PHASE: &str = "warmup";

/// Default cap on the connections one open-loop stream may hold open, across all workers.
pub const DEFAULT_OPEN_MAX_CONNECTIONS: usize = 1000;

/// How long the coordinator waits for workers past a phase's end before giving up on them.
const WORKER_GRACE: Duration = Duration::from_secs(5);

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
pub enum EngineError {
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

/// What one stream needs on a worker.
pub(crate) struct StreamCtx {
    /// Where this worker's connections of the stream go: one address per connection for a
    /// closed-loop stream; for an open-loop stream, the order new connections take.
    pub addrs: Vec<SocketAddr>,
    /// How many connections have taken an address from `addrs` (open loop).
    next_addr: std::cell::Cell<usize>,
    /// The request, built once for the run and written as is for every send.
    pub request: Vec<u8>,
    /// The answer to `request` has no body (HEAD).
    pub bodiless_answer: bool,
    /// The statuses that count as success.
    pub success: SuccessSet,
    pub timeout: Duration,
}

impl StreamCtx {
    /// The address for the next new connection, taking `addrs` in turn.
    pub fn take_addr(&self) -> SocketAddr {
        let n = self.next_addr.get();
        self.next_addr.set(n + 1);
        self.addrs[n % self.addrs.len()]
    }
}

#[derive(Clone, Copy, Debug)]
enum WorkerMode {
    /// One connection per address in the stream's `addrs`.
    Closed,
    Open(open::Schedule),
}

struct WorkerStream {
    index: usize,
    request: Arc<Prepared>,
    mode: WorkerMode,
    addrs: Vec<SocketAddr>,
}

struct PhaseCmd {
    timeout: Duration,
    start: Instant,
    end: Instant,
    streams: Vec<WorkerStream>,
}

enum Msg {
    Second {
        second: u32,
        streams: Vec<(usize, SecondCounts)>,
    },
    Done {
        totals: Vec<(usize, StreamTotals)>,
    },
}

struct Worker {
    commands: Sender<PhaseCmd>,
    thread: std::thread::JoinHandle<()>,
}

/// Runs the whole workload and returns the result document; `on_progress` gets one line per
/// second per phase (warm-up included, under [`WARMUP_PHASE`]) and one as each phase ends.
pub fn run(
    cfg: &RunConfig,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunResult, EngineError> {
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
    let (msg_tx, msg_rx) = mpsc::channel::<Msg>();
    let mut workers = Vec::with_capacity(threads);
    for id in 0..threads {
        let (cmd_tx, cmd_rx) = mpsc::channel::<PhaseCmd>();
        let tx = msg_tx.clone();
        let thread = std::thread::Builder::new()
            .name(format!("loadgen-{id}"))
            .spawn(move || worker_main(cmd_rx, tx))
            .map_err(|e| EngineError::Worker(e.to_string()))?;
        workers.push(Worker {
            commands: cmd_tx,
            thread,
        });
    }
    drop(msg_tx);

    let w = &cfg.workload;
    let timeout = w.timeout_or_default().get();
    // Each endpoint's bytes are made here, once; the connection loops only write them.
    let requests = w
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
            .map_err(EngineError::Request)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let ctx = PhaseCtx {
        cfg,
        addrs,
        timeout,
        requests: &requests,
        workers: &workers,
        msgs: &msg_rx,
    };

    let mut result = RunResult {
        version: RESULT_VERSION,
        target: cfg.target.to_string(),
        threads: threads as u32,
        generators: 1,
        phases: Vec::with_capacity(w.phases.len()),
        preflight_seconds,
    };
    let outcome = (|| {
        if let Some(first) = w.phases.first()
            && !w.warmup.is_zero()
        {
            let warm = Phase {
                name: WARMUP_PHASE.into(),
                duration: w.warmup,
                load: first.load.clone(),
            };
            ctx.run_phase(&warm, on_progress)?;
        }
        // One /stats read per replica at each boundary: a phase's end snapshot is the next
        // phase's start, so phases are contiguous and no second read (which, behind a /slow
        // request, can take most of a second per replica) delays the next phase.
        let mut start_stats = None;
        for phase in &w.phases {
            let start = start_stats.take().unwrap_or_else(|| ctx.snapshots());
            let mut pr = ctx.run_phase(phase, on_progress)?;
            let end_stats = ctx.snapshots();
            pr.target_stats = pair_snapshots(start, end_stats.clone());
            result.phases.push(pr);
            start_stats = Some(end_stats);
        }
        Ok(())
    })();
    // Closing the command channels ends the workers. After a failure a worker may be the thing
    // that is stuck, so it is left behind rather than joined: the run still ends on time.
    for wk in workers {
        drop(wk.commands);
        if outcome.is_ok() {
            let _ = wk.thread.join();
        }
    }
    outcome.map(|()| result)
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
fn check_addresses(cfg: &RunConfig, p: &Preflight) -> Result<f64, EngineError> {
    let check = preflight::Check {
        path: p.path.clone(),
        host_header: cfg.target.host_header(),
        timeout: p.timeout.get(),
    };
    let took =
        preflight::wait_for(&load_authorities(cfg), &check).map_err(EngineError::Unreachable)?;
    Ok((took.as_secs_f64() * 1000.0).round() / 1000.0)
}

/// The first address `authority` ("HOST:PORT") resolves to.
fn resolve(authority: &str) -> Result<SocketAddr, EngineError> {
    authority
        .to_socket_addrs()
        .map_err(|e| EngineError::Resolve(authority.to_owned(), e.to_string()))?
        .next()
        .ok_or_else(|| EngineError::Resolve(authority.to_owned(), "no address".into()))
}

struct PhaseCtx<'a> {
    cfg: &'a RunConfig,
    /// Where connections go: the target's address, or the replicas' in round-robin spread.
    addrs: Vec<SocketAddr>,
    timeout: Duration,
    requests: &'a [Arc<Prepared>],
    workers: &'a [Worker],
    msgs: &'a Receiver<Msg>,
}

type Snapshots = Vec<(String, Result<crate::result::StatsSnapshot, String>)>;

/// Which `/stats` to read at a phase boundary: (the replica's key in the result, the address
/// read). The statistics addresses when given, keyed by the replica address at the same place
/// (or by themselves when the replicas share one address); else the replicas, or the target.
fn stats_reads(
    replicas: &[String],
    stats_addresses: &[String],
    target: impl FnOnce() -> String,
) -> Vec<(String, String)> {
    if !stats_addresses.is_empty() {
        let keyed_by_replica = replicas.len() == stats_addresses.len();
        return stats_addresses
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let key = if keyed_by_replica { &replicas[i] } else { s };
                (key.clone(), s.clone())
            })
            .collect();
    }
    let addresses = if replicas.is_empty() {
        vec![target()]
    } else {
        replicas.to_vec()
    };
    addresses.into_iter().map(|a| (a.clone(), a)).collect()
}

impl PhaseCtx<'_> {
    fn snapshots(&self) -> Snapshots {
        let Some(path) = &self.cfg.stats_path else {
            return Vec::new();
        };
        let reads = stats_reads(&self.cfg.replicas, &self.cfg.stats_addresses, || {
            self.cfg.target.socket_authority()
        });
        // One thread per replica: replicas that do not answer cost one probe timeout together
        // before the next phase starts, not one each.
        std::thread::scope(|scope| {
            let reads: Vec<_> = reads
                .into_iter()
                .map(|(a, from)| {
                    let read = scope.spawn(move || probe::snapshot(&from, path));
                    (a, read)
                })
                .collect();
            reads
                .into_iter()
                .map(|(a, read)| {
                    let s = read
                        .join()
                        .unwrap_or_else(|_| Err(format!("reading {a}{path} failed")));
                    (a, s)
                })
                .collect()
        })
    }

    fn run_phase(
        &self,
        phase: &Phase,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<PhaseResult, EngineError> {
        let endpoints = &self.cfg.workload.endpoints;
        let threads = self.workers.len();
        // A short lead so every worker starts on the same instant.
        let start = Instant::now() + Duration::from_millis(20);
        let end = start + phase.duration.get();
        let mut per_worker: Vec<Vec<WorkerStream>> = (0..threads).map(|_| Vec::new()).collect();
        let mut next_worker = 0usize;
        // Connections are numbered across the phase's streams, so leftovers of one stream
        // continue where the previous stream stopped instead of all starting at replica 0.
        let mut next_conn = 0usize;
        let share = self.cfg.share;
        let mut names = Vec::with_capacity(phase.load.len());
        let mut modes = Vec::with_capacity(phase.load.len());
        for (i, stream) in phase.load.iter().enumerate() {
            let ep = endpoints
                .iter()
                .position(|e| e.name == stream.endpoint)
                .ok_or_else(|| {
                    EngineError::Worker(format!("unknown endpoint {}", stream.endpoint))
                })?;
            names.push(stream.endpoint.clone());
            let mode = stream
                .mode()
                .ok_or_else(|| EngineError::Worker("stream without a mode".into()))?;
            modes.push(mode);
            match mode {
                LoadMode::Closed { connections } => {
                    // Connections go to workers in turn and to addresses in turn (numbered
                    // across streams and generators), so round-robin spread holds per stream
                    // whatever the thread count.
                    let mut shares: Vec<Vec<SocketAddr>> = vec![Vec::new(); threads];
                    for _ in 0..connections {
                        shares[next_worker % threads].push(share.pick(&self.addrs, next_conn));
                        next_worker += 1;
                        next_conn += 1;
                    }
                    for (wi, addrs) in shares.into_iter().enumerate() {
                        if !addrs.is_empty() {
                            per_worker[wi].push(WorkerStream {
                                index: i,
                                request: self.requests[ep].clone(),
                                mode: WorkerMode::Closed,
                                addrs,
                            });
                        }
                    }
                }
                LoadMode::Open { rate } => {
                    let cap = self.cfg.open_max_connections.max(threads);
                    for (wi, list) in per_worker.iter_mut().enumerate() {
                        list.push(WorkerStream {
                            index: i,
                            request: self.requests[ep].clone(),
                            mode: WorkerMode::Open(open::Schedule {
                                origin: tokio::time::Instant::from_std(start),
                                interval_nanos: 1e9 / rate,
                                first: wi as u64,
                                stride: threads as u64,
                                max_connections: cap.div_ceil(threads),
                            }),
                            // Each worker starts its turn at a different address.
                            addrs: (0..self.addrs.len())
                                .map(|k| share.pick(&self.addrs, next_conn + wi + k * threads))
                                .collect(),
                        });
                    }
                    next_conn += threads;
                }
            }
        }
        for (wk, streams) in self.workers.iter().zip(per_worker) {
            wk.commands
                .send(PhaseCmd {
                    timeout: self.timeout,
                    start,
                    end,
                    streams,
                })
                .map_err(|_| EngineError::Worker("a worker thread has stopped".into()))?;
        }

        let mut timeline = TimelineBuilder::new(&phase.name, names.clone(), threads);
        let mut totals: Vec<StreamTotals> = modes
            .iter()
            .map(|m| StreamTotals::new(matches!(m, LoadMode::Open { .. })))
            .collect();
        let mut done = 0;
        let give_up = end + self.timeout.min(WORKER_GRACE) + WORKER_GRACE;
        while done < threads {
            let wait = give_up.saturating_duration_since(Instant::now());
            match self.msgs.recv_timeout(wait) {
                Ok(Msg::Second { second, streams }) => {
                    for line in timeline.add(second, streams) {
                        on_progress(&line);
                    }
                }
                Ok(Msg::Done { totals: worker }) => {
                    for (i, t) in worker {
                        totals[i].add(&t);
                    }
                    done += 1;
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(EngineError::Worker(format!(
                        "workers did not finish phase {:?} in time",
                        phase.name
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(EngineError::Worker("a worker thread has stopped".into()));
                }
            }
        }
        let duration_secs = (end - start).as_secs_f64();
        let streams = totals
            .into_iter()
            .enumerate()
            .map(|(i, t)| stream_result(&names[i], modes[i], t, duration_secs, &timeline, i))
            .collect();
        let result = PhaseResult {
            name: phase.name.clone(),
            duration_secs,
            streams,
            target_stats: Vec::new(),
            started_unix_ms: Some(unix_ms_at(start)),
        };
        on_progress(&Progress::ended(&result));
        Ok(result)
    }
}

/// The wall-clock time of `at` (a moment of the monotonic clock), in ms since the Unix epoch.
fn unix_ms_at(at: Instant) -> i64 {
    let now_wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let since = Instant::now().saturating_duration_since(at);
    (now_wall.saturating_sub(since)).as_millis() as i64
}

fn stream_result(
    endpoint: &str,
    mode: LoadMode,
    t: StreamTotals,
    duration_secs: f64,
    timeline: &TimelineBuilder,
    index: usize,
) -> StreamResult {
    let open = matches!(mode, LoadMode::Open { .. });
    StreamResult {
        endpoint: endpoint.to_owned(),
        mode: if open {
            StreamMode::Open
        } else {
            StreamMode::Closed
        },
        requests: t.requests,
        errors: t.errors,
        rps: (t.requests - t.errors) as f64 / duration_secs,
        latency_ms: LatencyMs::from_histogram(&t.hist),
        errors_by_kind: t.by_kind,
        in_flight_at_end: t.in_flight_at_end,
        connections_opened: t.connections_opened,
        timeline: timeline.points(index, duration_secs),
        histogram: histogram::encode(&t.hist),
        offered_rps: match mode {
            LoadMode::Open { rate } => Some(rate),
            LoadMode::Closed { .. } => None,
        },
        late_sends: open.then_some(t.late_sends),
        uncorrected_latency_ms: t.uncorrected.as_ref().and_then(LatencyMs::from_histogram),
        uncorrected_histogram: t.uncorrected.as_ref().map(histogram::encode),
    }
}

fn pair_snapshots(start: Snapshots, end: Snapshots) -> Vec<ReplicaStats> {
    start
        .into_iter()
        .zip(end)
        .map(|((address, s), (_, e))| {
            let error = match (&s, &e) {
                (Err(a), _) => Some(a.clone()),
                (_, Err(b)) => Some(b.clone()),
                _ => None,
            };
            let (s, e) = (s.ok(), e.ok());
            let delta = |f: fn(&crate::result::StatsSnapshot) -> Option<f64>| match (&s, &e) {
                (Some(a), Some(b)) => Some(f(b)? - f(a)?),
                _ => None,
            };
            ReplicaStats {
                cpu_seconds_in_phase: delta(|t| t.cpu_seconds_used),
                requests_served_in_phase: delta(|t| t.requests_served),
                address,
                start: s,
                end: e,
                error,
            }
        })
        .collect()
}

fn worker_main(commands: Receiver<PhaseCmd>, msgs: Sender<Msg>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start a worker runtime: {e}");
            return;
        }
    };
    while let Ok(cmd) = commands.recv() {
        let local = LocalSet::new();
        let totals = rt.block_on(local.run_until(run_worker_phase(cmd, &msgs)));
        if msgs.send(Msg::Done { totals }).is_err() {
            return;
        }
    }
}

async fn run_worker_phase(cmd: PhaseCmd, msgs: &Sender<Msg>) -> Vec<(usize, StreamTotals)> {
    let start = tokio::time::Instant::from_std(cmd.start);
    let end = tokio::time::Instant::from_std(cmd.end);
    tokio::time::sleep_until(start).await;
    let mut recorders: Vec<(usize, Rc<RefCell<Recorder>>)> = Vec::new();
    let mut tasks = Vec::new();
    for ws in cmd.streams {
        let ctx = Rc::new(StreamCtx {
            addrs: ws.addrs,
            next_addr: std::cell::Cell::new(0),
            request: ws.request.bytes.clone(),
            bodiless_answer: ws.request.bodiless_answer,
            success: ws.request.success,
            timeout: cmd.timeout,
        });
        let open = matches!(ws.mode, WorkerMode::Open(_));
        let rec = Rc::new(RefCell::new(Recorder::new(open)));
        recorders.push((ws.index, rec.clone()));
        match ws.mode {
            WorkerMode::Closed => {
                for _ in 0..ctx.addrs.len() {
                    let (ctx, rec) = (ctx.clone(), rec.clone());
                    tasks.push(tokio::task::spawn_local(async move {
                        let addr = ctx.take_addr();
                        closed::run_connection(&ctx, &rec, end, addr).await
                    }));
                }
            }
            WorkerMode::Open(schedule) => {
                tasks.push(tokio::task::spawn_local(open::run_stream(
                    ctx, rec, schedule, end,
                )));
            }
        }
    }
    let flush = |second: u32| Msg::Second {
        second,
        streams: recorders
            .iter()
            .map(|(i, r)| (*i, r.borrow_mut().take_second()))
            .collect(),
    };
    let mut second = 0u32;
    loop {
        let tick = start + Duration::from_secs(u64::from(second) + 1);
        if tick >= end {
            break;
        }
        tokio::time::sleep_until(tick).await;
        let _ = msgs.send(flush(second));
        second += 1;
    }
    for t in tasks {
        let _ = t.await;
    }
    let _ = msgs.send(flush(second));
    recorders
        .into_iter()
        .map(|(i, r)| (i, r.borrow().totals.clone()))
        .collect()
}
