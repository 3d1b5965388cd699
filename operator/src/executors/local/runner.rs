//! The matrix on this machine: the run engine's executor for one machine. It drives the run to
//! its end with `engine::drive::run_to_end` — each turn looks at the step's processes, tells the
//! machine, and does what it commands with processes — then writes `status.yaml`, `report.md`
//! and the charts.
//!
//! Between turns it sleeps until something it watches changes (`super::wake`): a process of
//! the step ends, the replicas answer, the load generator's output ends, a signal; or until
//! the machine's [`Command::WakeIn`] is due. Progress lines and CPU readings at phase
//! boundaries are taken while it waits, without a turn.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use benchmatrix_loadgen::request::HeaderValues;
use benchmatrix_loadgen::result::RunResult;
use benchmatrix_quota::host_cpus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::cell::{CellContext, LocalStep};
use super::cgroup::Backend;
use super::signals;
use super::wake::{WakeKind, Wakes};
use crate::engine::drive::{self, Executor, Waits};
use crate::engine::machine::{Command, Look, Seen};
use crate::engine::schedule::Measurements;
use crate::engine::{Load, Step};
use crate::frontends::progress::{self, Display, Plan};
use crate::frontends::report::markdown::{self, Notes};
use crate::frontends::report::{self, RawCell};
use crate::resource::conditions::now;
use crate::resource::{BenchmarkRunStatus, CellPhase, ValidatedRun};

/// Everything one run needs besides the spec, and the step under way.
pub struct Runner {
    run: ValidatedRun,
    source: PathBuf,
    out: PathBuf,
    backend: Backend,
    display: Display,
    raw: Vec<RawCell>,
    fallback_notice: Option<String>,
    /// Header values from `--secrets`, handed to every load generator through its environment.
    header_values: HeaderValues,
    /// The benchmatrix program that serves as the built-in target and the load generator.
    program: PathBuf,
    /// The step whose processes run, the measurement it shows as (a capacity probe by its
    /// number, see [`Step::shown_as`]), and its number in the order run (wakes carry it).
    current: Option<(LocalStep, Step, u64)>,
    steps_started: u64,
    wakes: Wakes,
    /// `--max-regression`: the report and the closing lines mark variants as it judges them.
    max_regression: Option<f64>,
}

impl Runner {
    /// Prepares a run of `run` writing into `out`; `header_values` are what its Secret-held
    /// headers need (see [`super::secrets::read`]). Its progress goes to stdout.
    pub fn new(
        run: ValidatedRun,
        source: PathBuf,
        out: PathBuf,
        header_values: HeaderValues,
    ) -> std::io::Result<Runner> {
        let display = Display::new(Plan::of(&run));
        Runner::with_display(run, source, out, header_values, display)
    }

    /// As [`Runner::new`], showing progress on `display`.
    pub fn with_display(
        run: ValidatedRun,
        source: PathBuf,
        out: PathBuf,
        header_values: HeaderValues,
        mut display: Display,
    ) -> std::io::Result<Runner> {
        fs::create_dir_all(out.join("logs"))?;
        fs::create_dir_all(out.join("results"))?;
        fs::create_dir_all(out.join("plans"))?;
        let backend = Backend::detect();
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
        let wakes = Wakes::default();
        signals::wake_on_signal(wakes.waker(0));
        // This program re-executed: a fresh checkout needs nothing installed.
        let program = std::env::current_exe()?;
        Ok(Runner {
            run,
            source,
            out,
            backend,
            display,
            raw: Vec::new(),
            fallback_notice,
            header_values,
            program,
            current: None,
            steps_started: 0,
            wakes,
            max_regression: None,
        })
    }

    /// Marks the report's and the closing lines' variants as `--max-regression` judges them,
    /// as the exit code does.
    pub fn with_max_regression(mut self, max_regression: Option<f64>) -> Runner {
        self.max_regression = max_regression;
        self
    }

    /// Serves the built-in target and the load generator with `program` (a benchmatrix binary)
    /// instead of this program: for a process that is not benchmatrix itself, such as a test.
    pub fn with_program(mut self, program: PathBuf) -> Runner {
        self.program = program;
        self
    }

