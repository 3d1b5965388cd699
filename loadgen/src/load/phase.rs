//! The phases, run back to back: each phase's streams dealt to the workers, their reports merged
//! into progress lines and timelines as they come, and the phase's result once every worker is
//! done.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::worker::{Msg, PhaseCmd, Worker, WorkerMode, WorkerStream};
use super::{GeneratorShare, RunConfig, RunError, WARMUP_PHASE, open, stats};
use crate::histogram;
use crate::plan::{LoadMode, Phase};
use crate::recorder::StreamTotals;
use crate::request::Prepared;
use crate::result::{LatencyMs, PhaseResult, StreamMode, StreamResult};
use crate::timeline::{Progress, TimelineBuilder};

/// How long the coordinator waits for workers past a phase's end before giving up on them.
const WORKER_GRACE: Duration = Duration::from_secs(5);

/// What every phase of a run shares.
pub(super) struct PhaseCtx<'a> {
    pub cfg: &'a RunConfig,
    /// Where connections go: the target's address, or the replicas' in round-robin spread.
    pub addrs: Vec<SocketAddr>,
    pub timeout: Duration,
    pub requests: &'a [Arc<Prepared>],
    pub workers: &'a [Worker],
    pub msgs: &'a Receiver<Msg>,
}

/// A phase's streams as the workers run them.
struct Dealt {
    /// Each worker's share of the streams.
    per_worker: Vec<Vec<WorkerStream>>,
    /// Each stream's endpoint name, in the phase's order.
    names: Vec<String>,
    /// Each stream's mode, in the phase's order.
    modes: Vec<LoadMode>,
}

/// Hands a phase's streams to the workers. Connections are numbered across the phase's streams,
/// so leftovers of one stream continue where the previous stream stopped instead of all
/// starting at replica 0.
struct Dealer<'a> {
    addrs: &'a [SocketAddr],
    share: GeneratorShare,
    per_worker: Vec<Vec<WorkerStream>>,
    next_worker: usize,
    next_conn: usize,
}

impl Dealer<'_> {
    /// Stream `index`'s `connections`: they go to workers in turn and to addresses in turn
    /// (numbered across streams and generators), so round-robin spread holds per stream
    /// whatever the thread count.
    fn closed(&mut self, index: usize, request: &Arc<Prepared>, connections: u32) {
        let threads = self.per_worker.len();
        let mut shares: Vec<Vec<SocketAddr>> = vec![Vec::new(); threads];
        for _ in 0..connections {
            shares[self.next_worker % threads].push(self.share.pick(self.addrs, self.next_conn));
            self.next_worker += 1;
            self.next_conn += 1;
        }
        for (wi, addrs) in shares.into_iter().enumerate() {
            if !addrs.is_empty() {
                self.per_worker[wi].push(WorkerStream {
                    index,
                    request: request.clone(),
                    mode: WorkerMode::Closed,
                    addrs,
                });
            }
        }
    }

    /// Stream `index` at `rate` requests per second from `start`: every worker takes its turn
    /// of the schedule, with its share of the `max_connections` (all workers together).
    fn open(
        &mut self,
        index: usize,
        request: &Arc<Prepared>,
        rate: f64,
        start: Instant,
        max_connections: usize,
    ) {
        let threads = self.per_worker.len();
        let cap = max_connections.max(threads);
        for (wi, list) in self.per_worker.iter_mut().enumerate() {
            list.push(WorkerStream {
                index,
                request: request.clone(),
                mode: WorkerMode::Open(open::Schedule {
                    origin: tokio::time::Instant::from_std(start),
                    interval_nanos: 1e9 / rate,
                    first: wi as u64,
                    stride: threads as u64,
                    max_connections: cap.div_ceil(threads),
                }),
                // Each worker starts its turn at a different address.
                addrs: (0..self.addrs.len())
                    .map(|k| {
                        self.share
                            .pick(self.addrs, self.next_conn + wi + k * threads)
                    })
                    .collect(),
            });
        }
        self.next_conn += threads;
    }
}

