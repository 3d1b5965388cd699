//! A real CPU quota: the target started inside a cgroup limited to half a CPU must see one CPU,
//! size its `auto` pool to one worker, and report the quota's file and its throttling.
//!
//! This runs wherever the tests run as root with a writable cgroup v1 `cpu` hierarchy or a
//! cgroup v2 hierarchy with the cpu controller delegated; elsewhere it fails with the reason
//! rather than skipping, because a target sized from the wrong CPU count makes every number of
//! the project wrong.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{BIN, Target, ms};

/// A cgroup created for one test and removed afterwards, also when the test fails.
struct TestCgroup {
    dir: PathBuf,
    /// The file whose quota the target should name.
    quota_file: PathBuf,
    /// The parent's `cgroup.procs`, where leftover processes are moved before removal.
    parent_procs: PathBuf,
}

impl TestCgroup {
    /// Creates a cgroup with a quota of `quota_us` per `period_us`.
    fn create(quota_us: u64, period_us: u64) -> TestCgroup {
        let name = format!(
            "benchmatrix-test-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let v1 = Path::new("/sys/fs/cgroup/cpu");
        if v1.join("cpu.cfs_quota_us").is_file() {
            let dir = v1.join(&name);
            fs::create_dir(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
            let cg = TestCgroup {
                quota_file: dir.join("cpu.cfs_quota_us"),
                parent_procs: v1.join("cgroup.procs"),
                dir,
            };
            fs::write(cg.dir.join("cpu.cfs_period_us"), period_us.to_string()).unwrap();
            fs::write(&cg.quota_file, quota_us.to_string()).unwrap();
            return cg;
        }
        let v2 = Path::new("/sys/fs/cgroup");
        let controllers = fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
        assert!(
            controllers.split_whitespace().any(|c| c == "cpu"),
            "no writable cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu and no cgroup v2 cpu \
             controller at /sys/fs/cgroup: this test needs root and cgroups"
        );
        let _ = fs::write(v2.join("cgroup.subtree_control"), "+cpu");
        let dir = v2.join(&name);
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let cg = TestCgroup {
            quota_file: dir.join("cpu.max"),
            parent_procs: v2.join("cgroup.procs"),
            dir,
        };
        fs::write(&cg.quota_file, format!("{quota_us} {period_us}")).unwrap();
        cg
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // The target is killed before this runs; move anything left over out, then remove.
        for _ in 0..50 {
            if let Ok(pids) = fs::read_to_string(self.dir.join("cgroup.procs")) {
                for pid in pids.split_whitespace() {
                    let _ = fs::write(&self.parent_procs, pid);
                }
            }
            if fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("could not remove test cgroup {}", self.dir.display());
    }
}

#[test]
fn real_cgroup_half_a_cpu_is_one_cpu_and_a_pool_of_one() {
    let cg = TestCgroup::create(50_000, 100_000);
    // The shell puts itself into the cgroup, then becomes the target, so the target starts
    // (and detects) inside it.
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        r#"echo $$ > "$0/cgroup.procs" && exec "$@""#,
        cg.dir.to_str().unwrap(),
        BIN,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--mode",
        "pool",
    ]);
    let t = Target::spawn(cmd);

    let s = t.stats();
    assert_eq!(s["detectedCpus"], 1, "{s}");
    assert_eq!(
        s["poolSize"], 1,
        "`auto` follows the quota, not the host: {s}"
    );
    assert_eq!(s["cpuQuota"], 0.5, "{s}");
    assert_eq!(s["quotaSource"], cg.quota_file.to_str().unwrap(), "{s}");
    assert!(s["hostCpus"].as_u64().unwrap() >= 1);

    // 300 ms of CPU at 50 ms per 100 ms period cannot finish in under ~450 ms of wall time.
    let r = t.get("/cpu?ms=300");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.elapsed >= Duration::from_millis(350),
        "300 ms of CPU took only {:.0} ms",
        ms(r.elapsed)
    );
    // The throttling figures are the cgroup's own counters. (Whether the burn was throttled at
    // all depends on the machine: on a busy box the thread gets less than half a CPU anyway
    // and the quota never bites, so only the match is asserted.) The counters only grow and
    // the last period of the burn may still be counted after the answer, so the target's
    // figures must lie between a read of cpu.stat before its stats and one after.
    let before = CpuStat::read(&cg.dir);
    let s = t.stats();
    let after = CpuStat::read(&cg.dir);
    let periods = s["throttledPeriods"].as_u64().unwrap();
    assert!(
        (before.periods..=after.periods).contains(&periods),
        "{s}\n{before:?}\n{after:?}"
    );
    let seconds = s["throttledSeconds"].as_f64().unwrap();
    assert!(
        before.seconds - 1e-6 <= seconds && seconds <= after.seconds + 1e-6,
        "{s}\n{before:?}\n{after:?}"
    );
    eprintln!(
        "300 ms of CPU under a 0.5 CPU quota took {:.0} ms; throttled periods: {}",
        ms(r.elapsed),
        periods
    );
    drop(t);
    drop(cg);
}

/// The throttling counters of a cgroup's cpu.stat (v1 names `throttled_time` in ns, v2
/// `throttled_usec`).
#[derive(Debug)]
struct CpuStat {
    periods: u64,
    seconds: f64,
}

impl CpuStat {
    fn read(dir: &std::path::Path) -> Self {
        let file = fs::read_to_string(dir.join("cpu.stat")).unwrap();
        let counter = |key: &str| -> u64 {
            file.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {key} in {file}"))
        };
        let seconds = if file.contains("throttled_usec") {
            counter("throttled_usec ") as f64 / 1e6
        } else {
            counter("throttled_time ") as f64 / 1e9
        };
        CpuStat {
            periods: counter("nr_throttled "),
            seconds,
        }
    }
}
