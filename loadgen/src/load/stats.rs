//! The target's `/stats` at the phase boundaries: which addresses to read, every replica at
//! once (so a boundary costs at most one probe timeout), and each phase's figures from the
//! snapshots at its start and end.

use super::RunConfig;
use crate::probe;
use crate::result::{ReplicaStats, StatsSnapshot};

pub(super) type Snapshots = Vec<(String, Result<StatsSnapshot, String>)>;

/// Which `/stats` to read at a phase boundary: (the replica's key in the result, the address
/// read). The statistics addresses when given, keyed by the replica address at the same place
/// (or by themselves when the replicas share one address); else the replicas, or the target.
fn stats_reads(
    replicas: &[String],
    stats_addresses: &[String],
    target: impl FnOnce() -> String,
) -> Vec<(String, String)> {
    if !stats_addresses.is_empty() {
        let keyed_by_replica = replicas.len() == stats_addresses.len();
        return stats_addresses
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let key = if keyed_by_replica { &replicas[i] } else { s };
                (key.clone(), s.clone())
            })
            .collect();
    }
    let addresses = if replicas.is_empty() {
        vec![target()]
    } else {
        replicas.to_vec()
    };
    addresses.into_iter().map(|a| (a.clone(), a)).collect()
}

/// Reads every replica's `/stats` (none when `cfg` names no statistics path).
pub(super) fn snapshots(cfg: &RunConfig) -> Snapshots {
    let Some(path) = &cfg.stats_path else {
        return Vec::new();
    };
    let reads = stats_reads(&cfg.replicas, &cfg.stats_addresses, || {
        cfg.target.socket_authority()
    });
    // One thread per replica: replicas that do not answer cost one probe timeout together
    // before the next phase starts, not one each.
    std::thread::scope(|scope| {
        let reads: Vec<_> = reads
            .into_iter()
            .map(|(a, from)| {
                let read = scope.spawn(move || probe::snapshot(&from, path));
                (a, read)
            })
            .collect();
        reads
            .into_iter()
            .map(|(a, read)| {
                let s = read
                    .join()
                    .unwrap_or_else(|_| Err(format!("reading {a}{path} failed")));
                (a, s)
            })
            .collect()
    })
}

/// Each replica's figures of a phase: its snapshots at the start and the end, and what was
/// used in between.
pub(super) fn pair_snapshots(start: Snapshots, end: Snapshots) -> Vec<ReplicaStats> {
    start
        .into_iter()
        .zip(end)
        .map(|((address, s), (_, e))| {
            let error = match (&s, &e) {
                (Err(a), _) => Some(a.clone()),
                (_, Err(b)) => Some(b.clone()),
                _ => None,
            };
            let (s, e) = (s.ok(), e.ok());
            let delta = |f: fn(&StatsSnapshot) -> Option<f64>| match (&s, &e) {
                (Some(a), Some(b)) => Some(f(b)? - f(a)?),
                _ => None,
            };
            ReplicaStats {
                cpu_seconds_in_phase: delta(|t| t.cpu_seconds_used),
                requests_served_in_phase: delta(|t| t.requests_served),
                address,
                start: s,
                end: e,
                error,
            }
        })
        .collect()
}
