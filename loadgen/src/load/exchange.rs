//! One request on one connection, the same way in both loops: opening the connection when it
//! is needed, sending the request with its deadline (its timeout or the phase's end, whichever
//! comes first), and recording what came of it; and what a stream needs for that
//! ([`StreamCtx`]).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::conn::{Conn, Response};
use crate::plan::SuccessSet;
use crate::recorder::{LATE_SEND_THRESHOLD, Recorder};
use crate::request::Prepared;
use crate::result::ErrorKind;

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
    /// How long an answer is awaited.
    pub timeout: Duration,
}

impl StreamCtx {
    /// The stream sending `request` to `addrs`, each answer awaited at most `timeout`.
    pub fn new(addrs: Vec<SocketAddr>, request: &Prepared, timeout: Duration) -> StreamCtx {
        StreamCtx {
            addrs,
            next_addr: std::cell::Cell::new(0),
            request: request.bytes.clone(),
            bodiless_answer: request.bodiless_answer,
            success: request.success,
            timeout,
        }
    }

    /// The address for the next new connection, taking `addrs` in turn.
    pub fn take_addr(&self) -> SocketAddr {
        let n = self.next_addr.get();
        self.next_addr.set(n + 1);
        self.addrs[n % self.addrs.len()]
    }
}

/// Pause after a failed connect, so a closed port is not hammered in a busy loop.
pub(crate) const CONNECT_RETRY_PAUSE: Duration = Duration::from_millis(10);

/// Opens a connection to `addr` before `deadline`; failures are recorded (as connect errors) and `None`
/// returned. `None` is also returned without recording when `end` comes first.
pub(crate) async fn connect_until(
    ctx: &StreamCtx,
    rec: &RefCell<Recorder>,
    end: Instant,
    addr: SocketAddr,
) -> Option<Conn> {
    let deadline = (Instant::now() + ctx.timeout).min(end);
    match tokio::time::timeout_at(deadline, Conn::connect(addr)).await {
        Ok(Ok(c)) => {
            rec.borrow_mut().totals.connections_opened += 1;
            Some(c)
        }
        Ok(Err(_)) => {
            rec.borrow_mut().failure(ErrorKind::Connect);
            let pause = (Instant::now() + CONNECT_RETRY_PAUSE).min(end);
            tokio::time::sleep_until(pause).await;
            None
        }
        Err(_) if deadline < end => {
            rec.borrow_mut().failure(ErrorKind::Connect);
            None
        }
        Err(_) => None,
    }
}

/// Sends the stream's request on `conn` and records its outcome; says what the loop does next.
/// `sleep` is the loop's timer, reset to the request's deadline.
///
/// `intended` is an open loop's intended send time: latency then runs from it, a send more
/// than [`LATE_SEND_THRESHOLD`] after it counts as late, and the latency from the actual write
/// is recorded beside it as uncorrected. Without it (the closed loop), latency runs from the
/// write.
pub(crate) async fn send(
    ctx: &StreamCtx,
    rec: &RefCell<Recorder>,
    conn: &mut Conn,
    mut sleep: Pin<&mut Sleep>,
    end: Instant,
    intended: Option<Instant>,
) -> After {
    let sent = Instant::now();
    if let Some(due) = intended
        && sent.saturating_duration_since(due) > LATE_SEND_THRESHOLD
    {
        rec.borrow_mut().totals.late_sends += 1;
    }
    let deadline = (sent + ctx.timeout).min(end);
    sleep.as_mut().reset(deadline);
    let outcome = tokio::select! {
        biased;
        r = conn.exchange(&ctx.request, ctx.bodiless_answer) => Some(r),
        _ = &mut sleep => None,
    };
    let done = Instant::now();
    settle(
        &mut rec.borrow_mut(),
        &ctx.success,
        outcome,
        deadline >= end,
        micros(done - intended.unwrap_or(sent)),
        intended.map(|_| micros(done - sent)),
    )
}

/// What a connection loop does once a request's outcome is recorded.
pub(crate) enum After {
    /// Send the next request on the same connection.
    Keep,
    /// The connection cannot carry another request: open a new one.
    Reconnect,
    /// The phase ended while the request was in flight: stop.
    PhaseOver,
}

/// Records the outcome of one request. An answer whose status
/// `success` holds is a success; `outcome` is `None` when the request's deadline came first;
/// `phase_over` says whether that deadline was the phase's end (then the request is neither a
/// success nor an error, only cut). `latency_us` and `uncorrected_us` are what a success
/// records.
fn settle(
    rec: &mut Recorder,
    success: &SuccessSet,
    outcome: Option<Result<Response, ErrorKind>>,
    phase_over: bool,
    latency_us: u64,
    uncorrected_us: Option<u64>,
) -> After {
    match outcome {
        Some(Ok(resp)) => {
            if success.contains(resp.status) {
                rec.success(latency_us, uncorrected_us);
            } else {
                rec.failure(ErrorKind::of_unlisted_status(resp.status));
            }
            if resp.keep_alive {
                After::Keep
            } else {
                After::Reconnect
            }
        }
        Some(Err(kind)) => {
            rec.failure(kind);
            After::Reconnect
        }
        None if phase_over => {
            rec.totals.in_flight_at_end += 1;
            After::PhaseOver
        }
        None => {
            rec.failure(ErrorKind::Timeout);
            After::Reconnect
        }
    }
}

/// Whole microseconds of `d`, saturating.
#[inline]
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
