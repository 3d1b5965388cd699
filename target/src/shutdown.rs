//! Graceful shutdown: SIGTERM or SIGINT stops every loop from accepting, lets in-flight
//! requests finish for up to the grace period, then the process exits 0.

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// The "stop now" flag every event loop watches.
#[derive(Clone)]
pub struct Shutdown {
    rx: watch::Receiver<bool>,
}

/// The side that raises the flag.
pub struct Trigger {
    tx: watch::Sender<bool>,
}

/// A new, unraised flag.
pub fn channel() -> (Trigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (Trigger { tx }, Shutdown { rx })
}

impl Trigger {
    /// Raises the flag for every loop.
    pub fn fire(&self) {
        self.tx.send_replace(true);
    }
}

impl Shutdown {
    /// Resolves once shutdown has begun (or the trigger is gone, which means the same).
    pub async fn wait(mut self) {
        let _ = self.rx.wait_for(|stop| *stop).await;
    }
}

/// Installs the SIGTERM and SIGINT handlers now (so a signal right after start is already
/// graceful) and returns a future that fires `trigger` on the first of them.
pub fn on_signal(trigger: Trigger) -> std::io::Result<impl Future<Output = ()>> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(
            signal = name,
            "shutting down: no new connections, finishing in-flight requests"
        );
        trigger.fire();
    })
}
