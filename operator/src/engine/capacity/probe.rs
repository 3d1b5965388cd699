//! One probe judged: did the target hold the rate at the service level?
//!
//! A probe holds when all three are true:
//! - every SLO figure passes with enough samples, by the rule thresholds apply
//!   ([`figure::stream_figure`]: a percentile the samples cannot support is no figure, and
//!   fails);
//! - at least [`ACHIEVED_MIN`] of the offered sends were achieved: answered by the probe's
//!   end, counting as answered those still in flight that the SLO's latency explains (a
//!   request sent within the last "SLO latency" seconds is not yet late);
//! - so the target did not fall behind: no backlog grew through the probe.
//!
//! A send that went out late but was answered is not a shortfall: its latency runs from its
//! intended time (coordinated omission corrected), so the SLO figures already judge it.
//!
//! Who is to blame for a shortfall matters. A target that falls behind makes requests wait
//! for it, and what it was sent it answers slowly: the target's failure. When instead most
//! sends went out late while the target answered what it was sent within the SLO's latency,
//! the load generator could not keep the schedule: [`ProbeVerdict::LoadgenBound`], which says
//! nothing of the target.

use crate::engine::Sends;
use crate::engine::results::figure;
use crate::resource::capacity::{
    CapacitySpec, PROBE_PHASE, ProbeFigure, ProbeStatus, ProbeVerdict,
};
use crate::resource::rounding::{round2, round4};
use crate::resource::thresholds::figure_text;
use crate::resource::{CellResult, Metric};

/// The least share of the offered sends that must be achieved (answered, or in flight within
/// the SLO's latency) by the probe's end.
pub const ACHIEVED_MIN: f64 = 0.98;

/// The share of the offered sends that must have gone out late (more than 2 ms after their
/// intended time) before a shortfall with fast answers is put down to the load generator.
const LATE_SHARE: f64 = 0.02;

/// Without an `errorRate` in the SLO, more than `1 - ACHIEVED_MIN` of the probe's answers
/// failing fails the probe: a failed answer is not an achieved send, and latency figures count
/// successes only, so a target shedding load (fast 503s, refused connections) would otherwise
/// hold at every rate. With an `errorRate` figure, that figure decides.
fn failed_answers(spec: &CapacitySpec, results: &[CellResult]) -> Option<String> {
    if spec.slo.iter().any(|f| f.error_rate.is_some()) {
        return None;
    }
    let (requests, errors) = results
        .iter()
        .filter(|r| r.phase == PROBE_PHASE)
        .fold((0u64, 0u64), |(n, e), r| (n + r.requests, e + r.errors));
    let share = errors as f64 / requests.max(1) as f64;
    (share > 1.0 - ACHIEVED_MIN).then(|| {
        format!(
            "{:.1}% of the answers failed ({errors} of {requests}; more than {:.0}% is not \
             holding the rate)",
            share * 100.0,
            (1.0 - ACHIEVED_MIN) * 100.0
        )
    })
}

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
        round: None,
        rate,
        achieved: round2(achieved),
        sent_on_time: sends.map(|s| round4(s.on_time())),
        backlog: sends.map(|s| round4(s.backlog())),
        figures: figures.iter().map(|(f, _)| f.clone()).collect(),
        verdict: ProbeVerdict::Held,
        close: false,
        check: None,
        why: None,
        settle_seconds: None,
    };
    let answer_secs = answer_secs(spec);
    let short = sends.and_then(|s| shortfall(rate, answer_secs, s));
    let fell_short = short.is_some();
    let failing = figures.iter().find(|(f, _)| !f.pass);
    let (verdict, why) = verdict_of(spec, rate, results, (busy, short, sends), failing);
    probe.verdict = verdict;
    probe.why = why;
    // Only a verdict the SLO figures decided can be noise near a limit.
    let within = spec.repeat_within.fraction();
    probe.close = matches!(verdict, ProbeVerdict::Held | ProbeVerdict::Failed)
        && !fell_short
        && within > 0.0
        && probe.figures.iter().any(|f| {
            f.measured
                .is_some_and(|m| f.limit > 0.0 && ((m - f.limit) / f.limit).abs() < within)
        });
    probe
}

