//! Real CPU limits for local processes: one cgroup per replica (and one for the load
//! generator), with the quota written before the child runs its first instruction.
//!
//! Order of preference, decided once per run by [`Backend::detect`]:
//! 1. cgroup v2, where the unified hierarchy has the `cpu` controller and we may delegate it;
//! 2. cgroup v1, where a `cpu` hierarchy is mounted and writable (`cpuacct` for usage when
//!    mounted, combined or separately);
//! 3. CPU affinity (`sched_setaffinity`) to ceil(cores) CPUs: coarse, said so once, and
//!    recorded per limit in the status as how it was enforced.
//!
//! Requests equal limits: a replica with cpu "0.5" gets a CFS quota of 50 ms per 100 ms period
//! and nothing else, exactly what a Guaranteed pod gets from the kubelet.
//!
//! A replica's cgroup is removed by its `Drop` and the run's parent by `Backend::remove`, on
//! Ctrl-C too (the signal only raises a flag and the runner unwinds, see `local::signals`);
//! cgroups left behind by a runner that was SIGKILLed are removed by the next run (their owner
//! pid is in the folder name).

use std::fs;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use benchmatrix_quota::host_cpus;
use benchmatrix_quota::mountinfo::{self, Mount};

use super::process;

/// CFS period used for every quota, in microseconds (the kubelet's default too).
pub const CFS_PERIOD_US: u64 = 100_000;

/// cgroup v1 `cpu.shares` of every benchmark cgroup: 16 times a normal process's 1024. The
/// quota caps what a replica may use; the raised weight makes it win, up to that cap, against
/// whatever else runs on a shared machine (builds, browsers), so the figures measure the
/// configuration rather than the neighbours. Not the maximum, so the rest of the machine
/// (the runner itself included) still gets a slice.
pub const BENCH_SHARES_V1: u64 = 16 * 1024;

/// cgroup v2 `cpu.weight` counterpart of [`BENCH_SHARES_V1`] (16 times the default 100).
pub const BENCH_WEIGHT_V2: u64 = 1600;

/// Prefix of the per-run parent cgroup folder; the runner's pid follows it.
const RUN_PREFIX: &str = "benchmatrix-";

/// How CPU limits can be enforced on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// cgroup v2: `dir` is this run's parent cgroup, with `+cpu` in its subtree control.
    V2 {
        /// The run's parent cgroup folder.
        dir: PathBuf,
    },
    /// cgroup v1: parents for this run in the `cpu` hierarchy and, when mounted apart or
    /// together, the `cpuacct` hierarchy.
    V1 {
        /// The run's parent folder in the `cpu` hierarchy.
        cpu_dir: PathBuf,
        /// The run's parent folder in the `cpuacct` hierarchy (same as `cpu_dir` when the
        /// two controllers share a mount; `None` when cpuacct is not mounted).
        acct_dir: Option<PathBuf>,
    },
    /// No writable cgroup: pin each process to ceil(cores) CPUs.
    Affinity {
        /// Why cgroups could not be used, for the one-time notice and the report.
        reason: String,
    },
}

/// How one limit was actually enforced; goes into the status and the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitMethod {
    /// A cgroup v2 `cpu.max` quota.
    CgroupV2 {
        /// The cgroup folder.
        path: PathBuf,
    },
    /// A cgroup v1 `cpu.cfs_quota_us` quota.
    CgroupV1 {
        /// The cgroup folder in the cpu hierarchy.
        path: PathBuf,
    },
    /// CPU affinity to these CPUs: limits parallelism, not CPU time.
    Affinity {
        /// CPU numbers the process may run on.
        cpus: Vec<usize>,
    },
    /// No limit was asked for.
    Unlimited,
}

