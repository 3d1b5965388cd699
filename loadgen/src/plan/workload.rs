//! The workload's types: endpoints, warm-up, phases and streams, with the defaults they imply.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::http::{self, Header};
use super::success::SuccessCode;
use crate::duration::Duration;
use crate::limits::{MAX_BODY_BYTES, MAX_CONNECTIONS_PER_STREAM, MAX_HEADERS, MAX_RATE_PER_STREAM};

/// The per-request timeout used when a workload names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The load to apply: which endpoints exist, how long to warm up, and the phases to measure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    /// The endpoints the phases may load, each with a short name used in results and a path.
    pub endpoints: Vec<Endpoint>,
    /// How long to run the first phase's streams before measuring; warm-up is not reported.
    /// A duration such as "15s", at most "24h". Default "0s" (no warm-up).
    #[serde(default)]
    pub warmup: Duration,
    /// The measured phases, run back to back in this order. At least one (a BenchmarkRun
    /// with `capacity` leaves them out: its probes are its phases).
    #[serde(default)]
    pub phases: Vec<Phase>,
    /// Per-request timeout: a request without a full answer by then is cut, its connection
    /// closed and counted as a timeout error. A duration such as "10s", at most "24h".
    /// Default "10s".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// How connections reach the replicas. `service` (default): every connection goes to the
    /// target's one address (a ClusterIP Service on a cluster; locally, replicas sharing a port
    /// with SO_REUSEPORT), so the kernel picks a replica per connection, at random: with a few
    /// keep-alive connections one replica may get all of a stream. `roundRobin`: connections
    /// are dealt to the replicas' own addresses in turn (numbered across a phase's streams and
    /// the load generators), as Node's cluster primary or IPVS `rr` do, so each replica's share
    /// of a closed-loop stream is within one connection of the others' (open-loop streams open
    /// their connections in replica order and send on whichever is free).
    #[serde(default, skip_serializing_if = "Spread::is_service")]
    pub spread: Spread,
}

/// How a workload's connections are spread over the replicas; see [`Workload::spread`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Spread {
    /// Through the one target address; the kernel or kube-proxy chooses a replica.
    #[default]
    Service,
    /// Dealt to the replicas' own addresses in turn.
    RoundRobin,
}

impl Spread {
    /// Whether this is the default, [`Spread::Service`].
    pub fn is_service(&self) -> bool {
        *self == Spread::Service
    }
}

impl fmt::Display for Spread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Spread::Service => "service",
            Spread::RoundRobin => "roundRobin",
        })
    }
}

/// One HTTP endpoint of the target: the request every stream on it sends, built once.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// Short name that streams refer to and results are reported under, e.g. "fast".
    pub name: String,
    /// Request path including any query string, starting with "/", e.g. "/fast" or "/fib?n=30".
    pub path: String,
    /// HTTP method, e.g. "POST", "PUT" or "DELETE": upper case, an HTTP token, not CONNECT.
    /// Default "GET".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Request headers, sent in this order after Host (which the load generator writes from
    /// the target address) and its default User-Agent and Accept (left out when listed here).
    /// A value is written here or taken from a Secret (`valueFrom.secretKeyRef`). At most 64
    /// headers and 8192 bytes together.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = MAX_HEADERS))]
    pub headers: Vec<Header>,
    /// Request body, sent exactly as written (UTF-8) with its Content-Length, e.g. a JSON
    /// document; set the Content-Type header to match. Refused on GET and HEAD. At most 65536
    /// bytes. Without a body, methods that anticipate one (POST, PUT, PATCH, ...) send
    /// "Content-Length: 0".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_BODY_BYTES))]
    pub body: Option<String>,
    /// Which answers count as success: status codes (404), classes ("2xx") and inclusive ranges
    /// ("200-299"), e.g. ["2xx", 404]. Default: 2xx only. Any other answer is an error, counted
    /// under errorsByKind (status4xx, status5xx, or statusOther for 1xx, 3xx and unlisted 2xx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_codes: Option<Vec<SuccessCode>>,
}

impl Endpoint {
    /// The method in force: `method`, or GET.
    pub fn method_or_default(&self) -> &str {
        self.method.as_deref().unwrap_or(http::DEFAULT_METHOD)
    }
}

/// A measured stretch of time during which a fixed set of streams runs concurrently.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Phase {
    /// Phase name used in results, e.g. "fast-only" or "mixed".
    pub name: String,
    /// How long the phase runs, a duration such as "30s", at most "24h".
    pub duration: Duration,
    /// The streams that run at the same time during this phase; at least one. Their
    /// connections add up to at most 20000.
    pub load: Vec<Stream>,
}

/// Load on one endpoint: either closed loop (`connections`) or open loop (`rate`), exactly one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stream {
    /// Name of the endpoint (from `endpoints`) this stream sends to.
    pub endpoint: String,
    /// Closed loop: this many keep-alive connections, each sending its next request as soon as
    /// the previous answer arrives (like wrk or autocannon). At least 1, at most 10000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_CONNECTIONS_PER_STREAM))]
    pub connections: Option<u32>,
    /// Open loop: requests per second sent on a fixed schedule whatever the target does;
    /// latency is measured from each request's intended send time, which corrects coordinated
    /// omission (like wrk2). Greater than 0, at most 10000000 (ten million).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = MAX_RATE_PER_STREAM))]
    pub rate: Option<f64>,
}

/// How a stream drives its endpoint, once validated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LoadMode {
    /// `connections` keep-alive connections, each one request at a time.
    Closed {
        /// Number of connections.
        connections: u32,
    },
    /// A fixed schedule of `rate` requests per second.
    Open {
        /// Requests per second.
        rate: f64,
    },
}

impl Stream {
    /// The stream's mode, or `None` when it names neither or both (which `validate` refuses).
    pub fn mode(&self) -> Option<LoadMode> {
        match (self.connections, self.rate) {
            (Some(connections), None) => Some(LoadMode::Closed { connections }),
            (None, Some(rate)) => Some(LoadMode::Open { rate }),
            _ => None,
        }
    }
}

impl Workload {
    /// The phases' names, in order.
    pub fn phase_names(&self) -> Vec<&str> {
        self.phases.iter().map(|p| p.name.as_str()).collect()
    }

    /// The endpoints' names, in order.
    pub fn endpoint_names(&self) -> Vec<&str> {
        self.endpoints.iter().map(|e| e.name.as_str()).collect()
    }

    /// How long the load is planned to take: the warm-up and every phase.
    pub fn planned_load(&self) -> std::time::Duration {
        self.warmup.get()
            + self
                .phases
                .iter()
                .map(|p| p.duration.get())
                .sum::<std::time::Duration>()
    }

    /// The per-request timeout in force.
    pub fn timeout_or_default(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_TIMEOUT)
    }
}
