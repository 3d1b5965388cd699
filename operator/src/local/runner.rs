//! The matrix on this machine: for each cell, start the replicas, run the load generator,
//! collect, stop, move on; then write `status.yaml`, `report.md` and the charts.

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;

use super::cell::{self, CellContext, CellOutcome};
use super::cgroup::{Backend, host_cpus};
use super::progress::Display;
use super::signals;
use crate::api::conditions::{cause, now};
use crate::api::{BenchmarkRun, BenchmarkRunStatus, CellPhase, CellStatus, RunPhase};
use crate::plan;
use crate::report::{self, RawCell, markdown::Notes};
use crate::results;
use crate::run_end::finish_run;

/// How a whole run ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every cell measured.
    AllSucceeded,
    /// Some cell failed; the others ran.
    SomeFailed,
    /// Stopped by SIGINT/SIGTERM.
    Interrupted,
}

impl Outcome {
    /// 0, 1, or 130 (the shell's code for an interrupt).
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::AllSucceeded => ExitCode::SUCCESS,
            Outcome::SomeFailed => ExitCode::from(1),
            Outcome::Interrupted => ExitCode::from(130),
        }
    }
}

/// Everything one run needs besides the spec.
pub struct Runner {
    run: BenchmarkRun,
    source: PathBuf,
    out: PathBuf,
    backend: Backend,
    display: Display,
    status: BenchmarkRunStatus,
    raw: Vec<RawCell>,
    fallback_notice: Option<String>,
}

