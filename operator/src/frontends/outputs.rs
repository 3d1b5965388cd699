//! The output files of a run (`--out`, `--junit`, `--benchmark-json`) checked as a run checks
//! them before it starts, for a dry run: the run's own check (folders made, a file written
//! and removed), then undone, so that a dry run says what the run would and leaves nothing
//! behind.

use std::path::Path;

use crate::frontends::report::ci::CiFiles;

/// Every problem a run would refuse in `out` and the CI files of `ci`, as "--flag PATH: ...".
pub fn problems(out: &Path, ci: &CiFiles) -> Vec<String> {
    let mut problems: Vec<String> = folder_problem(out)
        .map(|e| format!("--out {}: {e}", out.display()))
        .into_iter()
        .collect();
    for (flag, path) in [
        ("--junit", &ci.junit),
        ("--benchmark-json", &ci.benchmark_json),
    ] {
        problems.extend(path.as_ref().and_then(|p| file_problem(flag, p)));
    }
    problems
}

/// Why a run could not write into `folder`: the run's own check, then the folders it made
/// removed again.
pub fn folder_problem(folder: &Path) -> Option<String> {
    // The outermost folder the check will make, if any: the one to remove afterwards.
    let made = folder
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty() && !a.exists())
        .last()
        .map(Path::to_path_buf);
    let problem = crate::frontends::report::files::check_writable_folder(folder).err();
    if let Some(made) = made {
        let _ = std::fs::remove_dir_all(made);
    }
    problem
}

/// What a run would refuse in a CI file of `flag` at `path`: a folder, or a folder of it that
/// cannot be written.
pub fn file_problem(flag: &str, path: &Path) -> Option<String> {
    if path.file_name().is_none() || path.is_dir() {
        return Some(format!(
            "{flag} {}: names a folder, not a file",
            path.display()
        ));
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    folder_problem(folder).map(|e| {
        format!(
            "{flag} {}: its folder {}: {e}",
            path.display(),
            folder.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_paths_are_checked_and_nothing_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(folder_problem(&dir.path().join("new/deeper")), None);
        assert!(!dir.path().join("new").exists());
        assert_eq!(
            folder_problem(&file).as_deref(),
            Some("exists and is not a folder")
        );
        let under_a_file = folder_problem(&file.join("out")).unwrap();
        assert!(under_a_file.contains("cannot create it"), "{under_a_file}");
        assert!(
            file_problem("--junit", dir.path())
                .unwrap()
                .contains("names a folder")
        );
        assert!(
            file_problem("--junit", &file.join("j.xml"))
                .unwrap()
                .contains("its folder")
        );
        assert_eq!(file_problem("--junit", &dir.path().join("j.xml")), None);
    }
}