/// The verdict of a probe at `rate` and why, from what would make it unbelieved or short
/// (`busy`, the `short`fall of its sends, the `sends` counted) and the first SLO figure that
/// fails (`failing`): apart from [`judge_probe`], which records the probe around it, as the
/// order of these questions is the capacity search's whole notion of "held".
fn verdict_of(
    spec: &CapacitySpec,
    rate: f64,
    results: &[CellResult],
    (busy, short, sends): (Option<String>, Option<String>, Option<&Sends>),
    failing: Option<&(ProbeFigure, String)>,
) -> (ProbeVerdict, Option<String>) {
    let at = format!("at {} rps", rate_text(rate));
    let answer_secs = answer_secs(spec);
    match (busy, short, sends) {
        (Some(busy), _, _) => (ProbeVerdict::NotBelieved, Some(busy)),
        (None, Some(short), Some(s)) if loadgen_bound(s, answer_secs) => (
            ProbeVerdict::LoadgenBound,
            Some(format!(
                "{short} {at}, with {:.1}% of the sends late while the target answered what it \
                 was sent in p99 {:.1} ms: the load generator could not keep the schedule; \
                 raise spec.loadgen.generators or spec.loadgen.cpu",
                (1.0 - s.on_time()) * 100.0,
                s.sent_p99_ms.unwrap_or_default()
            )),
        ),
        (None, Some(short), _) => (
            ProbeVerdict::Failed,
            Some(format!("the target fell behind: {short} {at}")),
        ),
        // Without send counts the third condition of holding (no backlog) cannot be checked,
        // so the probe may not hold; it says nothing of the target either.
        (None, None, None) => (
            ProbeVerdict::LoadgenBound,
            Some(format!(
                "the load generator reported no send counts (offered rate, late sends, in flight \
                 at the end) {at}: whether the target fell behind cannot be told; run the load \
                 generator of this release (spec.loadgen.image)"
            )),
        ),
        (None, None, Some(s)) => match (failing, failed_answers(spec, results)) {
            (Some((f, why)), _) if late_not_slow(f, s, spec.repeat_within.fraction()) => (
                ProbeVerdict::LoadgenBound,
                Some(format!(
                    concat!(
                        "{} {}, counted from the intended send times, with {:.1}% of the sends ",
                        "late while the target answered what it was sent in p99 {:.1} ms: the ",
                        "load generator could not keep the schedule; raise ",
                        "spec.loadgen.generators or spec.loadgen.cpu"
                    ),
                    why,
                    at,
                    (1.0 - s.on_time()) * 100.0,
                    s.sent_p99_ms.unwrap_or_default()
                )),
            ),
            (Some((_, why)), _) => (ProbeVerdict::Failed, Some(format!("{why} {at}"))),
            (None, Some(failed)) => (ProbeVerdict::Failed, Some(format!("{failed} {at}"))),
            (None, None) => (ProbeVerdict::Held, None),
        },
    }
}

/// The largest latency limit of the SLO in seconds: how long a request may be in flight at the
/// probe's end without counting as backlog.
pub fn answer_secs(spec: &CapacitySpec) -> f64 {
    spec.slo
        .iter()
        .filter_map(|f| f.limit())
        .filter(|(m, _)| *m != Metric::ErrorRate)
        .map(|(_, ms)| ms / 1000.0)
        .reduce(f64::max)
        .unwrap_or(DEFAULT_ANSWER_SECS)
}

/// The shortfall of the sends achieved, if there is one: more unanswered at the end than
/// answers within `answer_secs` at this rate explain, by more than `1 - ACHIEVED_MIN` of the
/// sends. In words: "1000 of 2000 sends (50.0%) unanswered at the end".
fn shortfall(rate: f64, answer_secs: f64, sends: &Sends) -> Option<String> {
    let explained = rate * answer_secs;
    let allowed = explained + (1.0 - ACHIEVED_MIN) * sends.offered;
    (sends.unanswered as f64 > allowed.max(2.0)).then(|| {
        format!(
            "{} of {:.0} sends ({:.1}%) unanswered at the end",
            sends.unanswered,
            sends.offered,
            sends.backlog() * 100.0
        )
    })
}

/// A shortfall is the load generator's when many sends went out late while the target
/// answered what it was sent within the SLO's latency.
fn loadgen_bound(sends: &Sends, answer_secs: f64) -> bool {
    1.0 - sends.on_time() > LATE_SHARE
        && sends
            .sent_p99_ms
            .is_some_and(|p99| p99 <= answer_secs * 1000.0)
}

/// A latency percentile that failed only because the load generator sent late: more than
/// [`LATE_SHARE`] of the sends went out late, and what the target was sent it answered well
/// within the figure's limit (its p99 from the actual send is below it by more than
/// `within`, the noise band of `repeatWithin`, so p50 and p90 are too). A target that cannot
/// keep up queues what it is sent, so its answers from the actual send are slow as well; a load
/// generator short of CPU sends late while the target answers at once. Charged to the target,
/// such a probe would fail it at a rate it holds. Near the limit the lateness cannot be shown
/// to decide (a send waiting on a connection the target is slow to give also counts late):
/// the probe is then the target's, and probed again as close.
fn late_not_slow(failed: &ProbeFigure, sends: &Sends, within: f64) -> bool {
    matches!(failed.figure.as_str(), "p50" | "p90" | "p99")
        && 1.0 - sends.on_time() > LATE_SHARE
        && sends
            .sent_p99_ms
            .is_some_and(|p99| p99 < failed.limit * (1.0 - within))
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
                .and_then(|r| figure::stream_figure(r, metric));
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

#[cfg(test)]
mod tests;
