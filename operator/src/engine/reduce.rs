//! The reducer: each [`Event`] the machine records, written into the status. Every change to
//! a run's status goes through here, the end's summary, verdicts and conditions included
//! (`verdict::end` and `verdict::judge` are called from [`Event::Finished`]). The one exception
//! is the operator marking an object that does not parse as a BenchmarkRun at all
//! (`executors::cluster::write::mark_malformed`): no engine can read such an object.
//!
//! The events are the same for every kind of run; what a measurement is, and what follows it,
//! is not. Those questions go to the recorder of the run's kind (`super::record::recorder`):
//! the words for a measurement under way, when it starts, what a measured or failed step
//! becomes, and what the kind decides after each event.

use super::record::recorder;
use super::schedule::Measurements;
use super::verdict::end;
use super::{Admission, Ctx, Event, Measured, Note, QUEUE_PLACES_SHOWN};
use crate::resource::bound;
use crate::resource::conditions::{self, Cause, Reason, set_condition, status as cs};
use crate::resource::status::RecordedPod;
use crate::resource::{BenchmarkRunStatus, CellPhase, CellStatus, RepetitionStatus, RunPhase};

/// Writes `event` into `status`; returns the notes worth publishing. The progress count is
/// then current, and every text of the status within its [`bound`], whatever the executor
/// reported.
pub fn reduce(status: &mut BenchmarkRunStatus, event: Event, ctx: &Ctx) -> Vec<Note> {
    let mut notes = apply(status, event, ctx);
    notes.extend(recorder(ctx.measure).after_event(status, ctx));
    if !status.cells.is_empty() {
        // A queued run has no cells yet: its count is the plan's, set by `queued`.
        status.progress = Some(Measurements::of(status, ctx.repeat).to_string());
    }
    bound::clip_status(status);
    notes
}

fn apply(status: &mut BenchmarkRunStatus, event: Event, ctx: &Ctx) -> Vec<Note> {
    match event {
        Event::SpecRefused { reason, message } => spec_refused(status, reason, message, ctx),
        Event::SpecChanged { message } => spec_changed(status, message, ctx),
        Event::Queued {
            cells,
            position,
            active,
            max_active,
        } => queued(
            status,
            cells,
            queue_message(position, active, max_active),
            ctx,
        ),
        Event::Admitted { cells } => admitted(status, cells, ctx),
        Event::CellDeploying { cell, message } => cell_deploying(status, cell, message, ctx),
        Event::LoadStarted {
            cell,
            message,
            target_pods,
        } => load_started(status, cell, message, target_pods, ctx),
        Event::CellMeasured { cell, measured } => measure_cell(status, cell, *measured, ctx),
        Event::CellFailed {
            cell,
            cause,
            message,
            overhead_seconds,
            enforcement,
        } => {
            if let Some(c) = status.cells.get_mut(cell)
                && enforcement.is_some()
            {
                c.enforcement = enforcement;
            }
            fail_cell(status, cell, cause, message, overhead_seconds, ctx)
        }
        Event::Waiting { message } => {
            status.message = Some(message);
            Vec::new()
        }
        Event::TargetPodsRecorded { cell, target_pods } => {
            if let Some(c) = status.cells.get_mut(cell) {
                c.target_pods = target_pods;
            }
            Vec::new()
        }
        Event::Slots {
            asked,
            node_sets,
            message,
        } => slots(status, asked, node_sets, message),
        Event::Placed { cell, slot } => {
            if let Some(c) = status.cells.get_mut(cell) {
                c.slot = slot;
            }
            Vec::new()
        }
        Event::StepLost { cell } => {
            if let Some(c) = status.cells.get_mut(cell) {
                c.phase = CellPhase::Pending;
                c.slot = None;
                // The step starts again from its deployment: the wait for the new target is
                // timed from then, not from the lost step's start; and a probe that was to
                // run on a kept target runs on the new one, with no settle to wait.
                c.step_start_time = None;
                c.load_start_time = None;
                c.target_pods.clear();
                if let Some(cap) = c.capacity.as_mut() {
                    cap.settle_seconds = None;
                }
            }
            Vec::new()
        }
        Event::Finished { interrupted } => finished(status, interrupted, ctx),
    }
}