impl LimitMethod {
    /// One line for the status and the report, e.g. `cgroup v1 cpu.cfs_quota_us=50000/100000`.
    pub fn describe(&self, cores: Option<f64>) -> String {
        match (self, cores) {
            (LimitMethod::CgroupV2 { path }, Some(c)) => format!(
                "cgroup v2 cpu.max \"{} {CFS_PERIOD_US}\" ({})",
                quota_us(c),
                path.display()
            ),
            (LimitMethod::CgroupV1 { path }, Some(c)) => format!(
                "cgroup v1 cpu.cfs_quota_us={}/{CFS_PERIOD_US} ({})",
                quota_us(c),
                path.display()
            ),
            (LimitMethod::Affinity { cpus }, _) => format!(
                "CPU affinity to cpus {:?} (no writable cgroup: parallelism is limited, CPU time is not)",
                cpus
            ),
            (_, None) | (LimitMethod::Unlimited, _) => "unlimited".to_string(),
        }
    }
}

/// Quota in microseconds per [`CFS_PERIOD_US`] for `cores` CPUs (at least 1 ms, the kernel's floor).
pub fn quota_us(cores: f64) -> u64 {
    ((cores * CFS_PERIOD_US as f64).round() as u64).max(1000)
}

impl Backend {
    /// Finds the best way to enforce CPU limits here and creates this run's parent cgroup.
    pub fn detect() -> Backend {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        remove_stale(&mountinfo);
        let run_name = format!("{RUN_PREFIX}{}", std::process::id());
        let mut reasons = Vec::new();
        match try_v2(&mountinfo, &own, &run_name) {
            Ok(dir) => return Backend::V2 { dir },
            Err(e) => reasons.push(format!("cgroup v2: {e}")),
        }
        match try_v1(&mountinfo, &own, &run_name) {
            Ok((cpu_dir, acct_dir)) => return Backend::V1 { cpu_dir, acct_dir },
            Err(e) => reasons.push(format!("cgroup v1: {e}")),
        }
        Backend::Affinity {
            reason: reasons.join("; "),
        }
    }

    /// A short name for messages: `cgroup v2`, `cgroup v1` or `CPU affinity`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::V2 { .. } => "cgroup v2",
            Backend::V1 { .. } => "cgroup v1",
            Backend::Affinity { .. } => "CPU affinity",
        }
    }

    /// Creates a leaf cgroup `name` limited to `cores` CPUs (`None`: measured, not limited).
    /// With the affinity backend, `first_cpu` picks where the pinned CPU range starts, so
    /// replicas spread over the machine instead of sharing CPU 0.
    pub fn create(&self, name: &str, cores: Option<f64>, first_cpu: usize) -> io::Result<Cgroup> {
        match self {
            Backend::V2 { dir } => {
                let path = dir.join(name);
                make_dir(&path)?;
                let cg = Cgroup {
                    cpu_dir: Some(path.clone()),
                    acct_dir: None,
                    v2: true,
                    affinity: None,
                    limit_method: if cores.is_some() {
                        LimitMethod::CgroupV2 { path: path.clone() }
                    } else {
                        LimitMethod::Unlimited
                    },
                };
                if let Some(c) = cores {
                    fs::write(
                        path.join("cpu.max"),
                        format!("{} {CFS_PERIOD_US}", quota_us(c)),
                    )?;
                }
                Ok(cg)
            }
            Backend::V1 { cpu_dir, acct_dir } => {
                let path = cpu_dir.join(name);
                make_dir(&path)?;
                let acct = match acct_dir {
                    Some(a) if a == cpu_dir => Some(path.clone()),
                    Some(a) => {
                        let p = a.join(name);
                        make_dir(&p)?;
                        Some(p)
                    }
                    None => None,
                };
                let cg = Cgroup {
                    cpu_dir: Some(path.clone()),
                    acct_dir: acct,
                    v2: false,
                    affinity: None,
                    limit_method: if cores.is_some() {
                        LimitMethod::CgroupV1 { path: path.clone() }
                    } else {
                        LimitMethod::Unlimited
                    },
                };
                // The period first: the kernel checks the quota against the current period.
                fs::write(path.join("cpu.cfs_period_us"), CFS_PERIOD_US.to_string())?;
                let quota = cores.map(|c| quota_us(c) as i64).unwrap_or(-1);
                fs::write(path.join("cpu.cfs_quota_us"), quota.to_string())?;
                // Best effort: see [`BENCH_SHARES_V1`].
                let _ = fs::write(path.join("cpu.shares"), BENCH_SHARES_V1.to_string());
                Ok(cg)
            }
            Backend::Affinity { .. } => {
                let host = host_cpus();
                let cpus: Vec<usize> = match cores {
                    Some(c) => {
                        let n = (c.ceil() as usize).clamp(1, host);
                        (0..n).map(|i| (first_cpu + i) % host).collect()
                    }
                    None => (0..host).collect(),
                };
                Ok(Cgroup {
                    cpu_dir: None,
                    acct_dir: None,
                    v2: false,
                    limit_method: if cores.is_some() {
                        LimitMethod::Affinity { cpus: cpus.clone() }
                    } else {
                        LimitMethod::Unlimited
                    },
                    affinity: Some(cpus),
                })
            }
        }
    }

    /// Removes this run's parent cgroup (after every leaf has been dropped).
    pub fn remove(&self) {
        match self {
            Backend::V2 { dir } => remove_dir(dir),
            Backend::V1 { cpu_dir, acct_dir } => {
                remove_dir(cpu_dir);
                if let Some(a) = acct_dir {
                    remove_dir(a);
                }
            }
            Backend::Affinity { .. } => {}
        }
    }
}

