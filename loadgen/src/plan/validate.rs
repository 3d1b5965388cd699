//! The checks the types cannot express, each problem at its field path: the workload's
//! (`workload.phases[1].load[0].rate: ...`) and the plan file's.

use std::collections::HashSet;

use super::check::check_endpoint;
use super::file::PlanFile;
use super::workload::{Phase, Spread, Stream, Workload};
use crate::duration::Duration;
use crate::limits::{
    MAX_CONNECTIONS_PER_PHASE, MAX_CONNECTIONS_PER_STREAM, MAX_DURATION, MAX_GENERATORS,
    MAX_RATE_PER_STREAM, MAX_REPLICAS, MAX_THREADS,
};
use crate::strict_yaml::FieldError;
use crate::target_url::TargetUrl;

impl Workload {
    /// Checks everything the types cannot express; paths start with `workload.`.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errors = Vec::new();
        self.validate_into("workload", &mut errors);
        into_result(errors)
    }

    fn validate_into(&self, root: &str, errors: &mut Vec<FieldError>) {
        let names = self.check_endpoints(root, errors);
        if let Some(t) = self.timeout {
            check_positive_duration(t, &format!("{root}.timeout"), errors);
        }
        check_duration_bound(self.warmup, &format!("{root}.warmup"), errors);
        check_not_empty(&self.phases, format!("{root}.phases"), "phase", errors);
        let mut phase_names = HashSet::new();
        for (p, phase) in self.phases.iter().enumerate() {
            let at = format!("{root}.phases[{p}]");
            check_name("phase", &phase.name, &at, &mut phase_names, errors);
            check_positive_duration(phase.duration, &format!("{at}.duration"), errors);
            check_phase_connections(phase, &at, errors);
            check_not_empty(&phase.load, format!("{at}.load"), "stream", errors);
            let mut loaded = HashSet::new();
            for (s, stream) in phase.load.iter().enumerate() {
                let at = format!("{at}.load[{s}]");
                self.check_stream_endpoint(stream, &at, &names, &mut loaded, errors);
                check_stream_mode(stream, &at, errors);
            }
        }
    }

    /// Checks each endpoint's name, path and request; returns the names, for the streams.
    fn check_endpoints(&self, root: &str, errors: &mut Vec<FieldError>) -> HashSet<&str> {
        check_not_empty(
            &self.endpoints,
            format!("{root}.endpoints"),
            "endpoint",
            errors,
        );
        let mut names = HashSet::new();
        for (i, e) in self.endpoints.iter().enumerate() {
            let at = format!("{root}.endpoints[{i}]");
            check_name("endpoint", &e.name, &at, &mut names, errors);
            check_request_path(&format!("{at}.path"), &e.path, errors);
            check_endpoint(e, &at, errors);
        }
        names
    }

    /// A stream loads one of the endpoints (`names`), and no endpoint twice in a phase
    /// (`loaded` holds those the phase's earlier streams load).
    fn check_stream_endpoint<'a>(
        &self,
        stream: &'a Stream,
        at: &str,
        names: &HashSet<&str>,
        loaded: &mut HashSet<&'a str>,
        errors: &mut Vec<FieldError>,
    ) {
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
        } else if !loaded.insert(stream.endpoint.as_str()) {
            errors.push(FieldError::new(
                format!("{at}.endpoint"),
                format!(
                    "endpoint {:?} is loaded twice in one phase; results are reported per endpoint",
                    stream.endpoint
                ),
            ));
        }
    }
}

/// The errors found, or `Ok` when there are none.
fn into_result(errors: Vec<FieldError>) -> Result<(), Vec<FieldError>> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// A list that needs at least one `what` (an endpoint, a phase, a stream).
fn check_not_empty<T>(items: &[T], path: String, what: &str, errors: &mut Vec<FieldError>) {
    if items.is_empty() {
        errors.push(FieldError::new(
            path,
            format!("at least one {what} is required"),
        ));
    }
}

/// The name of an endpoint or a phase (`kind`) at `at` is not blank and not one that `seen`
/// already holds; it is added to `seen`.
fn check_name<'a>(
    kind: &str,
    name: &'a str,
    at: &str,
    seen: &mut HashSet<&'a str>,
    errors: &mut Vec<FieldError>,
) {
    if name.trim().is_empty() {
        errors.push(FieldError::new(format!("{at}.name"), "must not be empty"));
    } else if !seen.insert(name) {
        errors.push(FieldError::new(
            format!("{at}.name"),
            format!("duplicate {kind} name {name:?}"),
        ));
    }
}

/// The phase's closed-loop connections together are within [`MAX_CONNECTIONS_PER_PHASE`].
fn check_phase_connections(phase: &Phase, at: &str, errors: &mut Vec<FieldError>) {
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
}

/// A stream sets exactly one of `connections` and `rate`, within its bounds.
fn check_stream_mode(stream: &Stream, at: &str, errors: &mut Vec<FieldError>) {
    match (stream.connections, stream.rate) {
        (Some(_), Some(_)) | (None, None) => errors.push(FieldError::new(
            at,
            "set exactly one of connections (closed loop) or rate (open loop)",
        )),
        (Some(0), None) => errors.push(FieldError::new(
            format!("{at}.connections"),
            "must be at least 1",
        )),
        (Some(c), None) if c > MAX_CONNECTIONS_PER_STREAM => errors.push(FieldError::new(
            format!("{at}.connections"),
            format!(
                "{c} is more than the {MAX_CONNECTIONS_PER_STREAM} connections a stream may have"
            ),
        )),
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

/// A duration that must be greater than 0 and at most [`MAX_DURATION`].
fn check_positive_duration(d: Duration, path: &str, errors: &mut Vec<FieldError>) {
    if d.is_zero() {
        errors.push(FieldError::new(path, "must be greater than 0"));
    }
    check_duration_bound(d, path, errors);
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
            check_positive_duration(p.timeout, "preflight.timeout", &mut errors);
        }
        if self.workload.spread == Spread::RoundRobin && self.replicas.is_empty() {
            errors.push(FieldError::new(
                "replicas",
                "workload.spread roundRobin deals connections to the replicas' addresses: list them",
            ));
        }
        self.workload.validate_into("workload", &mut errors);
        into_result(errors)
    }
}