/// A parallel run's slots: the node sets, at most as many as asked (and [`bound`]'s most), and
/// fewer than asked said so.
fn slots(
    status: &mut BenchmarkRunStatus,
    asked: crate::resource::parallelism::Parallelism,
    mut node_sets: Vec<Vec<String>>,
    message: String,
) -> Vec<Note> {
    use crate::resource::parallelism::Parallelism;
    node_sets.truncate(asked.most() as usize);
    for set in &mut node_sets {
        set.retain(|n| bound::json_len(n) <= bound::NODE_NAME_MAX);
        set.truncate(bound::NODES_MAX);
    }
    node_sets.retain(|s| !s.is_empty());
    let slots = node_sets.len().max(1) as u32;
    let mut said = message;
    if let Parallelism::Count(n) = asked
        && slots < n
    {
        said = format!("{slots} slot(s) of the {n} asked: {said}");
    } else {
        said = format!("{slots} slot(s): {said}");
    }
    let note = Note::normal("Parallelism", said.clone());
    status.parallelism = Some(crate::resource::status::ParallelismStatus {
        asked: asked.to_string(),
        slots,
        node_sets,
        message: said,
    });
    vec![note]
}

/// The run fails before (or instead of) going on: SpecValid and Progressing say why.
fn spec_refused(
    status: &mut BenchmarkRunStatus,
    reason: Reason,
    message: String,
    ctx: &Ctx,
) -> Vec<Note> {
    let (g, now) = (ctx.generation, ctx.now);
    let was_running = status.phase == RunPhase::Running;
    status.phase = RunPhase::Failed;
    status.message = Some(message.clone());
    status.observed_generation = g;
    status.completion_time.get_or_insert_with(|| now.clone());
    let c = &mut status.conditions;
    set_condition(
        c,
        conditions::SPEC_VALID,
        cs::FALSE,
        reason,
        &message,
        g,
        now,
    );
    let progressing = if was_running {
        "the run was stopped and its current cell's objects deleted"
    } else {
        "the run cannot start"
    };
    set_condition(
        c,
        conditions::PROGRESSING,
        cs::FALSE,
        reason,
        progressing,
        g,
        now,
    );
    vec![Note::warning(reason, message)]
}

/// The spec changed under a running run: it fails, as results of two specs must not mix.
fn spec_changed(status: &mut BenchmarkRunStatus, message: String, ctx: &Ctx) -> Vec<Note> {
    status.phase = RunPhase::Failed;
    status.message = Some(message.clone());
    status.completion_time = Some(ctx.now.clone());
    let why = Reason::SpecChanged;
    set_condition(
        &mut status.conditions,
        conditions::PROGRESSING,
        cs::FALSE,
        why,
        &message,
        ctx.generation,
        ctx.now,
    );
    vec![Note::warning(why, message)]
}

/// Where a queued run stands, in words that change only when its shown place does: its exact
/// place (and the runs active) while it is among the first [`QUEUE_PLACES_SHOWN`] in line;
/// further back, only that it is, so its status is not rewritten each time the queue moves.
/// Nor does the text count the runs waiting behind it, which would change with every run
/// applied.
pub fn queue_message(position: usize, active: usize, max_active: usize) -> String {
    let max_active = max_active.max(1);
    if position <= QUEUE_PLACES_SHOWN {
        format!(
            "queued: position {position} in line; {active} run(s) active, at most {max_active} at once"
        )
    } else {
        format!(
            "queued: {QUEUE_PLACES_SHOWN} or more runs ahead; at most {max_active} run(s) active \
             at once (the exact place shows once fewer than {QUEUE_PLACES_SHOWN} are ahead)"
        )
    }
}

/// The run waits for a free slot; `message` says where it stands.
fn queued(status: &mut BenchmarkRunStatus, cells: usize, message: String, ctx: &Ctx) -> Vec<Note> {
    status.message = Some(message.clone());
    status.observed_generation = ctx.generation;
    status.progress = Some(Measurements::before_start(cells, ctx.repeat).to_string());
    spec_valid(status, ctx);
    set_condition(
        &mut status.conditions,
        conditions::PROGRESSING,
        cs::FALSE,
        Reason::Queued,
        message,
        ctx.generation,
        ctx.now,
    );
    Vec::new()
}

