//! What a run shows while it works. The local runner, and `kubectl benchmatrix run` following a
//! run on a cluster through its status ([`crate::frontends::kubectl::follow`]), tell a [`Display`] what
//! happened as [`Update`]s: the plan, a measurement (a cell's repetition) starting, its phases'
//! live and final figures, and how it ended. Nothing here knows of processes, files or the
//! Kubernetes API.
//!
//! On a terminal the display is live ([`live`]): an overall bar of measurements done with the
//! time elapsed and an estimate of the time left, and under it the current cell, repetition
//! and phase with live rps and p99; each finished measurement leaves one line above them.
//! Elsewhere (CI logs, pipes, tests) it writes plain lines: one as a measurement starts, one
//! per phase as it ends with the phase's figures, one as the measurement ends. Never one per
//! second.

pub mod format;
pub mod live;
pub mod tally;

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use serde::Deserialize;

pub use benchmatrix_loadgen::timeline::StreamProgress;

use self::tally::Tally;
use crate::engine::Step;
use crate::resource::{BenchmarkRunStatus, Repeat};

/// One `--progress-json` line of the load generator (a consumer's view: unknown fields are
/// ignored, missing ones default, so a newer load generator does not break the display).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProgressLine {
    /// The phase's figures so far, or over the whole phase when `ended`.
    #[serde(flatten)]
    pub figures: PhaseFigures,
    /// True on the phase's last line.
    pub ended: bool,
}

/// A phase's figures, live (each stream's rate and percentiles of the last second) or once it
/// ended (over the whole phase).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PhaseFigures {
    /// Phase being run ("warmup" during warm-up).
    pub phase: String,
    /// Seconds into that phase (its length once it ended).
    pub elapsed_secs: f64,
    /// Figures per stream.
    pub streams: Vec<StreamProgress>,
}

impl ProgressLine {
    /// Parses one stderr line of the load generator; `None` for ordinary log lines.
    pub fn parse(line: &str) -> Option<ProgressLine> {
        let t = line.trim();
        if !t.starts_with('{') {
            return None;
        }
        serde_json::from_str(t).ok()
    }
}

/// What a run will measure, for the overall bar and its estimate of the time left.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The matrix's cells by name, in order.
    pub cells: Vec<String>,
    /// Repetitions of each cell: the most it may take (`spec.repeat: {max}` when the number
    /// depends on the figures; the total shrinks as cells stop early, see
    /// [`Update::Measurements`]).
    pub repeat: u32,
    /// One measurement's load part by part, as the load generator names them: its warm-up
    /// ([`benchmatrix_loadgen::load::WARMUP_PHASE`], when there is one), then each phase.
    pub load: Vec<(String, Duration)>,
    /// With `spec.capacity`: each cell is a search, measured in probes. The count is then of
    /// searches (a probe is named by its number, `pool-x1 probe 3`), and the last line says
    /// how many probes they took.
    pub searches: bool,
}

impl Plan {
    /// The plan of a validated run.
    pub fn of(run: &crate::resource::ValidatedRun) -> Plan {
        // A capacity search's measurements are probes: each has the probe's one phase.
        let w = &run.measure().first_workload();
        let warmup = (!w.warmup.0.is_zero()).then(|| {
            (
                benchmatrix_loadgen::load::WARMUP_PHASE.to_string(),
                w.warmup.0,
            )
        });
        Plan {
            cells: run.cells().iter().map(|c| c.name.clone()).collect(),
            repeat: run.repeat().max_rounds(),
            load: warmup
                .into_iter()
                .chain(w.phases.iter().map(|p| (p.name.clone(), p.duration.0)))
                .collect(),
            searches: run.measure().probes(),
        }
    }
}

