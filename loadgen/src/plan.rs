//! What to run: the workload (endpoints, warm-up, phases, streams) and the plan file around it.
//!
//! The operator embeds [`Workload`] in the `BenchmarkRun` CRD as `spec.workload`, so every field
//! carries a doc comment (it becomes `kubectl explain` text) and the types avoid
//! `deny_unknown_fields`: a structural schema with `additionalProperties: false` is awkward in
//! Kubernetes. Unknown fields are reported by [`parse_plan_file`] instead.

use std::collections::HashSet;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::duration::{DURATION_PATTERN, Duration, ParseDurationError};
use crate::limits::{
    MAX_BODY_BYTES, MAX_CONNECTIONS_PER_PHASE, MAX_CONNECTIONS_PER_STREAM, MAX_DURATION,
    MAX_GENERATORS, MAX_HEADERS, MAX_RATE_PER_STREAM, MAX_REPLICAS, MAX_THREADS,
};
use crate::request;
pub use crate::request::{Header, HeaderValueFrom, SecretKeyRef, SuccessCode};
use crate::strict_yaml;
pub use crate::strict_yaml::FieldError;
use crate::target_url::TargetUrl;

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
    /// The measured phases, run back to back in this order.
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
        self.method.as_deref().unwrap_or(request::DEFAULT_METHOD)
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

    /// Checks everything the types cannot express; paths start with `workload.`.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errors = Vec::new();
        self.validate_into("workload", &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    fn validate_into(&self, root: &str, errors: &mut Vec<FieldError>) {
        if self.endpoints.is_empty() {
            errors.push(FieldError::new(
                format!("{root}.endpoints"),
                "at least one endpoint is required",
            ));
        }
        let mut names = HashSet::new();
        for (i, e) in self.endpoints.iter().enumerate() {
            let at = format!("{root}.endpoints[{i}]");
            if e.name.trim().is_empty() {
                errors.push(FieldError::new(format!("{at}.name"), "must not be empty"));
            } else if !names.insert(e.name.as_str()) {
                errors.push(FieldError::new(
                    format!("{at}.name"),
                    format!("duplicate endpoint name {:?}", e.name),
                ));
            }
            check_request_path(&format!("{at}.path"), &e.path, errors);
            request::check::check_endpoint(e, &at, errors);
        }
        if let Some(t) = self.timeout {
            if t.is_zero() {
                errors.push(FieldError::new(
                    format!("{root}.timeout"),
                    "must be greater than 0",
                ));
            }
            check_duration_bound(t, &format!("{root}.timeout"), errors);
        }
        check_duration_bound(self.warmup, &format!("{root}.warmup"), errors);
        if self.phases.is_empty() {
            errors.push(FieldError::new(
                format!("{root}.phases"),
                "at least one phase is required",
            ));
        }
        let mut phase_names = HashSet::new();
        for (p, phase) in self.phases.iter().enumerate() {
            let at = format!("{root}.phases[{p}]");
            if phase.name.trim().is_empty() {
                errors.push(FieldError::new(format!("{at}.name"), "must not be empty"));
            } else if !phase_names.insert(phase.name.as_str()) {
                errors.push(FieldError::new(
                    format!("{at}.name"),
                    format!("duplicate phase name {:?}", phase.name),
                ));
            }
            if phase.duration.is_zero() {
                errors.push(FieldError::new(
                    format!("{at}.duration"),
                    "must be greater than 0",
                ));
            }
            check_duration_bound(phase.duration, &format!("{at}.duration"), errors);
            let phase_connections: u64 = phase
                .load
                .iter()
                .filter_map(|s| s.connections)
                .map(u64::from)
                .sum();
            // A stream over its own bound is reported as such, not again as the phase's total.
            let streams_within = phase
                .load
                .iter()
                .all(|s| s.connections.unwrap_or(0) <= MAX_CONNECTIONS_PER_STREAM);
            if streams_within && phase_connections > u64::from(MAX_CONNECTIONS_PER_PHASE) {
                errors.push(FieldError::new(
                    format!("{at}.load"),
                    format!(
                        "the streams' connections add up to {phase_connections}; a phase may have at most {MAX_CONNECTIONS_PER_PHASE}"
                    ),
                ));
            }
            if phase.load.is_empty() {
                errors.push(FieldError::new(
                    format!("{at}.load"),
                    "at least one stream is required",
                ));
            }
            let mut seen = HashSet::new();
            for (s, stream) in phase.load.iter().enumerate() {
                let at = format!("{at}.load[{s}]");
                if !names.contains(stream.endpoint.as_str()) {
                    let known: Vec<_> = self.endpoints.iter().map(|e| e.name.as_str()).collect();
                    errors.push(FieldError::new(
                        format!("{at}.endpoint"),
                        format!(
                            "unknown endpoint {:?} (known: {})",
                            stream.endpoint,
                            known.join(", ")
                        ),
                    ));
                } else if !seen.insert(stream.endpoint.as_str()) {
                    errors.push(FieldError::new(
                        format!("{at}.endpoint"),
                        format!(
                            "endpoint {:?} is loaded twice in one phase; results are reported per endpoint",
                            stream.endpoint
                        ),
                    ));
                }
                match (stream.connections, stream.rate) {
                    (Some(_), Some(_)) | (None, None) => errors.push(FieldError::new(
                        at.clone(),
                        "set exactly one of connections (closed loop) or rate (open loop)",
                    )),
                    (Some(0), None) => errors.push(FieldError::new(
                        format!("{at}.connections"),
                        "must be at least 1",
                    )),
                    (Some(c), None) if c > MAX_CONNECTIONS_PER_STREAM => {
                        errors.push(FieldError::new(
                            format!("{at}.connections"),
                            format!("{c} is more than the {MAX_CONNECTIONS_PER_STREAM} connections a stream may have"),
                        ))
                    }
                    (None, Some(r)) if !(r.is_finite() && r > 0.0) => errors.push(FieldError::new(
                        format!("{at}.rate"),
                        "must be a number greater than 0",
                    )),
                    (None, Some(r)) if r > MAX_RATE_PER_STREAM => errors.push(FieldError::new(
                        format!("{at}.rate"),
                        format!("{r} is above the {MAX_RATE_PER_STREAM} requests per second a stream may send"),
                    )),
                    _ => {}
                }
            }
        }
    }
}

