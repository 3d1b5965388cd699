//! Open loop: requests are due on a fixed schedule computed from one origin
//! (`origin + k * interval`), whatever the target does. A due request waits for an idle
//! connection, or a new one is opened (up to a cap), and its latency runs from the intended time,
//! so a stalled target shows up in the percentiles instead of quietly slowing the senders down
//! (coordinated omission). The latency from the actual send is recorded beside it.
//!
//! Timers are tokio's, with 1 ms granularity: a send may start up to about 1 ms after its
//! intended time, and that delay is part of the corrected latency, as it should be.
//!
//! The scheduler does not step through sends one by one: each time it wakes it issues, in one
//! step, every send that has fallen due (the backlog is a counter), wakes or opens at most that
//! many connections, and sleeps until the next send is due. Its work per wake-up is bounded
//! whatever the rate, so a stream at any accepted rate yields to its connections and ends by
//! its deadline.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::exchange::{self, After, StreamCtx, connect_until};
use crate::conn::Conn;
use crate::recorder::Recorder;

/// This worker's share of an open-loop schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule {
    /// Time of send number 0 of the whole stream.
    pub origin: Instant,
    /// Time between consecutive sends of the whole stream, in nanoseconds.
    pub interval_nanos: f64,
    /// This worker sends numbers `first`, `first + stride`, `first + 2 * stride`, ...
    pub first: u64,
    /// Number of workers sharing the stream.
    pub stride: u64,
    /// Most connections this worker may open for the stream at once.
    pub max_connections: usize,
}

impl Schedule {
    /// Intended time of this worker's `k`-th send.
    fn due(&self, k: u64) -> Instant {
        let n = (self.first + k * self.stride) as f64;
        self.origin + std::time::Duration::from_nanos((n * self.interval_nanos) as u64)
    }

    /// How many of this worker's sends are due strictly before `t`: the `k` with
    /// `due(k) < t`. Computed, not counted, so it costs the same however many sends that is.
    fn due_before(&self, t: Instant) -> u64 {
        let elapsed = t.saturating_duration_since(self.origin).as_nanos() as f64;
        // Highest stream-wide send number due by `t`, then this worker's share of 0..=that.
        let last = (elapsed / self.interval_nanos).floor();
        let mut count = if last < self.first as f64 {
            0
        } else {
            ((last as u64 - self.first) / self.stride).saturating_add(1)
        };
        // Float rounding may put the estimate one off the times `due` computes; agree with it.
        while self.due(count) < t {
            count += 1;
        }
        while count > 0 && self.due(count - 1) >= t {
            count -= 1;
        }
        count
    }
}

/// State shared by the scheduler and the connection tasks of one stream on one worker.
///
/// Due sends are taken in schedule order, so the backlog is just the range of send numbers
/// `taken..issued`; its times follow from the schedule. Memory stays constant however far a
/// stalled target lets the backlog grow.
struct Shared {
    schedule: Schedule,
    issued: Cell<u64>,
    taken: Cell<u64>,
    wake: Notify,
    idle: Cell<usize>,
    open: Cell<usize>,
}

/// Runs the schedule until `end`, then waits for the connection tasks, which stop by `end`.
pub(crate) async fn run_stream(
    ctx: Rc<StreamCtx>,
    rec: Rc<RefCell<Recorder>>,
    schedule: Schedule,
    end: Instant,
) {
    let shared = Rc::new(Shared {
        schedule,
        issued: Cell::new(0),
        taken: Cell::new(0),
        wake: Notify::new(),
        idle: Cell::new(0),
        open: Cell::new(0),
    });
    let mut tasks = Vec::new();
    let sleep = tokio::time::sleep_until(end);
    tokio::pin!(sleep);
    let mut issued = 0u64;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        // Every send due by now is issued at once; a far-behind schedule costs one step.
        let due_now = schedule.due_before(now);
        let fresh = due_now.saturating_sub(issued);
        issued = issued.max(due_now);
        shared.issued.set(issued);
        // Idle connections take the fresh sends first; for the rest, new connections open, up
        // to the cap. Busy connections take what is left when they finish.
        let idle = shared.idle.get() as u64;
        for _ in 0..fresh.min(idle) {
            shared.wake.notify_one();
        }
        let room = schedule.max_connections - shared.open.get();
        let to_open = fresh.saturating_sub(idle).min(room as u64) as usize;
        for _ in 0..to_open {
            shared.open.set(shared.open.get() + 1);
            tasks.push(tokio::task::spawn_local(run_connection(
                ctx.clone(),
                rec.clone(),
                shared.clone(),
                end,
            )));
        }
        let next = schedule.due(issued);
        if next >= end {
            break;
        }
        // The next send is after `now` (every send due by then is issued), so this sleeps at
        // least until the timer's next tick and the connections get the thread meanwhile.
        sleep.as_mut().reset(next);
        (&mut sleep).await;
    }
    // The sends due before the end that the last wake-up came too late to issue are part of
    // the schedule all the same: issued now, they count as cut below.
    shared.issued.set(issued.max(schedule.due_before(end)));
    // Wake every idle task so each sees the end and returns.
    sleep.as_mut().reset(end);
    (&mut sleep).await;
    shared.wake.notify_waiters();
    for t in tasks {
        let _ = t.await;
    }
    // Sends that were due but never started were waiting for a connection at the end: they
    // count as cut, like requests in flight.
    let left = shared.issued.get() - shared.taken.get();
    rec.borrow_mut().totals.in_flight_at_end += left;
}

async fn run_connection(
    ctx: Rc<StreamCtx>,
    rec: Rc<RefCell<Recorder>>,
    shared: Rc<Shared>,
    end: Instant,
) {
    let mut conn: Option<Conn> = None;
    // Each connection task keeps one address, taken in turn when it starts.
    let addr = ctx.take_addr();
    let sleep = tokio::time::sleep_until(end);
    tokio::pin!(sleep);
    loop {
        // Take the oldest due send, or wait for one.
        let due = loop {
            if Instant::now() >= end {
                return;
            }
            let taken = shared.taken.get();
            if taken < shared.issued.get() {
                shared.taken.set(taken + 1);
                break shared.schedule.due(taken);
            }
            shared.idle.set(shared.idle.get() + 1);
            sleep.as_mut().reset(end);
            tokio::select! {
                biased;
                _ = shared.wake.notified() => {}
                _ = &mut sleep => {}
            }
            shared.idle.set(shared.idle.get() - 1);
        };
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match connect_until(&ctx, &rec, end, addr).await {
                Some(c) => conn.insert(c),
                None => {
                    // The connect failure was counted against this send.
                    continue;
                }
            },
        };
        // Latency from the intended send time; the uncorrected figure from the actual write.
        match exchange::send(&ctx, &rec, c, sleep.as_mut(), end, Some(due)).await {
            After::Keep => {}
            After::Reconnect => conn = None,
            After::PhaseOver => return,
        }
    }
}