/// What happened.
#[derive(Debug, Clone, Copy)]
pub enum Update<'a> {
    /// A line that stays, about the run as a whole (a notice).
    Notice(&'a str),
    /// How many measurements are done and how many the run will make in all (fewer than cells
    /// x repetitions once a failed cell drops its remaining repetitions).
    Measurements {
        /// Measured or failed so far.
        done: usize,
        /// Done plus still to come.
        total: usize,
    },
    /// A measurement starts; `detail` says what is being started.
    Started {
        /// Which measurement.
        step: Step,
        /// e.g. "starting pool x 1 replica(s), cpu 2 each (cgroup-v2), port 40121".
        detail: &'a str,
    },
    /// What the measurement under way is doing now, in words (on a cluster, the cell's status
    /// message as its load starts). The live line shows it; plain output, which has the
    /// `Started` line, prints nothing, so that it stays one line per phase.
    Doing {
        /// Which measurement.
        step: Step,
        /// e.g. "load generator running against http://10.96.0.12:8080".
        detail: &'a str,
    },
    /// How far into its planned load (warm-up and phases) the measurement under way is, when
    /// no phase figures come to say it (on a cluster: the time since its load generator
    /// started, which also counts the generator's check that the target answers). It moves
    /// the estimate of the time left, and shows nothing else.
    LoadElapsed {
        /// Time since the load started.
        elapsed: Duration,
    },
    /// Live figures of the phase running now.
    PhaseProgress {
        /// Which measurement.
        step: Step,
        /// Figures of the last second.
        figures: &'a PhaseFigures,
    },
    /// A phase ended.
    PhaseEnded {
        /// Which measurement.
        step: Step,
        /// Figures over the whole phase.
        figures: &'a PhaseFigures,
    },
    /// The measurement's result is in; `detail` says how long it took.
    Succeeded {
        /// Which measurement.
        step: Step,
        /// e.g. "warm-up + phases 14.0 s ran in 14.05 s; runner overhead 1.2 s (...)".
        detail: &'a str,
    },
    /// The measurement failed (or was interrupted).
    Failed {
        /// Which measurement.
        step: Step,
        /// Why, in a word (a cell's reason, e.g. `ReplicaExited`).
        reason: &'a str,
        /// What happened, in a sentence.
        message: &'a str,
    },
    /// The run is over: the live display goes, and what is shown from here on stays.
    Finished,
}

/// Where the display goes.
enum Out {
    /// Bars redrawn in place on a terminal.
    Live(live::Live),
    /// Plain lines.
    Plain(Box<dyn Write + Send>),
}

/// The progress display of a run.
pub struct Display {
    plan: Plan,
    tally: Tally,
    out: Out,
    /// The measurement under way: its number (1-based, in the order run) and the phases it
    /// has finished, for its summary line.
    current: Option<(usize, Vec<PhaseFigures>)>,
}

impl std::fmt::Debug for Display {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Display")
            .field("plan", &self.plan)
            .field("live", &matches!(self.out, Out::Live(_)))
            .finish()
    }
}

impl Display {
    /// A display for `plan` on stdout: live when stdout is a terminal (that is not `dumb`),
    /// plain lines otherwise.
    pub fn new(plan: Plan) -> Display {
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        if std::io::stdout().is_terminal() && !dumb {
            let target = indicatif::ProgressDrawTarget::stdout();
            Display::live(plan, target)
        } else {
            Display::plain(plan, Box::new(std::io::stdout()))
        }
    }

    /// A display writing plain lines to `out`.
    pub fn plain(plan: Plan, out: Box<dyn Write + Send>) -> Display {
        Display::with(plan, Out::Plain(out))
    }

    /// A live display drawn on `target`.
    pub fn live(plan: Plan, target: indicatif::ProgressDrawTarget) -> Display {
        let total = plan.cells.len() * plan.repeat as usize;
        Display::with(plan, Out::Live(live::Live::new(target, total)))
    }

    fn with(plan: Plan, out: Out) -> Display {
        let total = plan.cells.len() * plan.repeat as usize;
        Display {
            tally: Tally::new(&plan.load, total, Instant::now()),
            plan,
            out,
            current: None,
        }
    }

    /// The run ended with `status`: the count as the status ends it (a search's last probe is
    /// not a search done until the status says so), then the last line.
    pub fn run_ended(&mut self, status: &BenchmarkRunStatus, repeat: Repeat) {
        let count = crate::engine::schedule::Measurements::of(status, repeat);
        self.show(Update::Measurements {
            done: count.done,
            total: count.total,
        });
        self.show(Update::Finished);
    }

    /// A line that stays (the result table, where the report went).
    pub fn line(&mut self, text: &str) {
        self.show(Update::Notice(text));
    }

    /// Shows `update`.
    pub fn show(&mut self, update: Update) {
        let now = Instant::now();
        match update {
            Update::Notice(text) => self.stays(text),
            Update::Measurements { done, total } => self.tally.measurements(done, total),
            Update::Started { step, detail } => self.started(step, detail, now),
            Update::Doing { step, detail } => self.live_cell(step, detail),
            Update::LoadElapsed { elapsed } => self.tally.load_elapsed(elapsed),
            Update::PhaseProgress { step, figures } => {
                self.tally
                    .phase(&figures.phase, figures.elapsed_secs, false);
                let at = self.tally.phase_length(&figures.phase);
                self.live_cell(step, &format::live(figures, at));
            }
            Update::PhaseEnded { step, figures } => self.phase_ended(step, figures),
            Update::Succeeded { step, detail } => self.succeeded(step, detail, now),
            Update::Failed {
                step,
                reason,
                message,
            } => self.failed(step, reason, message, now),
            Update::Finished => {
                // Nothing is live any more.
                self.finished(now);
                return;
            }
        }
        if let Out::Live(l) = &mut self.out {
            l.overall(self.tally.done(), self.tally.total(), self.tally.eta(now));
        }
    }

