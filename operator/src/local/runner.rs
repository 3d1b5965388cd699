//! The matrix on this machine: for each cell, start the replicas, run the load generator,
//! collect, stop, move on; then write `status.yaml`, `report.md` and the charts.

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use benchmatrix_loadgen::plan::PlanFile;
use benchmatrix_loadgen::result::RunResult;
use benchmatrix_quota::host_cpus;

use super::cgroup::{Backend, CpuUsage, Enforcement as Enforced};
use super::http;
use super::loadgen::Loadgen;
use super::progress::Display;
use super::replicas::{Launch, ReplicaSet, free_port};
use super::signals;
use crate::api::conditions::{cause, now};
use crate::api::{
    BenchmarkRun, BenchmarkRunStatus, CellPhase, CellStatus, Enforcement, ReplicaPhaseShare,
    ReplicaShare, RunPhase, TargetStats,
};
use crate::plan::{self, Cell};
use crate::report::{self, RawCell, markdown::Notes};
use crate::results;
use crate::run_end::finish_run;

/// How often the runner looks at a running cell. Each look is a few system calls; the load
/// generator's end is noticed up to one interval late, and that lateness adds to every cell's
/// overhead (at 50 ms it was 25 ms on average).
const POLL: Duration = Duration::from_millis(20);

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
            let cs = self.run_cell(cell);
            let failed = cs.phase == CellPhase::Failed;
            let interrupted = cs.reason.as_deref() == Some(cause::INTERRUPTED);
            self.status.cells[cell.index] = cs;
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

    fn run_cell(&mut self, cell: &Cell) -> CellStatus {
        let started = Instant::now();
        let spec = &self.run.spec;
        let mut cs = CellStatus {
            name: cell.name.clone(),
            phase: CellPhase::Deploying,
            start_time: Some(now()),
            ..Default::default()
        };
        let cpu = cell.cpu.cpu_cores().ok();
        let fail = |mut cs: CellStatus, reason: &str, message: String, started: Instant| {
            cs.phase = CellPhase::Failed;
            cs.reason = Some(reason.to_string());
            cs.message = Some(message);
            cs.completion_time = Some(now());
            cs.overhead_seconds = Some(round2(started.elapsed().as_secs_f64()));
            cs
        };
        let port = match free_port() {
            Ok(p) => p,
            Err(e) => {
                return fail(
                    cs,
                    cause::SPAWN_FAILED,
                    format!("no free port: {e}"),
                    started,
                );
            }
        };
        let launch = Launch {
            cell: cell.name.clone(),
            command: spec.target.command.clone(),
            mode: cell.mode.as_str().to_string(),
            pool_size: cell.pool_size.env_value(),
            env: cell
                .env
                .iter()
                .map(|e| (e.name.clone(), e.value.clone()))
                .collect(),
            replicas: cell.replicas,
            cpu,
            port,
            spread: spec.workload.spread,
            readiness_path: spec.target.readiness_path.clone(),
            ready_timeout: spec.timeouts.ready.0,
            log_dir: self.out.join("logs"),
        };
        self.display.cell(
            cell.index,
            &cell.name,
            &format!(
                "starting {} x {} replica(s), cpu {} each ({}), port {port}",
                cell.mode,
                cell.replicas,
                cell.cpu.as_str(),
                self.backend.name()
            ),
        );
        let mut set = match ReplicaSet::start(&launch, &self.backend) {
            Ok(s) => s,
            Err(e) => {
                // A replica that died because of the same Ctrl-C is not the cell's fault.
                let reason = if signals::interrupted() {
                    cause::INTERRUPTED
                } else {
                    e.reason
                };
                self.display
                    .cell(cell.index, &cell.name, &format!("FAILED: {}", e.message));
                return fail(cs, reason, e.message, started);
            }
        };
        let enforcement_target = set
            .enforcement()
            .map(|e| (mechanism(e), e.describe(cpu)))
            .unwrap_or(("none", "unlimited".into()));
        let self_report: Option<benchmatrix_loadgen::result::TargetStats> =
            http::get(set.addr, &spec.target.stats_path, Duration::from_secs(2))
                .ok()
                .filter(|r| r.status == 200)
                .and_then(|r| serde_json::from_slice(&r.body).ok());
        let idle_rss = set.rss().0;
        let ready_secs = started.elapsed().as_secs_f64();

        // The load generator.
        let plan_path = self.out.join("plans").join(format!("{}.json", cell.name));
        let result_path = self.out.join("results").join(format!("{}.json", cell.name));
        let _ = fs::remove_file(&result_path);
        let plan = PlanFile {
            target: format!("http://{}", set.addr),
            replicas: set.addrs.iter().map(|a| a.to_string()).collect(),
            stats_addresses: set.stats_addrs.iter().map(|a| a.to_string()).collect(),
            stats_path: Some(spec.target.stats_path.clone()),
            threads: spec.loadgen.threads,
            workload: spec.workload.clone(),
            generator_index: 0,
            generators: 1,
        };
        if let Err(e) = serde_json::to_string_pretty(&plan)
            .map_err(std::io::Error::other)
            .and_then(|t| fs::write(&plan_path, t))
        {
            return fail(
                cs,
                "LoadgenFailed",
                format!("cannot write {}: {e}", plan_path.display()),
                started,
            );
        }
        let lg_cpu = spec.loadgen.cpu.cpu_cores().ok();
        // The load generator's CPUs come after the target's in the affinity fallback.
        let first_cpu = (cell.replicas as usize * cpu.unwrap_or(1.0).ceil() as usize) % host_cpus();
        let lg_cgroup =
            match self
                .backend
                .create(&format!("{}-loadgen", cell.name), lg_cpu, first_cpu)
            {
                Ok(c) => c,
                Err(e) => return fail(cs, cause::CGROUP_FAILED, e.to_string(), started),
            };
        let enforcement_loadgen = mechanism(lg_cgroup.enforcement());
        let lg_detail = lg_cgroup.enforcement().describe(lg_cpu);
        cs.enforcement = Some(Enforcement {
            target: enforcement_target.0.to_string(),
            loadgen: Some(enforcement_loadgen.to_string()),
            detail: Some(format!(
                "target replicas: {}; load generator: {}",
                enforcement_target.1, lg_detail
            )),
        });
        let log = self
            .out
            .join("logs")
            .join(format!("{}-loadgen.log", cell.name));
        let warmup = spec.workload.warmup.0;
        let measured: Duration = spec.workload.phases.iter().map(|p| p.duration.0).sum();
        let deadline = warmup + measured + spec.timeouts.run_slack.0;
        // A replica that exited since it was ready, or that a wrapper's server left, fails the
        // cell before any load; from here on each process it has started must live too.
        if let Some(why) = set.first_exit() {
            let message = format!("{why} (before the load started)");
            self.display
                .cell(cell.index, &cell.name, &format!("FAILED: {message}"));
            return fail(cs, cause::REPLICA_EXITED, message, started);
        }
        set.watch_descendants();
        let mut lg = match Loadgen::start(&plan_path, &result_path, &log, lg_cgroup) {
            Ok(l) => l,
            Err(e) => {
                return fail(
                    cs,
                    "LoadgenFailed",
                    format!("cannot start the load generator: {e}"),
                    started,
                );
            }
        };
        cs.phase = CellPhase::Running;
        cs.load_start_time = Some(now());
        let load_started = Instant::now();
        // Each replica's CPU at the end of warm-up and of every phase but the last (whose end
        // is read when the load generator exits). Planned from the load generator's start, and
        // moved later by how late its phases really began: each progress line says how many
        // seconds into its phase it is, and start-up, lead times and /stats reads between
        // phases add up.
        let mut boundary = warmup;
        let boundaries: Vec<Duration> = std::iter::once(warmup)
            .chain(spec.workload.phases.iter().map(|p| {
                boundary += p.duration.0;
                boundary
            }))
            .collect();
        let planned_start = |phase: &str| -> Option<Duration> {
            if phase == benchmatrix_loadgen::engine::WARMUP_PHASE {
                return Some(Duration::ZERO);
            }
            let k = spec.workload.phases.iter().position(|p| p.name == phase)?;
            Some(boundaries[k])
        };
        let mut late_by = Duration::ZERO;
        let mut cpu_at: Vec<Option<Vec<Option<CpuUsage>>>> = vec![None; boundaries.len()];
        // Every POLL (20 ms): progress, CPU at phase boundaries, the load generator's end, a signal,
        // the deadline, and every replica's liveness. A replica that exits ends the cell at
        // once (the load generator is stopped below): its figures would be another cell's.
        let exit = loop {
            while let Ok(p) = lg.progress.try_recv() {
                if let Some(planned) = planned_start(&p.phase) {
                    let began = load_started
                        .elapsed()
                        .saturating_sub(Duration::from_secs_f64(p.elapsed_secs.max(0.0)));
                    late_by = late_by.max(began.saturating_sub(planned));
                }
                self.display.live(cell.index, &cell.name, &p);
            }
            let elapsed = load_started.elapsed();
            for (at, &b) in cpu_at
                .iter_mut()
                .zip(&boundaries)
                .take(boundaries.len() - 1)
            {
                if at.is_none() && elapsed >= b + late_by {
                    *at = Some(set.usage_each());
                }
            }
            if let Some(why) = set.first_exit() {
                let when = elapsed.saturating_sub(late_by);
                break Err((
                    cause::REPLICA_EXITED,
                    phase_note(why, when, &boundaries, spec),
                ));
            }
            if let Some(status) = lg.try_wait() {
                // The result is only in if every replica lived to its end.
                match set.first_exit() {
                    Some(why) => {
                        break Err((cause::REPLICA_EXITED, format!("{why} (as the load ended)")));
                    }
                    None => break Ok(status),
                }
            }
            if signals::interrupted() {
                break Err((
                    cause::INTERRUPTED,
                    "interrupted by SIGINT/SIGTERM".to_string(),
                ));
            }
            if load_started.elapsed() > deadline {
                break Err((
                    "Timeout",
                    format!(
                        "the load generator ran longer than warm-up + phases + runSlack ({deadline:?})"
                    ),
                ));
            }
            std::thread::sleep(POLL);
        };
        // A load generator that ended because of the same signal was interrupted, not failed.
        let exit = if signals::interrupted() {
            Err((
                cause::INTERRUPTED,
                "interrupted by SIGINT/SIGTERM".to_string(),
            ))
        } else {
            exit
        };
        let load_wall = load_started.elapsed();
        // With the result in, nothing the replicas do from here on counts: freeze them so the
        // readings below get the CPU (see ReplicaSet::freeze). After a failure they run on, so
        // a target can still write its last words while it is stopped with the usual grace.
        let result_in = exit.is_ok();
        if result_in {
            set.freeze();
        }
        let cpu_end_each = set.usage_each();
        let cpu_end = ReplicaSet::total(&cpu_end_each);
        let replica_names = set.replica_names();
        let stats_addrs = set.stats_addrs.clone();
        let peak_rss = set.rss().1;
        let stopping = Instant::now();
        lg.stop();
        if result_in {
            set.kill_frozen();
        } else {
            set.stop();
        }
        let stop_secs = stopping.elapsed().as_secs_f64();
        let status = match exit {
            Ok(s) => s,
            Err((reason, message)) => {
                self.display.cell(cell.index, &cell.name, &message);
                return fail(cs, reason, message, started);
            }
        };
        let doc: Result<RunResult, String> = fs::read_to_string(&result_path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()));
        let result = match (status.success(), doc) {
            (true, Ok(r)) => r,
            (ok, doc) => {
                let why = match doc {
                    Err(e) if ok => {
                        format!("its result {} is unreadable: {e}", result_path.display())
                    }
                    _ => format!("it exited with {status}"),
                };
                let msg = format!(
                    "the load generator failed: {why}; its last output: {}",
                    lg.last_words()
                );
                self.display
                    .cell(cell.index, &cell.name, &format!("FAILED: {msg}"));
                return fail(
                    cs,
                    if ok {
                        "ResultUnparsable"
                    } else {
                        "LoadgenFailed"
                    },
                    msg,
                    started,
                );
            }
        };
        cs.results = results::cell_results(&result);
        let mut target = results::target_stats(&result).unwrap_or_default();
        // Replicas sharing one address (service spread) were read on their statistics
        // addresses: file those figures under the replicas' names, as the CPU figures are.
        for share in &mut target.per_replica {
            if let Some(i) = stats_addrs
                .iter()
                .position(|a| a.to_string() == share.replica)
                && let Some(name) = replica_names.get(i)
            {
                share.replica = name.clone();
            }
        }
        merge_self_report(&mut target, self_report.as_ref());
        target.replicas = Some(cell.replicas);
        target.idle_rss_bytes = Some(idle_rss);
        target.peak_rss_bytes = Some(peak_rss);
        if let Some(last) = cpu_at.last_mut() {
            *last = Some(cpu_end_each.clone());
        }
        if let Some(each0) = cpu_at[0].clone() {
            let u0 = ReplicaSet::total(&each0);
            target.cpu_seconds_used = Some(round3(cpu_end.usage_secs - u0.usage_secs));
            target.throttled_periods = Some(cpu_end.nr_throttled - u0.nr_throttled);
            target.throttled_seconds = Some(round3(cpu_end.throttled_secs - u0.throttled_secs));
            if cell.replicas > 1 {
                let phases: Vec<&str> = spec
                    .workload
                    .phases
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect();
                target.per_replica =
                    per_replica_shares(&replica_names, &phases, &cpu_at, &target.per_replica);
            }
        }
        cs.target = Some(target);
        cs.phase = CellPhase::Succeeded;
        cs.completion_time = Some(now());
        let overhead = started.elapsed().saturating_sub(warmup + measured);
        cs.overhead_seconds = Some(round2(overhead.as_secs_f64()));
        cs.message = Some(format!(
            "warm-up + phases {:.1} s ran in {:.2} s; runner overhead {:.2} s (replicas ready in \
             {ready_secs:.2} s, stopped in {stop_secs:.2} s)",
            (warmup + measured).as_secs_f64(),
            load_wall.as_secs_f64(),
            overhead.as_secs_f64()
        ));
        self.display.cell(
            cell.index,
            &cell.name,
            &format!("done ({})", cs.message.as_deref().unwrap_or_default()),
        );
        self.raw.push(RawCell {
            cell: cell.name.clone(),
            result,
        });
        cs
    }
}

