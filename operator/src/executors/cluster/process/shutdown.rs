//! Stopping the operator: the first SIGTERM (or Ctrl-C) asks for a graceful shutdown, in which
//! each Controller's reconciles in flight get `--shutdown-timeout` to finish, the Events they
//! handed over go out, and the admin server closes; a second signal stops at once.

use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use kube::core::DeserializeGuard;
use kube::runtime::reflector::Store;

use super::wiring::{Wiring, drive};
use crate::resource::BenchmarkRun;

/// Runs every Controller until a shutdown signal, then drains each for at most `deadline`.
pub(super) async fn run_until_stopped(wiring: Wiring, stop: &ShutdownSignals, deadline: Duration) {
    let Wiring {
        controllers,
        stores,
        ctx,
        node_watch,
    } = wiring;
    // Aborted with the process: a node cache needs no draining.
    tokio::spawn(node_watch);
    let mut drains: FuturesUnordered<_> = controllers
        .into_iter()
        .zip(stores)
        .map(|(controller, store)| {
            let drive = drive(controller, ctx.clone(), stop.clone().requested());
            let stop = stop.clone();
            async move { drain(drive, &store, &stop, deadline).await }
        })
        .collect();
    while drains.next().await.is_some() {
        if !stop.was_requested() {
            // One namespace's controller ended on its own: exit rather than run on blind to that
            // namespace (the Deployment restarts the operator).
            tracing::error!(
                "a controller stopped without a shutdown signal; stopping the operator"
            );
            break;
        }
    }
    // The Events the last reconciles handed over go out before the process ends.
    ctx.events.flush(EVENTS_AT_SHUTDOWN).await;
}

/// How long the Events still queued at shutdown may take to be published.
const EVENTS_AT_SHUTDOWN: Duration = Duration::from_secs(2);

/// The admin server began its own graceful shutdown with the first signal; an idle keep-alive
/// connection (a metrics scraper) must not hold the process either.
pub(super) async fn close_admin(mut admin: tokio::task::JoinHandle<std::io::Result<()>>) {
    if tokio::time::timeout(Duration::from_secs(1), &mut admin)
        .await
        .is_err()
    {
        admin.abort();
        tracing::debug!("admin server connections closed without waiting");
    }
}

/// Drives one controller until a shutdown signal, then lets reconciles in flight finish for at
/// most `deadline` (a second signal stops at once).
///
/// Why the deadline and the readiness check: kube's controller starts no reconcile before its
/// BenchmarkRun cache has been listed once, and its graceful shutdown ends only when its
/// (held-back) runner does. With no API server reachable that list never succeeds, so the
/// controller future never completes after a graceful-shutdown request: the process kept
/// running until a second SIGTERM. When the cache was never listed, no reconcile can be in
/// flight, and we stop at once; otherwise in-flight reconciles (a few API calls each) get
/// `deadline` to write their status before the process exits anyway.
async fn drain(
    drive: impl Future<Output = ()>,
    store: &Store<DeserializeGuard<BenchmarkRun>>,
    stop: &ShutdownSignals,
    deadline: Duration,
) {
    tokio::pin!(drive);
    tokio::select! {
        // The signal first: the controller's own graceful shutdown wakes on the same signal,
        // and the readiness check below must decide whether to wait for it.
        biased;
        () = stop.clone().requested() => {}
        () = &mut drive => {
            // The controller's own copy of the signal can win the race against ours: then it
            // has already drained, and that is the normal way out, not a surprise.
            if stop.was_requested() {
                tracing::info!("controller drained");
            } else {
                tracing::warn!("the controller stopped without a shutdown signal");
            }
            return;
        }
    }
    if store.wait_until_ready().now_or_never().is_none() {
        tracing::info!(
            "shutdown requested before the first list of BenchmarkRuns succeeded: no reconcile to wait for"
        );
        return;
    }
    tracing::info!(deadline = ?deadline, "shutdown requested: waiting for reconciles in flight");
    tokio::select! {
        () = &mut drive => tracing::info!("controller drained"),
        () = tokio::time::sleep(deadline) => {
            tracing::warn!(deadline = ?deadline, "reconciles still running at the shutdown deadline; stopping without them (the next operator resumes from status)");
        }
        () = stop.clone().forced() => tracing::warn!("second signal: stopping without waiting for reconciles"),
    }
}

/// SIGTERM / Ctrl-C, counted: the first asks for a graceful shutdown, the second forces one.
#[derive(Clone)]
pub(super) struct ShutdownSignals {
    count: tokio::sync::watch::Receiver<u32>,
}

impl ShutdownSignals {
    /// Installs the signal handlers now (a signal that arrives before anyone waits still
    /// counts) and counts signals on a background task.
    pub(super) fn install() -> Self {
        let (tx, count) = tokio::sync::watch::channel(0u32);
        #[cfg(unix)]
        let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
        tokio::spawn(async move {
            #[cfg(unix)]
            let mut term = match term {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch SIGTERM; only Ctrl-C stops the operator");
                    None
                }
            };
            loop {
                #[cfg(unix)]
                let term_recv = async {
                    match term.as_mut() {
                        Some(t) => {
                            t.recv().await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                };
                #[cfg(not(unix))]
                let term_recv = std::future::pending::<()>();
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {},
                    () = term_recv => {},
                }
                let n = *tx.borrow() + 1;
                if n == 1 {
                    tracing::info!("graceful shutdown requested; a second signal stops at once");
                }
                if tx.send(n).is_err() {
                    return;
                }
            }
        });
        Self { count }
    }

    async fn at_least(mut self, n: u32) {
        // An error means the counting task ended (runtime shutting down): treat as reached.
        let _ = self.count.wait_for(|c| *c >= n).await;
    }

    /// Whether the first signal has arrived.
    fn was_requested(&self) -> bool {
        *self.count.borrow() >= 1
    }

    /// Resolves on the first signal.
    pub(super) fn requested(self) -> impl Future<Output = ()> + Send + Sync + 'static {
        self.at_least(1)
    }

    /// Resolves on the second signal.
    fn forced(self) -> impl Future<Output = ()> + Send + Sync + 'static {
        self.at_least(2)
    }
}
