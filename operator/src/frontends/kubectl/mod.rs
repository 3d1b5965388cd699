//! `kubectl benchmatrix`: the cluster's `benchmatrix run`, as a kubectl plugin.
//!
//! The `benchmatrix` binary acts as the plugin when it is started under the name
//! `kubectl-benchmatrix` (a second name or a symlink on PATH, which is how kubectl finds
//! plugins, and what krew installs), and as `benchmatrix kubectl ...` without one.
//!
//! - `run FILE`: validates the file as the operator will, creates the BenchmarkRun, follows its
//!   status with a watch on that one object and shows the local runner's progress display
//!   ([`follow`]), then prints the comparison table, writes `--out` as `benchmatrix run` does,
//!   and exits with the same verdict ([`crate::engine::verdict::outcome::Outcome`]);
//! - `report NAME|FILE`, `compare BASE NEW`: `benchmatrix report` and `compare` on runs read
//!   from the cluster as well as from files ([`runs`]);
//! - `logs NAME`: the pods' logs, found by the operator's labels ([`logs`]).
//!
//! It talks to the cluster as kubectl does ([`connect`]).

pub mod connect;
pub mod follow;
pub mod logs;
pub mod run;
pub mod runs;

#[cfg(test)]
mod tests;

use crate::engine::verdict::exit;
use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use futures::FutureExt;

use connect::{Connection, ConnectionArgs, Environment};

/// The file name under which the binary is the plugin.
pub const PLUGIN_NAME: &str = "kubectl-benchmatrix";

/// The plugin's command line, as kubectl starts it (`kubectl benchmatrix ARGS` runs
/// `kubectl-benchmatrix ARGS`).
#[derive(Debug, Parser)]
#[command(
    name = "kubectl benchmatrix",
    bin_name = "kubectl benchmatrix",
    version,
    about = "Run a benchmark matrix on the cluster and follow it to its verdict; report, compare \
             and read the logs of runs there."
)]
pub struct PluginCli {
    #[command(flatten)]
    args: KubectlArgs,
}

/// The plugin's arguments: the connection flags and a subcommand.
#[derive(Debug, clap::Args)]
pub struct KubectlArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(subcommand)]
    command: KubectlCommand,
}

#[derive(Debug, Subcommand)]
enum KubectlCommand {
    /// Create a BenchmarkRun from FILE and follow it to its verdict.
    ///
    /// Shows the live progress (plain lines when stdout is not a terminal), then prints the
    /// comparison table, writes --out and exits with the verdict: 0 every cell measured, 1 some
    /// cell failed, 2 bad file or --out (or a run of that name exists), 3 a threshold failed,
    /// 4 --timeout expired, 5 the cluster could not be asked (or the run was deleted),
    /// 130 Ctrl-C.
    Run(run::PluginRunArgs),
    /// Render the report of a run on the cluster (by name) or of a saved file.
    ///
    /// report.md, the charts and the comparison table, as `benchmatrix report`. Exit 2 on bad
    /// input (no such file or run), 5 when the cluster cannot be asked.
    Report(runs::PluginReportArgs),
    /// Compare two runs, each on the cluster (by name) or a saved file.
    ///
    /// As `benchmatrix compare`: exit 3 on a regression beyond --max-regression, 2 on bad
    /// input, 5 when the cluster cannot be asked.
    Compare(runs::PluginCompareArgs),
    /// Print the sizing answer of a run with spec.sizing (by name) or of a saved file.
    ///
    /// As `benchmatrix size` given a saved status: the chosen configuration, every
    /// configuration of the space with what the search knows of it, and with --manifests DIR
    /// the Deployment patch and the HorizontalPodAutoscaler. Exit 0 with an answer, 1 when
    /// nothing holds or the budget ran out (or the run has not ended), 2 on bad input, 5 when
    /// the cluster cannot be asked.
    Size(runs::PluginSizeArgs),
    /// Print the logs of a run's pods (targets and load generators).
    ///
    /// Each log is headed by its pod and container. Exit 1 when no pod is left (the operator
    /// deletes them as each repetition ends unless spec.cleanup keeps them).
    Logs(logs::LogsArgs),
}

