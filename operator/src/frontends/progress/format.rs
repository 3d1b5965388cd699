//! The display's text. A stream without a successful response has no latency, and says so
//! ("no successful responses, 1398 errors"): a p99 of 0.0 ms would read as a fast endpoint.

use std::time::Duration;

use super::{PhaseFigures, StreamProgress};
use crate::frontends::report::ABSENT;

fn ms(v: f64) -> String {
    format!("{v:.1} ms")
}

/// True when the stream completed requests and none succeeded.
fn all_failed(s: &StreamProgress) -> bool {
    s.requests > 0 && s.errors >= s.requests
}

/// `, 3 errors` (nothing without errors).
fn errors(n: u64) -> String {
    match n {
        0 => String::new(),
        1 => ", 1 error".into(),
        n => format!(", {n} errors"),
    }
}

/// A stream whose figures say nothing of latency, in words; `None` when it has some.
fn without_latency(s: &StreamProgress) -> Option<String> {
    if all_failed(s) {
        Some(format!("no successful responses, {} errors", s.errors))
    } else if s.requests == 0 {
        Some("no responses".into())
    } else {
        None
    }
}

/// A stream by rps and p99: `fast 81.0 rps p99 48.2 ms`, with `, 3 errors`. Live, the figures
/// are the last second's (p99 [`ABSENT`] when that second had no success) and the errors the
/// phase's so far.
pub fn brief_stream(s: &StreamProgress) -> String {
    if let Some(words) = without_latency(s) {
        return format!("{} {words}", s.endpoint);
    }
    let p99 = s.p99_ms.map_or_else(|| ABSENT.to_string(), ms);
    format!(
        "{} {:.1} rps p99 {p99}{}",
        s.endpoint,
        s.rps,
        errors(s.errors)
    )
}

/// The live line of a phase: `mixed 3/8 s · fast 81.0 rps p99 48.2 ms · slow ...`; `planned`
/// is the phase's planned length.
pub fn live(p: &PhaseFigures, planned: Option<Duration>) -> String {
    let mut s = match planned {
        Some(d) => format!("{} {:.0}/{} s", p.phase, p.elapsed_secs, d.as_secs()),
        None => format!("{} {:.0} s", p.phase, p.elapsed_secs),
    };
    for st in &p.streams {
        s.push_str(" · ");
        s.push_str(&brief_stream(st));
    }
    s
}

/// A stream over a whole phase: `fast 80.2 rps, p50 12.1 ms, p99 31.2 ms, 3 errors`, or
/// `slow no successful responses, 1398 errors`.
pub fn ended_stream(s: &StreamProgress) -> String {
    if let Some(words) = without_latency(s) {
        return format!("{} {words}", s.endpoint);
    }
    let pct = |name: &str, v: Option<f64>| match v {
        Some(v) => format!(", {name} {}", ms(v)),
        None => String::new(),
    };
    format!(
        "{} {:.1} rps{}{}{}",
        s.endpoint,
        s.rps,
        pct("p50", s.p50_ms),
        pct("p99", s.p99_ms),
        errors(s.errors)
    )
}

/// The line of a phase that ended: `mixed 8 s: fast 80.2 rps, p50 ...; slow ...`.
pub fn phase_ended(p: &PhaseFigures) -> String {
    let streams: Vec<String> = p.streams.iter().map(ended_stream).collect();
    format!(
        "{} {:.0} s: {}",
        p.phase,
        p.elapsed_secs,
        streams.join("; ")
    )
}

/// The line of a measurement on a terminal, once its result is in: each measured phase's
/// streams by rps and p99, e.g. `fast-only fast 160.2 rps p99 14.2 ms; mixed fast ...`.
pub fn measured(phases: &[PhaseFigures]) -> String {
    let parts: Vec<String> = phases
        .iter()
        .filter(|p| p.phase != benchmatrix_loadgen::load::WARMUP_PHASE)
        .map(|p| {
            let streams: Vec<String> = p.streams.iter().map(brief_stream).collect();
            format!("{} {}", p.phase, streams.join(", "))
        })
        .collect();
    if parts.is_empty() {
        "measured".into()
    } else {
        parts.join("; ")
    }
}

/// `4m 52s`, `52s`, `1h 03m`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The line as a capacity run ends: `12 capacity searches (62 probes) in 7m 21s`.
pub fn searched(searches: usize, probes: usize, elapsed: Duration) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{} ({}) in {}",
        plural(searches, "capacity search", "capacity searches"),
        plural(probes, "probe", "probes"),
        duration(elapsed)
    )
}

/// The line as the run ends: `20 measurements in 4m 52s`.
pub fn finished(done: usize, elapsed: Duration) -> String {
    let plural = if done == 1 { "" } else { "s" };
    format!("{done} measurement{plural} in {}", duration(elapsed))
}
