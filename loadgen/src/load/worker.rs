//! The worker threads: each an OS thread with its own current-thread tokio runtime (no work
//! stealing, no cross-thread wake-ups on the request path) that runs its share of each phase's
//! streams and reports to the coordinating thread every second and when the phase ends.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use tokio::task::LocalSet;

use super::exchange::StreamCtx;
use super::{RunError, closed, open};
use crate::recorder::{Recorder, SecondCounts, StreamTotals};
use crate::request::Prepared;

/// How a worker runs its share of a stream.
#[derive(Clone, Copy, Debug)]
pub(super) enum WorkerMode {
    /// One connection per address in the stream's `addrs`.
    Closed,
    Open(open::Schedule),
}

/// A worker's share of one stream of a phase.
pub(super) struct WorkerStream {
    /// The stream's place in the phase.
    pub index: usize,
    pub request: Arc<Prepared>,
    pub mode: WorkerMode,
    pub addrs: Vec<SocketAddr>,
}

/// A phase for a worker to run: its streams between `start` and `end`.
pub(super) struct PhaseCmd {
    pub timeout: Duration,
    pub start: Instant,
    pub end: Instant,
    pub streams: Vec<WorkerStream>,
}

/// What a worker reports: each second's counts, and its totals when the phase is done.
pub(super) enum Msg {
    Second {
        second: u32,
        streams: Vec<(usize, SecondCounts)>,
    },
    Done {
        totals: Vec<(usize, StreamTotals)>,
    },
}

/// A worker thread and the channel that hands it phases.
pub(super) struct Worker {
    pub commands: Sender<PhaseCmd>,
    thread: std::thread::JoinHandle<()>,
}

/// Starts `threads` workers; their messages all come to the one receiver.
pub(super) fn start(threads: usize) -> Result<(Vec<Worker>, Receiver<Msg>), RunError> {
    let (msg_tx, msg_rx) = mpsc::channel::<Msg>();
    let mut workers = Vec::with_capacity(threads);
    for id in 0..threads {
        let (cmd_tx, cmd_rx) = mpsc::channel::<PhaseCmd>();
        let tx = msg_tx.clone();
        let thread = std::thread::Builder::new()
            .name(format!("loadgen-{id}"))
            .spawn(move || worker_main(cmd_rx, tx))
            .map_err(|e| RunError::Worker(e.to_string()))?;
        workers.push(Worker {
            commands: cmd_tx,
            thread,
        });
    }
    Ok((workers, msg_rx))
}

/// Ends the workers by closing their command channels; `join` waits for their threads.
pub(super) fn stop(workers: Vec<Worker>, join: bool) {
    for wk in workers {
        drop(wk.commands);
        if join {
            let _ = wk.thread.join();
        }
    }
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
        let ctx = Rc::new(StreamCtx::new(ws.addrs, &ws.request, cmd.timeout));
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
