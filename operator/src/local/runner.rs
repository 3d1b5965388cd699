//! The matrix on this machine: for each cell, start the replicas, run the load generator,
//! collect, stop, move on; then write `status.yaml`, `report.md` and the charts.

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;

use benchmatrix_loadgen::request::HeaderValues;
use benchmatrix_loadgen::result::RunResult;
use benchmatrix_quota::host_cpus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::cell::{self, CellContext, CellOutcome};
use super::cgroup::Backend;
use super::progress::{self, Display, Plan, Step};
use super::signals;
use crate::api::conditions::{self, Cause, now};
use crate::api::{BenchmarkRun, BenchmarkRunStatus, CellPhase, TargetStats};
use crate::engine::{self, Ctx, Event, Measured, ValidatedRun};
use crate::plan::Cell;
use crate::report::{self, RawCell, markdown::Notes};
use crate::results;

/// How a whole run ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every cell measured.
    AllSucceeded,
    /// Some cell failed; the others ran.
    SomeFailed,
    /// Every cell ran, and a threshold of spec.thresholds failed.
    ThresholdsFailed,
    /// Stopped by SIGINT/SIGTERM.
    Interrupted,
}

impl Outcome {
    /// 0, 1, 3 (a threshold failed; before 1, as the gate is what CI asks about), or 130 (the
    /// shell's code for an interrupt).
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::AllSucceeded => ExitCode::SUCCESS,
            Outcome::SomeFailed => ExitCode::from(1),
            Outcome::ThresholdsFailed => ExitCode::from(3),
            Outcome::Interrupted => ExitCode::from(130),
        }
    }
}

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
        runner.apply(admitted, &now());
        Ok(runner)
    }

    /// Tells the run engine what happened; it writes the status (the same engine, and so the
    /// same phases, reasons and conditions, as a run on a cluster).
    fn apply(&mut self, event: Event, at: &Time) {
        let spec = self.run.spec();
        let ctx = Ctx {
            generation: None,
            now: at,
            stop_on_failure: spec.stop_on_failure,
            repeat: self.run.repeat(),
            thresholds: &spec.thresholds,
        };
        engine::apply(&mut self.status, event, &ctx);
    }

    /// Runs every cell (every repetition, interleaved) and writes the outputs; returns how it
    /// ended.
    pub fn run_all(mut self) -> Outcome {
        let mut interrupted = false;
        while let Some(step) = engine::next_step(&self.status) {
            if signals::interrupted() {
                interrupted = true;
                break;
            }
            let (done, total) = self.measurements();
            self.display
                .event(progress::Event::Measurements { done, total });
            let cell = self.run.cells()[step.cell].clone();
            let step = Step {
                index: step.cell,
                cell: cell.name.clone(),
                repetition: step.repetition,
            };
            self.apply(deploying(&cell), &now());
            let mut ctx = CellContext {
                run: &self.run,
                out: &self.out,
                backend: &self.backend,
                display: &mut self.display,
                step: &step,
                header_values: &self.header_values,
            };
            let outcome = cell::run_cell(&mut ctx, &cell);
            interrupted = self.record(&step, outcome);
            // Results so far reach the disk after every cell, so a crash loses at most one.
            self.write_status();
            if interrupted {
                break;
            }
        }
        self.finish(interrupted);
        let gate = conditions::find(&self.status.conditions, conditions::THRESHOLDS_MET);
        if interrupted {
            Outcome::Interrupted
        } else if gate.is_some_and(|c| c.status == conditions::status::FALSE) {
            Outcome::ThresholdsFailed
        } else if self
            .status
            .cells
            .iter()
            .any(|c| c.phase == CellPhase::Failed)
        {
            Outcome::SomeFailed
        } else {
            Outcome::AllSucceeded
        }
    }

    /// Measurements done, and done plus still to come: each unfinished cell's repetitions not
    /// yet measured (a failed repetition ends its cell, and so drops the cell's others).
    fn measurements(&self) -> (usize, usize) {
        let repeat = self.run.repeat() as usize;
        let left: usize = self
            .status
            .cells
            .iter()
            .filter(|c| !c.phase.is_finished())
            .map(|c| {
                let measured = c
                    .repetitions
                    .iter()
                    .filter(|r| r.phase == CellPhase::Succeeded)
                    .count();
                repeat.saturating_sub(measured)
            })
            .sum();
        (self.done, self.done + left)
    }

    /// Shows and tells the engine how the cell's current repetition went; true when it was
    /// interrupted.
    fn record(&mut self, step: &Step, outcome: CellOutcome) -> bool {
        let index = step.index;
        let interrupted = matches!(
            &outcome,
            CellOutcome::Failed { cause, .. } if *cause == Cause::Interrupted
        );
        self.done += 1;
        match &outcome {
            CellOutcome::Measured(m) => self.display.event(progress::Event::Measured {
                step,
                detail: &m.message,
            }),
            CellOutcome::Failed { cause, message, .. } => {
                self.display.event(progress::Event::Failed {
                    step,
                    reason: cause.as_str(),
                    message,
                })
            }
        }
        let (events, raw) = events_of(index, outcome, now());
        if let Some(result) = raw {
            let cell = self.run.cells()[index].name.clone();
            // The charts show the latest repetition's timeline of each cell, and say which.
            let repeat = self.run.repeat();
            self.raw.retain(|r| r.cell != cell);
            self.raw.push(RawCell {
                cell,
                result,
                repetition: (repeat > 1).then_some((step.repetition, repeat)),
            });
        }
        for (event, at) in events {
            self.apply(event, &at);
        }
        interrupted
    }

    fn finish(&mut self, interrupted: bool) {
        // The same end, reasons and conditions as a run on a cluster.
        self.apply(Event::Finished { interrupted }, &now());
        self.write_status();
        let notes = Notes {
            source: self.source.display().to_string(),
            machine: machine_line(),
            workload: workload_line(self.run.run()),
            extra: self.fallback_notice.iter().cloned().collect(),
        };
        self.display.event(progress::Event::Finished);
        match report::write_report(&self.out, &self.status, &self.raw, &notes) {
            Ok(files) => {
                self.display.line("");
                self.display
                    .line(report::comparison_table(&self.status).trim_end());
                // As wide as the table above.
                let wrapped = |text: String| {
                    report::wrap(&text, report::TABLE_WIDTH)
                        .trim_end()
                        .to_string()
                };
                if let Some(gate) =
                    conditions::find(&self.status.conditions, conditions::THRESHOLDS_MET)
                {
                    self.display.line("");
                    self.display
                        .line(&wrapped(format!("thresholds: {}", gate.message)));
                }
                if let Some(r) = self
                    .status
                    .summary
                    .as_ref()
                    .and_then(|s| s.recommendation.as_deref())
                {
                    self.display.line(&wrapped(format!("recommendation: {r}")));
                }
                self.display.line(&format!(
                    "\nwrote {} and {} more file(s) in {}",
                    self.out.join("status.yaml").display(),
                    files.len(),
                    self.out.display()
                ));
            }
            Err(e) => eprintln!("benchmatrix run: cannot write the report: {e}"),
        }
        self.backend.remove();
    }

    fn write_status(&self) {
        let path = self.out.join("status.yaml");
        match serde_yaml::to_string(&self.status) {
            Ok(text) => {
                if let Err(e) = report::write_atomically(&path, text.as_bytes()) {
                    eprintln!("benchmatrix run: cannot write {}: {e}", path.display());
                }
            }
            Err(e) => eprintln!("benchmatrix run: cannot serialize the status: {e}"),
        }
    }
}