/// True when the program was started as the plugin (`argv[0]` names `kubectl-benchmatrix`).
pub fn is_plugin(program: &OsStr) -> bool {
    Path::new(program)
        .file_name()
        .is_some_and(|n| n == PLUGIN_NAME)
}

/// Parses `args` (program name first) as the plugin's command line and runs it.
pub fn plugin_main(args: Vec<OsString>) -> ExitCode {
    match PluginCli::try_parse_from(&args) {
        Ok(cli) => main(cli.args),
        Err(err) => {
            let _ = err.print();
            if err.use_stderr() {
                ExitCode::from(exit::BAD_INPUT)
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}

/// Runs a parsed plugin command.
pub fn main(args: KubectlArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kubectl benchmatrix: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(dispatch(args))
}

async fn dispatch(args: KubectlArgs) -> ExitCode {
    let mut connection = Connection::Pending(args.connection, Environment::of_process());
    match args.command {
        KubectlCommand::Run(run) => match terminal_console() {
            Ok(console) => ExitCode::from(run::run(run, &mut connection, console).await),
            Err(e) => {
                eprintln!("kubectl benchmatrix run: cannot catch Ctrl-C: {e}");
                ExitCode::FAILURE
            }
        },
        KubectlCommand::Report(report) => runs::report(report, &mut connection).await,
        KubectlCommand::Compare(compare) => runs::compare(compare, &mut connection).await,
        KubectlCommand::Size(size) => runs::size(size, &mut connection).await,
        KubectlCommand::Logs(logs) => match connection.cluster().await {
            Ok(cluster) => logs::logs(cluster, &logs, &mut std::io::stdout().lock()).await,
            Err(e) => {
                eprintln!("kubectl benchmatrix logs: {e}");
                ExitCode::from(exit::CLUSTER)
            }
        },
    }
}

/// The console of a person (or a CI job): the display on stdout, SIGINT and SIGTERM as the
/// interrupt (a CI system cancels a job with either), and questions on the terminal.
fn terminal_console() -> std::io::Result<run::Console> {
    use tokio::signal::unix::{SignalKind, signal};
    // Registered now, before anything is created, so that no interrupt is lost in between.
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let interrupted = async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    };
    Ok(run::Console {
        display: Box::new(crate::frontends::progress::Display::new),
        interrupted: interrupted.boxed(),
        stdin_is_terminal: std::io::stdin().is_terminal(),
        ask: Box::new(|question| ask_on_terminal(question).boxed()),
    })
}

/// Asks `question` on the terminal: true only for "y" or "yes". End of input, or another
/// Ctrl-C while it waits, is "no".
async fn ask_on_terminal(question: String) -> bool {
    use std::io::Write;
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let (tx, rx) = futures::channel::oneshot::channel();
    // A thread of its own: a read of stdin cannot be cancelled, and this one must not keep
    // the process alive once it is done.
    std::thread::spawn(move || {
        let mut line = String::new();
        let answer = match std::io::stdin().read_line(&mut line) {
            Ok(n) if n > 0 => Some(line),
            _ => None,
        };
        let _ = tx.send(answer);
    });
    tokio::select! {
        answer = rx => {
            let yes = matches!(answer, Ok(Some(ref l)) if is_yes(l));
            if matches!(answer, Ok(None) | Err(_)) {
                eprintln!();
            }
            yes
        }
        _ = tokio::signal::ctrl_c() => {
            eprintln!();
            false
        }
    }
}

fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// An API error in words: the API server's own message and code, else the client's error.
pub fn api_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if !s.message.is_empty() => format!("{} ({})", s.message, s.code),
        other => other.to_string(),
    }
}
