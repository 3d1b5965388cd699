//! A sizing check: probes of one configuration at one fixed rate, asked by the sizing search
//! ([`super::plan`]) to confirm its answer at the target rate, or to rule out a cheaper
//! configuration the bounds pruned. Each probe is judged and recorded as a probe of the
//! capacity search is ([`capacity::record_probe`], on the target the last probe kept), then the
//! check counts it:
//!
//! - every probe must hold, and it takes `wanted` of them;
//! - a failure refutes the check once the noise rule believes it ([`Tally`]): a clear failure
//!   at once, one close to the SLO's limit only when a second failure agrees (it is probed
//!   again first: near the limit, noise decides), so a check whose wanted probes hold before
//!   that passes;
//! - a probe not believed (a busy neighbour) is not counted, and a load-generator-bound one
//!   ends the check without a verdict, as it ends a search;
//! - a check has `spec.capacity.maxProbes` of its own (the cell's search may have used all of
//!   its own), and running out of them ends it without a verdict.

use crate::engine::capacity::probe::rate_text;
use crate::engine::capacity::tally::Tally;
use crate::engine::capacity::{self, keep_or_release_target};
use crate::engine::{Ctx, Measured, Note};
use crate::resource::capacity::{CapacitySpec, CheckPurpose, ProbeStatus, ProbeVerdict, RateCheck};
use crate::resource::{CellPhase, CellStatus, Workload};

/// The check of cell `c` under way, if one is.
pub fn open(c: &CellStatus) -> Option<&RateCheck> {
    c.capacity.as_ref()?.check.as_ref().filter(|k| !k.done)
}

/// Records the probe `measured` of the check `purpose` open on cell `c` (its measurement ran
/// on `nodes`), judged by `spec`'s SLO over `workload`'s endpoints: the check counts it, and
/// the cell goes back in line (on its kept target, when the probe left it) until the check
/// has its verdict.
pub fn measured(
    c: &mut CellStatus,
    measured: Measured,
    nodes: Vec<String>,
    (spec, workload): (&CapacitySpec, &Workload),
    purpose: CheckPurpose,
    ctx: &Ctx,
) -> Vec<Note> {
    let said = capacity::record_probe(c, measured, nodes, (spec, workload), Some(purpose), ctx);
    let notes = counted(c, spec, ctx, &said);
    keep_or_release_target(c, spec, ctx);
    notes
}

/// What the probes of a check say so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckTally {
    /// The check's probes, believed or not.
    pub probes: u32,
    /// Its probes that held.
    pub held: u32,
    /// Its failures the noise rule believes: one at most, as the first ends the check.
    pub failed: u32,
    /// A failure close to the limit was probed again rather than believed.
    pub probed_again: bool,
}

/// The tally of `check`'s probes among `probes` (a cell's, in the order run).
pub fn tally(probes: &[ProbeStatus], check: &RateCheck) -> CheckTally {
    let mut mine: Vec<&ProbeStatus> = this_check(probes, check).collect();
    mine.reverse();
    // Every probe must hold, so holding probes never outvote a failure: the noise rule is
    // asked only whether the failures, in the order run, are believed.
    let failures = mine
        .iter()
        .filter(|p| p.verdict == ProbeVerdict::Failed)
        .map(|p| (p.verdict, p.close));
    let refuted = Tally::of(failures).decided() == Some(false);
    let close_failures = mine
        .iter()
        .filter(|p| p.verdict == ProbeVerdict::Failed && p.close)
        .count();
    let failed = u32::from(refuted);
    CheckTally {
        probes: mine.len() as u32,
        held: mine
            .iter()
            .filter(|p| p.verdict == ProbeVerdict::Held)
            .count() as u32,
        failed,
        probed_again: close_failures as u32 > failed,
    }
}

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every wanted probe held.
    Held,
    /// A believed probe failed.
    Failed,
    /// Ended without a verdict: out of probes, or the load generator could not drive it.
    Undecided,
}

/// How `check` ended, from its probes among `probes` (a cell's); `None` while it is open.
pub fn verdict(probes: &[ProbeStatus], check: &RateCheck) -> Option<Verdict> {
    if !check.done {
        return None;
    }
    let t = tally(probes, check);
    Some(if t.failed > 0 {
        Verdict::Failed
    } else if t.held >= check.wanted {
        Verdict::Held
    } else {
        Verdict::Undecided
    })
}

/// The probe just recorded on cell `c` (`said` is it in words), counted by the cell's check:
/// the check ends with its verdict (the cell succeeds) or goes on (the cell goes back in line).
fn counted(c: &mut CellStatus, spec: &CapacitySpec, ctx: &Ctx, said: &str) -> Vec<Note> {
    let Some(cap) = c.capacity.as_mut() else {
        return Vec::new();
    };
    let Some(verdict) = cap.probes.last().map(|p| p.verdict) else {
        return Vec::new();
    };
    let Some(check) = cap.check.as_mut() else {
        return Vec::new();
    };
    let t = tally(&cap.probes, check);
    let message = match check_end(check, &t, verdict, spec, said) {
        Some(m) => {
            check.done = true;
            check.message = m.clone();
            c.phase = CellPhase::Succeeded;
            // As a search's end does (`capacity::ended`): the cell's start is its first
            // probe's, which a status an older operator wrote kept only there.
            if let Some(start) = cap.start_time.clone() {
                c.start_time = Some(start);
            }
            m
        }
        None => {
            c.phase = CellPhase::Pending;
            format!(
                "{said}; {} at {} rps: {} of {} held so far",
                check_words(check.purpose),
                rate_text(check.rate),
                t.held,
                check.wanted
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

/// How `check` ends after its latest probe (`verdict`; `said` is it in words) with its probes
/// tallied as `t`, in a sentence; None while it goes on.
fn check_end(
    check: &RateCheck,
    t: &CheckTally,
    verdict: ProbeVerdict,
    spec: &CapacitySpec,
    said: &str,
) -> Option<String> {
    let (what, rate) = (check_words(check.purpose), rate_text(check.rate));
    let probed_again = if t.probed_again {
        " (a failure close to the limit was probed again)"
    } else {
        ""
    };
    if verdict == ProbeVerdict::LoadgenBound {
        Some(format!(
            "{what} at {rate} rps: load-generator bound, no verdict ({said})"
        ))
    } else if t.failed > 0 {
        Some(format!(
            "{what} at {rate} rps failed: {} of {} believed probes held ({said})",
            t.held,
            t.held + t.failed
        ))
    } else if t.held >= check.wanted {
        Some(format!(
            "{what} at {rate} rps held: {} of {} probes held{probed_again}",
            t.held, check.wanted
        ))
    } else if t.probes >= spec.max_probes {
        Some(format!(
            "{what} at {rate} rps ran out of probes (spec.capacity.maxProbes {}, for each check) \
             with {} of {} held",
            spec.max_probes, t.held, check.wanted
        ))
    } else {
        None
    }
}

/// The probes of the sizing `check` among `probes`, latest first: the latest ones of its
/// purpose at its rate (a cell's search probes come before them, and a rule-out that held
/// before a confirmation at the same rate).
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

#[cfg(test)]
mod tests;
