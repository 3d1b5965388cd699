//! `benchmatrix run FILE`: the whole matrix on this machine.

pub mod cgroup;
pub mod http;
pub mod replicas;
pub mod signals;

/// Arguments of `benchmatrix run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The BenchmarkRun YAML to run.
    pub file: std::path::PathBuf,
    /// Folder for status.yaml, report.md and charts.
    #[arg(long, default_value = "benchmatrix-out")]
    pub out: std::path::PathBuf,
}

/// Runs the matrix described by `args.file`.
pub fn run(_args: RunArgs) -> std::process::ExitCode {
    eprintln!("benchmatrix run: the local runner is not built yet (issue 5)");
    std::process::ExitCode::from(2)
}
