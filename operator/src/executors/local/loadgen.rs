//! The load generator as a child process: this binary re-executed as `benchmatrix loadgen`,
//! in its own cgroup, with its `--progress-json` lines read live from its stderr and handed to
//! the runner as wakes (and its output's end as one more).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use benchmatrix_loadgen::request::HeaderValues;

use super::cgroup::Cgroup;
use super::guard;
use super::process::{self, stop_children, tie_to_runner};
use super::replica_set::{stop_grace, tail};
use super::wake::{WakeKind, Waker};
use crate::frontends::progress::ProgressLine;

/// A running load generator.
#[derive(Debug)]
pub struct Loadgen {
    child: Option<Child>,
    /// Kept for [`Loadgen::stop`], which removes it once the child is gone.
    cgroup: Cgroup,
    /// Its log file (stdout, and stderr lines that are not progress).
    pub log: PathBuf,
}

impl Loadgen {
    /// Starts `PROGRAM loadgen --plan PLAN --out OUT --progress-json` inside `cgroup`, with
    /// `header_values` (the variables the plan's `valueFrom.env` name) in its environment; its
    /// progress lines, and the end of its output, go to `waker`.
    pub fn start(
        program: &Path,
        plan: &Path,
        out: &Path,
        log: &Path,
        cgroup: Cgroup,
        header_values: &HeaderValues,
        waker: Waker,
    ) -> std::io::Result<Loadgen> {
        let log_file = File::create(log)?;
        let mut cmd = Command::new(program);
        cmd.arg("loadgen")
            .arg("--plan")
            .arg(plan)
            .arg("--out")
            .arg(out)
            .arg("--progress-json")
            .envs(header_values.iter())
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file.try_clone()?))
            .stderr(Stdio::piped());
        cgroup.apply_to(&mut cmd);
        tie_to_runner(&mut cmd);
        let mut child = cmd.spawn()?;
        guard::watch(child.id());
        let stderr = child.stderr.take();
        // One reader thread: progress lines to the runner (for the display), everything else
        // to the log, so a failing load generator's own words end up in the cell's message.
        std::thread::spawn(move || {
            if let Some(stderr) = stderr {
                let mut log_file = log_file;
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    match ProgressLine::parse(&line) {
                        Some(p) => {
                            if !waker.wake(WakeKind::Progress(p)) {
                                return;
                            }
                        }
                        None => {
                            let _ = writeln!(log_file, "{line}");
                        }
                    }
                }
            }
            // Last, after every line is handed over or logged, from this one thread: the runner
            // takes the load as over only from here (see `cell::supervise::Watch`).
            waker.wake(WakeKind::OutputClosed);
        });
        Ok(Loadgen {
            child: Some(child),
            cgroup,
            log: log.to_path_buf(),
        })
    }

    /// The exit status once it has ended (reaping it); `None` while it runs.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        process::exit_status(self.child.as_mut()?)
    }

    /// Its process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Its last lines of output, for failure messages.
    pub fn last_words(&self) -> String {
        tail(&self.log, 5)
    }

    /// Stops it (SIGTERM, then SIGKILL) and removes its cgroup.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            if process::is_running(&mut c) {
                stop_children(&mut [&mut c], stop_grace().min(Duration::from_secs(2)));
            } else {
                let _ = c.wait();
                guard::unwatch(c.id());
            }
        }
        self.cgroup.remove();
    }
}

impl Drop for Loadgen {
    fn drop(&mut self) {
        self.stop();
    }
}
