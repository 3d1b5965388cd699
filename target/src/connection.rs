//! Per-connection deadlines: how long a client may take to send a request head, and how long
//! a connection may sit idle between requests.
//!
//! Both are enforced inside the connection's byte stream ([`GuardedStream`]) rather than with
//! hyper's `header_read_timeout`, for two reasons:
//!
//! - hyper starts its header timer as soon as a keep-alive connection goes idle, so the header
//!   timeout and the idle timeout would be one value. A benchmark wants a short head deadline
//!   (slowloris) but a long idle allowance (a load generator's open loop may leave a
//!   connection unused for many seconds, and a closed idle connection costs it an error).
//! - The deadline is checked only when the socket has nothing to read. A loop blocked in CPU
//!   work for longer than a timeout therefore never cuts a request that arrived whole and on
//!   time: when the loop runs again, the waiting bytes are read before the timer is looked at.
//!
//! Which phase a connection is in comes from two sources on the connection's own task: the
//! stream sees bytes arrive, and [`RequestClock`] (held by the request service) sees a request
//! head complete (the handler is called) and its response produced.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The two deadlines of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Time to send a whole request head, from its first byte (from acceptance for the first
    /// request of a connection).
    pub header: Duration,
    /// Time a connection may stay idle: no request in flight and no byte of a next one.
    pub idle: Duration,
}

/// Connection figures of one listener, for `/metrics`.
#[derive(Debug, Default)]
pub struct ConnectionCounters {
    /// Connections open now.
    pub open: AtomicUsize,
    /// Connections refused with 503 because `open` was at the limit.
    pub refused: AtomicU64,
    /// Connections closed because a request head did not arrive in time.
    pub header_timeouts: AtomicU64,
    /// Connections closed because they stayed idle too long, or their client read nothing of a
    /// response for that long.
    pub idle_timeouts: AtomicU64,
}

/// Requests of one connection: how many are being handled, and how many have finished.
/// Shared between the connection's stream and its request service (same task; atomics only
/// because tokio tasks must be `Send`).
#[derive(Debug, Default)]
pub struct RequestClock {
    in_flight: AtomicUsize,
    finished: AtomicU64,
    /// The connection task, as last seen by a read that found nothing while a request was in
    /// flight. hyper does not read again after a response when its last read found nothing (it
    /// waits for the socket), so without this wake-up the idle deadline would never be armed.
    reader: Mutex<Option<Waker>>,
}

impl RequestClock {
    /// Marks a request as being handled until the returned guard is dropped (its response is
    /// produced, or the request is abandoned).
    pub fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Relaxed);
        InFlight(Arc::clone(self))
    }
}

/// A request being handled; see [`RequestClock::enter`].
pub struct InFlight(Arc<RequestClock>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.finished.fetch_add(1, Relaxed);
        self.0.in_flight.fetch_sub(1, Relaxed);
        let reader = self.0.reader.lock().ok().and_then(|mut w| w.take());
        if let Some(reader) = reader {
            reader.wake();
        }
    }
}

/// Where a connection is, as far as its deadlines go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the first byte of a request since this instant.
    Idle(Instant),
    /// A request head has been arriving since this instant.
    Head(Instant),
    /// A request is being handled: no deadline.
    Busy,
}

/// A byte stream that fails its reads with [`io::ErrorKind::TimedOut`] once the connection
/// has overstayed its header or idle deadline, and its writes once the client has read nothing
/// for the idle timeout; either makes hyper drop the connection.
pub struct GuardedStream<S> {
    inner: S,
    clock: Arc<RequestClock>,
    timeouts: Timeouts,
    counters: Arc<ConnectionCounters>,
    phase: Phase,
    seen_finished: u64,
    timer: Pin<Box<Sleep>>,
    /// Running while a write waits for the client to read: a client that reads nothing for
    /// the idle timeout is treated as idle (a slow-read variant of slowloris).
    write_stall: Option<Pin<Box<Sleep>>>,
}

impl<S> GuardedStream<S> {
    /// Wraps a freshly accepted connection: its first request head is due within the header
    /// timeout from now.
    pub fn new(
        inner: S,
        clock: Arc<RequestClock>,
        timeouts: Timeouts,
        counters: Arc<ConnectionCounters>,
    ) -> Self {
        let now = Instant::now();
        GuardedStream {
            inner,
            clock,
            timeouts,
            counters,
            phase: Phase::Head(now),
            seen_finished: 0,
            timer: Box::pin(tokio::time::sleep_until(now + timeouts.header)),
            write_stall: None,
        }
    }

    /// Passes a write's outcome through, failing it once writes have waited for the client
    /// for the idle timeout without any progress.
    fn guard_write(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        if polled.is_ready() {
            self.write_stall = None;
            return polled;
        }
        let idle = self.timeouts.idle;
        let stall = self
            .write_stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        if stall.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.counters.idle_timeouts.fetch_add(1, Relaxed);
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the client read nothing for the idle timeout of {idle:?}"),
        )))
    }

    /// Brings the phase up to date with the request service's view.
    fn refresh(&mut self, now: Instant) {
        let finished = self.clock.finished.load(Relaxed);
        if self.clock.in_flight.load(Relaxed) > 0 {
            self.phase = Phase::Busy;
        } else if finished != self.seen_finished || self.phase == Phase::Busy {
            // A response was produced since we last looked: idle from now.
            self.seen_finished = finished;
            self.phase = Phase::Idle(now);
        }
    }

    /// The instant this connection is due to be closed, if any.
    fn deadline(&self) -> Option<(Instant, &'static str)> {
        match self.phase {
            Phase::Busy => None,
            Phase::Idle(since) => Some((since + self.timeouts.idle, "idle")),
            Phase::Head(since) => Some((since + self.timeouts.header, "header")),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for GuardedStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    let now = Instant::now();
                    this.refresh(now);
                    if let Phase::Idle(_) = this.phase {
                        this.phase = Phase::Head(now);
                    }
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            // Nothing to read: only now does the deadline matter.
            Poll::Pending => {
                this.refresh(Instant::now());
                let Some((deadline, which)) = this.deadline() else {
                    if let Ok(mut reader) = this.clock.reader.lock() {
                        *reader = Some(cx.waker().clone());
                    }
                    return Poll::Pending;
                };
                if this.timer.deadline() != deadline {
                    this.timer.as_mut().reset(deadline);
                }
                if this.timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let (counter, limit) = match which {
                    "idle" => (&this.counters.idle_timeouts, this.timeouts.idle),
                    _ => (&this.counters.header_timeouts, this.timeouts.header),
                };
                counter.fetch_add(1, Relaxed);
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{which} timeout of {limit:?} passed"),
                )))
            }
        }
    }
}

/// Writes, inside an `impl AsyncWrite`, the three methods that pass straight through to the
/// wrapper's `inner` stream: `is_write_vectored`, `poll_flush` and `poll_shutdown`. The
/// stream wrappers of this crate ([`GuardedStream`], [`crate::listener::CountedStream`]) only
/// differ in how they write; a function cannot stand in for trait methods, hence a macro.
/// The `impl` needs `io`, `Pin`, `Context` and `Poll` in scope, and `inner: Unpin`.
macro_rules! forward_write_tail {
    () => {
        fn is_write_vectored(&self) -> bool {
            self.inner.is_write_vectored()
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().inner).poll_flush(cx)
        }

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
        }
    };
}
pub(crate) use forward_write_tail;

impl<S: AsyncWrite + Unpin> AsyncWrite for GuardedStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.guard_write(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.guard_write(cx, polled)
    }

    forward_write_tail!();
}

#[cfg(test)]
mod tests;
