//! A run at the workload's own load: each measurement of a cell is one repetition of it. The
//! cell succeeds with its one measurement, or goes back in line for its next repetition, or
//! ends with its repetitions merged; with variants, a configuration's cells repeat or stop
//! together, round by round.

use super::Recorder;
use crate::engine::{Ctx, Measured, Note, results, schedule};
use crate::resource::measure::FixedLoad;
use crate::resource::rounding::round2;
use crate::resource::{
    BenchmarkRunStatus, CellPhase, CellPrecision, CellResult, CellStatus, RepetitionStatus,
};

impl Recorder for FixedLoad {
    fn under_way(&self, _c: &CellStatus) -> String {
        String::new()
    }

    /// Nothing of its own: a repetition's start is its step's (`stepStartTime`, which the
    /// reducer writes for every kind), kept in its repetition's entry once measured.
    fn deploying(&self, _c: &mut CellStatus, _ctx: &Ctx) {}

    fn measured(
        &self,
        status: &mut BenchmarkRunStatus,
        cell: usize,
        measured: Measured,
        nodes: Vec<String>,
        share: Option<usize>,
        ctx: &Ctx,
    ) -> Vec<Note> {
        let c = &mut status.cells[cell];
        if !ctx.repeat.is_repeated() {
            return measured_once(c, measured, nodes, ctx);
        }
        let message = measured.message.clone();
        let repetition = add_repetition(c, measured, nodes, share, ctx);
        if c.variant.is_some() {
            return variant_measured(status, cell, repetition, &message, ctx);
        }
        let c = &mut status.cells[cell];
        let merged = results::repeat::merge(&c.repetitions, &c.histograms);
        let (again, precision) = schedule::stop::repeat_again(ctx, &c.name, repetition, &merged);
        if again {
            back_in_line(c, repetition, &message, precision, ctx)
        } else {
            all_measured(c, repetition, merged, precision, ctx)
        }
    }

    fn failure_ends_a_repetition(&self, ctx: &Ctx) -> bool {
        ctx.repeat.is_repeated()
    }

    fn after_event(&self, _status: &mut BenchmarkRunStatus, _ctx: &Ctx) -> Vec<Note> {
        Vec::new()
    }
}

/// The one measurement of a cell in a run that does not repeat.
fn measured_once(
    c: &mut CellStatus,
    measured: Measured,
    nodes: Vec<String>,
    ctx: &Ctx,
) -> Vec<Note> {
    c.phase = CellPhase::Succeeded;
    c.nodes = nodes;
    c.neighbours = measured.neighbours;
    c.reason = None;
    c.message = Some(measured.message);
    c.completion_time = Some(ctx.now.clone());
    c.results = measured.results;
    c.target = measured.target;
    c.enforcement = measured.enforcement;
    c.overhead_seconds = measured.overhead_seconds;
    vec![Note::normal(
        "CellSucceeded",
        format!("cell {} measured", c.name),
    )]
}

/// Records the repetition `measured` in `c`: its entry, its histograms added to the cell's
/// (within `share` characters a stream, `None`: none kept), the target's figures added up and
/// the overhead summed. Returns its number.
fn add_repetition(
    c: &mut CellStatus,
    measured: Measured,
    nodes: Vec<String>,
    share: Option<usize>,
    ctx: &Ctx,
) -> u32 {
    let repetition = c.measured_repetitions() + 1;
    match share {
        Some(cap) => results::repeat::fold_histograms(
            &mut c.histograms,
            &measured.histograms,
            repetition == 1,
            cap,
        ),
        None => c.histograms.clear(),
    }
    c.repetitions.push(RepetitionStatus {
        repetition,
        phase: CellPhase::Succeeded,
        reason: None,
        message: Some(measured.message),
        start_time: c.step_started().cloned(),
        load_start_time: c.load_start_time.clone(),
        completion_time: Some(ctx.now.clone()),
        cpu_seconds_used: measured.target.as_ref().and_then(|t| t.cpu_seconds_used),
        overhead_seconds: measured.overhead_seconds,
        results: measured.results,
        nodes,
        neighbours: measured.neighbours,
    });
    c.target = results::repeat::add_target(c.target.take(), measured.target);
    c.enforcement = measured.enforcement;
    c.overhead_seconds = Some(round2(
        c.repetitions
            .iter()
            .filter_map(|r| r.overhead_seconds)
            .sum(),
    ));
    repetition
}

