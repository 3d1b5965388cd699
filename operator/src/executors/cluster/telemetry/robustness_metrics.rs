//! The operator's metrics of what production clusters do to it: status writes the API server
//! refused (by cause), whether the installed CRD matches the operator's schema, whether this
//! replica leads, and the API requests it makes (so requests per reconcile can be read off
//! `/metrics`). Registered into the one registry of `metrics.rs`.

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Label of a refused status write: the API's reason (`InternalError`, `Invalid`...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabel {
    cause: String,
}

/// Label of an API request: its HTTP method, or WATCH for a watch.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: String,
}

/// Label of an Event that never reached the API server: why (`queue_full`, `closed`,
/// `refused`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DropLabel {
    why: String,
}

/// Events lost on their way, by why; cloned into the Event queue, which counts into the same
/// family the registry serves.
#[derive(Clone, Debug, Default)]
pub struct EventsDropped(Family<DropLabel, Counter>);

impl EventsDropped {
    /// Counts one Event lost for `why`: `queue_full` (the API server held or refused every
    /// Event for so long that the queue filled), `closed` (handed over after shutdown began),
    /// or `refused` (the API server answered the Event's write with an error).
    pub fn inc(&self, why: &'static str) {
        self.0.get_or_create(&DropLabel { why: why.into() }).inc();
    }

    /// Events lost for `why` so far.
    pub fn get(&self, why: &'static str) -> u64 {
        self.0.get_or_create(&DropLabel { why: why.into() }).get()
    }
}

/// See the module doc.
#[derive(Debug, Default)]
pub struct RobustnessMetrics {
    status_refused: Family<CauseLabel, Counter>,
    /// Events lost before the API server stored them.
    pub events_dropped: EventsDropped,
    crd_schema_matches: Gauge,
    leader: Gauge,
    api_requests: Family<MethodLabel, Counter>,
    api_requests_total: AtomicU64,
}

impl RobustnessMetrics {
    /// New metrics, registered into `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        registry.register(
            "benchmatrix_status_write_refused",
            "Status writes the API server refused (other than conflicts), by the API's reason",
            m.status_refused.clone(),
        );
        registry.register(
            "benchmatrix_crd_schema_matches",
            "1 when the installed BenchmarkRun CRD has this operator's schema, else 0",
            m.crd_schema_matches.clone(),
        );
        registry.register(
            "benchmatrix_events_dropped",
            "Events the operator gave up on, by why: queue_full, closed (at shutdown), refused (by the API server)",
            m.events_dropped.0.clone(),
        );
        registry.register(
            "benchmatrix_leader",
            "1 while this replica holds the leader Lease (or runs without leader election)",
            m.leader.clone(),
        );
        registry.register(
            "benchmatrix_api_requests",
            "Requests this operator sent to the API server (its watches and reconciles), by HTTP method",
            m.api_requests.clone(),
        );
        m
    }

    /// Counts a refused status write by the API's reason. Reasons are the API's own short
    /// CamelCase words; anything else is cut to keep the label set small.
    pub fn status_refused(&self, reason: &str) {
        let cause: String = reason
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(40)
            .collect();
        self.status_refused
            .get_or_create(&CauseLabel { cause })
            .inc();
    }

    /// Whether the installed CRD matches.
    pub fn set_crd_schema_matches(&self, matches: bool) {
        self.crd_schema_matches.set(i64::from(matches));
    }

    /// Whether this replica leads.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// Counts one API request.
    pub fn api_request(&self, method: &str) {
        self.api_requests_total.fetch_add(1, Ordering::Relaxed);
        self.api_requests
            .get_or_create(&MethodLabel {
                method: method.to_owned(),
            })
            .inc();
    }

    /// API requests so far.
    pub fn api_requests(&self) -> u64 {
        self.api_requests_total.load(Ordering::Relaxed)
    }
}