/// The run starts: every cell gets its entry, Pending.
fn admitted(status: &mut BenchmarkRunStatus, cells: Vec<Admission>, ctx: &Ctx) -> Vec<Note> {
    status.phase = RunPhase::Running;
    status.start_time = Some(ctx.now.clone());
    status.observed_generation = ctx.generation;
    status.cells = cells
        .into_iter()
        .map(|a| CellStatus {
            name: a.name,
            configuration: a.variant_of.as_ref().map(|v| v.0.clone()),
            variant: a.variant_of.map(|v| v.1),
            reserved_cpu: a.reserved_cpu,
            ..CellStatus::default()
        })
        .collect();
    spec_valid(status, ctx);
    set_condition(
        &mut status.conditions,
        conditions::CELL_FAILED,
        cs::FALSE,
        Reason::NoFailures,
        "",
        ctx.generation,
        ctx.now,
    );
    deprecated(ctx)
}

/// With several steps in flight (spec.parallelism), the run's message names them all, not
/// only the one deployed last: " (and cells b (2/4), c (3/4))"; empty when `cell` is alone.
fn others_in_flight(status: &BenchmarkRunStatus, cell: usize) -> String {
    let total = status.cells.len();
    let others: Vec<String> = status
        .cells
        .iter()
        .enumerate()
        .filter(|(i, c)| *i != cell && matches!(c.phase, CellPhase::Deploying | CellPhase::Running))
        .map(|(i, c)| format!("{} ({}/{total})", c.name, i + 1))
        .collect();
    match others.len() {
        0 => String::new(),
        1 => format!(" (and cell {})", others[0]),
        _ => format!(" (and cells {})", others.join(", ")),
    }
}

/// The run's message and Progressing condition for `cell` under way at `repetition`: "running
/// cell a (1/4), probe 3 at 40 rps".
fn say_running(status: &mut BenchmarkRunStatus, cell: usize, repetition: u32, ctx: &Ctx) {
    let total = status.cells.len();
    let Some(c) = status.cells.get(cell) else {
        return;
    };
    let mut what = format!("cell {} ({}/{total})", c.name, cell + 1);
    if ctx.repeat.is_repeated() {
        what.push_str(&format!(", repetition {}", ctx.repeat.round(repetition)));
    }
    what.push_str(&recorder(ctx.measure).under_way(c));
    status.message = Some(format!("running {what}{}", others_in_flight(status, cell)));
    set_condition(
        &mut status.conditions,
        conditions::PROGRESSING,
        cs::TRUE,
        Reason::CellRunning,
        what,
        ctx.generation,
        ctx.now,
    );
}

/// A cell (or its next repetition) is being deployed.
fn cell_deploying(
    status: &mut BenchmarkRunStatus,
    cell: usize,
    message: String,
    ctx: &Ctx,
) -> Vec<Note> {
    let Some(c) = status.cells.get_mut(cell) else {
        return Vec::new();
    };
    let repetition = c.measured_repetitions() + 1;
    c.phase = CellPhase::Deploying;
    // Each step (a repetition, a capacity search's target) times its target's readiness and
    // its overhead from its own start; the cell's start is its first step's.
    c.step_start_time = Some(ctx.now.clone());
    c.start_time.get_or_insert_with(|| ctx.now.clone());
    recorder(ctx.measure).deploying(c, ctx);
    c.message = Some(message);
    let name = c.name.clone();
    say_running(status, cell, repetition, ctx);
    let note = if ctx.repeat.is_repeated() {
        format!("deploying cell {name} for repetition {repetition}")
    } else {
        format!("deploying cell {name}")
    };
    vec![Note::normal("CellStarted", note)]
}

/// The target is ready and the load runs against `target_pods`.
fn load_started(
    status: &mut BenchmarkRunStatus,
    cell: usize,
    message: String,
    target_pods: Vec<RecordedPod>,
    ctx: &Ctx,
) -> Vec<Note> {
    let Some(c) = status.cells.get_mut(cell) else {
        return Vec::new();
    };
    c.phase = CellPhase::Running;
    c.load_start_time = Some(ctx.now.clone());
    c.target_pods = target_pods;
    c.message = Some(message);
    // A probe on a kept target had no deployment to say it: its load's start says it.
    if c.capacity
        .as_ref()
        .is_some_and(|cap| cap.settle_seconds.is_some())
    {
        let repetition = c.measured_repetitions() + 1;
        say_running(status, cell, repetition, ctx);
    }
    Vec::new()
}

