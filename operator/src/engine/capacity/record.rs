//! A probe measured, written into the cell's status: the probe judged and recorded, then the
//! cell goes back in line for the next probe or ends with the search's outcome.

use super::ended::{Ending, finish, succeeded};
use super::probe::{judge_probe, rate_text};
use super::search::{self, Next, Params, Probed, SearchOutcome};
use super::settle;
use crate::engine::{Ctx, Measured, Note};
use crate::resource::capacity::{
    CapacitySpec, CapacityStatus, CheckPurpose, ProbeStatus, ProbeVerdict, RateCheck, SearchEnding,
};
use crate::resource::rounding::round2;
use crate::resource::{CellPhase, CellStatus, Workload};

/// Records the probe `measured` of cell `c` (its measurement ran on `nodes`) in a search of
/// `spec` over `workload`'s endpoints, and decides what comes next.
pub fn measured(
    c: &mut CellStatus,
    measured: Measured,
    nodes: Vec<String>,
    (spec, workload): (&CapacitySpec, &Workload),
    ctx: &Ctx,
) -> Vec<Note> {
    let endpoints = workload.endpoint_names();
    let rate = super::probe_rate(spec, c);
    let busy = busy_neighbours(&measured);
    let mut probe = judge_probe(
        spec,
        &endpoints,
        rate,
        &measured.results,
        measured.sends.as_ref(),
        busy,
    );
    let cap = c.capacity.get_or_insert_with(CapacityStatus::default);
    probe.probe = cap.probes.len() as u32 + 1;
    probe.round = ctx.repeat.is_repeated().then(|| cap.current_round());
    probe.settle_seconds = cap.settle_seconds.take();
    let probe_was_fresh = probe.settle_seconds.is_none();
    let checking = cap.check.as_ref().filter(|k| !k.done).map(|k| k.purpose);
    probe.check = checking;
    let said = probe_words(&probe);
    // The cell's results are the last held probe's of its search (before any held, the last
    // probe's): once the search ends that is the confirmation at the rate held. A sizing
    // check's probes leave them alone unless the cell has none.
    let held_before = cap
        .round_probes()
        .any(|p| p.verdict == ProbeVerdict::Held && p.check.is_none());
    let keep = match checking {
        Some(_) => c.results.is_empty(),
        None => probe.verdict == ProbeVerdict::Held || !held_before,
    };
    if keep {
        c.results = measured.results;
        c.target = measured.target;
    }
    cap.probes.push(probe);
    c.nodes = nodes;
    c.neighbours = measured.neighbours;
    c.enforcement = measured.enforcement.or(c.enforcement.take());
    if let Some(o) = measured.overhead_seconds {
        c.overhead_seconds = Some(round2(c.overhead_seconds.unwrap_or(0.0) + o));
    }
    if probe_was_fresh {
        let waited = fresh_target_wait(c);
        if let Some(cap) = c.capacity.as_mut() {
            cap.fresh_target_seconds = waited.or(cap.fresh_target_seconds);
        }
    }
    // The probe's end: the next probe's wait for this one's processes counts from here
    // (`machine::previous_end`).
    c.completion_time = Some(ctx.now.clone());
    let (notes, round_over) = if checking.is_some() {
        (check_measured(c, spec, ctx, said), false)
    } else {
        search_measured(c, spec, ctx, said)
    };
    if round_over {
        // The next round starts afresh, as a repetition of a cell does: on a new target.
        if let Some(cap) = c.capacity.as_mut() {
            cap.targets += 1;
        }
    } else {
        keep_or_release_target(c, spec, ctx);
    }
    notes
}

/// The seconds a probe on a fresh target waited for it: from its step's start (the target's
/// deployment) until its load started.
fn fresh_target_wait(c: &CellStatus) -> Option<u32> {
    use crate::resource::conditions::secs_of;
    let since = c.start_time.as_ref()?;
    let loaded = c.load_start_time.as_ref()?;
    Some((secs_of(loaded) - secs_of(since)).max(0) as u32)
}

