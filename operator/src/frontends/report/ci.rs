//! The files for CI that both `run` commands write on request: `--junit FILE` ([`super::junit`])
//! and `--benchmark-json PATH` ([`super::benchmark_json`]).

use std::path::{Path, PathBuf};

use crate::resource::BenchmarkRunStatus;

/// The CI files of `benchmatrix run` and `kubectl benchmatrix run`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CiFiles {
    /// Also write the verdicts as JUnit XML into FILE, for CI test reports: each threshold
    /// verdict, each cell and, with variants, each candidate figure against the base a test
    /// case (a failed cell or threshold, or a regression, a failure; with --max-regression, a
    /// figure fails exactly when it fails the exit code's gate).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write the headline figures for github-action-benchmark into PATH.smaller.json
    /// (p50 and p99 in ms, error rate in %: tool customSmallerIsBetter) and PATH.bigger.json
    /// (requests per second: tool customBiggerIsBetter); a .json ending of PATH is left out.
    #[arg(long, value_name = "PATH")]
    pub benchmark_json: Option<PathBuf>,
}

impl CiFiles {
    /// Checks before the run starts that each file's folder can be written (made if missing),
    /// so a typo is bad input (exit 2) rather than a run whose verdict file is lost. The flag
    /// and its problem, as "--junit FILE: ...".
    pub fn check(&self) -> Result<(), String> {
        for (flag, path) in [
            ("--junit", &self.junit),
            ("--benchmark-json", &self.benchmark_json),
        ] {
            let Some(path) = path else { continue };
            if path.file_name().is_none() || path.is_dir() {
                return Err(format!(
                    "{flag} {}: names a folder, not a file",
                    path.display()
                ));
            }
            let folder = folder_of(path);
            super::files::check_writable_folder(folder).map_err(|e| {
                format!(
                    "{flag} {}: its folder {}: {e}",
                    path.display(),
                    folder.display()
                )
            })?;
        }
        Ok(())
    }

    /// Writes the files asked for, of the finished run `run` with `status`, judging its variants
    /// by `max_regression` (`--max-regression`) as the exit code does; returns a line per file
    /// written ("wrote FILE") and one per failure ("cannot write FILE: ...").
    pub fn write(
        &self,
        run: &str,
        status: &BenchmarkRunStatus,
        max_regression: Option<f64>,
    ) -> Vec<Result<String, String>> {
        let mut lines = Vec::new();
        if let Some(path) = &self.junit {
            lines.push(
                super::junit::write_junit(path, run, status, max_regression)
                    .map(|()| format!("wrote {}", path.display()))
                    .map_err(|e| format!("cannot write {}: {e}", path.display())),
            );
        }
        if let Some(path) = &self.benchmark_json {
            lines.push(
                super::benchmark_json::write_benchmark_json(path, status)
                    .map(|(smaller, bigger)| {
                        format!("wrote {} and {}", smaller.display(), bigger.display())
                    })
                    .map_err(|e| format!("cannot write {}: {e}", path.display())),
            );
        }
        lines
    }
}

fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}
