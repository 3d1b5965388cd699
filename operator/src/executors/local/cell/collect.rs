//! What a cell measured, once the load has ended and everything is stopped: the load
//! generator's result document, the target's figures (CPU, memory, each replica's share), the
//! runner's overhead and the cell's message.

use std::fs;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use benchmatrix_loadgen::result::RunResult;

use super::launch::ReplicasReady;
use super::supervise::{EndReadings, Readings};
use super::{Failure, round3};
use crate::executors::local::loadgen::Loadgen;
use crate::executors::local::replica_set::ReplicaSet;
use crate::resource::conditions::Cause;
use crate::resource::matrix::Cell;
use crate::resource::{ReplicaPhaseShare, ReplicaShare, TargetStats};

/// The load generator's result document at `path`, given that it exited with `status`; a
/// failed exit or an unreadable document fails the cell with the load generator's last words.
pub fn read_result(path: &Path, status: ExitStatus, lg: &Loadgen) -> Result<RunResult, Failure> {
    let doc: Result<RunResult, String> = fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()));
    match (status.success(), doc) {
        (true, Ok(r)) => Ok(r),
        (ok, doc) => {
            let why = match doc {
                Err(e) if ok => format!("its result {} is unreadable: {e}", path.display()),
                _ => format!("it exited with {status}"),
            };
            let words = lg.last_words();
            let message = format!("the load generator failed: {why}; its last output: {words}");
            Err(Failure {
                cause: if ok {
                    Cause::ResultUnparsable
                } else {
                    Cause::of_loadgen_failure(&words)
                },
                message,
            })
        }
    }
}

/// The target's figures for the cell: from the result's snapshots, with each replica's share
/// filed under its name, what the target said of itself at readiness, its memory, and its CPU
/// over the measured `phases` from the cgroup readings (`cpu_at`, completed by `end`).
pub fn target_stats(
    cell: &Cell,
    phases: &[String],
    result: &RunResult,
    ready: &ReplicasReady,
    mut cpu_at: Vec<Option<Readings>>,
    end: &EndReadings,
) -> TargetStats {
    let mut target = crate::engine::results::target_stats(result).unwrap_or_default();
    // Replicas sharing one address (service spread) were read on their statistics
    // addresses: file those figures under the replicas' names, as the CPU figures are.
    for share in &mut target.per_replica {
        if let Some(i) = end
            .stats_addrs
            .iter()
            .position(|a| a.to_string() == share.replica)
            && let Some(name) = end.replica_names.get(i)
        {
            share.replica = name.clone();
        }
    }
    merge_self_report(&mut target, ready.self_report.as_ref());
    target.replicas = Some(cell.replicas);
    target.idle_rss_bytes = Some(ready.idle_rss);
    target.peak_rss_bytes = Some(end.peak_rss);
    if let Some(last) = cpu_at.last_mut() {
        *last = Some(end.cpu_each.clone());
    }
    if let Some(each0) = cpu_at[0].clone() {
        let u0 = ReplicaSet::total(&each0);
        let cpu_end = ReplicaSet::total(&end.cpu_each);
        target.source = Some(crate::resource::status::SOURCE_CGROUP.into());
        target.cpu_seconds_used = Some(round3(cpu_end.usage_secs - u0.usage_secs));
        target.throttled_periods = Some(cpu_end.nr_throttled - u0.nr_throttled);
        target.cfs_periods = Some(cpu_end.nr_periods.saturating_sub(u0.nr_periods));
        target.throttled_seconds = Some(round3(cpu_end.throttled_secs - u0.throttled_secs));
        if cell.replicas > 1 {
            let phases: Vec<&str> = phases.iter().map(String::as_str).collect();
            target.per_replica =
                per_replica_shares(&end.replica_names, &phases, &cpu_at, &target.per_replica);
        }
    }
    target
}

/// The cell's message: how long the load was planned and took, and where the rest of the
/// runner's time (`overhead`) went. `preflight_secs` (the load generator's check that every
/// address answers, before its warm-up) is taken out of the load's wall time: it is overhead.
pub fn summary(
    planned: Duration,
    load_wall: Duration,
    overhead: Duration,
    preflight_secs: Option<f64>,
    ready: &ReplicasReady,
    end: &EndReadings,
) -> String {
    let check = preflight_secs.unwrap_or(0.0);
    format!(
        "warm-up + phases {:.1} s ran in {:.2} s; runner overhead {:.2} s (replicas ready in \
         {:.2} s, answering the load generator after {:.2} s more, stopped in {:.2} s)",
        planned.as_secs_f64(),
        (load_wall.as_secs_f64() - check).max(0.0),
        overhead.as_secs_f64(),
        ready.ready_secs,
        check,
        end.stop_secs
    )
}

/// Fills what the per-phase snapshots did not carry from the target's own report at readiness.
fn merge_self_report(t: &mut TargetStats, r: Option<&benchmatrix_loadgen::result::StatsSnapshot>) {
    let Some(r) = r else { return };
    let u = |v: Option<f64>| v.map(|v| v.round() as u32);
    t.host_cpus = t.host_cpus.or(u(r.host_cpus));
    t.detected_cpus = t.detected_cpus.or(u(r.detected_cpus));
    t.cpu_quota = t.cpu_quota.or(r.cpu_quota);
    t.quota_source = t.quota_source.clone().or(r.quota_source.clone());
    t.mode = t.mode.clone().or(r.mode.clone());
    t.pool_size = t.pool_size.or(u(r.pool_size));
}

/// Each replica's CPU per phase from its cgroup readings at the phase boundaries (`cpu_at`:
/// end of warm-up, then the end of each phase), with the requests its own `/stats` reported
/// where it was read on its own address (`from_stats`, keyed by address).
fn per_replica_shares(
    names: &[String],
    phases: &[&str],
    cpu_at: &[Option<Readings>],
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
