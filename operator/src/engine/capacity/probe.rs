//! One probe judged: did the target hold the rate at the service level?
//!
//! A probe holds when all three are true:
//! - every SLO figure passes with enough samples, by the rule thresholds apply
//!   ([`judge::stream_figure`]: a percentile the samples cannot support is no figure, and
//!   fails);
//! - the load generator sent at least [`ON_TIME_MIN`] of the offered sends on time;
//! - the target did not fall behind: what was still unanswered at the probe's end is no more
//!   than what answers within the SLO's latency explain, plus [`BACKLOG_MAX`] of the sends.
//!
//! Who is to blame when the sends were late matters: a target with a growing backlog makes the
//! load generator wait for connections (the target's failure), while late sends with no
//! backlog mean the load generator itself could not keep the schedule (its failure, which
//! says nothing of the target: [`ProbeVerdict::LoadgenBound`]).

use super::sends::Sends;
use crate::engine::verdict::judge;
use crate::resource::capacity::{
    CapacitySpec, PROBE_PHASE, ProbeFigure, ProbeStatus, ProbeVerdict,
};
use crate::resource::thresholds::figure_text;
use crate::resource::{CellResult, Metric};

/// The least share of the offered sends that must go out on time (within 2 ms).
pub const ON_TIME_MIN: f64 = 0.98;

/// The most share of the offered sends that may be left unanswered at the end beyond what
/// answers within the SLO's latency explain.
pub const BACKLOG_MAX: f64 = 0.02;

/// How long an answer may take without counting as backlog when the SLO names no latency.
const DEFAULT_ANSWER_SECS: f64 = 1.0;

/// The probe at total rate `rate` that measured `results` (its one phase, per endpoint) with
/// `sends`; `busy` is why it is not believed (a busy neighbour), if it is not. The probe's
/// number is left 0 for the caller.
pub fn judge_probe(
    spec: &CapacitySpec,
    endpoints: &[&str],
    rate: f64,
    results: &[CellResult],
    sends: Option<&Sends>,
    busy: Option<String>,
) -> ProbeStatus {
    let figures = figures(spec, endpoints, results);
    let achieved: f64 = results
        .iter()
        .filter(|r| r.phase == PROBE_PHASE)
        .map(|r| r.rps)
        .sum();
    let mut probe = ProbeStatus {
        probe: 0,
        rate,
        achieved: round2(achieved),
        sent_on_time: sends.map(|s| round4(s.on_time())),
        backlog: sends.map(|s| round4(s.backlog())),
        figures: figures.iter().map(|(f, _)| f.clone()).collect(),
        verdict: ProbeVerdict::Held,
        close: false,
        why: None,
    };
    let at = format!("at {} rps", rate_text(rate));
    let behind = sends.and_then(|s| behind(spec, rate, s));
    let late = sends.filter(|s| s.on_time() < ON_TIME_MIN);
    let failing = figures.iter().find(|(f, _)| !f.pass);
    let (verdict, why) = if let Some(busy) = busy {
        (ProbeVerdict::NotBelieved, Some(busy))
    } else if let Some(behind) = &behind {
        (ProbeVerdict::Failed, Some(format!("{behind} {at}")))
    } else if let Some(s) = late {
        (
            ProbeVerdict::LoadgenBound,
            Some(format!(
                "the load generator sent only {:.1}% of its sends on time {at} while the target \
                 kept up: raise spec.loadgen.parallelism or spec.loadgen.cpu",
                s.on_time() * 100.0
            )),
        )
    } else if let Some((_, why)) = failing {
        (ProbeVerdict::Failed, Some(format!("{why} {at}")))
    } else {
        (ProbeVerdict::Held, None)
    };
    probe.verdict = verdict;
    probe.why = why;
    // Only a verdict the SLO figures decided can be noise near a limit.
    let within = spec.repeat_within.fraction();
    probe.close = matches!(verdict, ProbeVerdict::Held | ProbeVerdict::Failed)
        && behind.is_none()
        && within > 0.0
        && probe.figures.iter().any(|f| {
            f.measured
                .is_some_and(|m| f.limit > 0.0 && ((m - f.limit) / f.limit).abs() < within)
        });
    probe
}

/// Why the target fell behind, if it did: more unanswered at the end than answers within the
/// SLO's latency (at this rate) and [`BACKLOG_MAX`] of the sends explain.
fn behind(spec: &CapacitySpec, rate: f64, sends: &Sends) -> Option<String> {
    let answer_secs = spec
        .slo
        .iter()
        .filter_map(|f| f.limit())
        .filter(|(m, _)| *m != Metric::ErrorRate)
        .map(|(_, ms)| ms / 1000.0)
        .reduce(f64::max)
        .unwrap_or(DEFAULT_ANSWER_SECS);
    let allowed = rate * answer_secs + BACKLOG_MAX * sends.offered;
    (sends.unanswered as f64 > allowed.max(2.0)).then(|| {
        format!(
            "the target fell behind: {} of {:.0} sends ({:.1}%) unanswered at the end",
            sends.unanswered,
            sends.offered,
            sends.backlog() * 100.0
        )
    })
}

/// Each SLO figure of each endpoint it names (every endpoint of the mix when it names none),
/// with why it failed.
fn figures(
    spec: &CapacitySpec,
    endpoints: &[&str],
    results: &[CellResult],
) -> Vec<(ProbeFigure, String)> {
    let mix = spec.mix_or_default(endpoints);
    let mut out = Vec::new();
    for f in &spec.slo {
        let Some((metric, limit)) = f.limit() else {
            continue;
        };
        let judged: Vec<&str> = match &f.endpoint {
            Some(e) => vec![e.as_str()],
            None => mix
                .iter()
                .filter(|m| m.weight > 0.0)
                .map(|m| m.endpoint.as_str())
                .collect(),
        };
        for endpoint in judged {
            let name = format!("{PROBE_PHASE}/{endpoint} {}", metric.key());
            let measured = results
                .iter()
                .find(|r| r.phase == PROBE_PHASE && r.endpoint == endpoint)
                .ok_or_else(|| "no result".to_owned())
                .and_then(|r| judge::stream_figure(r, metric));
            let (value, pass, why) = match measured {
                Ok(v) => {
                    let pass = v < limit;
                    let word = if pass { "below" } else { "not below" };
                    let why = format!(
                        "{name} {}, {word} {}",
                        figure_text(metric, v),
                        figure_text(metric, limit)
                    );
                    (Some(v), pass, why)
                }
                Err(e) => (
                    None,
                    false,
                    format!("{name}: {e} (lengthen spec.capacity.probeDuration)"),
                ),
            };
            out.push((
                ProbeFigure {
                    endpoint: endpoint.to_owned(),
                    figure: metric.key().to_owned(),
                    measured: value.map(round4),
                    limit,
                    pass,
                },
                why,
            ));
        }
    }
    out
}

/// A rate as the status and messages show it: whole when it is, else to hundredths.
pub fn rate_text(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("{rate:.0}")
    } else {
        format!("{rate:.2}")
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests;
