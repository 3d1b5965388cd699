//! How many CPUs this process may really use.
//!
//! A pool sized from the host's core count is wrong inside a container: a pod limited to 500m on
//! a 64-core node must not start 63 workers. This crate reads the limits that actually apply —
//! the cgroup v2 `cpu.max`, the cgroup v1 `cpu.cfs_quota_us`/`cpu.cfs_period_us`, and the CPU
//! affinity mask — and reports the smallest, together with where it came from, so a report can
//! say *why* a target sized itself the way it did.
//!
//! The detection is a pure function over a filesystem root ([`detect_in`]), so it is tested
//! against fake cgroup trees; [`detect`] applies it to the live process.
//!
//! It also holds the few platform helpers the rest of the workspace shares, so each exists
//! once: the `/proc/self/mountinfo` parser ([`mountinfo`]), the host's CPU count
//! ([`host_cpus`]) and a small blocking HTTP GET ([`http`]) for probes against local processes.

mod cgroup;
pub mod http;
pub mod mountinfo;
mod stat;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use cgroup::{CgroupDir, CgroupVersion, cgroup_dirs_in};
pub use stat::{CpuStat, parse_cpu_stat, read_cpu_stat};

/// The CPU limit that applies to a process, and where each figure came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuLimit {
    /// Online CPUs of the machine, ignoring every limit.
    pub host_cpus: usize,
    /// Whole CPUs the process may use: the smallest of the quota (rounded up), the affinity mask
    /// and the host count; never less than 1.
    pub detected_cpus: usize,
    /// The tightest CFS quota found, in cores (`quota / period`); `None` when unlimited.
    pub quota_cores: Option<f64>,
    /// What decided `detected_cpus`: the quota file's path, `"affinity"` or `"host"`.
    pub source: String,
    /// The `cpu.stat` file that counts this process's throttling (as a path under the detection
    /// root): the one beside the tightest quota when there is one, because the kernel counts
    /// throttling where the quota is enforced; else the process's own cgroup. `None` when none
    /// was found.
    pub cpu_stat_file: Option<PathBuf>,
}

/// Detects the CPU limit of the running process (root `/`, its affinity mask, the online CPUs).
pub fn detect() -> CpuLimit {
    detect_in(Path::new("/"), affinity_cpus(), host_cpus())
}

/// Detects the CPU limit as seen under `root`, which stands for `/`: `root/proc/self/cgroup`,
/// `root/proc/self/mountinfo` and the cgroup files they lead to are read; everything missing
/// or unreadable counts as "no limit from there".
///
/// `affinity_cpus` is the size of the affinity mask when known; `host_cpus` the online CPUs.
/// The smallest of quota (rounded up), affinity and host wins; on a tie a quota is named as the
/// source before the affinity mask, and that before the host, because it is the more specific
/// explanation.
pub fn detect_in(root: &Path, affinity_cpus: Option<usize>, host_cpus: usize) -> CpuLimit {
    let host_cpus = host_cpus.max(1);
    let dirs = cgroup_dirs_in(root);

    // The tightest quota over every cpu hierarchy and every ancestor level: a parent's quota
    // limits its children even when the child's own file says unlimited.
    let mut best_quota: Option<(f64, String, PathBuf)> = None;
    for dir in &dirs {
        for level in dir.levels() {
            let Some((cores, file)) = read_quota(root, &level, dir.version) else {
                continue;
            };
            if best_quota.as_ref().is_none_or(|(c, _, _)| cores < *c) {
                best_quota = Some((cores, file, level.clone()));
            }
        }
    }

    let mut detected = host_cpus;
    let mut source = "host".to_string();
    if let Some(aff) = affinity_cpus.filter(|&n| n > 0)
        && aff <= detected
    {
        detected = aff;
        source = "affinity".to_string();
    }
    if let Some((cores, file, _)) = &best_quota {
        let whole = cores_rounded_up(*cores);
        if whole <= detected {
            detected = whole;
            source = file.clone();
        }
    }

    let cpu_stat_file = match &best_quota {
        Some((_, _, level)) => Some(level.join("cpu.stat")),
        None => leaf_cpu_stat(&dirs),
    };

    CpuLimit {
        host_cpus,
        detected_cpus: detected.max(1),
        quota_cores: best_quota.map(|(c, _, _)| c),
        source,
        cpu_stat_file,
    }
}

