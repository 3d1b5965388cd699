//! Command line entry, shared by the `benchmatrix-target` binary and `benchmatrix target`.

use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::Parser;

use crate::config::Args;
use crate::runtime;

/// Parses `args` (program name first), runs the service, and returns its exit code: 0 after a
/// graceful stop, 2 for bad flags or environment (with a message on stderr), 1 for other
/// failures.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let args = match Args::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            // --help and --version are not errors.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    init_logging();
    match runtime::serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            tracing::error!("{:#}", failure.error);
            eprintln!("benchmatrix-target: {:#}", failure.error);
            ExitCode::from(failure.exit_code)
        }
    }
}

/// Logs go to stderr (stdout carries only the "listening on" line); `RUST_LOG` filters.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A host binary (benchmatrix) may have installed a subscriber already; keep it.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