    /// Runs every cell (every repetition, interleaved) and writes the outputs; returns the
    /// final status. The engine's machine decides each step; this only does what it commands
    /// and tells it what the processes show.
    pub fn run_to_end(mut self) -> BenchmarkRunStatus {
        let mut status = BenchmarkRunStatus::default();
        let run = self.run.clone();
        if let Some(line) = one_at_a_time(&run) {
            eprintln!("{line}");
        }
        drive::run_to_end(&mut status, &run, &mut self);
        self.finish(&status);
        status
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
            program: &self.program,
        }
    }

    /// Starts the step `at`: its replicas, watched.
    fn deploy(&mut self, status: &BenchmarkRunStatus, at: Step) {
        let Measurements { done, total } = Measurements::of(status, self.run.repeat());
        self.display
            .show(progress::Update::Measurements { done, total });
        self.steps_started += 1;
        let number = self.steps_started;
        let mut local = LocalStep::new(&self.run.cells()[at.cell], self.wakes.waker(number));
        let shown = at.shown_as(status);
        local.deploy(&mut self.cell_context(shown));
        self.current = Some((local, shown, number));
    }

    /// The step `at` starts `load`: a capacity probe at its own rate, on a kept target after
    /// its settle (shown as the probe's start) or on the one just deployed.
    fn start_load(&mut self, status: &BenchmarkRunStatus, at: Step, load: &Load) {
        let shown = at.shown_as(status);
        if let Some((_, current, _)) = self.current.as_mut() {
            if let Some(settle) = load.on_kept_target() {
                let detail = format!("on the same target, after settling {settle} s");
                self.display.show(progress::Update::Started {
                    step: shown,
                    detail: &detail,
                });
            }
            *current = shown;
        }
        self.with_current(|local, cx| local.start_load(cx, load));
    }

    /// The step under way, with what it needs of the run.
    fn with_current(&mut self, f: impl FnOnce(&mut LocalStep, &mut CellContext)) {
        let Some((mut local, at, number)) = self.current.take() else {
            return;
        };
        f(&mut local, &mut self.cell_context(at));
        self.current = Some((local, at, number));
    }

    /// A step has ended (the engine has recorded how): shows it, keeps its raw result for the
    /// charts, and writes the status so far, so a crash loses at most one step.
    fn step_ended(&mut self, status: &BenchmarkRunStatus, step: Step, raw: Option<RunResult>) {
        if let Some(c) = status.cells.get(step.cell) {
            let last = c
                .repetitions
                .last()
                .filter(|_| self.run.repeat().is_repeated());
            let (phase, reason, message) = match last {
                Some(r) => (r.phase, r.reason.clone(), r.message.clone()),
                None => (c.phase, c.reason.clone(), c.message.clone()),
            };
            let message = message.unwrap_or_default();
            // Pending: the step measured and the cell is back in line for its next (a
            // capacity probe, a repetition): not a failure.
            // Deploying: a probe measured, its target kept for the next.
            if matches!(
                phase,
                CellPhase::Succeeded | CellPhase::Pending | CellPhase::Deploying
            ) {
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
            self.keep_raw(status, step, result);
        }
        write_status(&self.out, status);
    }

    /// Keeps the latest repetition's result of each cell: the charts show its timeline, and
    /// say which repetition it is of how many the cell took once it is done, else of the most
    /// it may take.
    fn keep_raw(&mut self, status: &BenchmarkRunStatus, step: Step, result: RunResult) {
        let cell = self.run.cells()[step.cell].name.clone();
        let repeat = self.run.repeat();
        let of = match status.cells.get(step.cell) {
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

    /// Writes the outputs of the run that ended in `status` (`status.yaml`, `report.md`, the
    /// charts) and removes the run's cgroups.
    pub fn finish(&mut self, status: &BenchmarkRunStatus) {
        write_status(&self.out, status);
        let notes = Notes {
            source: self.source.display().to_string(),
            machine: machine_line(),
            workload: markdown::workload_line(&self.run),
            extra: self.fallback_notice.iter().cloned().collect(),
            max_regression: self.max_regression,
        };
        self.display.run_ended(status, self.run.repeat());
        match report::write_report(&self.out, status, &self.raw, &notes) {
            Ok(files) => {
                for line in
                    report::finished_lines(status, &self.out, files.len(), self.max_regression)
                {
                    self.display.line(&line);
                }
            }
            Err(e) => eprintln!("benchmatrix run: cannot write the report: {e}"),
        }
        self.backend.remove();
    }
}

impl Executor for Runner {
    fn look(&mut self, _status: &BenchmarkRunStatus, look: Look, _now: &Time) -> Seen {
        let mut seen = Seen::default();
        if matches!(look, Look::Target { .. } | Look::Load { .. }) {
            self.with_current(|local, cx| seen = local.look(cx, look));
        }
        seen.interrupted = signals::interrupted();
        seen
    }

    fn carry_out(&mut self, status: &BenchmarkRunStatus, command: &Command) {
        match *command {
            Command::Deploy(at) => self.deploy(status, at),
            Command::StartLoad { at, ref load } => self.start_load(status, at, load),
            Command::Collect(_) => self.with_current(|local, _| local.collect()),
            Command::EndLoad(_) => {
                // The probe ended; its target stays for the next one.
                if let Some((local, shown, _)) = self.current.as_mut() {
                    local.end_load();
                    let (shown, raw) = (*shown, local.raw.take());
                    self.step_ended(status, shown, raw);
                }
            }
            Command::Stop { .. } => {
                if let Some((mut local, shown, _)) = self.current.take() {
                    local.stop();
                    self.step_ended(status, shown, local.raw.take());
                }
            }
            Command::WakeIn(_) | Command::Ended => {}
        }
    }
}

impl Waits for Runner {
    fn now(&mut self) -> Time {
        now()
    }

    fn wait(&mut self, at_most: Duration) {
        let deadline = Instant::now() + at_most;
        loop {
            let Some((local, _, number)) = self.current.as_mut() else {
                // No step runs: only a signal could change anything, and the machine asked
                // for this wait.
                if let Some(w) = self.wakes.next(deadline)
                    && !matches!(w.kind, WakeKind::Signal)
                {
                    continue;
                }
                return;
            };
            if local.has_news() {
                return;
            }
            let until = local.next_reading().map_or(deadline, |r| r.min(deadline));
            let number = *number;
            match self.wakes.next(until) {
                // A late wake of a step already stopped.
                Some(w) if w.step != number && !matches!(w.kind, WakeKind::Signal) => {}
                // For the display only: no news to the machine.
                Some(w) if matches!(w.kind, WakeKind::Progress(_)) => {
                    if let WakeKind::Progress(p) = w.kind {
                        self.with_current(|local, cx| local.progress(cx, &p));
                    }
                }
                // News to the machine: the load is over once the output has closed too
                // (see `supervise::Watch`), which is also when its last lines are shown.
                Some(w) if matches!(w.kind, WakeKind::OutputClosed) => {
                    self.with_current(|local, _| local.output_closed());
                    return;
                }
                Some(_) => return,
                None => {
                    self.with_current(|local, _| local.take_readings());
                    if Instant::now() >= deadline {
                        return;
                    }
                }
            }
        }
    }
}

/// What a local run of a parallel spec says once, as it starts: one machine has no separate
/// nodes, so its cells are measured one at a time (the same YAML runs in parallel on a
/// cluster); `None` for a spec that asks for one at a time.
pub fn one_at_a_time(run: &ValidatedRun) -> Option<String> {
    let p = run.spec().parallelism;
    p.is_parallel().then(|| {
        format!(
            "benchmatrix run: spec.parallelism is {p}, but one machine has no separate nodes: \
             the cells are measured one at a time"
        )
    })
}

fn write_status(out: &Path, status: &BenchmarkRunStatus) {
    if let Err(e) = report::write_status(out, status) {
        eprintln!(
            "benchmatrix run: cannot write {}: {e}",
            out.join("status.yaml").display()
        );
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
