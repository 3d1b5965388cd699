//! What the load generator is given: its plan file, where its result and log go, the CPUs it
//! runs on, and the load's timing as planned (when warm-up and each phase end). How long the
//! load may take is the engine's to enforce (`ValidatedRun::load_deadline`).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use benchmatrix_loadgen::plan::PlanFile;

use super::Failure;
use crate::engine::Load;
use crate::executors::local::replica_set::ReplicaSet;
use crate::resource::BenchmarkRunSpec;
use crate::resource::conditions::Cause;
use crate::resource::matrix::Cell;
use benchmatrix_quota::host_cpus;

/// The load's clock as planned, counted from the load generator's start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadTiming {
    /// Warm-up plus every phase.
    pub planned: Duration,
    /// The end of warm-up, then the end of each phase.
    pub boundaries: Vec<Duration>,
    /// The phases' names, in order.
    pub phases: Vec<String>,
}

impl LoadTiming {
    /// The timing of `load`'s workload.
    pub fn of(load: &Load) -> LoadTiming {
        let w = &load.workload;
        let warmup = w.warmup.0;
        let mut boundary = warmup;
        let boundaries = std::iter::once(warmup)
            .chain(w.phases.iter().map(|p| {
                boundary += p.duration.0;
                boundary
            }))
            .collect();
        LoadTiming {
            planned: load.planned(),
            boundaries,
            phases: w.phases.iter().map(|p| p.name.clone()).collect(),
        }
    }

    /// When the load generator's part `phase` (a phase name, or its warm-up) is planned to
    /// begin; `None` for a name the workload does not have.
    pub fn planned_start(&self, phase: &str) -> Option<Duration> {
        if phase == benchmatrix_loadgen::load::WARMUP_PHASE {
            return Some(Duration::ZERO);
        }
        let k = self.phases.iter().position(|p| p == phase)?;
        Some(self.boundaries[k])
    }

    /// "warm-up", "phase mixed" or "the slack after the last phase": the part of the load
    /// `elapsed` from its start is in.
    pub fn part_at(&self, elapsed: Duration) -> String {
        let k = self
            .boundaries
            .iter()
            .take_while(|&&b| elapsed >= b)
            .count();
        match k {
            0 => "warm-up".to_string(),
            k => self
                .phases
                .get(k - 1)
                .map(|p| format!("phase {p}"))
                .unwrap_or_else(|| "the slack after the last phase".into()),
        }
    }
}

/// The load generator's files for one cell.
#[derive(Debug, Clone)]
pub struct LoadFiles {
    /// The plan it reads.
    pub plan: PathBuf,
    /// The result document it writes.
    pub result: PathBuf,
    /// Its log.
    pub log: PathBuf,
}

/// Writes the plan of `load` for `cell` against the replicas of `set` into `out/plans`, and
/// clears a result left from an earlier run so a stale one is never read as this cell's.
pub fn write_plan(
    out: &Path,
    spec: &BenchmarkRunSpec,
    load: &Load,
    cell: &Cell,
    set: &ReplicaSet,
) -> Result<LoadFiles, Failure> {
    let files = LoadFiles {
        plan: out.join("plans").join(format!("{}.json", cell.name)),
        result: out.join("results").join(format!("{}.json", cell.name)),
        log: out.join("logs").join(format!("{}-loadgen.log", cell.name)),
    };
    let _ = fs::remove_file(&files.result);
    let plan = PlanFile {
        target: format!("http://{}", set.addr),
        replicas: set.addrs.iter().map(|a| a.to_string()).collect(),
        stats_addresses: set.stats_addrs.iter().map(|a| a.to_string()).collect(),
        stats_path: Some(spec.target.stats_path.clone()),
        threads: spec.loadgen.threads,
        // Secret-held header values are named by environment variable, never written here.
        workload: benchmatrix_loadgen::request::secrets::to_env(&load.workload),
        generator_index: 0,
        generators: 1,
        preflight: Some(crate::resource::preflight(spec)),
        no_success_is_a_result: load.no_success_is_a_result(),
    };
    serde_json::to_string_pretty(&plan)
        .map_err(std::io::Error::other)
        .and_then(|t| fs::write(&files.plan, t))
        .map_err(|e| Failure {
            cause: Cause::LoadgenFailed,
            message: format!("cannot write {}: {e}", files.plan.display()),
        })?;
    Ok(files)
}

/// Where the load generator runs: its CPU limit and, for the affinity fallback, its first CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadgenPlacement {
    /// `spec.loadgen.cpu` in cores (`None`: unlimited).
    pub cores: Option<f64>,
    /// The first CPU it may use under affinity: the one after the target's.
    pub first_cpu: usize,
}

/// The load generator's placement for `cell`, whose replicas have `target_cores` each.
pub fn loadgen_placement(
    spec: &BenchmarkRunSpec,
    cell: &Cell,
    target_cores: Option<f64>,
) -> LoadgenPlacement {
    LoadgenPlacement {
        cores: spec.loadgen.cpu.cpu_cores().ok(),
        first_cpu: (cell.replicas as usize * target_cores.unwrap_or(1.0).ceil() as usize)
            % host_cpus(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ValidatedRun;

    /// A run with a 2 s warm-up, phases of 3 s and 4 s, and `extra` appended to its spec.
    fn run(extra: &str) -> ValidatedRun {
        let run = crate::resource::validate::parse_benchmark_run(&format!(
            r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: t}}
spec:
  configurations: [{{name: a, mode: single, replicas: 1, cpu: "1"}}]
  workload:
    endpoints: [{{name: fast, path: /fast}}]
    warmup: 2s
    phases:
      - {{name: first, duration: 3s, load: [{{endpoint: fast, connections: 1}}]}}
      - {{name: second, duration: 4s, load: [{{endpoint: fast, connections: 1}}]}}
{extra}"#
        ))
        .unwrap();
        ValidatedRun::new(run).unwrap()
    }

    #[test]
    fn boundaries_and_planned_starts_follow_the_phases() {
        let v = run("");
        let load = Load {
            workload: v.spec().workload.clone(),
            probe: None,
        };
        let t = LoadTiming::of(&load);
        assert_eq!(t.planned, Duration::from_secs(9));
        assert_eq!(t.boundaries, [2, 5, 9].map(Duration::from_secs));
        let start = |p: &str| t.planned_start(p);
        assert_eq!(
            start(benchmatrix_loadgen::load::WARMUP_PHASE),
            Some(Duration::ZERO)
        );
        assert_eq!(start("first"), Some(Duration::from_secs(2)));
        assert_eq!(start("second"), Some(Duration::from_secs(5)));
        assert_eq!(start("nope"), None);
    }
}