/// A path that goes into a request line as is: it starts with "/" and has no space or control
/// character (either would break the request line).
fn check_request_path(field: &str, path: &str, errors: &mut Vec<FieldError>) {
    if !path.starts_with('/') {
        errors.push(FieldError::new(
            field,
            format!("must start with \"/\", got {path:?}"),
        ));
    } else if path
        .bytes()
        .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
    {
        errors.push(FieldError::new(
            field,
            "must not contain spaces or control characters (percent-encode them)",
        ));
    }
}

/// Refuses a duration beyond [`MAX_DURATION`], naming the limit.
fn check_duration_bound(d: Duration, path: &str, errors: &mut Vec<FieldError>) {
    if d > MAX_DURATION {
        errors.push(FieldError::new(
            path,
            format!("{d} is longer than the {MAX_DURATION} allowed"),
        ));
    }
}

/// A plan file for `benchmatrix-loadgen --plan FILE` (YAML or JSON).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanFile {
    /// Base URL of the target, e.g. "http://10.0.0.5:8080"; endpoint paths are appended.
    pub target: String,
    /// Addresses ("IP:PORT") of the individual replicas, whose `/stats` is read at each phase
    /// boundary. Empty: read `/stats` once through `target` instead. At most 64.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<String>,
    /// Addresses ("IP:PORT") to read each replica's `/stats` from instead of `replicas`, in
    /// the same order: a target's statistics port, served by a thread the workload cannot
    /// block, so the read at a phase boundary neither waits behind a busy event loop nor
    /// disturbs the measurement. Snapshots stay keyed by the replica's address in `replicas`
    /// when it lists one per statistics address; else (one shared address) by the statistics
    /// address. Empty: read from `replicas` (or `target`). At most 64.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stats_addresses: Vec<String>,
    /// Path of the target's statistics endpoint. Default "/stats".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats_path: Option<String>,
    /// Load-generator threads, at most 256. Default: what this process's CPU quota allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// The workload, as in a BenchmarkRun's `spec.workload`.
    pub workload: Workload,
    /// Which of several load generators sharing the workload this is, from 0. With
    /// `roundRobin` spread this generator's k-th connection is connection
    /// `generatorIndex + k * generators` of the whole, so together the generators deal the
    /// replicas in turn. Default 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generator_index: u32,
    /// How many load generators share the workload, at most 32. Default 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub generators: u32,
    /// Before the warm-up: wait until every address the load goes to answers. Absent: no
    /// check, the load starts at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<Preflight>,
}