    /// A measurement starts: the live line names it (the bar above has the count), plain
    /// output gives it a line.
    fn started(&mut self, step: Step, detail: &str, now: Instant) {
        self.tally.started(now);
        let number = self.tally.done() + 1;
        self.current = Some((number, Vec::new()));
        match self.out {
            Out::Live(_) => self.live_cell(step, detail),
            Out::Plain(_) => self.stays(&format!("{} | {detail}", self.label(step))),
        }
    }

    /// A phase ended: kept for the measurement's line, and a line of its own in plain output.
    fn phase_ended(&mut self, step: Step, figures: &PhaseFigures) {
        self.tally.phase(&figures.phase, figures.elapsed_secs, true);
        if let Some((_, phases)) = &mut self.current {
            phases.push(figures.clone());
        }
        if matches!(self.out, Out::Plain(_)) {
            let label = self.label(step);
            self.stays(&format!("{label} | {}", format::phase_ended(figures)));
        }
    }

    /// The measurement's result is in: the line it leaves.
    fn succeeded(&mut self, step: Step, detail: &str, now: Instant) {
        let label = self.label(step);
        let phases = self.current.take().map(|c| c.1).unwrap_or_default();
        self.measurement_ended(now);
        let text = match self.out {
            // The phases' figures are in the lines above; what is left is the time.
            Out::Plain(_) => format!("{label} | done ({detail})"),
            // One line per measurement: the measured phases' figures.
            Out::Live(_) => format!("{label} | {}", format::measured(&phases)),
        };
        self.stays(&text);
        self.idle();
    }

    /// The measurement failed: the line it leaves.
    fn failed(&mut self, step: Step, reason: &str, message: &str, now: Instant) {
        let label = self.label(step);
        self.current = None;
        self.measurement_ended(now);
        self.stays(&format!("{label} | FAILED ({reason}): {message}"));
        self.idle();
    }

    /// A measurement ended (measured or failed). A probe of a search is not a search done: the
    /// count of searches comes from the run's status ([`Update::Measurements`]).
    fn measurement_ended(&mut self, now: Instant) {
        if self.plan.searches {
            self.tally.probe_ended(now);
        } else {
            self.tally.finished(now);
        }
    }

    /// The run is over: its last line, and the live display goes.
    fn finished(&mut self, now: Instant) {
        let elapsed = self.tally.elapsed(now);
        let line = if self.plan.searches {
            format::searched(self.tally.done(), self.tally.probes(), elapsed)
        } else {
            format::finished(self.tally.done(), elapsed)
        };
        self.stays(&line);
        if let Out::Live(l) = &mut self.out {
            l.clear();
            self.out = Out::Plain(Box::new(std::io::stdout()));
        }
    }

    /// The live line under the bar: `step`'s short label and `text` (nothing in plain output).
    fn live_cell(&mut self, step: Step, text: &str) {
        if let Out::Live(l) = &mut self.out {
            l.cell(&format!("{} · {text}", short_label(step, &self.plan)));
        }
    }

    /// `[7/20] pool-x1 rep 2/5` for the measurement under way: its number in the run, the
    /// cell and, with repetitions, which one.
    fn label(&self, step: Step) -> String {
        let number = self.current.as_ref().map_or(self.tally.done() + 1, |c| c.0);
        format!(
            "[{number}/{}] {}",
            self.tally.total(),
            short_label(step, &self.plan)
        )
    }

    /// Between measurements the live line is empty: the last one's figures are above.
    fn idle(&mut self) {
        if let Out::Live(l) = &mut self.out {
            l.cell("");
        }
    }

    fn stays(&mut self, text: &str) {
        match &mut self.out {
            Out::Live(l) => l.println(text),
            Out::Plain(w) => {
                let _ = writeln!(w, "{text}");
                let _ = w.flush();
            }
        }
    }
}

/// `pool-x1 rep 2/5`, or the cell's name alone when it runs once.
fn short_label(step: Step, plan: &Plan) -> String {
    let cell = plan.cells.get(step.cell).map_or("?", String::as_str);
    if plan.searches {
        format!("{cell} probe {}", step.repetition)
    } else if plan.repeat > 1 {
        format!("{cell} rep {}/{}", step.repetition, plan.repeat)
    } else {
        cell.to_owned()
    }
}

#[cfg(test)]
mod tests;
