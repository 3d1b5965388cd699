//! The one way an executor drives a run: look at what the machine names, tell it what was
//! seen, carry out what it commands. Both executors run these turns; only their loops differ.
//!
//! - The operator takes one [`turn`] per reconcile. Its loop is kube's Controller, which
//!   reconciles again when a watched object changes or, at the latest, when the machine's
//!   [`Command::WakeIn`] is due (the reconcile's requeue).
//! - The local runner drives a run to its end in one process with [`run_to_end`]: a turn, then
//!   a wait until something it watches changes (a process exits, the target answers, the load
//!   generator ends, a signal) or the machine's wake-up is due.
//!
//! Nothing here reads a clock or does I/O of its own: the executor brings the time and does
//! the rest, so the engine stays a function of the status and the facts.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::Ctx;
use super::machine::{self, Advance, Command, Look, Seen};
use crate::resource::{BenchmarkRunStatus, ValidatedRun};

/// What the machine needs of an executor.
pub trait Executor {
    /// What the executor sees now: the run's own facts (a refusal, a changed spec, its place
    /// in a queue) whatever `look` is, and what `look` names of the current step. `status` is
    /// the status the look was made for.
    fn look(&mut self, status: &BenchmarkRunStatus, look: Look, now: &Time) -> Seen;

    /// Does `command`. `status` is the status as the machine left it in this turn.
    fn carry_out(&mut self, status: &BenchmarkRunStatus, command: &Command);
}

/// An executor that drives a whole run itself (the local runner): it keeps the time, and it
/// can wait between turns for something it watches to change.
pub trait Waits: Executor {
    /// The time now.
    fn now(&mut self) -> Time;

    /// Waits until something this executor watches changes in a way the machine should see,
    /// or `at_most` has passed. Returns at once when it already has something to tell (a
    /// result it has read, a failure of the last command).
    fn wait(&mut self, at_most: Duration);
}

/// How long a turn that asked for no wake-up waits at most before looking again (only a run
/// that is not running asks for none, and the loop ends it first).
const IDLE_LOOK: Duration = Duration::from_secs(1);

/// One turn: the looks the machine names for `status` at `ctx.now` (one per step of the turn:
/// several in a parallel run), and for each in order what the executor sees of it, the
/// machine's advance, and the executor carrying out its commands. The turn's wake-ups become
/// one, the soonest, carried out last.
pub fn turn(status: &mut BenchmarkRunStatus, executor: &mut impl Executor, ctx: &Ctx) -> Advance {
    let mut all = Advance::default();
    let mut wake: Option<Duration> = None;
    for look in machine::looks(status, ctx.now, ctx.limits.planned_load) {
        let seen = executor.look(status, look, ctx.now);
        let advance = machine::advance_at(status, look, seen, ctx);
        for command in advance.commands {
            match command {
                Command::WakeIn(after) => wake = Some(wake.map_or(after, |w| w.min(after))),
                command => {
                    executor.carry_out(status, &command);
                    all.commands.push(command);
                }
            }
        }
        all.notes.extend(advance.notes);
    }
    if let Some(after) = wake {
        let command = Command::WakeIn(after);
        executor.carry_out(status, &command);
        all.commands.push(command);
    }
    all
}

/// Drives `run` to its end: turns, and between them waits as the machine says. A turn that
/// made the executor act is followed by another at once, to see what the action did.
pub fn run_to_end(status: &mut BenchmarkRunStatus, run: &ValidatedRun, executor: &mut impl Waits) {
    loop {
        let now = executor.now();
        let ctx = Ctx::of(run, None, &now);
        let advance = turn(status, executor, &ctx);
        if advance.ended() || status.phase.is_finished() {
            return;
        }
        if !advance.acted() {
            executor.wait(advance.wake_in().unwrap_or(IDLE_LOOK));
        }
    }
}