/// `why` with the part of the load it happened in ("during phase mixed, 3.2 s into the load");
/// `elapsed` is counted on the plan's clock (the load generator's lateness taken off).
fn phase_note(
    why: String,
    elapsed: Duration,
    boundaries: &[Duration],
    spec: &crate::api::BenchmarkRunSpec,
) -> String {
    let k = boundaries.iter().take_while(|&&b| elapsed >= b).count();
    let part = match k {
        0 => "warm-up".to_string(),
        k => spec
            .workload
            .phases
            .get(k - 1)
            .map(|p| format!("phase {}", p.name))
            .unwrap_or_else(|| "the slack after the last phase".into()),
    };
    format!(
        "{why} (during {part}, {:.1} s into the load)",
        elapsed.as_secs_f64()
    )
}

/// Fills what the per-phase snapshots did not carry from the target's own report at readiness.
fn merge_self_report(t: &mut TargetStats, r: Option<&benchmatrix_loadgen::result::TargetStats>) {
    let Some(r) = r else { return };
    let u = |v: Option<f64>| v.map(|v| v.round() as u32);
    t.host_cpus = t.host_cpus.or(u(r.host_cpus));
    t.detected_cpus = t.detected_cpus.or(u(r.detected_cpus));
    t.cpu_quota = t.cpu_quota.or(r.cpu_quota);
    t.quota_source = t.quota_source.clone().or(r.quota_source.clone());
    t.mode = t.mode.clone().or(r.mode.clone());
    t.pool_size = t.pool_size.or(u(r.pool_size));
}

