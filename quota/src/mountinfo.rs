//! `/proc/self/mountinfo`, the one parser of it in the workspace: quota detection reads it to
//! find where the cgroup hierarchies are mounted, and the local runner reads it to create its
//! own cgroups there.
//!
//! A line looks like
//! `36 35 98:0 /root /mount/point rw,noatime master:1 - fstype source super,options`: a variable
//! number of optional fields ends with `-`, so the fields after it are found from that
//! separator, not by position. Paths escape space, tab, newline and backslash as `\040`-style
//! octal, which is undone here so a mount point with a space names the real folder.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// One mounted filesystem, the fields the workspace needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Which folder of the filesystem the mount shows (field 4), unescaped. For a cgroup
    /// hierarchy: "/" on a host, the container's own cgroup inside a container without a
    /// cgroup namespace. Text, because it is matched against the paths of /proc/self/cgroup.
    pub root: String,
    /// Where it is mounted (field 5), unescaped, byte for byte.
    pub mount_point: PathBuf,
    /// The filesystem type after the separator: `cgroup` (v1), `cgroup2`, `ext4`, ...
    pub fs_type: String,
    /// The per-superblock options, comma-separated; for a cgroup v1 hierarchy they name its
    /// controllers (`rw,cpu,cpuacct`).
    pub super_options: String,
}

impl Mount {
    /// Parses one mountinfo line; `None` for a line without the ` - ` separator or with too
    /// few fields.
    pub fn parse_line(line: &str) -> Option<Mount> {
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        if left.len() < 5 || right.len() < 3 {
            return None;
        }
        Some(Mount {
            root: String::from_utf8_lossy(&unescape(left[3])).into_owned(),
            mount_point: PathBuf::from(OsString::from_vec(unescape(left[4]))),
            fs_type: right[0].to_string(),
            super_options: right[2].to_string(),
        })
    }

    /// Whether `option` is one of the super options (for cgroup v1: one of the controllers).
    pub fn has_super_option(&self, option: &str) -> bool {
        self.super_options.split(',').any(|o| o == option)
    }

    /// Whether this is a cgroup hierarchy, v1 (`cgroup`) or v2 (`cgroup2`).
    pub fn is_cgroup(&self) -> bool {
        self.fs_type == "cgroup" || self.fs_type == "cgroup2"
    }
}

/// Every parsable line of a mountinfo text, in order; unparsable lines are skipped.
pub fn parse(mountinfo: &str) -> Vec<Mount> {
    mountinfo.lines().filter_map(Mount::parse_line).collect()
}

/// The mounts `root/proc/self/mountinfo` lists (`root` stands for `/`); an unreadable file
/// gives none, as a process that can see no mounts can use none.
pub fn read_in(root: &Path) -> Vec<Mount> {
    parse(&std::fs::read_to_string(root.join("proc/self/mountinfo")).unwrap_or_default())
}

/// mountinfo escapes space, tab, newline and backslash as `\040`-style octal.
fn unescape(field: &str) -> Vec<u8> {
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_fields_are_skipped_and_escapes_undone() {
        let m = Mount::parse_line(
            "41 31 0:38 /a\\040b /sys/fs/cgroup/my\\040cgroups rw,relatime shared:9 master:2 - cgroup2 cgroup2 rw,nsdelegate",
        )
        .unwrap();
        assert_eq!(m.root, "/a b");
        assert_eq!(m.mount_point, PathBuf::from("/sys/fs/cgroup/my cgroups"));
        assert_eq!(m.fs_type, "cgroup2");
        assert_eq!(m.super_options, "rw,nsdelegate");
        assert!(m.is_cgroup());
    }

    #[test]
    fn tab_newline_and_backslash_escapes() {
        let m =
            Mount::parse_line("1 0 8:1 / /mnt/a\\011b\\012c\\134d rw - ext4 /dev/sda1 rw").unwrap();
        assert_eq!(m.mount_point, PathBuf::from("/mnt/a\tb\nc\\d"));
        assert!(!m.is_cgroup());
    }

    #[test]
    fn v1_controllers_are_the_super_options() {
        let m = Mount::parse_line(
            "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct",
        )
        .unwrap();
        assert!(m.has_super_option("cpu") && m.has_super_option("cpuacct"));
        // A controller whose name only starts the same is not there.
        assert!(!m.has_super_option("cpuset"));
        assert!(!m.has_super_option("cp"));
        // The mount options (relatime) are not super options.
        assert!(!m.has_super_option("relatime"));
    }

    #[test]
    fn a_text_keeps_its_parsable_lines_in_order() {
        let text = "22 1 8:1 / / rw - ext4 /dev/sda rw\n\
                    garbage without a separator\n\
                    41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let mounts = parse(text);
        assert_eq!(mounts.len(), 2);
        assert_eq!(mounts[0].mount_point, PathBuf::from("/"));
        assert_eq!(mounts[1].fs_type, "cgroup2");
    }

    #[test]
    fn the_live_mountinfo_has_a_root_filesystem() {
        let mounts = read_in(Path::new("/"));
        assert!(
            mounts.iter().any(|m| m.mount_point == Path::new("/")),
            "{mounts:?}"
        );
        assert!(read_in(Path::new("/nonexistent-root")).is_empty());
    }
}
