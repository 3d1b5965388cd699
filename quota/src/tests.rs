//! Detection over fake cgroup trees: each test writes the files a kernel would show and checks
//! what a process seeing them would conclude.

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::*;

/// A fake filesystem root with `/proc/self/{cgroup,mountinfo}` and cgroup files.
struct FakeRoot {
    dir: TempDir,
}

const V1_CPU_MOUNT: &str =
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:8 - cgroup cgroup rw,cpu,cpuacct";
const V1_CPUSET_MOUNT: &str =
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset";
const V2_MOUNT: &str = "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate";

impl FakeRoot {
    fn new(cgroup: &str, mountinfo: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let proc_self = dir.path().join("proc/self");
        fs::create_dir_all(&proc_self).unwrap();
        fs::write(proc_self.join("cgroup"), cgroup).unwrap();
        fs::write(proc_self.join("mountinfo"), mountinfo.join("\n") + "\n").unwrap();
        FakeRoot { dir }
    }

    /// Writes `contents` at the absolute system path `path` inside the fake root.
    fn file(self, path: &str, contents: &str) -> Self {
        let full = self.path(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, contents).unwrap();
        self
    }

    fn path(&self, path: &str) -> PathBuf {
        self.dir.path().join(path.trim_start_matches('/'))
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }
}

#[test]
fn v2_one_and_a_half_cores_rounds_up_to_two() {
    let fake =
        FakeRoot::new("0::/\n", &[V2_MOUNT]).file("/sys/fs/cgroup/cpu.max", "150000 100000\n");
    let limit = detect_in(fake.root(), Some(8), 8);
    assert_eq!(limit.detected_cpus, 2);
    assert_eq!(limit.quota_cores, Some(1.5));
    assert_eq!(limit.source, "/sys/fs/cgroup/cpu.max");
    assert_eq!(limit.host_cpus, 8);
}

#[test]
fn v2_max_means_the_host() {
    let fake = FakeRoot::new("0::/\n", &[V2_MOUNT]).file("/sys/fs/cgroup/cpu.max", "max 100000\n");
    let limit = detect_in(fake.root(), None, 4);
    assert_eq!(limit.detected_cpus, 4);
    assert_eq!(limit.quota_cores, None);
    assert_eq!(limit.source, "host");
}

#[test]
fn v2_nested_path_and_a_tighter_parent() {
    let fake = FakeRoot::new("0::/kubepods.slice/pod1/ctr\n", &[V2_MOUNT])
        .file(
            "/sys/fs/cgroup/kubepods.slice/pod1/ctr/cpu.max",
            "max 100000\n",
        )
        .file(
            "/sys/fs/cgroup/kubepods.slice/pod1/cpu.max",
            "50000 100000\n",
        )
        .file(
            "/sys/fs/cgroup/kubepods.slice/pod1/cpu.stat",
            "nr_periods 1\nnr_throttled 0\nthrottled_usec 0\n",
        )
        .file("/sys/fs/cgroup/kubepods.slice/cpu.max", "400000 100000\n");
    let limit = detect_in(fake.root(), Some(16), 16);
    assert_eq!(limit.detected_cpus, 1);
    assert_eq!(limit.quota_cores, Some(0.5));
    assert_eq!(limit.source, "/sys/fs/cgroup/kubepods.slice/pod1/cpu.max");
    // Throttling is counted where the quota is enforced.
    assert_eq!(
        limit.cpu_stat_file,
        Some(fake.path("/sys/fs/cgroup/kubepods.slice/pod1/cpu.stat"))
    );
    assert_eq!(throttling(&limit).unwrap().throttled_periods, 0);
}