impl PhaseCtx<'_> {
    /// The warm-up (when there is one) and every phase; each phase's result carries the
    /// target's figures over it.
    pub fn run_all(
        &self,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<Vec<PhaseResult>, RunError> {
        let w = &self.cfg.workload;
        if let Some(first) = w.phases.first()
            && !w.warmup.is_zero()
        {
            let warm = Phase {
                name: WARMUP_PHASE.into(),
                duration: w.warmup,
                load: first.load.clone(),
            };
            self.run_phase(&warm, on_progress)?;
        }
        // One /stats read per replica at each boundary: a phase's end snapshot is the next
        // phase's start, so phases are contiguous and no second read (which, behind a /slow
        // request, can take most of a second per replica) delays the next phase.
        let mut results = Vec::with_capacity(w.phases.len());
        let mut start_stats = None;
        for phase in &w.phases {
            let start = start_stats
                .take()
                .unwrap_or_else(|| stats::snapshots(self.cfg));
            let mut pr = self.run_phase(phase, on_progress)?;
            let end_stats = stats::snapshots(self.cfg);
            pr.target_stats = stats::pair_snapshots(start, end_stats.clone());
            results.push(pr);
            start_stats = Some(end_stats);
        }
        Ok(results)
    }

    fn run_phase(
        &self,
        phase: &Phase,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<PhaseResult, RunError> {
        // A short lead so every worker starts on the same instant.
        let start = Instant::now() + Duration::from_millis(20);
        let end = start + phase.duration.get();
        let Dealt {
            per_worker,
            names,
            modes,
        } = self.deal(phase, start)?;
        for (wk, streams) in self.workers.iter().zip(per_worker) {
            wk.commands
                .send(PhaseCmd {
                    timeout: self.timeout,
                    start,
                    end,
                    streams,
                })
                .map_err(|_| RunError::Worker("a worker thread has stopped".into()))?;
        }
        let (timeline, totals) = self.collect(phase, &names, &modes, end, on_progress)?;
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

    /// Each worker's share of `phase`'s streams, for a phase that starts at `start`.
    fn deal(&self, phase: &Phase, start: Instant) -> Result<Dealt, RunError> {
        let endpoints = &self.cfg.workload.endpoints;
        let mut dealer = Dealer {
            addrs: &self.addrs,
            share: self.cfg.share,
            per_worker: (0..self.workers.len()).map(|_| Vec::new()).collect(),
            next_worker: 0,
            next_conn: 0,
        };
        let mut names = Vec::with_capacity(phase.load.len());
        let mut modes = Vec::with_capacity(phase.load.len());
        for (i, stream) in phase.load.iter().enumerate() {
            let ep = endpoints
                .iter()
                .position(|e| e.name == stream.endpoint)
                .ok_or_else(|| RunError::Worker(format!("unknown endpoint {}", stream.endpoint)))?;
            names.push(stream.endpoint.clone());
            let mode = stream
                .mode()
                .ok_or_else(|| RunError::Worker("stream without a mode".into()))?;
            modes.push(mode);
            let request = &self.requests[ep];
            match mode {
                LoadMode::Closed { connections } => dealer.closed(i, request, connections),
                LoadMode::Open { rate } => {
                    dealer.open(i, request, rate, start, self.cfg.open_max_connections)
                }
            }
        }
        Ok(Dealt {
            per_worker: dealer.per_worker,
            names,
            modes,
        })
    }

    /// Waits until every worker has finished the phase that ends at `end`, passing on each
    /// second's progress; the phase's timeline and each stream's totals.
    fn collect(
        &self,
        phase: &Phase,
        names: &[String],
        modes: &[LoadMode],
        end: Instant,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<(TimelineBuilder, Vec<StreamTotals>), RunError> {
        let threads = self.workers.len();
        let mut timeline = TimelineBuilder::new(&phase.name, names.to_vec(), threads);
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
                    return Err(RunError::Worker(format!(
                        "workers did not finish phase {:?} in time",
                        phase.name
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RunError::Worker("a worker thread has stopped".into()));
                }
            }
        }
        Ok((timeline, totals))
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
