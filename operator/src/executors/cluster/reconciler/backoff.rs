//! How long to wait before trying the API server again: for the watches that feed the
//! Controllers, and for a reconcile that failed.
//!
//! Both are kept short for connection errors on purpose. A benchmark run waits on the operator
//! between cells: every second the operator spends backing off after the API server came back
//! is a second added to the run. kube's default watch backoff grows to 30 s (plus jitter) and
//! is shared by all of a Controller's watches, so after a 27 s control-plane restart the
//! operator used to sit idle for more than a minute; the per-object reconcile backoff grew the
//! same way. A watch retry every few seconds is one cheap request per watch.

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::utils::Backoff;

use super::outage::{Outage, WATCH_MAX};

/// The first wait after a watch error.
pub const WATCH_FIRST: Duration = Duration::from_millis(250);
/// Right after an outage the watches resync: each one whose resource version was compacted
/// meanwhile fails once with 410 Expired before it lists again. Within this time of the API
/// server's return such errors are retried after [`WATCH_FIRST`] without growing the wait, so
/// the watches do not take turns waiting [`WATCH_MAX`] each (they share one backoff).
pub const RESYNC_GRACE: Duration = Duration::from_secs(10);

/// The longest wait before a reconcile that failed for want of a connection is tried again.
pub const CONNECTION_RETRY_MAX: Duration = Duration::from_secs(3);
/// The longest wait before a reconcile that failed otherwise (a conflict, a server error) is
/// tried again.
pub const RETRY_MAX: Duration = Duration::from_secs(300);

/// Backoff for the Controllers' watch streams, which kube applies to all of a Controller's
/// watches at once: [`WATCH_FIRST`], doubling, capped at [`WATCH_MAX`]; back to the start after
/// any event that is not an error; and no growth within [`RESYNC_GRACE`] of an outage's end.
#[derive(Debug, Clone)]
pub struct WatchBackoff {
    next: Duration,
    outage: Arc<Outage>,
}

impl WatchBackoff {
    /// A backoff that knows when `outage` ended.
    pub fn new(outage: Arc<Outage>) -> Self {
        Self {
            next: WATCH_FIRST,
            outage,
        }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self
            .outage
            .since_end()
            .is_some_and(|since| since < RESYNC_GRACE)
        {
            self.next = WATCH_FIRST;
            return Some(WATCH_FIRST);
        }
        let wait = self.next;
        self.next = (self.next * 2).min(WATCH_MAX);
        Some(wait)
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = WATCH_FIRST;
    }
}

/// The wait before the `attempt`-th retry (1-based) of a failed reconcile: 1 s, 2 s, 4 s ...
/// capped at [`CONNECTION_RETRY_MAX`] when the API server could not be reached and at
/// [`RETRY_MAX`] otherwise.
pub fn reconcile_retry(attempt: u32, connection_lost: bool) -> Duration {
    let secs = 1u64 << attempt.saturating_sub(1).min(9);
    let cap = if connection_lost {
        CONNECTION_RETRY_MAX
    } else {
        RETRY_MAX
    };
    Duration::from_secs(secs).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_backoff_doubles_up_to_its_cap_and_resets() {
        let mut b = WatchBackoff::new(Arc::default());
        let waits: Vec<Duration> = (&mut b).take(6).collect();
        assert_eq!(
            waits,
            [250, 500, 1000, 2000, 3000, 3000].map(Duration::from_millis)
        );
        b.reset();
        assert_eq!(b.next(), Some(WATCH_FIRST));
    }

    #[test]
    fn right_after_an_outage_watch_errors_are_retried_at_once_without_growing() {
        let outage = Arc::new(Outage::default());
        let mut b = WatchBackoff::new(outage.clone());
        outage.watch_failed(&"connection refused");
        let during: Vec<Duration> = (&mut b).take(6).collect();
        assert_eq!(during.last(), Some(&WATCH_MAX), "{during:?}");
        outage.answered();
        // Each watch's 410 Expired after the outage: no turn-taking at WATCH_MAX.
        let after: Vec<Duration> = (&mut b).take(4).collect();
        assert_eq!(after, [WATCH_FIRST; 4]);
    }

    #[test]
    fn reconcile_retries_after_a_lost_connection_stay_short() {
        assert_eq!(reconcile_retry(1, true), Duration::from_secs(1));
        assert_eq!(reconcile_retry(2, true), Duration::from_secs(2));
        assert_eq!(reconcile_retry(20, true), CONNECTION_RETRY_MAX);
        assert_eq!(reconcile_retry(4, false), Duration::from_secs(8));
        assert_eq!(reconcile_retry(20, false), RETRY_MAX);
    }
}
