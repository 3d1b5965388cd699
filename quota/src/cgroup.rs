//! Finding the process's cgroup directories: `/proc/self/cgroup` says which cgroup the process
//! is in for each hierarchy, `/proc/self/mountinfo` says where each hierarchy is mounted and
//! which part of it the mount shows (inside a container the mount's root is usually the
//! container's own cgroup, not "/").

use std::path::{Component, Path, PathBuf};

use crate::mountinfo;

/// Which cgroup interface a directory belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    /// The v1 `cpu` controller hierarchy (`cpu.cfs_quota_us`, `cpu.cfs_period_us`).
    V1,
    /// The unified v2 hierarchy (`cpu.max`).
    V2,
}

/// The directory of the process's cgroup in one hierarchy, as a path under the detection root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupDir {
    /// v1 cpu controller or v2 unified.
    pub version: CgroupVersion,
    /// The process's cgroup directory (under the detection root).
    pub path: PathBuf,
    /// Where the hierarchy is mounted (under the detection root): the highest level visible.
    pub mount_point: PathBuf,
}

impl CgroupDir {
    /// The directory and each ancestor up to and including the mount point, leaf first. Quotas
    /// are hierarchical, so every visible level can be the one that binds.
    pub fn levels(&self) -> Vec<PathBuf> {
        let mut out = vec![self.path.clone()];
        let mut cur = self.path.as_path();
        while cur != self.mount_point {
            match cur.parent() {
                Some(p) if p.starts_with(&self.mount_point) => {
                    out.push(p.to_path_buf());
                    cur = p;
                }
                _ => break,
            }
        }
        out
    }
}

/// The process's cgroup directories for the v1 cpu controller and for v2, as far as they can be
/// found under `root` (which stands for `/`). Missing files give an empty list, not an error:
/// a process outside any cgroup filesystem simply has no cgroup limit.
pub fn cgroup_dirs_in(root: &Path) -> Vec<CgroupDir> {
    let cgroups = std::fs::read_to_string(root.join("proc/self/cgroup")).unwrap_or_default();
    let mounts = mountinfo::read_in(root);

    let mut dirs = Vec::new();
    for line in cgroups.lines() {
        // "hierarchy-id:controller,list:/path"; the path may itself contain ':'.
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let version = if id == "0" && controllers.is_empty() {
            CgroupVersion::V2
        } else if controllers.split(',').any(|c| c == "cpu") {
            CgroupVersion::V1
        } else {
            continue;
        };
        let candidates = mounts.iter().filter(|m| match version {
            CgroupVersion::V2 => m.fs_type == "cgroup2",
            CgroupVersion::V1 => m.fs_type == "cgroup" && m.has_super_option("cpu"),
        });
        // Of several mounts of one hierarchy, the one whose root is the longest prefix of our
        // path shows our cgroup most directly.
        let best = candidates
            .filter_map(|m| relative_to_mount(path, &m.root).map(|rel| (m, rel)))
            .max_by_key(|(m, _)| m.root.len());
        if let Some((mount, rel)) = best {
            let mount_point = under_root(root, &mount.mount_point);
            dirs.push(CgroupDir {
                version,
                path: mount_point.join(rel),
                mount_point,
            });
        }
    }
    dirs
}

/// Where `cgroup_path` lies relative to a mount that shows `mount_root` of the hierarchy.
///
/// When the process's path does not lie under the mount's root (a container without a cgroup
/// namespace can show a host path that its own mount does not contain, or a cgroup namespace
/// shows "/"), the mount point itself is the best guess — it is the container's cgroup.
fn relative_to_mount(cgroup_path: &str, mount_root: &str) -> Option<PathBuf> {
    let path = Path::new(cgroup_path);
    let rel = match path.strip_prefix(mount_root) {
        Ok(rel) => rel.to_path_buf(),
        Err(_) => PathBuf::new(),
    };
    // Never let "..", which /proc/self/cgroup shows for cgroups outside our namespace, climb
    // above the mount point.
    if rel.components().any(|c| matches!(c, Component::ParentDir)) {
        return Some(PathBuf::new());
    }
    Some(rel)
}

/// `absolute` as seen under `root`, which stands for `/`.
fn under_root(root: &Path, absolute: &Path) -> PathBuf {
    root.join(absolute.strip_prefix("/").unwrap_or(absolute))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_outside_the_mount_root_falls_back_to_the_mount_point() {
        assert_eq!(
            relative_to_mount("/docker/abc/x", "/docker/abc"),
            Some(PathBuf::from("x"))
        );
        assert_eq!(
            relative_to_mount("/docker/abcd", "/docker/abc"),
            Some(PathBuf::new())
        );
        assert_eq!(relative_to_mount("/../..", "/"), Some(PathBuf::new()));
    }

    #[test]
    fn levels_stop_at_the_mount_point() {
        let d = CgroupDir {
            version: CgroupVersion::V1,
            path: PathBuf::from("/r/sys/fs/cgroup/cpu/a/b"),
            mount_point: PathBuf::from("/r/sys/fs/cgroup/cpu"),
        };
        assert_eq!(
            d.levels(),
            vec![
                PathBuf::from("/r/sys/fs/cgroup/cpu/a/b"),
                PathBuf::from("/r/sys/fs/cgroup/cpu/a"),
                PathBuf::from("/r/sys/fs/cgroup/cpu"),
            ]
        );
    }
}