impl Runner {
    /// Prepares a run of `run` (already validated) writing into `out`.
    pub fn new(run: BenchmarkRun, source: PathBuf, out: PathBuf) -> std::io::Result<Runner> {
        fs::create_dir_all(out.join("logs"))?;
        fs::create_dir_all(out.join("results"))?;
        fs::create_dir_all(out.join("plans"))?;
        let cells = plan::cells(&run.spec);
        let backend = Backend::detect();
        let mut display = Display::new(cells.len());
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
        let status = BenchmarkRunStatus {
            phase: RunPhase::Running,
            start_time: Some(now()),
            cells: cells
                .iter()
                .map(|c| CellStatus {
                    name: c.name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        Ok(Runner {
            run,
            source,
            out,
            backend,
            display,
            status,
            raw: Vec::new(),
            fallback_notice,
        })
    }

    /// Runs every cell and writes the outputs; returns how it ended.
    pub fn run_all(mut self) -> Outcome {
        let cells = plan::cells(&self.run.spec);
        let mut outcome = Outcome::AllSucceeded;
        for cell in &cells {
            if signals::interrupted() {
                outcome = Outcome::Interrupted;
                break;
            }
            self.status.message = Some(format!("running cell {}", cell.name));
            let mut ctx = CellContext {
                spec: &self.run.spec,
                out: &self.out,
                backend: &self.backend,
                display: &mut self.display,
            };
            let mut cell_outcome = cell::run_cell(&mut ctx, cell);
            if let CellOutcome::Measured(m) = &mut cell_outcome {
                self.raw.push(RawCell {
                    cell: cell.name.clone(),
                    result: std::mem::take(&mut m.raw),
                });
            }
            let cs = &mut self.status.cells[cell.index];
            record_outcome(cs, cell_outcome);
            let failed = cs.phase == CellPhase::Failed;
            let interrupted = cs.reason.as_deref() == Some(cause::INTERRUPTED);
            self.status.progress = Some(results::progress(&self.status));
            // Results so far reach the disk after every cell, so a crash loses at most one.
            self.write_status();
            if interrupted {
                outcome = Outcome::Interrupted;
                break;
            }
            if failed {
                outcome = Outcome::SomeFailed;
                if self.run.spec.stop_on_failure {
                    for c in self.status.cells.iter_mut().skip(cell.index + 1) {
                        c.phase = CellPhase::Skipped;
                        c.message = Some("an earlier cell failed and stopOnFailure is set".into());
                    }
                    break;
                }
            }
        }
        self.finish(outcome);
        outcome
    }

    fn finish(&mut self, outcome: Outcome) {
        // The same end, reasons and conditions as a run on a cluster.
        finish_run(
            &mut self.status,
            outcome == Outcome::Interrupted,
            None,
            &now(),
        );
        self.write_status();
        let notes = Notes {
            source: self.source.display().to_string(),
            machine: machine_line(),
            workload: workload_line(&self.run),
            extra: self.fallback_notice.iter().cloned().collect(),
        };
        match report::write_report(&self.out, &self.status, &self.raw, &notes) {
            Ok(files) => {
                self.display.line("");
                self.display
                    .line(report::comparison_table(&self.status).trim_end());
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
                // Write then rename, so an interrupted write never leaves half a document.
                // On a full disk the write fails and the last whole status.yaml stays.
                let tmp = path.with_extension("yaml.tmp");
                if let Err(e) = fs::write(&tmp, text).and_then(|_| fs::rename(&tmp, &path)) {
                    let _ = fs::remove_file(&tmp);
                    eprintln!("benchmatrix run: cannot write {}: {e}", path.display());
                }
            }
            Err(e) => eprintln!("benchmatrix run: cannot serialize the status: {e}"),
        }
    }
}

// The status entry a cell's outcome makes. This is the one place the local runner writes a
// cell's status; the shared run engine is meant to take it over.
/// Records `outcome` as the cell's status entry `cs`, replacing everything but its name.
pub fn record_outcome(cs: &mut CellStatus, outcome: CellOutcome) {
    let name = std::mem::take(&mut cs.name);
    *cs = match outcome {
        CellOutcome::Measured(m) => CellStatus {
            name,
            phase: CellPhase::Succeeded,
            message: Some(m.message),
            start_time: Some(m.start_time),
            load_start_time: Some(m.load_start_time),
            completion_time: Some(now()),
            target: Some(m.target),
            results: m.results,
            enforcement: Some(m.enforcement),
            overhead_seconds: Some(m.overhead_seconds),
            ..Default::default()
        },
        CellOutcome::Failed {
            cause,
            message,
            overhead_seconds,
            start_time,
            load_start_time,
            enforcement,
        } => CellStatus {
            name,
            phase: CellPhase::Failed,
            reason: Some(cause.to_string()),
            message: Some(message),
            start_time: Some(start_time),
            load_start_time,
            completion_time: Some(now()),
            enforcement,
            overhead_seconds: Some(overhead_seconds),
            ..Default::default()
        },
    };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::conditions::time_from_secs;

    #[test]
    fn a_failed_cell_is_recorded_with_its_cause_and_nothing_it_did_not_reach() {
        let mut cs = CellStatus {
            name: "a".into(),
            ..Default::default()
        };
        record_outcome(
            &mut cs,
            CellOutcome::Failed {
                cause: cause::TIMEOUT,
                message: "ran too long".into(),
                overhead_seconds: 1.25,
                start_time: time_from_secs(1_000),
                load_start_time: None,
                enforcement: None,
            },
        );
        let yaml: serde_yaml::Value = serde_yaml::to_value(&cs).unwrap();
        let keys: Vec<&str> = yaml
            .as_mapping()
            .unwrap()
            .keys()
            .filter_map(|k| k.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "name",
                "phase",
                "reason",
                "message",
                "startTime",
                "completionTime",
                "overheadSeconds"
            ]
        );
        assert_eq!(cs.name, "a");
        assert_eq!(cs.phase, CellPhase::Failed);
        assert_eq!(cs.reason.as_deref(), Some("Timeout"));
        assert_eq!(cs.message.as_deref(), Some("ran too long"));
        assert_eq!(cs.start_time, Some(time_from_secs(1_000)));
        assert_eq!(cs.overhead_seconds, Some(1.25));
    }
}
