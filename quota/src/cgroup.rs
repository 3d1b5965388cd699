//! Finding the process's cgroup directories: `/proc/self/cgroup` says which cgroup the process
//! is in for each hierarchy, `/proc/self/mountinfo` says where each hierarchy is mounted and
//! which part of it the mount shows (inside a container the mount's root is usually the
//! container's own cgroup, not "/").

use std::path::{Component, Path, PathBuf};

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

/// One line of /proc/self/mountinfo, the fields this crate needs.
#[derive(Debug)]
struct Mount {
    root: String,
    mount_point: String,
    fs_type: String,
    super_options: String,
}

/// The process's cgroup directories for the v1 cpu controller and for v2, as far as they can be
/// found under `root` (which stands for `/`). Missing files give an empty list, not an error:
/// a process outside any cgroup filesystem simply has no cgroup limit.
pub fn cgroup_dirs_in(root: &Path) -> Vec<CgroupDir> {
    let cgroups = std::fs::read_to_string(root.join("proc/self/cgroup")).unwrap_or_default();
    let mountinfo = std::fs::read_to_string(root.join("proc/self/mountinfo")).unwrap_or_default();
    let mounts: Vec<Mount> = mountinfo.lines().filter_map(parse_mount).collect();

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
            CgroupVersion::V1 => {
                m.fs_type == "cgroup" && m.super_options.split(',').any(|o| o == "cpu")
            }
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

fn under_root(root: &Path, absolute: &str) -> PathBuf {
    root.join(absolute.trim_start_matches('/'))
}

/// Parses one mountinfo line:
/// `36 35 98:0 /root /mount/point rw,noatime master:1 - fstype source super,options`.
fn parse_mount(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let left: Vec<&str> = left.split(' ').collect();
    let right: Vec<&str> = right.split(' ').collect();
    if left.len() < 5 || right.len() < 3 {
        return None;
    }
    Some(Mount {
        root: unescape(left[3]),
        mount_point: unescape(left[4]),
        fs_type: right[0].to_string(),
        super_options: right[2].to_string(),
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\040`-style octal.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let v = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_line_with_optional_fields_and_escapes() {
        let m = parse_mount(
            "41 31 0:38 /a\\040b /sys/fs/cgroup/unified rw,relatime shared:9 master:2 - cgroup2 cgroup2 rw",
        )
        .unwrap();
        assert_eq!(m.root, "/a b");
        assert_eq!(m.mount_point, "/sys/fs/cgroup/unified");
        assert_eq!(m.fs_type, "cgroup2");
    }

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