/// Rounds a quota in cores up to whole CPUs (0.5 -> 1, 1.5 -> 2, 2.0 -> 2), at least 1.
fn cores_rounded_up(cores: f64) -> usize {
    // A tiny tolerance keeps 200000/100000 at 2 even if the division is inexact.
    let whole = (cores - 1e-9).ceil();
    if whole < 1.0 { 1 } else { whole as usize }
}

/// Reads the quota of one cgroup level (`level` is a path under `root`). Returns the quota in
/// cores and the file it came from as the live system names it, or `None` when unlimited or
/// unreadable.
fn read_quota(root: &Path, level: &Path, version: CgroupVersion) -> Option<(f64, String)> {
    match version {
        CgroupVersion::V2 => {
            let file = level.join("cpu.max");
            let text = std::fs::read_to_string(&file).ok()?;
            let cores = parse_cpu_max(&text)?;
            Some((cores, system_path(root, &file)))
        }
        CgroupVersion::V1 => {
            let quota_file = level.join("cpu.cfs_quota_us");
            let quota = std::fs::read_to_string(&quota_file).ok()?;
            let period = std::fs::read_to_string(level.join("cpu.cfs_period_us")).ok()?;
            let cores = parse_cfs(&quota, &period)?;
            Some((cores, system_path(root, &quota_file)))
        }
    }
}

/// Parses cgroup v2 `cpu.max` (`"$QUOTA $PERIOD"` or `"max $PERIOD"`) into cores.
pub fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut parts = text.split_whitespace();
    let quota = parts.next()?;
    let period = parts.next().unwrap_or("100000");
    if quota == "max" {
        return None;
    }
    ratio(quota, period)
}

/// Parses cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` into cores; `-1` is unlimited.
pub fn parse_cfs(quota: &str, period: &str) -> Option<f64> {
    let quota = quota.trim();
    if quota.starts_with('-') {
        return None;
    }
    ratio(quota, period.trim())
}

fn ratio(quota: &str, period: &str) -> Option<f64> {
    let quota: u64 = quota.trim().parse().ok()?;
    let period: u64 = period.trim().parse().ok()?;
    if quota == 0 || period == 0 {
        return None;
    }
    Some(quota as f64 / period as f64)
}

/// The `cpu.stat` of the process's own cgroup when no quota binds: the v1 cpu hierarchy first
/// (its file counts throttling), else v2.
fn leaf_cpu_stat(dirs: &[CgroupDir]) -> Option<PathBuf> {
    let mut ordered: Vec<&CgroupDir> = dirs.iter().collect();
    ordered.sort_by_key(|d| match d.version {
        CgroupVersion::V1 => 0,
        CgroupVersion::V2 => 1,
    });
    ordered
        .into_iter()
        .map(|d| d.path.join("cpu.stat"))
        .find(|p| p.is_file())
}

/// The path a file has on the system `root` stands for: `root/sys/fs/...` -> `/sys/fs/...`.
fn system_path(root: &Path, p: &Path) -> String {
    match p.strip_prefix(root) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => p.display().to_string(),
    }
}

/// Online CPUs of the machine (`sysconf(_SC_NPROCESSORS_ONLN)`), ignoring affinity and quotas.
///
/// `std::thread::available_parallelism` is deliberately not used: it already applies the
/// affinity mask and cgroup quotas, so it cannot tell which of them decided.
pub fn host_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n < 1 { 1 } else { n as usize }
}

/// CPUs in this process's affinity mask (`sched_getaffinity`), or `None` if it cannot be read.
pub fn affinity_cpus() -> Option<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        let n = libc::CPU_COUNT(&set);
        if n > 0 { Some(n as usize) } else { None }
    }
}

/// Reads the throttling counters of `limit.cpu_stat_file`, if any.
pub fn throttling(limit: &CpuLimit) -> Option<CpuStat> {
    limit.cpu_stat_file.as_deref().and_then(read_cpu_stat)
}

#[cfg(test)]
mod tests;