/// No step is left (or the run was interrupted): the summary, thresholds and the end.
fn finished(status: &mut BenchmarkRunStatus, interrupted: bool, ctx: &Ctx) -> Vec<Note> {
    // A cell cut short by an interruption merges nothing more and checks no pod.
    for c in &mut status.cells {
        c.histograms.clear();
        c.target_pods.clear();
    }
    let end = end::finish_run(status, interrupted, ctx.thresholds, ctx.generation, ctx.now);
    let failed = end.phase == RunPhase::Failed;
    vec![Note {
        warning: failed,
        reason: if failed { "RunFailed" } else { "RunSucceeded" }.into(),
        note: end.message,
    }]
}

/// Condition SpecValid True: the spec passed validation (a queued run says so too). Its
/// message names the fields set under an old name, if any.
fn spec_valid(status: &mut BenchmarkRunStatus, ctx: &Ctx) {
    set_condition(
        &mut status.conditions,
        conditions::SPEC_VALID,
        cs::TRUE,
        Reason::Valid,
        ctx.deprecations.join("; "),
        ctx.generation,
        ctx.now,
    );
}

/// A Warning Event per field set under an old name, when the run starts.
fn deprecated(ctx: &Ctx) -> Vec<Note> {
    ctx.deprecations
        .iter()
        .map(|d| Note {
            warning: true,
            reason: "Deprecated".into(),
            note: d.clone(),
        })
        .collect()
}

/// A repetition of `cell` measured: the cell succeeds with its figures (a run that does not
/// repeat), goes back in line for another repetition, or ends with its repetitions merged.
fn measure_cell(
    status: &mut BenchmarkRunStatus,
    cell: usize,
    mut measured: Measured,
    ctx: &Ctx,
) -> Vec<Note> {
    let share = bound::histogram_share(status.cells.len(), measured.results.len());
    let Some(c) = status.cells.get_mut(cell) else {
        return Vec::new();
    };
    let nodes = take_nodes(c, nodes_kept(ctx, cell));
    measured.neighbours = neighbours_of(
        &nodes,
        std::mem::take(&mut measured.neighbours),
        measured.neighbours_missing.take(),
    );
    let which = if ctx.repeat.is_repeated() {
        let n = c.measured_repetitions() + 1;
        format!("cell {} repetition {}", c.name, ctx.repeat.round(n))
    } else {
        format!("cell {}", c.name)
    };
    let mut notes: Vec<Note> = measured
        .neighbours
        .iter()
        .filter(|n| n.busy)
        .map(|n| {
            Note::warning(
                "BusyNeighbours",
                format!("{which} shared its {}", n.busy_words()),
            )
        })
        .collect();
    notes.extend(recorder(ctx.measure).measured(status, cell, measured, nodes, share, ctx));
    notes
}

/// One entry per node of a measurement: what the executor read of it, or why nothing was
/// (`missing`, else that the kubelet gave nothing for it). A node the executor read that is not
/// among `nodes` (a name too long to record, one beyond [`bound::NODES_MAX`]) is not kept.
fn neighbours_of(
    nodes: &[String],
    mut read: Vec<crate::resource::status::Neighbours>,
    missing: Option<String>,
) -> Vec<crate::resource::status::Neighbours> {
    nodes
        .iter()
        .map(|node| match read.iter().position(|n| &n.node == node) {
            Some(i) => read.swap_remove(i),
            None => crate::resource::status::Neighbours {
                node: node.clone(),
                missing: Some(
                    missing
                        .clone()
                        .unwrap_or_else(|| "the kubelet figures have nothing of this node".into()),
                ),
                ..Default::default()
            },
        })
        .collect()
}

/// How many nodes a measurement of `cell` keeps: [`bound::nodes_recorded`] of its replicas
/// (all [`bound::NODES_MAX`] when the context has no matrix, as in some tests).
fn nodes_kept(ctx: &Ctx, cell: usize) -> usize {
    ctx.cells
        .get(cell)
        .map_or(bound::NODES_MAX, |c| bound::nodes_recorded(c.replicas))
}