/// After a probe: a cell whose next probe may run on the same target keeps it, settling
/// ([`settle::settle_after`]): the cell stays deployed, and the machine starts the next load
/// once the settle is over. Otherwise the target is removed (counted in `targets`), and the
/// cell's next probe, if any, deploys a fresh one.
fn keep_or_release_target(c: &mut CellStatus, spec: &CapacitySpec, ctx: &Ctx) {
    let Some(cap) = c.capacity.as_mut() else {
        return;
    };
    let probe_secs = spec.probe_duration.get().as_secs_f64();
    let settle = match (c.phase, cap.probes.last()) {
        (CellPhase::Pending, Some(last)) => {
            settle::settle_after(spec, last, probe_secs, cap.fresh_target_seconds)
        }
        _ => None,
    };
    let Some(secs) = settle else {
        cap.targets += 1;
        return;
    };
    let now = crate::resource::conditions::secs_of(ctx.now);
    cap.settle_until = Some(crate::resource::conditions::time_from_secs(
        now + i64::from(secs),
    ));
    cap.settle_seconds = Some(secs);
    c.phase = CellPhase::Deploying;
    // The next probe's step starts now: its ready clock and overhead count from here.
    c.start_time = Some(ctx.now.clone());
    if let Some(m) = c.message.as_mut() {
        m.push_str(&format!("; settling {secs} s on the same target"));
    }
}

/// A probe of the search recorded (`said` is it in words): the search's next step from the
/// probes of its round so far, either the next probe's rate (the cell goes back in line) or the
/// search's end written into the cell; with spec.repeat, the end of a round, after which
/// another may follow (true: the cell goes back in line for it). Apart from [`measured`] as
/// [`check_measured`] is for a sizing check's probes.
fn search_measured(
    c: &mut CellStatus,
    spec: &CapacitySpec,
    ctx: &Ctx,
    said: String,
) -> (Vec<Note>, bool) {
    let Some(cap) = c.capacity.as_mut() else {
        return (Vec::new(), false);
    };
    let seen: Vec<Probed> = cap
        .round_probes()
        .filter(|p| p.check.is_none())
        .map(|p| Probed {
            rate: p.rate,
            verdict: p.verdict,
            close: p.close,
        })
        .collect();
    match search::next(Params::of(spec), &seen) {
        Next::Probe { rate: next, why } => {
            cap.next_rate = Some(next);
            cap.message = format!("{said}; next: {} rps ({why})", rate_text(next));
            c.phase = CellPhase::Pending;
            c.message = Some(cap.message.clone());
            let note = Note::normal("ProbeMeasured", format!("cell {}: {}", c.name, cap.message));
            (vec![note], false)
        }
        Next::Done(outcome) => {
            let ended = ending(cap, outcome, spec);
            if ctx.repeat.is_repeated() {
                return super::rounds::round_ended(c, ended, ctx);
            }
            finish(cap, ended);
            (succeeded(c, ctx), false)
        }
    }
}

/// The busy neighbours of a probe's measurement in words ("busy neighbours: ..."), None
/// when none was busy: a note to the probe's verdict, since they may have slowed the target.
fn busy_neighbours(measured: &Measured) -> Option<String> {
    let busy: Vec<String> = measured
        .neighbours
        .iter()
        .filter(|n| n.busy)
        .map(|n| n.busy_words())
        .collect();
    (!busy.is_empty()).then(|| format!("busy neighbours: {}", busy.join("; ")))
}