/// CPU time and throttling of one cgroup (or, with affinity, of its tracked processes).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuUsage {
    /// CPU seconds used.
    pub usage_secs: f64,
    /// CFS periods elapsed while runnable (cgroups only).
    pub nr_periods: u64,
    /// Periods in which the quota ran out.
    pub nr_throttled: u64,
    /// Time spent throttled, in seconds.
    pub throttled_secs: f64,
}

/// One leaf cgroup (or affinity set) for one process tree. Removed on drop.
#[derive(Debug)]
pub struct Cgroup {
    cpu_dir: Option<PathBuf>,
    acct_dir: Option<PathBuf>,
    v2: bool,
    affinity: Option<Vec<usize>>,
    limit_method: LimitMethod,
}

impl Cgroup {
    /// How the limit is enforced.
    pub fn limit_method(&self) -> &LimitMethod {
        &self.limit_method
    }

    /// Arranges for a child started from `cmd` to enter this cgroup between fork and exec,
    /// so the child's own quota detection sees the limit from its first instruction.
    pub fn apply_to(&self, cmd: &mut Command) {
        let procs: Vec<std::ffi::CString> = [&self.cpu_dir, &self.acct_dir]
            .into_iter()
            .flatten()
            .filter_map(|d| {
                std::ffi::CString::new(d.join("cgroup.procs").as_os_str().as_encoded_bytes()).ok()
            })
            .collect();
        let affinity = self.affinity.clone();
        // SAFETY: the closure runs in the forked child before exec; it only calls
        // async-signal-safe functions (open, write, close, sched_setaffinity) on data
        // prepared before the fork, and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                for p in &procs {
                    let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    // "0" moves the writing process itself (v1 and v2 alike).
                    let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                    let err = io::Error::last_os_error();
                    libc::close(fd);
                    if n != 1 {
                        return Err(err);
                    }
                }
                if let Some(cpus) = &affinity {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    for &c in cpus {
                        libc::CPU_SET(c, &mut set);
                    }
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
                    {
                        return Err(io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }

    /// CPU used so far by every process that has been in this cgroup. With the affinity
    /// backend there is no cgroup to ask, so `pids` are summed from /proc (live ones only).
    pub fn usage(&self, pids: &[u32]) -> Option<CpuUsage> {
        let mut u = CpuUsage::default();
        if self.v2 {
            let stat = fs::read_to_string(self.cpu_dir.as_ref()?.join("cpu.stat")).ok()?;
            u.usage_secs = stat_field(&stat, "usage_usec").unwrap_or(0) as f64 / 1e6;
            u.add_throttling(&stat);
            return Some(u);
        }
        if let Some(cpu) = &self.cpu_dir {
            if let Ok(stat) = fs::read_to_string(cpu.join("cpu.stat")) {
                u.add_throttling(&stat);
            }
            if let Some(acct) = &self.acct_dir {
                let ns: u64 = fs::read_to_string(acct.join("cpuacct.usage"))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()?;
                u.usage_secs = ns as f64 / 1e9;
                return Some(u);
            }
        }
        u.usage_secs = pids.iter().filter_map(|&p| process::cpu_secs(p)).sum();
        Some(u)
    }

    /// Kills whatever is still inside and removes the folders. Idempotent.
    pub fn remove(&mut self) {
        for d in [self.cpu_dir.take(), self.acct_dir.take()]
            .into_iter()
            .flatten()
        {
            kill_members(&d);
            remove_dir(&d);
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

impl CpuUsage {
    /// The throttling counters of a v1 or v2 `cpu.stat`, read by the quota crate's parser (the
    /// same one the target reports with); a file without them leaves zeros.
    fn add_throttling(&mut self, cpu_stat: &str) {
        if let Some(t) = benchmatrix_quota::parse_cpu_stat(cpu_stat) {
            self.nr_periods = t.periods;
            self.nr_throttled = t.throttled_periods;
            self.throttled_secs = t.throttled_seconds;
        }
    }
}

fn stat_field(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next()? == key).then(|| it.next()?.parse().ok())?
    })
}

fn make_dir(path: &Path) -> io::Result<()> {
    match fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot create cgroup {}: {e}", path.display()),
        )),
    }
}

