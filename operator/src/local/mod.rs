//! `benchmatrix run FILE`: the whole matrix on this machine, with real CPU quotas.
//!
//! The same BenchmarkRun YAML the operator runs: validated up front (exit 2 with the field
//! path and line before anything starts), then each cell in order — replicas sharing a port,
//! each in its own cgroup, the load generator in another — and finally `status.yaml` (the
//! operator's status schema), `report.md` and SVG charts in the output folder.

pub mod cgroup;
pub mod http;
pub mod loadgen;
pub mod progress;
pub mod replicas;
pub mod runner;
pub mod signals;

use std::process::ExitCode;

/// Arguments of `benchmatrix run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The BenchmarkRun YAML to run.
    pub file: std::path::PathBuf,
    /// Folder for status.yaml, report.md and charts.
    #[arg(long, default_value = "benchmatrix-out")]
    pub out: std::path::PathBuf,
}

/// Runs the matrix described by `args.file`: exit 0 when every cell was measured, 1 when a
/// cell failed (the others still ran), 2 for an unreadable or invalid file, 130 on Ctrl-C.
pub fn run(args: RunArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("benchmatrix run: cannot read {}: {e}", args.file.display());
            return ExitCode::from(2);
        }
    };
    let run = match crate::validate::parse_benchmark_run(&text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "benchmatrix run: {} is not a valid BenchmarkRun:",
                args.file.display()
            );
            for fe in &e.errors {
                eprintln!("  {fe}");
            }
            return ExitCode::from(2);
        }
    };
    // Installed before the first child exists, so no Ctrl-C can orphan one.
    signals::install();
    match runner::Runner::new(run, args.file.clone(), args.out.clone()) {
        Ok(r) => r.run_all().exit_code(),
        Err(e) => {
            eprintln!(
                "benchmatrix run: cannot prepare {}: {e}",
                args.out.display()
            );
            ExitCode::from(1)
        }
    }
}