#[test]
fn v1_quota_minus_one_is_unlimited() {
    let fake = FakeRoot::new("4:cpu,cpuacct:/\n", &[V1_CPU_MOUNT])
        .file("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
        .file("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    let limit = detect_in(fake.root(), Some(2), 2);
    assert_eq!(limit.detected_cpus, 2);
    assert_eq!(limit.quota_cores, None);
    // Affinity equals the host count here; the more specific explanation is named.
    assert_eq!(limit.source, "affinity");
}

#[test]
fn v1_nested_path_half_a_core_is_one_cpu() {
    let fake = FakeRoot::new(
        "5:cpuset:/\n4:cpu,cpuacct:/kubepods/burstable/pod1/ctr\n1:name=systemd:/x\n",
        &[V1_CPUSET_MOUNT, V1_CPU_MOUNT],
    )
    .file(
        "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1/ctr/cpu.cfs_quota_us",
        "50000\n",
    )
    .file(
        "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1/ctr/cpu.cfs_period_us",
        "100000\n",
    )
    .file(
        "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1/ctr/cpu.stat",
        "nr_periods 9\nnr_throttled 4\nthrottled_time 2000000000\n",
    );
    let limit = detect_in(fake.root(), Some(64), 64);
    assert_eq!(limit.detected_cpus, 1);
    assert_eq!(limit.quota_cores, Some(0.5));
    assert_eq!(
        limit.source,
        "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1/ctr/cpu.cfs_quota_us"
    );
    let stat = throttling(&limit).unwrap();
    assert_eq!(stat.throttled_periods, 4);
    assert!((stat.throttled_seconds - 2.0).abs() < 1e-9);
}

#[test]
fn v1_parent_quota_binds_an_unlimited_child() {
    let fake = FakeRoot::new("4:cpu,cpuacct:/bench/cell\n", &[V1_CPU_MOUNT])
        .file(
            "/sys/fs/cgroup/cpu,cpuacct/bench/cell/cpu.cfs_quota_us",
            "-1\n",
        )
        .file(
            "/sys/fs/cgroup/cpu,cpuacct/bench/cell/cpu.cfs_period_us",
            "100000\n",
        )
        .file(
            "/sys/fs/cgroup/cpu,cpuacct/bench/cpu.cfs_quota_us",
            "250000\n",
        )
        .file(
            "/sys/fs/cgroup/cpu,cpuacct/bench/cpu.cfs_period_us",
            "100000\n",
        );
    let limit = detect_in(fake.root(), None, 8);
    assert_eq!(limit.detected_cpus, 3, "2.5 cores round up to 3");
    assert_eq!(
        limit.source,
        "/sys/fs/cgroup/cpu,cpuacct/bench/cpu.cfs_quota_us"
    );
}

#[test]
fn v1_container_mount_whose_root_is_not_slash() {
    // Docker without a cgroup namespace: the process sees its host path, and the container's
    // mount shows exactly that cgroup at the mount point.
    let fake = FakeRoot::new(
        "4:cpu,cpuacct:/docker/abc123\n",
        &["32 31 0:29 /docker/abc123 /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct"],
    )
    .file("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "100000\n")
    .file("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    let limit = detect_in(fake.root(), Some(4), 4);
    assert_eq!(limit.detected_cpus, 1);
    assert_eq!(limit.source, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us");
}

#[test]
fn affinity_smaller_than_quota_wins() {
    let fake =
        FakeRoot::new("0::/\n", &[V2_MOUNT]).file("/sys/fs/cgroup/cpu.max", "400000 100000\n");
    let limit = detect_in(fake.root(), Some(2), 16);
    assert_eq!(limit.detected_cpus, 2);
    assert_eq!(limit.source, "affinity");
    // The quota is still reported: it is a fact about the process even when it does not bind.
    assert_eq!(limit.quota_cores, Some(4.0));
}

#[test]
fn this_machines_shape_v2_without_controllers_and_v1_cpu() {
    // cgroup2 mounted at /sys/fs/cgroup/unified with no cpu.max, v1 cpu at /sys/fs/cgroup/cpu.
    let fake = FakeRoot::new(
        "4:memory:/m\n1:cpu:/cell\n0::/\n",
        &[
            "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
            "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct",
            "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
        ],
    )
    .file("/sys/fs/cgroup/unified/cpu.stat", "usage_usec 1\n")
    .file("/sys/fs/cgroup/cpu/cell/cpu.cfs_quota_us", "50000\n")
    .file("/sys/fs/cgroup/cpu/cell/cpu.cfs_period_us", "100000\n")
    .file("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n")
    .file("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    let limit = detect_in(fake.root(), Some(2), 2);
    assert_eq!(limit.detected_cpus, 1);
    assert_eq!(limit.source, "/sys/fs/cgroup/cpu/cell/cpu.cfs_quota_us");
}

#[test]
fn hybrid_takes_the_smaller_of_v1_and_v2() {
    let fake = FakeRoot::new(
        "1:cpu:/a\n0::/b\n",
        &[
            "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu",
            "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw",
        ],
    )
    .file("/sys/fs/cgroup/cpu/a/cpu.cfs_quota_us", "300000\n")
    .file("/sys/fs/cgroup/cpu/a/cpu.cfs_period_us", "100000\n")
    .file("/sys/fs/cgroup/unified/b/cpu.max", "200000 100000\n");
    let limit = detect_in(fake.root(), None, 8);
    assert_eq!(limit.detected_cpus, 2);
    assert_eq!(limit.source, "/sys/fs/cgroup/unified/b/cpu.max");
}

#[test]
fn no_cgroup_files_at_all_means_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let limit = detect_in(dir.path(), None, 3);
    assert_eq!(
        limit,
        CpuLimit {
            host_cpus: 3,
            detected_cpus: 3,
            quota_cores: None,
            source: "host".into(),
            cpu_stat_file: None,
        }
    );
}

#[test]
fn garbage_files_are_ignored_not_fatal() {
    let fake = FakeRoot::new("0::/\n", &[V2_MOUNT, "garbage line"])
        .file("/sys/fs/cgroup/cpu.max", "lots\n");
    assert_eq!(detect_in(fake.root(), None, 2).detected_cpus, 2);
}

#[test]
fn a_tiny_quota_is_still_one_cpu() {
    let fake = FakeRoot::new("0::/\n", &[V2_MOUNT]).file("/sys/fs/cgroup/cpu.max", "1000 100000\n");
    let limit = detect_in(fake.root(), None, 2);
    assert_eq!(limit.detected_cpus, 1);
    assert_eq!(limit.quota_cores, Some(0.01));
}

#[test]
fn parsers() {
    assert_eq!(parse_cpu_max("max"), None);
    assert_eq!(parse_cpu_max("200000 100000"), Some(2.0));
    assert_eq!(parse_cfs("-1", "100000"), None);
    assert_eq!(parse_cfs("0", "100000"), None);
    assert_eq!(parse_cfs("150000\n", "100000\n"), Some(1.5));
    assert_eq!(cores_rounded_up(2.0), 2);
    assert_eq!(cores_rounded_up(2.0001), 3);
}

#[test]
fn the_live_process_gets_a_sane_answer() {
    let limit = detect();
    assert!(limit.detected_cpus >= 1);
    assert!(limit.detected_cpus <= limit.host_cpus);
    assert_eq!(limit.host_cpus, host_cpus());
}

#[test]
fn serializes_camel_case() {
    let dir = tempfile::tempdir().unwrap();
    let json = serde_json::to_value(detect_in(dir.path(), None, 2)).unwrap();
    assert_eq!(json["hostCpus"], 2);
    assert_eq!(json["detectedCpus"], 2);
    assert!(json["quotaCores"].is_null());
    assert_eq!(json["source"], "host");
}
