//! Writing report files so that a failed write never leaves a truncated or empty file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically: into a temporary file in the same folder, flushed to
/// disk, then renamed over `path`. Readers see the old file or the new one, never a part; on
/// error (a full disk, a file size limit, a folder that is not writable) the old file is left
/// as it was, the temporary file is removed, and the error is returned.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temporary_path(path)?;
    let result = write_and_sync(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        // Best effort: the write's own error is the one worth reporting.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A name beside `path` that no other writer (thread or process) uses at the same time.
fn temporary_path(path: &Path) -> std::io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    Ok(path.with_file_name(tmp))
}

fn write_and_sync(tmp: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)?;
    f.write_all(bytes)?;
    // Without this, a crash after the rename can leave an empty file under the final name.
    f.sync_all()
}

/// The output folder must be a folder this process can write: made if missing, then probed
/// with a file written and removed, so a bad `--out` is bad input (exit 2) before any cell
/// starts rather than a run whose results cannot be kept.
pub fn check_writable_folder(out: &Path) -> Result<(), String> {
    if out.exists() && !out.is_dir() {
        return Err("exists and is not a folder".into());
    }
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create it: {e}"))?;
    let probe = out.join(format!(".benchmatrix-probe-{}", std::process::id()));
    std::fs::write(&probe, b"probe")
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| format!("cannot write in it: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn replaces_the_file_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("report.md");
        write_atomically(&p, b"first").unwrap();
        write_atomically(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert_eq!(names(dir.path()), ["report.md"]);
    }

    #[test]
    fn a_failed_rename_keeps_the_old_file_and_removes_the_temporary_one() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the file should be: the rename fails after the data was written.
        let p = dir.path().join("report.md");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("inside"), "kept").unwrap();
        assert!(write_atomically(&p, b"new").is_err());
        assert_eq!(std::fs::read_to_string(p.join("inside")).unwrap(), "kept");
        assert_eq!(names(dir.path()), ["report.md"]);
        // A path without a file name is refused, not written somewhere else.
        assert!(write_atomically(Path::new("/"), b"x").is_err());
    }
}