/// A probe of a sizing check recorded: the check counts it, and the cell goes back in line
/// until the check has its verdict (a failed probe decides it; every wanted probe must hold).
/// A probe not believed, or one the load generator could not drive, is not counted; the
/// latter ends the check without a verdict, as it ends a search.
fn check_measured(c: &mut CellStatus, spec: &CapacitySpec, ctx: &Ctx, said: String) -> Vec<Note> {
    let Some(cap) = c.capacity.as_mut() else {
        return Vec::new();
    };
    let Some((verdict, close)) = cap.probes.last().map(|p| (p.verdict, p.close)) else {
        return Vec::new();
    };
    let Some(check) = cap.check.as_mut() else {
        return Vec::new();
    };
    // A check has maxProbes of its own: the cell's search may have used all of its.
    let probes = check_probes(&cap.probes, check);
    // As in the search, a failure whose SLO figure was close to its limit is probed again
    // before it is believed: near the limit, noise decides. The second close failure of a
    // check is believed; a close failure that holding probes outvote is not.
    let earlier_close_failures = close_failures(&cap.probes[..cap.probes.len() - 1], check);
    match verdict {
        ProbeVerdict::Held => check.held += 1,
        ProbeVerdict::Failed if close && earlier_close_failures == 0 => {}
        ProbeVerdict::Failed => check.failed += 1,
        ProbeVerdict::LoadgenBound | ProbeVerdict::NotBelieved => {}
    }
    let probed_again = if close_failures(&cap.probes, check) > check.failed {
        " (a failure close to the limit was probed again)"
    } else {
        ""
    };
    let (what, rate) = (check_words(check.purpose), rate_text(check.rate));
    let ended = check_end(check, verdict, probes, spec, &said, probed_again);
    let message = match ended {
        Some(m) => {
            check.done = true;
            check.message = m.clone();
            c.phase = CellPhase::Succeeded;
            if let Some(start) = cap.start_time.clone() {
                c.start_time = Some(start);
            }
            m
        }
        None => {
            c.phase = CellPhase::Pending;
            format!(
                "{said}; {what} at {rate} rps: {} of {} held so far",
                check.held, check.wanted
            )
        }
    };
    c.reason = None;
    c.message = Some(message.clone());
    c.completion_time = Some(ctx.now.clone());
    vec![Note::normal(
        "ProbeMeasured",
        format!("cell {}: {message}", c.name),
    )]
}

/// "confirmation" or "rule-out probe".
fn check_words(purpose: CheckPurpose) -> &'static str {
    match purpose {
        CheckPurpose::Confirm => "confirmation",
        CheckPurpose::RuleOut => "rule-out probe",
    }
}

/// How `check` ends after its latest probe (`verdict`, the check's `probes`-th; `said` is it in
/// words), in a sentence; None while it goes on.
fn check_end(
    check: &RateCheck,
    verdict: ProbeVerdict,
    probes: u32,
    spec: &CapacitySpec,
    said: &str,
    probed_again: &str,
) -> Option<String> {
    let (what, rate) = (check_words(check.purpose), rate_text(check.rate));
    if verdict == ProbeVerdict::LoadgenBound {
        Some(format!(
            "{what} at {rate} rps: load-generator bound, no verdict ({said})"
        ))
    } else if check.failed > 0 {
        Some(format!(
            "{what} at {rate} rps failed: {} of {} believed probes held ({said})",
            check.held,
            check.held + check.failed
        ))
    } else if check.held >= check.wanted {
        Some(format!(
            "{what} at {rate} rps held: {} of {} probes held{probed_again}",
            check.held, check.wanted
        ))
    } else if probes >= spec.max_probes {
        Some(format!(
            "{what} at {rate} rps ran out of probes (spec.capacity.maxProbes {}, for each check) \
             with {} of {} held",
            spec.max_probes, check.held, check.wanted
        ))
    } else {
        None
    }
}

/// The probes of the sizing `check` among `probes`: the latest ones of its purpose at its rate
/// (a cell's search probes come before them, and a rule-out that held before a confirmation
/// at the same rate).
fn this_check<'a>(
    probes: &'a [ProbeStatus],
    check: &RateCheck,
) -> impl Iterator<Item = &'a ProbeStatus> {
    let (purpose, rate) = (check.purpose, check.rate);
    probes
        .iter()
        .rev()
        .take_while(move |p| p.check == Some(purpose) && p.rate == rate)
}

/// How many probes the sizing `check` has taken.
fn check_probes(probes: &[ProbeStatus], check: &RateCheck) -> u32 {
    this_check(probes, check).count() as u32
}

/// The failures close to their limit among the probes of the sizing `check`.
fn close_failures(probes: &[ProbeStatus], check: &RateCheck) -> u32 {
    this_check(probes, check)
        .filter(|p| p.verdict == ProbeVerdict::Failed && p.close)
        .count() as u32
}