/// The status word for a mechanism.
fn mechanism(e: &Enforced) -> &'static str {
    match e {
        Enforced::CgroupV2 { .. } => "cgroup-v2",
        Enforced::CgroupV1 { .. } => "cgroup-v1",
        Enforced::Affinity { .. } => "affinity",
        Enforced::Unlimited => "none",
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
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

/// Each replica's CPU per phase from its cgroup readings at the phase boundaries (`cpu_at`:
/// end of warm-up, then the end of each phase), with the requests its own `/stats` reported
/// where it was read on its own address (`from_stats`, keyed by address).
fn per_replica_shares(
    names: &[String],
    phases: &[&str],
    cpu_at: &[Option<Vec<Option<CpuUsage>>>],
    from_stats: &[ReplicaShare],
) -> Vec<ReplicaShare> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| ReplicaShare {
            replica: name.clone(),
            phases: phases
                .iter()
                .enumerate()
                .map(|(k, &phase)| {
                    let read =
                        |b: usize| Some(cpu_at.get(b)?.as_ref()?.get(i)?.as_ref()?.usage_secs);
                    ReplicaPhaseShare {
                        phase: phase.to_owned(),
                        cpu_seconds_used: read(k)
                            .zip(read(k + 1))
                            .map(|(a, b)| round3((b - a).max(0.0))),
                        requests_served: from_stats
                            .iter()
                            .find(|s| &s.replica == name)
                            .and_then(|s| s.phases.iter().find(|p| p.phase == phase))
                            .and_then(|p| p.requests_served),
                    }
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_exit_is_placed_in_the_part_of_the_load_it_happened_in() {
        let run = crate::validate::parse_benchmark_run(
            r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: t}
spec:
  configurations: [{name: a, mode: single, replicas: 1, cpu: "1"}]
  workload:
    endpoints: [{name: fast, path: /fast}]
    warmup: 2s
    phases:
      - {name: first, duration: 3s, load: [{endpoint: fast, connections: 1}]}
      - {name: second, duration: 4s, load: [{endpoint: fast, connections: 1}]}
"#,
        )
        .unwrap();
        let b = [2, 5, 9].map(Duration::from_secs);
        let at = |s: f64| phase_note("x".into(), Duration::from_secs_f64(s), &b, &run.spec);
        assert_eq!(at(1.0), "x (during warm-up, 1.0 s into the load)");
        assert_eq!(at(2.0), "x (during phase first, 2.0 s into the load)");
        assert_eq!(at(6.5), "x (during phase second, 6.5 s into the load)");
        assert_eq!(
            at(9.5),
            "x (during the slack after the last phase, 9.5 s into the load)"
        );
    }
}