fn remove_dir(path: &Path) {
    // A cgroup folder can only be removed once empty, and a killed process leaves it a few
    // milliseconds after the signal: retry briefly.
    for _ in 0..50 {
        match fs::remove_dir(path) {
            Ok(()) => break,
            Err(e) if e.kind() == io::ErrorKind::NotFound => break,
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn kill_members(dir: &Path) {
    let Ok(procs) = fs::read_to_string(dir.join("cgroup.procs")) else {
        return;
    };
    for pid in procs.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
        process::signal_process(pid, libc::SIGKILL);
    }
}

/// Where `cgroup` (a path from /proc/self/cgroup, relative to the hierarchy's root) is under
/// `mount`: the part the mount's root already covers is dropped (in a container without a
/// cgroup namespace the mount shows the container's own cgroup, not the hierarchy's root).
fn dir_of(mount: &Mount, cgroup: &str) -> PathBuf {
    let inside = match cgroup.strip_prefix(mount.root.trim_end_matches('/')) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => cgroup,
    };
    mount.mount_point.join(inside.trim_start_matches('/'))
}

/// The cgroup hierarchies (v1 and v2) in a mountinfo text.
fn cgroup_mounts(mountinfo: &str) -> Vec<Mount> {
    mountinfo::parse(mountinfo)
        .into_iter()
        .filter(Mount::is_cgroup)
        .collect()
}

/// This process's path in the hierarchy whose controller list contains `controller`
/// (`""` for the unified hierarchy's `0::` line).
fn own_path(own: &str, controller: &str) -> Option<String> {
    own.lines().find_map(|l| {
        let mut it = l.splitn(3, ':');
        let _id = it.next()?;
        let ctrls = it.next()?;
        let path = it.next()?;
        let hit = if controller.is_empty() {
            ctrls.is_empty()
        } else {
            ctrls.split(',').any(|c| c == controller)
        };
        hit.then(|| path.to_string())
    })
}

fn try_v2(mountinfo: &str, own: &str, run_name: &str) -> Result<PathBuf, String> {
    let mount = cgroup_mounts(mountinfo)
        .into_iter()
        .find(|m| m.fs_type == "cgroup2")
        .ok_or("not mounted")?;
    let base = dir_of(&mount, &own_path(own, "").unwrap_or_default());
    let controllers = fs::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
    if !controllers.split_whitespace().any(|c| c == "cpu") {
        return Err(format!(
            "the cpu controller is not available in {}",
            base.display()
        ));
    }
    let subtree = fs::read_to_string(base.join("cgroup.subtree_control")).unwrap_or_default();
    if !subtree.split_whitespace().any(|c| c == "cpu") {
        fs::write(base.join("cgroup.subtree_control"), "+cpu")
            .map_err(|e| format!("cannot delegate cpu below {}: {e}", base.display()))?;
    }
    let dir = base.join(run_name);
    make_dir(&dir).map_err(|e| e.to_string())?;
    // The run's parent competes with its siblings by weight too.
    let _ = fs::write(dir.join("cpu.weight"), BENCH_WEIGHT_V2.to_string());
    if let Err(e) = fs::write(dir.join("cgroup.subtree_control"), "+cpu") {
        remove_dir(&dir);
        return Err(format!("cannot delegate cpu below {}: {e}", dir.display()));
    }
    Ok(dir)
}

fn try_v1(
    mountinfo: &str,
    own: &str,
    run_name: &str,
) -> Result<(PathBuf, Option<PathBuf>), String> {
    let mounts = cgroup_mounts(mountinfo);
    let find = |ctrl: &str| {
        mounts
            .iter()
            .find(|m| m.fs_type == "cgroup" && m.has_super_option(ctrl))
    };
    let cpu_mount = find("cpu").ok_or("no cpu hierarchy mounted")?;
    let cpu_dir = dir_of(cpu_mount, &own_path(own, "cpu").unwrap_or_default()).join(run_name);
    make_dir(&cpu_dir).map_err(|e| e.to_string())?;
    // The run's parent competes with its siblings by weight too.
    let _ = fs::write(cpu_dir.join("cpu.shares"), BENCH_SHARES_V1.to_string());
    // Probe that quotas are writable here, not just folders.
    let probe = cpu_dir.join("cpu.cfs_quota_us");
    if let Err(e) = fs::write(&probe, "-1") {
        remove_dir(&cpu_dir);
        return Err(format!("{} is not writable: {e}", probe.display()));
    }
    let acct_dir = match find("cpuacct") {
        Some(m) if m.mount_point == cpu_mount.mount_point => Some(cpu_dir.clone()),
        Some(m) => {
            let d = dir_of(m, &own_path(own, "cpuacct").unwrap_or_default()).join(run_name);
            make_dir(&d).ok().map(|_| d)
        }
        None => None,
    };
    Ok((cpu_dir, acct_dir))
}

/// Removes run folders whose runner is gone (SIGKILL leaves them behind).
fn remove_stale(mountinfo: &str) {
    for mount in cgroup_mounts(mountinfo) {
        let Ok(entries) = fs::read_dir(&mount.mount_point) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(pid) = name
                .strip_prefix(RUN_PREFIX)
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            if let Ok(leaves) = fs::read_dir(e.path()) {
                for leaf in leaves.flatten().filter(|l| l.path().is_dir()) {
                    kill_members(&leaf.path());
                    remove_dir(&leaf.path());
                }
            }
            remove_dir(&e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn parses_mountinfo_and_own_paths() {
        let mi = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
                  33 31 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n\
                  41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
                  22 1 8:1 / / rw - ext4 /dev/sda rw\n";
        let m = cgroup_mounts(mi);
        assert_eq!(m.len(), 3);
        assert_eq!(m[2].mount_point, PathBuf::from("/sys/fs/cgroup/unified"));
        let own = "4:memory:/a/b\n2:cpuacct:/\n1:cpu,cpuacct:/x\n0::/user.slice\n";
        assert_eq!(own_path(own, "cpu").as_deref(), Some("/x"));
        assert_eq!(own_path(own, "memory").as_deref(), Some("/a/b"));
        assert_eq!(own_path(own, "").as_deref(), Some("/user.slice"));
        assert_eq!(dir_of(&m[0], "/x"), PathBuf::from("/sys/fs/cgroup/cpu/x"));
    }

    #[test]
    fn a_container_mount_whose_root_is_its_own_cgroup_is_not_joined_twice() {
        // Docker on cgroup v1 without a cgroup namespace: /proc/self/cgroup names the full
        // path, and the mount already shows that cgroup at /sys/fs/cgroup/cpu.
        let mi = "500 499 0:29 /docker/abc /sys/fs/cgroup/cpu ro,nosuid - cgroup cgroup rw,cpu,cpuacct\n";
        let m = &cgroup_mounts(mi)[0];
        assert_eq!(m.root, "/docker/abc");
        assert_eq!(
            dir_of(m, "/docker/abc"),
            PathBuf::from("/sys/fs/cgroup/cpu")
        );
        assert_eq!(
            dir_of(m, "/docker/abc/inner"),
            PathBuf::from("/sys/fs/cgroup/cpu/inner")
        );
        // A sibling whose name only starts the same is not inside the mount's root.
        assert_eq!(
            dir_of(m, "/docker/abcdef"),
            PathBuf::from("/sys/fs/cgroup/cpu/docker/abcdef")
        );
    }

    #[test]
    fn a_mount_point_with_a_space_names_the_real_folder() {
        let mi = "41 31 0:38 / /run/my\\040cgroups rw - cgroup2 cgroup2 rw\n";
        let m = &cgroup_mounts(mi)[0];
        assert_eq!(dir_of(m, "/a"), PathBuf::from("/run/my cgroups/a"));
    }

    #[test]
    fn quota_is_cores_times_period_with_a_floor() {
        assert_eq!(quota_us(0.5), 50_000);
        assert_eq!(quota_us(2.0), 200_000);
        assert_eq!(quota_us(0.001), 1000);
    }

    #[test]
    fn throttling_counts_in_both_cpu_stat_formats() {
        let mut v1 = CpuUsage::default();
        v1.add_throttling("nr_periods 12\nnr_throttled 3\nthrottled_time 4500000000\n");
        assert_eq!((v1.nr_periods, v1.nr_throttled), (12, 3));
        assert!((v1.throttled_secs - 4.5).abs() < 1e-9);
        let mut v2 = CpuUsage::default();
        v2.add_throttling("usage_usec 9\nnr_periods 7\nnr_throttled 2\nthrottled_usec 250000\n");
        assert_eq!((v2.nr_periods, v2.nr_throttled), (7, 2));
        assert!((v2.throttled_secs - 0.25).abs() < 1e-9);
        let mut none = CpuUsage::default();
        none.add_throttling("usage_usec 9\n");
        assert_eq!(none, CpuUsage::default());
    }

    #[test]
    fn reads_stat_fields() {
        let s = "nr_periods 12\nnr_throttled 3\nthrottled_time 4500000\n";
        assert_eq!(stat_field(s, "nr_throttled"), Some(3));
        assert_eq!(stat_field(s, "nr_periods"), Some(12));
        assert_eq!(stat_field(s, "missing"), None);
    }

    /// Ground truth for the quota: two busy loops in a 0.5-CPU cgroup use about half a core
    /// per second of wall time, measured both by cpuacct and by /proc/PID/stat.
    #[test]
    fn timing_half_cpu_cgroup_limits_a_busy_child_to_half_a_core() {
        let backend = Backend::detect();
        assert!(
            !matches!(backend, Backend::Affinity { .. }),
            "this machine has writable cgroups; detection fell back: {backend:?}"
        );
        let mut cg = backend
            .create("test-half", Some(0.5), 0)
            .expect("create cgroup");
        let mut cmd = Command::new("sh");
        // Two busy loops: without the quota this would use up to 2 cores.
        cmd.args(["-c", "while :; do :; done & while :; do :; done"]);
        cg.apply_to(&mut cmd);
        let mut child = cmd.spawn().expect("spawn busy child");
        std::thread::sleep(Duration::from_millis(300));
        let start = Instant::now();
        let u0 = cg.usage(&[]).expect("usage");
        std::thread::sleep(Duration::from_secs(3));
        let u1 = cg.usage(&[]).expect("usage");
        let wall = start.elapsed().as_secs_f64();
        let cores = (u1.usage_secs - u0.usage_secs) / wall;
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            (0.35..=0.6).contains(&cores),
            "expected ~0.5 cores, used {cores:.3} (usage {u0:?} -> {u1:?})"
        );
        assert!(u1.nr_throttled > 0, "the quota must have throttled: {u1:?}");
        let path = match cg.limit_method() {
            LimitMethod::CgroupV1 { path } | LimitMethod::CgroupV2 { path } => path.clone(),
            other => panic!("unexpected enforcement {other:?}"),
        };
        cg.remove();
        assert!(!path.exists(), "cgroup folder must be removed");
        backend.remove();
    }
}
