//! The HTTP/1.1 accept-and-serve loop each event loop (and the stats thread) runs: a bound on
//! open connections, the deadlines of [`crate::connection`], and graceful shutdown.
//!
//! This replaces `axum::serve`, which has neither a connection bound nor any timeout: a
//! client that opens a connection and sends half a request head would hold it (and its file
//! descriptor) forever, and enough of them exhaust the process (slowloris).
//!
//! At the bound a new connection is not left waiting in the kernel's backlog (where it would
//! time out with no explanation, as would every `/healthz` probe behind it): it is accepted,
//! answered 503 with `Retry-After`, and closed, like the pool's full queue.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use axum::Router;
use axum::response::Response;
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::watch;

use crate::connection::{ConnectionCounters, GuardedStream, RequestClock, Timeouts};
use crate::shutdown::Shutdown;

/// Descriptors kept free beyond the connection bound: listeners, /proc reads, pool threads'
/// files, the refusals in progress.
const SPARE_DESCRIPTORS: u64 = 64;
/// Refusals (503 + close) in progress at once; beyond this a connection over the bound is
/// closed without an answer, so a flood cannot turn refusals into a second unbounded set.
const MAX_REFUSING: usize = 256;
/// How long a refusal may take to be written and its connection closed.
const REFUSAL_TIME: Duration = Duration::from_millis(500);

/// The limits one listener's connections live under, shared by every loop serving it.
pub struct Limits {
    max_connections: usize,
    timeouts: Timeouts,
    counters: Arc<ConnectionCounters>,
    refusing: AtomicUsize,
    refusal: Vec<u8>,
}

impl Limits {
    /// At most `max_connections` open at once, each under `timeouts`, counted in `counters`.
    pub fn new(
        max_connections: usize,
        timeouts: Timeouts,
        counters: Arc<ConnectionCounters>,
    ) -> Arc<Self> {
        let body = format!(
            "{{\"error\":\"too_many_connections\",\"message\":\"the target already has {max_connections} connections open, its limit; retry after 1s\"}}"
        );
        let refusal = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes();
        Arc::new(Limits {
            max_connections,
            timeouts,
            counters,
            refusing: AtomicUsize::new(0),
            refusal,
        })
    }

    /// The connection bound.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// Takes a connection slot, or `None` at the bound.
    fn admit(self: &Arc<Self>) -> Option<Admission> {
        let open = &self.counters.open;
        let mut now = open.load(Relaxed);
        loop {
            if now >= self.max_connections {
                return None;
            }
            match open.compare_exchange_weak(now, now + 1, Relaxed, Relaxed) {
                Ok(_) => return Some(Admission(Arc::clone(self))),
                Err(actual) => now = actual,
            }
        }
    }
}

/// One open connection's slot; freed on drop.
struct Admission(Arc<Limits>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.counters.open.fetch_sub(1, Relaxed);
    }
}

/// Raises this process's soft descriptor limit to its hard limit (as Go and nginx setups do),
/// and returns the connection bound that fits in it: `requested`, or less when the descriptors
/// would run out first (then a warning says so).
pub fn fit_descriptor_limit(requested: usize) -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct they are given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return requested;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim = raised;
        }
    }
    let fits = lim.rlim_cur.saturating_sub(SPARE_DESCRIPTORS).max(1);
    if (requested as u64) > fits {
        tracing::warn!(
            max_connections = requested,
            descriptor_limit = lim.rlim_cur,
            "the descriptor limit allows only {fits} connections; using that as the bound"
        );
        return fits as usize;
    }
    requested
}

/// Serves `router` on `listener` until `shutdown`, then lets open connections finish their
/// current request and returns once they have all closed.
pub async fn serve<L>(mut listener: L, router: Router, limits: Arc<Limits>, shutdown: Shutdown)
where
    L: Listener,
    L::Io: Send + 'static,
{
    // Every connection task holds a receiver; when all are gone, all connections are.
    let (all_closed_tx, all_closed_rx) = watch::channel(());
    let mut stop = pin!(shutdown.clone().wait());
    loop {
        let io = tokio::select! {
            (io, _addr) = listener.accept() => io,
            _ = &mut stop => break,
        };
        let Some(admission) = limits.admit() else {
            refuse(io, &limits);
            continue;
        };
        let clock = Arc::new(RequestClock::default());
        let io = TokioIo::new(GuardedStream::new(
            io,
            Arc::clone(&clock),
            limits.timeouts,
            Arc::clone(&limits.counters),
        ));
        let service = Tracked {
            router: TowerToHyperService::new(router.clone()),
            clock,
        };
        let shutdown = shutdown.clone();
        let all_closed_rx = all_closed_rx.clone();
        tokio::spawn(async move {
            let mut conn = pin!(http1::Builder::new().serve_connection(io, service));
            let mut stop = pin!(shutdown.wait());
            let mut stopping = false;
            loop {
                tokio::select! {
                    result = conn.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                        break;
                    }
                    _ = &mut stop, if !stopping => {
                        stopping = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(admission);
            drop(all_closed_rx);
        });
    }
    drop(all_closed_rx);
    drop(listener);
    all_closed_tx.closed().await;
}

/// Answers a connection over the bound with 503 + Retry-After and closes it, on a task of
/// its own so the accept loop goes straight back to accepting.
fn refuse<S>(mut io: S, limits: &Arc<Limits>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    limits.counters.refused.fetch_add(1, Relaxed);
    if limits.refusing.fetch_add(1, Relaxed) >= MAX_REFUSING {
        limits.refusing.fetch_sub(1, Relaxed);
        return;
    }
    let limits = Arc::clone(limits);
    tokio::spawn(async move {
        let _ = tokio::time::timeout(REFUSAL_TIME, async {
            io.write_all(&limits.refusal).await?;
            io.shutdown().await?;
            // Read what the client sent before closing: closing with unread bytes makes the
            // kernel reset the connection, and the client could lose the 503 written above.
            let mut buf = [0u8; 4096];
            while io.read(&mut buf).await? > 0 {}
            Ok::<(), io::Error>(())
        })
        .await;
        limits.refusing.fetch_sub(1, Relaxed);
    });
}

/// The router as a hyper service that tells the connection's [`RequestClock`] when a request
/// is being handled.
struct Tracked {
    router: TowerToHyperService<Router>,
    clock: Arc<RequestClock>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Tracked {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, req: hyper::Request<Incoming>) -> Self::Future {
        let in_flight = self.clock.enter();
        let response = self.router.call(req);
        Box::pin(async move {
            let r = response.await;
            drop(in_flight);
            r
        })
    }
}
