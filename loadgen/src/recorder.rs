//! Per-worker, per-stream measurement: phase histograms, counters, and the current second.
//!
//! Each worker thread owns its recorders (no locks, no atomics on the request path); the
//! coordinating thread adds them together with `Histogram::add` when the phase ends, which is exact.

use std::time::Duration;

use crate::histogram::{self, LatencyHistogram, PHASE_SIGFIG, TIMELINE_SIGFIG};
use crate::result::{ErrorKind, ErrorsByKind};

/// Sends that start later than this after their intended time count as late. Twice the 1 ms
/// granularity of the timers that schedule sends, so timer rounding alone never counts.
pub const LATE_SEND_THRESHOLD: Duration = Duration::from_millis(2);

/// Totals for one stream on one worker over a phase.
#[derive(Clone, Debug)]
pub struct StreamTotals {
    /// Latency of successful requests (corrected for open loop), microseconds.
    pub hist: LatencyHistogram,
    /// Open loop only: latency from the actual send, microseconds.
    pub uncorrected: Option<LatencyHistogram>,
    /// Finished requests, successful or not.
    pub requests: u64,
    /// Failed requests.
    pub errors: u64,
    /// Failures by kind.
    pub by_kind: ErrorsByKind,
    /// Open loop: sends that started late.
    pub late_sends: u64,
    /// Requests cut by the end of the phase.
    pub in_flight_at_end: u64,
    /// Connections opened.
    pub connections_opened: u64,
}

impl StreamTotals {
    /// Empty totals; `open` adds the uncorrected histogram.
    pub fn new(open: bool) -> Self {
        Self {
            hist: histogram::new_histogram(PHASE_SIGFIG),
            uncorrected: open.then(|| histogram::new_histogram(PHASE_SIGFIG)),
            requests: 0,
            errors: 0,
            by_kind: ErrorsByKind::default(),
            late_sends: 0,
            in_flight_at_end: 0,
            connections_opened: 0,
        }
    }

    /// Adds another worker's totals (exact for histograms).
    pub fn add(&mut self, o: &StreamTotals) {
        // Same bounds and precision on both sides, so addition cannot fail.
        let _ = self.hist.add(&o.hist);
        if let (Some(a), Some(b)) = (self.uncorrected.as_mut(), o.uncorrected.as_ref()) {
            let _ = a.add(b);
        }
        self.requests += o.requests;
        self.errors += o.errors;
        self.by_kind.add(&o.by_kind);
        self.late_sends += o.late_sends;
        self.in_flight_at_end += o.in_flight_at_end;
        self.connections_opened += o.connections_opened;
    }
}

/// One second's worth of a stream on one worker.
#[derive(Clone, Debug)]
pub struct SecondCounts {
    /// Finished requests in the second.
    pub requests: u64,
    /// Failed requests in the second.
    pub errors: u64,
    /// Latency of the second's successful requests (2 significant figures), microseconds.
    pub hist: LatencyHistogram,
}

impl SecondCounts {
    /// An empty second.
    pub fn new() -> Self {
        Self {
            requests: 0,
            errors: 0,
            hist: histogram::new_histogram(TIMELINE_SIGFIG),
        }
    }
}

impl Default for SecondCounts {
    fn default() -> Self {
        Self::new()
    }
}

/// The recorder that a stream's connection tasks on one worker share.
#[derive(Debug)]
pub struct Recorder {
    /// Phase totals.
    pub totals: StreamTotals,
    /// The second in progress.
    pub second: SecondCounts,
}

impl Recorder {
    /// A fresh recorder; `open` for an open-loop stream.
    pub fn new(open: bool) -> Self {
        Self {
            totals: StreamTotals::new(open),
            second: SecondCounts::new(),
        }
    }

    /// Records a successful request. `uncorrected_us` is given for open-loop streams.
    #[inline]
    pub fn success(&mut self, latency_us: u64, uncorrected_us: Option<u64>) {
        self.totals.requests += 1;
        histogram::record(&mut self.totals.hist, latency_us);
        if let (Some(h), Some(v)) = (self.totals.uncorrected.as_mut(), uncorrected_us) {
            histogram::record(h, v);
        }
        self.second.requests += 1;
        histogram::record(&mut self.second.hist, latency_us);
    }

    /// Records a failed request.
    #[inline]
    pub fn failure(&mut self, kind: ErrorKind) {
        self.totals.requests += 1;
        self.totals.errors += 1;
        self.totals.by_kind.count(kind);
        self.second.requests += 1;
        self.second.errors += 1;
    }

    /// Takes the current second's counts, leaving an empty second that reuses the histogram's
    /// memory.
    pub fn take_second(&mut self) -> SecondCounts {
        let mut fresh = SecondCounts {
            requests: 0,
            errors: 0,
            hist: self.second.hist.clone(),
        };
        fresh.hist.reset();
        std::mem::replace(&mut self.second, fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_seconds() {
        let mut r = Recorder::new(true);
        r.success(1000, Some(900));
        r.failure(ErrorKind::Timeout);
        let s = r.take_second();
        assert_eq!((s.requests, s.errors, s.hist.len()), (2, 1, 1));
        assert_eq!(r.second.requests, 0);
        assert_eq!(r.second.hist.len(), 0);
        r.success(2000, Some(1500));
        assert_eq!(r.totals.requests, 3);
        assert_eq!(r.totals.errors, 1);
        assert_eq!(r.totals.by_kind.timeout, 1);
        assert_eq!(r.totals.uncorrected.as_ref().unwrap().len(), 2);
        let mut sum = StreamTotals::new(true);
        sum.add(&r.totals);
        sum.add(&r.totals);
        assert_eq!(sum.hist.len(), 4);
        assert_eq!(sum.requests, 6);
    }
}
