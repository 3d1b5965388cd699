//! The matrix on this machine: for each cell, start the replicas, run the load generator,
//! collect, stop, move on; then write `status.yaml`, `report.md` and the charts.

use std::fs;
use std::path::PathBuf;

use benchmatrix_loadgen::request::HeaderValues;
use benchmatrix_loadgen::result::RunResult;
use benchmatrix_quota::host_cpus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::cell::{CellContext, LocalStep, supervise};
use super::cgroup::Backend;
use super::replica_set::READY_POLL;
use super::signals;
use crate::engine::Step;
use crate::engine::machine::{self, Command, Look, Seen};
use crate::engine::schedule::Measurements;
use crate::engine::verdict::outcome::Outcome;
use crate::engine::{self, Ctx, Event};
use crate::frontends::progress::{self, Display, Plan};
use crate::frontends::report::markdown::{self, Notes};
use crate::frontends::report::{self, RawCell};
use crate::resource::ValidatedRun;
use crate::resource::conditions::now;
use crate::resource::{BenchmarkRunStatus, CellPhase};

/// Everything one run needs besides the spec.
pub struct Runner {
    run: ValidatedRun,
    source: PathBuf,
    out: PathBuf,
    backend: Backend,
    display: Display,
    /// Measurements (cell repetitions) done, measured or failed.
    done: usize,
    status: BenchmarkRunStatus,
    raw: Vec<RawCell>,
    fallback_notice: Option<String>,
    /// Header values from `--secrets`, handed to every load generator through its environment.
    header_values: HeaderValues,
}

impl Runner {
    /// Prepares a run of `run` writing into `out`; `header_values` are what its Secret-held
    /// headers need (see [`super::secrets::read`]).
    pub fn new(
        run: ValidatedRun,
        source: PathBuf,
        out: PathBuf,
        header_values: HeaderValues,
    ) -> std::io::Result<Runner> {
        fs::create_dir_all(out.join("logs"))?;
        fs::create_dir_all(out.join("results"))?;
        fs::create_dir_all(out.join("plans"))?;
        let backend = Backend::detect();
        let mut display = Display::new(Plan::of(&run));
        let fallback_notice = match &backend {
            Backend::Affinity { reason } => {
                let n = format!(
                    "note: no writable cgroup for CPU limits ({reason}); falling back to CPU \
                     affinity, which limits parallelism but not CPU time. Every cell records this."
                );
                display.line(&n);
                Some(n)
            }
            _ => None,
        };
        let mut runner = Runner {
            run,
            source,
            out,
            backend,
            display,
            done: 0,
            status: BenchmarkRunStatus::default(),
            raw: Vec::new(),
            fallback_notice,
            header_values,
        };
        let admitted = Event::admitted(runner.run.cells());
        runner.record(admitted, &now());
        Ok(runner)
    }