/// The nodes the cell's measurement ran on, from the target pods recorded to check it, which
/// go: the measurement is over. At most `most` names (see [`bound::nodes_recorded`]), each
/// whole (a name longer than [`bound::NODE_NAME_MAX`] is left out).
fn take_nodes(c: &mut CellStatus, most: usize) -> Vec<String> {
    c.slot = None;
    let mut nodes: Vec<String> = Vec::new();
    for node in c.target_pods.drain(..).filter_map(|p| p.node) {
        if nodes.len() < most
            && bound::json_len(&node) <= bound::NODE_NAME_MAX
            && !nodes.contains(&node)
        {
            nodes.push(node);
        }
    }
    nodes
}

fn fail_cell(
    status: &mut BenchmarkRunStatus,
    cell: usize,
    cause: Cause,
    message: String,
    overhead_seconds: Option<f64>,
    ctx: &Ctx,
) -> Vec<Note> {
    let Some(c) = status.cells.get_mut(cell) else {
        return Vec::new();
    };
    let name = c.name.clone();
    let nodes = take_nodes(c, nodes_kept(ctx, cell));
    c.histograms.clear();
    let message = if recorder(ctx.measure).failure_ends_a_repetition(ctx) {
        let repetition = c.measured_repetitions() + 1;
        c.repetitions.push(RepetitionStatus {
            nodes,
            repetition,
            phase: CellPhase::Failed,
            reason: Some(cause.to_string()),
            message: Some(message.clone()),
            start_time: c.step_started().cloned(),
            load_start_time: c.load_start_time.clone(),
            completion_time: Some(ctx.now.clone()),
            overhead_seconds,
            ..RepetitionStatus::default()
        });
        c.start_time = c.repeated_start();
        format!("repetition {}: {message}", ctx.repeat.round(repetition))
    } else {
        c.nodes = nodes;
        message
    };
    c.phase = CellPhase::Failed;
    c.reason = Some(cause.to_string());
    c.message = Some(message.clone());
    c.start_time.get_or_insert_with(|| ctx.now.clone());
    c.completion_time = Some(ctx.now.clone());
    if overhead_seconds.is_some() {
        c.overhead_seconds = overhead_seconds;
    }
    set_condition(
        &mut status.conditions,
        conditions::CELL_FAILED,
        cs::TRUE,
        cause.as_str(),
        format!("cell {name}: {message}"),
        ctx.generation,
        ctx.now,
    );
    if ctx.stop_on_failure {
        for later in status.cells.iter_mut().filter(|c| !c.phase.is_finished()) {
            later.phase = CellPhase::Skipped;
            later.message = Some(format!(
                "skipped: cell {name} failed and stopOnFailure is set"
            ));
        }
    }
    vec![Note::warning(
        "CellFailed",
        format!("cell {name}: {cause}: {message}"),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first QUEUE_PLACES_SHOWN in line see their exact place and the runs active; further
    /// back, one text whatever the place or the runs active, so a run there is not rewritten as
    /// the queue moves.
    #[test]
    fn a_queued_run_shows_its_place_only_near_the_head_of_the_line() {
        assert_eq!(
            queue_message(1, 1, 1),
            "queued: position 1 in line; 1 run(s) active, at most 1 at once"
        );
        assert_eq!(
            queue_message(QUEUE_PLACES_SHOWN, 2, 3),
            format!(
                "queued: position {QUEUE_PLACES_SHOWN} in line; 2 run(s) active, at most 3 at once"
            )
        );
        let beyond = queue_message(QUEUE_PLACES_SHOWN + 1, 1, 1);
        assert_eq!(
            beyond,
            format!(
                "queued: {QUEUE_PLACES_SHOWN} or more runs ahead; at most 1 run(s) active at once \
                 (the exact place shows once fewer than {QUEUE_PLACES_SHOWN} are ahead)"
            )
        );
        for (position, active) in [(QUEUE_PLACES_SHOWN + 2, 0), (40, 1), (1000, 0)] {
            assert_eq!(queue_message(position, active, 1), beyond);
        }
        // No limit of 0 is shown: the operator admits one run even then.
        assert!(queue_message(2, 1, 0).ends_with("at most 1 at once"));
    }
}