/// Back in line: the other cells measure their repetition before this one's next.
fn back_in_line(
    c: &mut CellStatus,
    repetition: u32,
    message: &str,
    precision: Option<CellPrecision>,
    ctx: &Ctx,
) -> Vec<Note> {
    c.phase = CellPhase::Pending;
    let why = precision
        .map(|p| format!(" ({})", p.message))
        .unwrap_or_default();
    let round = ctx.repeat.round(repetition);
    c.message = Some(format!("repetition {round} measured{why}: {message}"));
    vec![Note::normal(
        "RepetitionMeasured",
        format!("cell {} repetition {round} measured", c.name),
    )]
}

/// The cell's last repetition: its figures are the repetitions' medians, merged.
fn all_measured(
    c: &mut CellStatus,
    repetition: u32,
    merged: Vec<CellResult>,
    precision: Option<CellPrecision>,
    ctx: &Ctx,
) -> Vec<Note> {
    c.results = merged;
    // Merged into the results: the status keeps the figures, not the histograms.
    c.histograms.clear();
    c.start_time = c.repeated_start();
    c.phase = CellPhase::Succeeded;
    c.reason = None;
    c.completion_time = Some(ctx.now.clone());
    let how = precision
        .as_ref()
        .map(|p| format!(", {}", p.message))
        .unwrap_or_default();
    c.message = Some(format!(
        "measured {repetition} repetitions{how}; figures are their medians, with the spread \
         beside them"
    ));
    c.precision = precision;
    vec![Note::normal(
        "CellSucceeded",
        format!("cell {} measured {repetition} times", c.name),
    )]
}

/// A variant's repetition measured. Until every variant of its configuration has measured this
/// round, the cell waits for them (they go next: a round's variants run back to back). Once
/// the round is complete, the configuration's cells repeat or stop together: a fixed count
/// until it is reached; `{min, max, precision}` until every candidate's ratios to the base have
/// a 95% interval narrower than `precision` percent (from `min` rounds on), and never beyond
/// `max`.
fn variant_measured(
    status: &mut BenchmarkRunStatus,
    cell: usize,
    round: u32,
    message: &str,
    ctx: &Ctx,
) -> Vec<Note> {
    let group = results::variants::groups(&status.cells)
        .into_iter()
        .find(|g| g.contains(&cell))
        .unwrap_or_else(|| vec![cell]);
    let waiting_for: Vec<String> = group
        .iter()
        .filter(|&&i| {
            let c = &status.cells[i];
            i != cell && !c.phase.is_finished() && c.measured_repetitions() < round
        })
        .map(|&i| status.cells[i].variant.clone().unwrap_or_default())
        .collect();
    if !waiting_for.is_empty() {
        let c = &mut status.cells[cell];
        c.phase = CellPhase::Pending;
        let r = ctx.repeat.round(round);
        c.message = Some(format!(
            "repetition {r} measured; {} next in this round: {message}",
            waiting_for.join(", ")
        ));
        return vec![Note::normal(
            "RepetitionMeasured",
            format!("cell {} repetition {r} measured", c.name),
        )];
    }
    let (again, precision) = schedule::stop::pair_again(status, &group, round, ctx);
    let mut notes = Vec::new();
    for &i in &group {
        let c = &mut status.cells[i];
        if c.phase.is_finished() {
            continue;
        }
        notes.extend(if again {
            back_in_line(c, round, message, precision.clone(), ctx)
        } else {
            let merged = results::repeat::merge(&c.repetitions, &c.histograms);
            all_measured(c, round, merged, precision.clone(), ctx)
        });
    }
    notes
}