    /// What the step `step` of a cell needs of the run.
    fn cell_context(&mut self, step: Step) -> CellContext<'_> {
        CellContext {
            run: &self.run,
            out: &self.out,
            backend: &self.backend,
            display: &mut self.display,
            step,
            header_values: &self.header_values,
        }
    }

    /// Tells the run engine what happened; it writes the status (the same engine, and so the
    /// same phases, reasons and conditions, as a run on a cluster).
    fn record(&mut self, event: Event, at: &Time) {
        let ctx = Ctx::of(&self.run, None, at);
        engine::reduce(&mut self.status, event, &ctx);
    }

    /// Runs every cell (every repetition, interleaved) and writes the outputs; returns how it
    /// ended. The engine's machine decides each step; this only does what it commands and
    /// tells it what the processes show, as it happens.
    pub fn run_all(mut self) -> Outcome {
        let mut current: Option<(LocalStep, Step)> = None;
        loop {
            let at = now();
            let look = machine::look(&self.status, &at, self.run.planned_load());
            let mut seen = match (&mut current, look) {
                (Some((local, step)), Look::Target(_) | Look::Load { .. }) => {
                    let mut cx = self.cell_context(*step);
                    local.look(&mut cx, look)
                }
                _ => Seen::default(),
            };
            seen.interrupted = signals::interrupted();
            let ctx = Ctx::of(&self.run, None, &at);
            let advance = machine::advance(&mut self.status, seen, &ctx);
            let acted = advance
                .commands
                .iter()
                .any(|c| !matches!(c, Command::WakeIn(_)));
            let mut ended = false;
            for command in advance.commands {
                ended |= self.carry_out(command, &mut current);
            }
            if ended {
                break;
            }
            if !acted {
                std::thread::sleep(match look {
                    Look::Target(_) => READY_POLL,
                    _ => supervise::POLL,
                });
            }
        }
        self.finish();
        Outcome::of(&self.status)
    }

    /// Does what the machine said, with processes: `current` is the step whose target and load
    /// generator run. True when the machine says the run has ended.
    fn carry_out(&mut self, command: Command, current: &mut Option<(LocalStep, Step)>) -> bool {
        match command {
            Command::Deploy(at) => {
                let Measurements { done, total } =
                    Measurements::of(&self.status, self.run.repeat());
                self.display
                    .show(progress::Update::Measurements { done, total });
                let mut local = LocalStep::new(&self.run, &self.run.cells()[at.cell]);
                local.deploy(&mut self.cell_context(at));
                *current = Some((local, at));
            }
            Command::StartLoad(_) => {
                if let Some((local, step)) = current {
                    local.start_load(&mut self.cell_context(*step));
                }
            }
            Command::Collect(_) => {
                if let Some((local, step)) = current {
                    local.collect(&mut self.cell_context(*step));
                }
            }
            Command::Stop { at, .. } => {
                if let Some((mut local, _)) = current.take() {
                    local.stop();
                    self.step_ended(at, local.raw.take());
                }
            }
            Command::WakeIn(_) => {}
            Command::Ended => return true,
        }
        false
    }

    /// A step has ended (the engine has recorded how): shows it, keeps its raw result for the
    /// charts, and writes the status so far, so a crash loses at most one step.
    fn step_ended(&mut self, step: Step, raw: Option<RunResult>) {
        self.done += 1;
        if let Some(c) = self.status.cells.get(step.cell) {
            let last = c
                .repetitions
                .last()
                .filter(|_| self.run.repeat().is_repeated());
            let (phase, reason, message) = match last {
                Some(r) => (r.phase, r.reason.clone(), r.message.clone()),
                None => (c.phase, c.reason.clone(), c.message.clone()),
            };
            let message = message.unwrap_or_default();
            if phase == CellPhase::Succeeded {
                self.display.show(progress::Update::Succeeded {
                    step,
                    detail: &message,
                });
            } else {
                self.display.show(progress::Update::Failed {
                    step,
                    reason: reason.as_deref().unwrap_or(""),
                    message: &message,
                });
            }
        }
        if let Some(result) = raw {
            let cell = self.run.cells()[step.cell].name.clone();
            // The charts show the latest repetition's timeline of each cell, and say which: of
            // how many it took once the cell is done, else of the most it may take.
            let repeat = self.run.repeat();
            let of = match self.status.cells.get(step.cell) {
                Some(c) if c.phase.is_finished() && !c.repetitions.is_empty() => {
                    c.repetitions.len() as u32
                }
                _ => repeat.max_rounds(),
            };
            self.raw.retain(|r| r.cell != cell);
            self.raw.push(RawCell {
                cell,
                result,
                repetition: repeat.is_repeated().then_some((step.repetition, of)),
            });
        }
        self.write_status();
    }

    fn finish(&mut self) {
        self.write_status();
        let notes = Notes {
            source: self.source.display().to_string(),
            machine: machine_line(),
            workload: markdown::workload_line(self.run.run()),
            extra: self.fallback_notice.iter().cloned().collect(),
        };
        self.display.show(progress::Update::Finished);
        match report::write_report(&self.out, &self.status, &self.raw, &notes) {
            Ok(files) => {
                for line in report::finished_lines(&self.status, &self.out, files.len()) {
                    self.display.line(&line);
                }
            }
            Err(e) => eprintln!("benchmatrix run: cannot write the report: {e}"),
        }
        self.backend.remove();
    }

    fn write_status(&self) {
        if let Err(e) = report::write_status(&self.out, &self.status) {
            eprintln!(
                "benchmatrix run: cannot write {}: {e}",
                self.out.join("status.yaml").display()
            );
        }
    }
}

/// "2 CPUs, Linux 6.1.0 (x86_64)".
pub fn machine_line() -> String {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{} CPUs, Linux {} ({})",
        host_cpus(),
        release.trim(),
        std::env::consts::ARCH
    )
}