/// One probe in words: "probe 3 at 40 rps held" or "... failed: why".
pub fn probe_words(p: &ProbeStatus) -> String {
    let mut s = format!(
        "probe {} at {} rps {}",
        p.probe,
        rate_text(p.rate),
        p.verdict
    );
    if p.close {
        s.push_str(" (close to the limit)");
    }
    if let Some(why) = &p.why
        && p.verdict != ProbeVerdict::Held
    {
        s.push_str(&format!(": {why}"));
    }
    s
}

/// The search's end `outcome` in the figures [`finish`] writes, from the probes of the round
/// `cap` holds (what limited a failed rate is the latest reason recorded at it) and `spec`'s
/// maxProbes.
fn ending(cap: &CapacityStatus, outcome: SearchOutcome, spec: &CapacitySpec) -> Ending {
    let probes: Vec<&ProbeStatus> = cap.round_probes().collect();
    let why_at = |rate: f64| {
        probes
            .iter()
            .rev()
            .find(|p| p.rate == rate && p.verdict != ProbeVerdict::Held && p.why.is_some())
            .and_then(|p| p.why.clone())
    };
    let n = probes.len();
    match outcome {
        SearchOutcome::Capacity { held, failed } => {
            let limiting = why_at(failed);
            let message = format!(
                "capacity {} rps: held (and confirmed) at {} rps, failed at {} rps ({}); {n} \
                 probes",
                rate_text(held),
                rate_text(held),
                rate_text(failed),
                limiting.as_deref().unwrap_or("no reason recorded")
            );
            Ending {
                kind: SearchEnding::Found,
                held: Some(held),
                failed: Some(failed),
                limiting,
                message,
            }
        }
        SearchOutcome::HeldAtMax { max } => Ending {
            kind: SearchEnding::HeldAtUpperBound,
            held: Some(max),
            failed: None,
            limiting: None,
            message: format!(
                "held at the upper bound, {} rps: raise spec.capacity.maxRate; no capacity \
                 found ({n} probes)",
                rate_text(max)
            ),
        },
        SearchOutcome::FailedAtStart { start, failed } => {
            let limiting = why_at(failed);
            let message = format!(
                "failed even at the start rate, {} rps ({}): lower spec.capacity.startRate; no \
                 capacity found ({n} probes)",
                rate_text(start),
                limiting.as_deref().unwrap_or("no reason recorded")
            );
            Ending {
                kind: SearchEnding::FailedAtStartRate,
                held: None,
                failed: Some(failed),
                limiting,
                message,
            }
        }
        SearchOutcome::LoadgenBound { rate, held } => {
            loadgen_bound(rate, held, probes.last().and_then(|p| p.why.clone()), n)
        }
        SearchOutcome::OutOfProbes { held, failed } => {
            out_of_probes(held, failed, failed.and_then(why_at), spec.max_probes)
        }
    }
}

/// The end of a search the load generator bound at `rate` (what bound it: `why`, the last
/// probe's), after `n` probes.
fn loadgen_bound(rate: f64, held: Option<f64>, why: Option<String>, n: usize) -> Ending {
    let limiting = why.unwrap_or_else(|| "the load generator".into());
    let message = format!(
        "load-generator bound at {} rps{}: {limiting}; no capacity found ({n} probes)",
        rate_text(rate),
        held.map(|h| format!(" (held {} rps)", rate_text(h)))
            .unwrap_or_default()
    );
    Ending {
        kind: SearchEnding::LoadGeneratorBound,
        held,
        failed: None,
        limiting: Some(limiting),
        message,
    }
}