/// The check before the load (see [`crate::preflight`]): `GET path` on a fresh connection
/// every 50 ms at the target's address (`service` spread) or at each replica's (`roundRobin`),
/// until each gives a complete HTTP response head with a status below 500. An address that has
/// not by `timeout` fails the run, naming it and why; the time taken is the result's
/// `preflightSeconds`, outside warm-up and phases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preflight {
    /// Path sent, from the server's root (not under the target URL's path, as a readiness
    /// probe's), e.g. "/healthz".
    pub path: String,
    /// How long the addresses may take to answer, e.g. "5m"; greater than 0, at most "24h".
    pub timeout: Duration,
}

/// At most [`MAX_REPLICAS`] addresses, each "HOST:PORT"; errors under `field`.
fn check_addresses(field: &str, addresses: &[String], errors: &mut Vec<FieldError>) {
    if addresses.len() > MAX_REPLICAS as usize {
        errors.push(FieldError::new(
            field,
            format!(
                "{} addresses; at most {MAX_REPLICAS} replicas are allowed",
                addresses.len()
            ),
        ));
    }
    for (i, r) in addresses.iter().enumerate() {
        if format!("http://{r}").parse::<TargetUrl>().is_err() || !r.contains(':') {
            errors.push(FieldError::new(
                format!("{field}[{i}]"),
                format!("expected HOST:PORT, got {r:?}"),
            ));
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl PlanFile {
    /// Checks the plan, the target URL and the workload; paths are relative to the file's root.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errors = Vec::new();
        if let Err(e) = self.target.parse::<TargetUrl>() {
            errors.push(FieldError::new("target", e.to_string()));
        }
        check_addresses("replicas", &self.replicas, &mut errors);
        check_addresses("statsAddresses", &self.stats_addresses, &mut errors);
        if self.replicas.len() > 1
            && !self.stats_addresses.is_empty()
            && self.stats_addresses.len() != self.replicas.len()
        {
            errors.push(FieldError::new(
                "statsAddresses",
                format!(
                    "{} addresses for {} replicas: list one per replica, in the same order",
                    self.stats_addresses.len(),
                    self.replicas.len()
                ),
            ));
        }
        if let Some(p) = &self.stats_path
            && !p.starts_with('/')
        {
            errors.push(FieldError::new("statsPath", "must start with \"/\""));
        }
        match self.threads {
            Some(0) => errors.push(FieldError::new("threads", "must be at least 1")),
            Some(t) if t > MAX_THREADS => errors.push(FieldError::new(
                "threads",
                format!("{t} is more than the {MAX_THREADS} threads allowed"),
            )),
            _ => {}
        }
        if self.generators == 0 {
            errors.push(FieldError::new("generators", "must be at least 1"));
        } else if self.generators > MAX_GENERATORS {
            errors.push(FieldError::new(
                "generators",
                format!(
                    "{} is more than the {MAX_GENERATORS} load generators allowed",
                    self.generators
                ),
            ));
        } else if self.generator_index >= self.generators {
            errors.push(FieldError::new(
                "generatorIndex",
                format!("must be below generators ({})", self.generators),
            ));
        }
        if let Some(p) = &self.preflight {
            check_request_path("preflight.path", &p.path, &mut errors);
            if p.timeout.is_zero() {
                errors.push(FieldError::new(
                    "preflight.timeout",
                    "must be greater than 0",
                ));
            }
            check_duration_bound(p.timeout, "preflight.timeout", &mut errors);
        }
        if self.workload.spread == Spread::RoundRobin && self.replicas.is_empty() {
            errors.push(FieldError::new(
                "replicas",
                "workload.spread roundRobin deals connections to the replicas' addresses: list them",
            ));
        }
        self.workload.validate_into("workload", &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// Parses and validates a plan file; every problem comes back as a field error, unknown fields
/// included.
pub fn parse_plan_file(text: &str) -> Result<PlanFile, Vec<FieldError>> {
    strict_yaml::parse_strict_checked(
        text,
        |_| false,
        |plan: &PlanFile| plan.validate().err().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
target: http://127.0.0.1:8080
replicas: ["127.0.0.1:8080"]
workload:
  endpoints: [{name: fast, path: /fast}, {name: slow, path: /slow}]
  warmup: 15s
  phases:
    - name: fast-only
      duration: 30s
      load: [{endpoint: fast, connections: 2}]
    - name: mixed
      duration: 1m15s
      load: [{endpoint: fast, connections: 2}, {endpoint: slow, rate: 2.5}]
"#;

    #[test]
    fn parses_the_design_sample() {
        let plan = parse_plan_file(SAMPLE).unwrap();
        assert_eq!(plan.workload.warmup, Duration::from_secs(15));
        assert_eq!(plan.workload.phases[1].duration, Duration::from_secs(75));
        assert_eq!(
            plan.workload.phases[1].load[1].mode(),
            Some(LoadMode::Open { rate: 2.5 })
        );
        assert_eq!(plan.workload.timeout_or_default(), DEFAULT_TIMEOUT);
    }

    #[test]
    fn json_is_accepted_too() {
        let json = r#"{"target":"http://h:1","workload":{"endpoints":[{"name":"a","path":"/"}],
            "phases":[{"name":"p","duration":"1s","load":[{"endpoint":"a","connections":1}]}]}}"#;
        let plan = parse_plan_file(json).unwrap();
        assert_eq!(plan.workload.warmup, Duration::default());
    }

    #[test]
    fn type_errors_name_the_field() {
        let bad = SAMPLE.replace("duration: 30s", "duration: 30");
        let errs = parse_plan_file(&bad).unwrap_err();
        assert_eq!(errs[0].path, "workload.phases[0].duration", "{errs:?}");
        assert!(errs[0].message.contains("duration"), "{errs:?}");
        let misspelt = SAMPLE.replace("phases:", "phasez:");
        let errs = parse_plan_file(&misspelt).unwrap_err();
        assert_eq!(errs[0].path, "workload.phasez", "{errs:?}");
        assert!(
            errs[1].message.contains("missing field `phases`"),
            "{errs:?}"
        );
    }

    #[test]
    fn unknown_fields_are_reported_with_their_path() {
        let bad = SAMPLE.replace(
            "connections: 2}]\n    - name: mixed",
            "conections: 2}]\n    - name: mixed",
        );
        let errs = parse_plan_file(&bad).unwrap_err();
        let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
        assert!(
            paths.contains(&"workload.phases[0].load[0].conections"),
            "{paths:?}"
        );
        // Without connections the stream names neither mode, which validation also says.
        assert!(paths.contains(&"workload.phases[0].load[0]"), "{paths:?}");
    }

    fn check(mutate: impl FnOnce(&mut Workload), path: &str) {
        let mut w = parse_plan_file(SAMPLE).unwrap().workload;
        mutate(&mut w);
        let errs = w.validate().unwrap_err();
        assert!(
            errs.iter().any(|e| e.path == path),
            "expected {path}, got {errs:?}"
        );
    }

    #[test]
    fn validation_names_each_field() {
        check(
            |w| w.phases[1].load[0].endpoint = "nope".into(),
            "workload.phases[1].load[0].endpoint",
        );
        check(
            |w| w.phases[0].load[0].connections = Some(0),
            "workload.phases[0].load[0].connections",
        );
        check(
            |w| w.phases[1].load[1].rate = Some(0.0),
            "workload.phases[1].load[1].rate",
        );
        check(
            |w| w.phases[1].load[1].rate = Some(f64::NAN),
            "workload.phases[1].load[1].rate",
        );
        check(
            |w| w.phases[1].load[1].connections = Some(3),
            "workload.phases[1].load[1]",
        );
        check(
            |w| w.phases[0].duration = Duration::default(),
            "workload.phases[0].duration",
        );
        check(
            |w| w.phases[1].name = "fast-only".into(),
            "workload.phases[1].name",
        );
        check(|w| w.phases[0].load.clear(), "workload.phases[0].load");
        check(|w| w.phases.clear(), "workload.phases");
        check(
            |w| w.endpoints[1].path = "slow".into(),
            "workload.endpoints[1].path",
        );
        check(
            |w| w.endpoints[1].name = "fast".into(),
            "workload.endpoints[1].name",
        );
        check(
            |w| w.timeout = Some(Duration::default()),
            "workload.timeout",
        );
        check(
            |w| w.phases[1].load[1].endpoint = "fast".into(),
            "workload.phases[1].load[1].endpoint",
        );
    }

    const POST: &str = r#"
target: http://127.0.0.1:8080
workload:
  endpoints:
    - name: order
      path: /orders
      method: POST
      headers:
        - {name: Content-Type, value: application/json}
        - name: Authorization
          valueFrom: {env: BENCHMATRIX_HEADER_0_1}
      body: '{"item": 1}'
      successCodes: ["2xx", 404, "500-502"]
  phases: [{name: p, duration: 1s, load: [{endpoint: order, connections: 1}]}]
"#;

    #[test]
    fn a_post_endpoint_reads_and_keeps_its_request_fields() {
        let plan = parse_plan_file(POST).unwrap();
        let e = &plan.workload.endpoints[0];
        assert_eq!(e.method_or_default(), "POST");
        assert_eq!(e.headers[0].value.as_deref(), Some("application/json"));
        assert_eq!(
            e.headers[1].value_from.as_ref().unwrap().env.as_deref(),
            Some("BENCHMATRIX_HEADER_0_1")
        );
        assert_eq!(e.body.as_deref(), Some(r#"{"item": 1}"#));
        let success = crate::request::SuccessSet::of(e.success_codes.as_deref());
        assert!(success.contains(201) && success.contains(404) && success.contains(502));
        assert!(!success.contains(503));
        // A plan written back reads the same (the operator writes plans this way).
        let back = parse_plan_file(&serde_yaml::to_string(&plan).unwrap()).unwrap();
        assert_eq!(back, plan);
        // A GET endpoint writes none of the new fields, so older plans round-trip as they were.
        let plain = serde_yaml::to_string(&parse_plan_file(SAMPLE).unwrap()).unwrap();
        for field in ["method", "headers", "body", "successCodes"] {
            assert!(!plain.contains(field), "{plain}");
        }
    }

    #[test]
    fn bad_request_fields_are_refused_at_their_paths() {
        let base = parse_plan_file(POST).unwrap().workload;
        let refused = |mutate: &dyn Fn(&mut Endpoint), path: &str, words: &str| {
            let mut w = base.clone();
            mutate(&mut w.endpoints[0]);
            let errs = w.validate().unwrap_err();
            assert!(
                errs.iter()
                    .any(|e| e.path == path && e.message.contains(words)),
                "expected {path} saying {words:?}, got {errs:?}"
            );
        };
        let header = |name: &str, value: &str| Header {
            name: name.into(),
            value: Some(value.into()),
            value_from: None,
        };
        refused(
            &|e| e.headers[0] = header("X-Evil\r\nInjected", "v"),
            "workload.endpoints[0].headers[0].name",
            "line break",
        );
        refused(
            &|e| e.headers[0] = header("Content Type", "v"),
            "workload.endpoints[0].headers[0].name",
            "spaces",
        );
        refused(
            &|e| e.headers[0] = header("X-Ok", "a\r\nX-Injected: 1"),
            "workload.endpoints[0].headers[0].value",
            "line break",
        );
        refused(
            &|e| e.headers[0] = header("X-Ok", "a\u{1}b"),
            "workload.endpoints[0].headers[0].value",
            "control",
        );
        for owned in ["Host", "content-length", "Transfer-Encoding", "Connection"] {
            refused(
                &|e| e.headers[0] = header(owned, "x"),
                "workload.endpoints[0].headers[0].name",
                "written by the load generator",
            );
        }
        refused(
            &|e| e.headers[0].value_from = e.headers[1].value_from.clone(),
            "workload.endpoints[0].headers[0]",
            "not both",
        );
        refused(
            &|e| e.headers[1].value_from = Some(HeaderValueFrom::default()),
            "workload.endpoints[0].headers[1].valueFrom",
            "secretKeyRef",
        );
        refused(
            &|e| {
                e.headers[1].value_from = Some(HeaderValueFrom {
                    secret_key_ref: Some(SecretKeyRef {
                        name: "Api_Token".into(),
                        key: "../token".into(),
                    }),
                    env: None,
                })
            },
            "workload.endpoints[0].headers[1].valueFrom.secretKeyRef.name",
            "Secret name",
        );
        refused(
            &|e| {
                e.headers[1].value_from = Some(HeaderValueFrom {
                    secret_key_ref: Some(SecretKeyRef {
                        name: "api".into(),
                        key: "../token".into(),
                    }),
                    env: None,
                })
            },
            "workload.endpoints[0].headers[1].valueFrom.secretKeyRef.key",
            "Secret key",
        );
        refused(
            &|e| e.method = Some("GET".into()),
            "workload.endpoints[0].body",
            "GET request carries no body",
        );
        refused(
            &|e| e.method = Some("HEAD".into()),
            "workload.endpoints[0].body",
            "HEAD",
        );
        refused(
            &|e| e.method = Some("post".into()),
            "workload.endpoints[0].method",
            "\"POST\"",
        );
        refused(
            &|e| e.method = Some("PO ST".into()),
            "workload.endpoints[0].method",
            "spaces",
        );
        refused(
            &|e| e.method = Some("CONNECT".into()),
            "workload.endpoints[0].method",
            "tunnel",
        );
        refused(
            &|e| e.body = Some("x".repeat(crate::limits::MAX_BODY_BYTES + 1)),
            "workload.endpoints[0].body",
            "65536",
        );
        refused(
            &|e| e.headers = vec![header("X-A", "v"); crate::limits::MAX_HEADERS + 1],
            "workload.endpoints[0].headers",
            "at most 64",
        );
        refused(
            &|e| e.headers = vec![header("X-Big", &"v".repeat(9000))],
            "workload.endpoints[0].headers",
            "8192",
        );
        refused(
            &|e| e.success_codes = Some(vec![SuccessCode::new("2xx"), SuccessCode::new("700")]),
            "workload.endpoints[0].successCodes[1]",
            "100 to 599",
        );
        refused(
            &|e| e.success_codes = Some(vec![]),
            "workload.endpoints[0].successCodes",
            "at least one",
        );
        // Each field is refused alone: the base itself is fine.
        base.validate().unwrap();
    }

    #[test]
    fn values_beyond_the_limits_are_refused_naming_the_field_and_the_limit() {
        use crate::limits::*;
        let over = |mutate: fn(&mut Workload), path: &str, limit: &str| {
            let mut w = parse_plan_file(SAMPLE).unwrap().workload;
            mutate(&mut w);
            let errs = w.validate().unwrap_err();
            assert!(
                errs.iter()
                    .any(|e| e.path == path && e.message.contains(limit)),
                "expected {path} naming {limit}, got {errs:?}"
            );
        };
        over(
            |w| w.phases[0].load[0].connections = Some(1_000_000_000),
            "workload.phases[0].load[0].connections",
            "10000",
        );
        over(
            |w| w.phases[1].load[1].rate = Some(1e12),
            "workload.phases[1].load[1].rate",
            "10000000",
        );
        over(
            |w| w.phases[0].duration = Duration::from_secs(24 * 3600 + 1),
            "workload.phases[0].duration",
            "24h",
        );
        over(
            |w| w.warmup = Duration::from_secs(25 * 3600),
            "workload.warmup",
            "24h",
        );
        over(
            |w| w.timeout = Some(Duration::from_secs(25 * 3600)),
            "workload.timeout",
            "24h",
        );
        // Several streams each within the bound can still exceed the phase's total.
        over(
            |w| {
                w.endpoints.push(Endpoint {
                    name: "third".into(),
                    path: "/third".into(),
                    ..Default::default()
                });
                w.phases[1].load = ["fast", "slow", "third"]
                    .into_iter()
                    .map(|e| Stream {
                        endpoint: e.into(),
                        connections: Some(MAX_CONNECTIONS_PER_STREAM),
                        rate: None,
                    })
                    .collect();
            },
            "workload.phases[1].load",
            "20000",
        );
        // The bounds themselves are accepted.
        let mut w = parse_plan_file(SAMPLE).unwrap().workload;
        w.phases[0].load[0].connections = Some(MAX_CONNECTIONS_PER_STREAM);
        w.phases[1].load[1].rate = Some(MAX_RATE_PER_STREAM);
        w.phases[0].duration = MAX_DURATION;
        w.warmup = MAX_DURATION;
        w.timeout = Some(MAX_DURATION);
        w.validate().unwrap();
    }

    #[test]
    fn plan_file_counts_beyond_the_limits_are_refused() {
        let mut plan = parse_plan_file(SAMPLE).unwrap();
        plan.threads = Some(100_000);
        plan.generators = 1000;
        plan.replicas = vec!["127.0.0.1:8080".into(); 65];
        let errs = plan.validate().unwrap_err();
        let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["replicas", "threads", "generators"], "{errs:?}");
        assert!(errs[0].message.contains("64"), "{errs:?}");
        assert!(errs[1].message.contains("256"), "{errs:?}");
        assert!(errs[2].message.contains("32"), "{errs:?}");
    }

    #[test]
    fn type_errors_print_the_field_path_once() {
        let bad = SAMPLE.replace(
            "connections: 2}]\n    - name: mixed",
            "connections: x}]\n    - name: mixed",
        );
        let errs = parse_plan_file(&bad).unwrap_err();
        let e = errs.last().unwrap();
        assert_eq!(e.path, "workload.phases[0].load[0].connections", "{errs:?}");
        let line = e.to_string();
        assert_eq!(
            line.matches("workload.phases[0].load[0].connections")
                .count(),
            1,
            "{line}"
        );
        assert!(line.contains("invalid type"), "{line}");
        // Line 10 of SAMPLE (it starts with a newline), column of the `x`.
        assert_eq!((e.line, e.column), (Some(10), Some(44)), "{line}");
        assert!(line.ends_with(" (line 10, column 44)"), "{line}");
    }

    #[test]
    fn several_unknown_fields_are_all_reported() {
        let bad = SAMPLE
            .replace("warmup: 15s", "warmup: 15s\n  warmpu: 1s")
            .replace("- name: mixed", "- name: mixed\n      durration: 1s");
        let errs = parse_plan_file(&bad).unwrap_err();
        let unknown: Vec<_> = errs
            .iter()
            .filter(|e| e.message == "unknown field")
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(
            unknown,
            ["workload.warmpu", "workload.phases[1].durration"],
            "{errs:?}"
        );
    }

    #[test]
    fn schema_publishes_the_stream_limits() {
        use crate::limits::*;
        let schema = serde_json::to_value(schemars::schema_for!(Workload)).unwrap();
        let stream = &schema["$defs"]["Stream"]["properties"];
        assert_eq!(
            stream["connections"]["maximum"].as_f64(),
            Some(f64::from(MAX_CONNECTIONS_PER_STREAM)),
            "{stream}"
        );
        assert_eq!(stream["connections"]["minimum"].as_f64(), Some(1.0));
        assert_eq!(
            stream["rate"]["maximum"].as_f64(),
            Some(MAX_RATE_PER_STREAM)
        );
        // The field docs state the same numbers.
        let doc = |f: &str| stream[f]["description"].as_str().unwrap().to_owned();
        assert!(doc("connections").contains(&MAX_CONNECTIONS_PER_STREAM.to_string()));
        assert!(doc("rate").contains(&format!("{MAX_RATE_PER_STREAM}")));
        let phase = &schema["$defs"]["Phase"]["properties"]["duration"]["description"];
        assert!(
            phase.as_str().unwrap().contains(&MAX_DURATION.to_string()),
            "{phase}"
        );
    }

    #[test]
    fn plan_level_fields_are_checked() {
        let mut plan = parse_plan_file(SAMPLE).unwrap();
        plan.target = "localhost:8080".into();
        plan.replicas = vec!["10.0.0.1".into()];
        plan.threads = Some(0);
        let errs = plan.validate().unwrap_err();
        let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["target", "replicas[0]", "threads"]);
    }

    #[test]
    fn stats_addresses_are_checked_like_replicas_and_must_match_them_one_to_one() {
        let mut plan = parse_plan_file(SAMPLE).unwrap();
        plan.replicas = vec!["127.0.0.2:8080".into(), "127.0.0.3:8080".into()];
        plan.stats_addresses = vec!["127.0.0.2".into()];
        let errs = plan.validate().unwrap_err();
        let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["statsAddresses[0]", "statsAddresses"], "{errs:?}");
        plan.stats_addresses = vec!["127.0.0.2:9091".into(), "127.0.0.3:9091".into()];
        assert!(plan.validate().is_ok());
        // Replicas sharing one address (service spread) may have a statistics address each.
        plan.replicas = vec!["127.0.0.1:8080".into()];
        assert!(plan.validate().is_ok());
    }

    #[test]
    fn round_robin_spread_needs_replica_addresses_and_reads_from_yaml() {
        let text = SAMPLE.replace("workload:\n", "workload:\n  spread: roundRobin\n");
        let plan = parse_plan_file(&text).unwrap();
        assert_eq!(plan.workload.spread, Spread::RoundRobin);
        let errs =
            parse_plan_file(&text.replace("replicas: [\"127.0.0.1:8080\"]\n", "")).unwrap_err();
        assert_eq!(errs[0].path, "replicas", "{errs:?}");
        assert!(errs[0].message.contains("roundRobin"), "{errs:?}");
        // The default is not written out, so older plan files and results round-trip as they were.
        let plain = parse_plan_file(SAMPLE).unwrap();
        assert_eq!(plain.workload.spread, Spread::Service);
        assert!(!serde_yaml::to_string(&plain).unwrap().contains("spread"));
    }

    #[test]
    fn schema_has_docs_and_the_duration_pattern() {
        let schema = serde_json::to_value(schemars::schema_for!(Workload)).unwrap();
        let text = schema.to_string();
        assert!(
            text.contains(&DURATION_PATTERN.replace('\\', "\\\\")),
            "{text}"
        );
        assert_eq!(
            schema["properties"]["warmup"]["type"], "string",
            "Duration is inlined as a string: {text}"
        );
        assert!(
            schema["properties"]["phases"]["description"]
                .as_str()
                .unwrap()
                .contains("back to back")
        );
    }
}
