//! Telling an API server outage apart from a reconcile error, and saying so once.
//!
//! While the API server is gone every watch fails every few seconds (the shared watch
//! backoff in backoff.rs); logging each failure buries the one fact a person needs.
//! The first watch error of an outage is logged at warn level, the rest at debug. Meanwhile
//! [`wait_for_api`] asks the API server for its version twice a second; its first answer ends
//! the outage with one line giving the duration, and clears the per-object retry counts that
//! grew meanwhile.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest wait between two tries of the watches, however long the API server is gone:
/// once it answers again, the operator has re-listed within this time (plus one request).
pub const WATCH_MAX: Duration = Duration::from_secs(3);

/// The outage in progress, if any, and when the last one ended.
#[derive(Debug, Default)]
pub struct Outage {
    since: Mutex<Option<Instant>>,
    ended: Mutex<Option<Instant>>,
}

/// Whether `error` means the API server could not be reached (a refused or broken connection,
/// a proxy's 502-504), as opposed to an answer it gave (410 Expired, 403 Forbidden).
pub fn unreachable(error: &kube::Error) -> bool {
    match error {
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        kube::Error::Api(s) => matches!(s.code, 502..=504),
        _ => false,
    }
}

/// Whether a watch error means the API server could not be reached (see [`unreachable()`]).
pub fn watch_unreachable(error: &kube::runtime::watcher::Error) -> bool {
    use kube::runtime::watcher::Error as W;
    match error {
        W::InitialListFailed(e) | W::WatchStartFailed(e) | W::WatchFailed(e) => unreachable(e),
        W::WatchError(s) => matches!(s.code, 502..=504),
        _ => false,
    }
}

impl Outage {
    /// A watch failed: starts an outage (logged once; returns true) or continues one.
    pub fn watch_failed(&self, error: &dyn std::fmt::Display) -> bool {
        let Ok(mut since) = self.since.lock() else {
            return false;
        };
        if since.is_none() {
            *since = Some(Instant::now());
            tracing::warn!(
                error = %error,
                retry_max_secs = WATCH_MAX.as_secs(),
                "lost the API server's watches; retrying until it answers (logged once per outage)"
            );
            true
        } else {
            tracing::debug!(error = %error, "watch still failing");
            false
        }
    }

    /// The API server answered: ends the outage in progress and returns how long it lasted.
    pub fn answered(&self) -> Option<Duration> {
        let started = self.since.lock().ok()?.take()?;
        let lasted = started.elapsed();
        if let Ok(mut ended) = self.ended.lock() {
            *ended = Some(Instant::now());
        }
        tracing::warn!(
            outage_secs = format!("{:.1}", lasted.as_secs_f64()),
            "the API server answers again: watches re-listed, runs carried on"
        );
        Some(lasted)
    }

    /// How long ago the last outage ended, if one did.
    pub fn since_end(&self) -> Option<Duration> {
        self.ended.lock().ok()?.map(|at| at.elapsed())
    }

    /// Whether an outage is in progress.
    pub fn ongoing(&self) -> bool {
        self.since.lock().is_ok_and(|s| s.is_some())
    }
}

/// How often [`wait_for_api`] asks.
const PROBE_EVERY: Duration = Duration::from_millis(500);

/// Asks the API server for its version until it answers, then ends the outage in `outage` and
/// runs `answered` (which clears the retry counts). The watches find their own way back (their
/// backoff is at most a few seconds); this only says when, once.
pub async fn wait_for_api(client: kube::Client, outage: &Outage, answered: impl FnOnce()) {
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        if !outage.ongoing() {
            return;
        }
        if client.apiserver_version().await.is_ok() {
            if outage.answered().is_some() {
                answered();
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_starts_with_the_first_watch_error_and_ends_when_answered() {
        let o = Outage::default();
        assert_eq!(o.answered(), None, "no outage, nothing ends");
        assert!(
            o.watch_failed(&"connection refused"),
            "the first error starts it"
        );
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !o.watch_failed(&"connection refused"),
            "the next ones do not"
        );
        assert!(o.ongoing());
        let lasted = o.answered().expect("the outage ended");
        assert!(lasted >= Duration::from_millis(20), "{lasted:?}");
        assert!(!o.ongoing());
        assert!(o.since_end().is_some());
        assert_eq!(o.answered(), None, "ended once");
    }
}