/// The end of a search that spent its `max_probes` with `held` and `failed` (what failed
/// there: `limiting`) not yet within the resolution.
fn out_of_probes(
    held: Option<f64>,
    failed: Option<f64>,
    limiting: Option<String>,
    max_probes: u32,
) -> Ending {
    let text = |r: Option<f64>| r.map_or("none".into(), rate_text);
    let message = format!(
        "ran out of probes (spec.capacity.maxProbes {max_probes}) with {} rps held and {} rps \
         failed, {} apart; no capacity found",
        text(held),
        text(failed),
        match (held, failed) {
            (Some(h), Some(f)) => format!("{:.1}%", (f / h - 1.0) * 100.0),
            _ => "not bracketed".into(),
        }
    );
    Ending {
        kind: SearchEnding::OutOfProbes,
        held,
        failed,
        limiting,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::capacity::CapacityStatus;
    use crate::resource::conditions::time_from_secs;

    /// A cell confirming its held rate at 24 rps with two probes, after the verdicts `probes`
    /// (each held or failed, and whether close to the limit): the check after each, recorded.
    fn confirm(probes: &[(ProbeVerdict, bool)]) -> RateCheck {
        confirm_after(0, probes)
    }

    /// [`confirm`] of a cell whose search took `searched` probes first.
    fn confirm_after(searched: u32, probes: &[(ProbeVerdict, bool)]) -> RateCheck {
        let now = time_from_secs(100);
        let run = crate::resource::BenchmarkRun::sample();
        let ctx = Ctx::unvalidated(&run, None, &now);
        let spec: CapacitySpec =
            serde_yaml::from_str("slo: [{errorRate: {below: 0.01}}]\nstartRate: 12\n").unwrap();
        let mut c = CellStatus {
            name: "pool-x1".into(),
            capacity: Some(CapacityStatus {
                check: Some(RateCheck {
                    purpose: CheckPurpose::Confirm,
                    rate: 24.0,
                    wanted: 2,
                    ..RateCheck::default()
                }),
                ..CapacityStatus::default()
            }),
            ..CellStatus::default()
        };
        let cap = c.capacity.as_mut().unwrap();
        cap.probes = (1..=searched)
            .map(|probe| ProbeStatus {
                probe,
                rate: 36.0,
                verdict: ProbeVerdict::Held,
                ..ProbeStatus::default()
            })
            .collect();
        for (i, &(verdict, close)) in probes.iter().enumerate() {
            let cap = c.capacity.as_mut().unwrap();
            assert!(
                !cap.check.as_ref().unwrap().done,
                "decided before probe {i}"
            );
            cap.probes.push(ProbeStatus {
                probe: searched + i as u32 + 1,
                rate: 24.0,
                verdict,
                close,
                check: Some(CheckPurpose::Confirm),
                ..ProbeStatus::default()
            });
            check_measured(&mut c, &spec, &ctx, "said".into());
        }
        c.capacity.unwrap().check.unwrap()
    }

    use ProbeVerdict::{Failed, Held};

    #[test]
    fn a_confirmation_believes_a_clear_failure_at_once() {
        let check = confirm(&[(Failed, false)]);
        assert!(check.refuted(), "{check:?}");
    }

    /// Near the limit noise decides: a close failure is probed again, and holding probes
    /// outvote it; a second close failure is believed.
    #[test]
    fn a_confirmation_probes_a_close_failure_again_before_it_believes_it() {
        let outvoted = confirm(&[(Failed, true), (Held, false), (Held, false)]);
        assert!(outvoted.passed(), "{outvoted:?}");
        assert!(
            outvoted
                .message
                .ends_with("(a failure close to the limit was probed again)"),
            "{}",
            outvoted.message
        );
        let twice = confirm(&[(Failed, true), (Held, false), (Failed, true)]);
        assert!(twice.refuted(), "{twice:?}");
        let close_held = confirm(&[(Held, true), (Held, false)]);
        assert!(close_held.passed(), "{close_held:?}");
    }

    /// A search that used all of `maxProbes` (20 by default) leaves its sizing check its own
    /// 20: the check is decided by its probes, not ended before its first.
    #[test]
    fn a_check_has_probes_of_its_own_after_a_search_that_used_all_of_its() {
        let nb = (ProbeVerdict::NotBelieved, false);
        let after = confirm_after(20, &[nb, (Held, false), nb, (Held, false)]);
        assert!(after.passed(), "{after:?}");
        let out = confirm_after(20, &[nb; 20]);
        assert!(out.done && !out.passed() && !out.refuted(), "{out:?}");
        assert!(out.message.contains("ran out of probes"), "{}", out.message);
    }
}
