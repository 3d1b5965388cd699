//! A probe measured, written into the cell's status: the probe judged and recorded
//! ([`record_probe`], alike for a probe of the search and one of a sizing check), then for a
//! probe of the search ([`measured`]) the cell goes back in line for the next probe or ends
//! with the search's outcome. A sizing check counts its own probes (`engine::sizing::check`).

use super::ended::{Ending, finish, succeeded};
use super::probe::{judge_probe, rate_text};
use super::search::{self, Next, SearchOutcome};
use super::settle;
use crate::engine::{Ctx, Measured, Note};
use crate::resource::capacity::{
    CapacitySpec, CapacityStatus, CheckPurpose, ProbeStatus, ProbeVerdict, SearchEnding,
};
use crate::resource::rounding::round2;
use crate::resource::{CellPhase, CellStatus, Workload};

/// Records the probe `measured` of cell `c`'s search (its measurement ran on `nodes`) of
/// `spec` over `workload`'s endpoints, and decides what comes next.
pub fn measured(
    c: &mut CellStatus,
    measured: Measured,
    nodes: Vec<String>,
    (spec, workload): (&CapacitySpec, &Workload),
    ctx: &Ctx,
) -> Vec<Note> {
    let said = record_probe(c, measured, nodes, (spec, workload), None, ctx);
    let (notes, round_over) = search_measured(c, spec, ctx, said);
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

/// Judges the probe `measured` of cell `c` (its measurement ran on `nodes`) by `spec`'s SLO
/// over `workload`'s endpoints and records it in the cell: in `capacity.probes` (tagged with
/// `check`, the purpose of the sizing check it is a probe of, if it is one), and in the
/// cell's results, nodes and timing. Returns the probe in words, for what the caller writes of
/// it next.
pub fn record_probe(
    c: &mut CellStatus,
    measured: Measured,
    nodes: Vec<String>,
    (spec, workload): (&CapacitySpec, &Workload),
    check: Option<CheckPurpose>,
    ctx: &Ctx,
) -> String {
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
    probe.check = check;
    let said = probe_words(&probe);
    // The cell's results are the last held probe's of its search (before any held, the last
    // probe's): once the search ends that is the confirmation at the rate held. A sizing
    // check's probes leave them alone unless the cell has none.
    let held_before = cap
        .round_probes()
        .any(|p| p.verdict == ProbeVerdict::Held && p.check.is_none());
    let keep = match check {
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
    said
}

/// The seconds a probe on a fresh target waited for it: from its step's start (the target's
/// deployment) until its load started.
fn fresh_target_wait(c: &CellStatus) -> Option<u32> {
    use crate::resource::conditions::secs_of;
    let since = c.step_started()?;
    let loaded = c.load_start_time.as_ref()?;
    Some((secs_of(loaded) - secs_of(since)).max(0) as u32)
}

/// After a probe: a cell whose next probe may run on the same target keeps it, settling
/// ([`settle::settle_after`]): the cell stays deployed, and the machine starts the next load
/// once the settle is over. Otherwise the target is removed (counted in `targets`), and the
/// cell's next probe, if any, deploys a fresh one.
pub fn keep_or_release_target(c: &mut CellStatus, spec: &CapacitySpec, ctx: &Ctx) {
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
    cap.settle_seconds = Some(secs);
    c.phase = CellPhase::Deploying;
    // The next probe's step starts now: its settle, ready clock and overhead count from here.
    c.step_start_time = Some(ctx.now.clone());
    if let Some(m) = c.message.as_mut() {
        m.push_str(&format!("; settling {secs} s on the same target"));
    }
}

/// A probe of the search recorded (`said` is it in words): the search's next step from the
/// probes of its round so far, either the next probe's rate (the cell goes back in line) or the
/// search's end written into the cell; with spec.repeat, the end of a round, after which
/// another may follow (true: the cell goes back in line for it).
fn search_measured(
    c: &mut CellStatus,
    spec: &CapacitySpec,
    ctx: &Ctx,
    said: String,
) -> (Vec<Note>, bool) {
    let Some(cap) = c.capacity.as_mut() else {
        return (Vec::new(), false);
    };
    match search::replay(spec, cap) {
        Next::Probe { rate: next, why } => {
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