/// The run engine's event for a cell (repetition) about to start.
pub(crate) fn deploying(cell: &Cell) -> Event {
    Event::CellDeploying {
        cell: cell.index,
        message: format!(
            "starting {} x {} replica(s), cpu {} each",
            cell.mode,
            cell.replicas,
            cell.cpu.as_str()
        ),
    }
}

/// The run engine's events for how one cell's current repetition went (each with the time it
/// happened; `ended` is now), and the load generator's raw result for the charts.
pub(crate) fn events_of(
    index: usize,
    outcome: CellOutcome,
    ended: Time,
) -> (Vec<(Event, Time)>, Option<RunResult>) {
    let load_started = |at: Time| {
        let event = Event::LoadStarted {
            cell: index,
            message: "load generator running".into(),
            target_pods: Vec::new(),
        };
        (event, at)
    };
    match outcome {
        CellOutcome::Measured(m) => {
            let m = *m;
            let measured = Measured {
                results: m.results,
                // No figure at all is no target section, as on a cluster.
                target: Some(m.target).filter(|t| *t != TargetStats::default()),
                enforcement: Some(m.enforcement),
                overhead_seconds: Some(m.overhead_seconds),
                message: m.message,
                histograms: results::histograms(&m.raw),
            };
            let event = Event::CellMeasured {
                cell: index,
                measured: Box::new(measured),
            };
            (
                vec![load_started(m.load_start_time), (event, ended)],
                Some(m.raw),
            )
        }
        CellOutcome::Failed {
            cause,
            message,
            overhead_seconds,
            load_start_time,
            enforcement,
            ..
        } => {
            let event = Event::CellFailed {
                cell: index,
                cause,
                message,
                overhead_seconds: Some(overhead_seconds),
                enforcement,
            };
            let events = load_start_time
                .map(load_started)
                .into_iter()
                .chain([(event, ended)])
                .collect();
            (events, None)
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

/// "warm-up 15s, then fast-only 30s, mixed 75s".
pub fn workload_line(run: &BenchmarkRun) -> String {
    let w = &run.spec.workload;
    let phases: Vec<String> = w
        .phases
        .iter()
        .map(|p| format!("{} {:?}", p.name, p.duration.0))
        .collect();
    format!(
        "warm-up {:?}, then {}; load generator cpu {}",
        w.warmup.0,
        phases.join(", "),
        run.spec.loadgen.cpu.as_str()
    )
}
