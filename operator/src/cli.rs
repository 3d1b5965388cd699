//! Command line of the `benchmatrix` binary. One executable serves every role locally:
//! `benchmatrix run` re-executes itself as the target and as the load generator, so a fresh
//! checkout needs no install step. Started as `kubectl-benchmatrix` (a second name or a
//! symlink, as kubectl finds plugins on PATH) it is the kubectl plugin, [`crate::frontends::kubectl`];
//! `benchmatrix kubectl ...` is the same plugin without that name.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::frontends::file_kind::FileKind;

mod broken_pipe;

/// Top-level command line.
#[derive(Debug, Parser)]
#[command(
    name = "benchmatrix",
    version,
    about = "Benchmark an HTTP service's configurations (replicas x in-process pool x CPU \
             limit), with real CPU quotas: which configuration is best at a load (run), how \
             much traffic each holds at an SLO (spec.capacity), and the cheapest one for a \
             target traffic (size)."
)]
struct Cli {
    #[command(subcommand)]
    command: CliCommand,
}

#[derive(Debug, Subcommand)]
enum CliCommand {
    /// Run a BenchmarkRun YAML on this machine, with no cluster.
    Run(crate::executors::local::RunArgs),
    /// Size a service: run a BenchmarkRun with spec.sizing on this machine (or read a saved
    /// status of one, status.yaml or `kubectl get bmr NAME -o yaml`) and print the cheapest
    /// configuration that holds the traffic, with the evidence; --manifests DIR writes a
    /// Deployment patch and a HorizontalPodAutoscaler for it. Exit 0 with an answer, 1 without
    /// one, 2 on bad input.
    Size(SizeArgs),
    /// Render report.md, charts and the comparison table from a saved status.yaml (or a
    /// BenchmarkRun from `kubectl get bmr NAME -o yaml`).
    Report(crate::frontends::report::ReportArgs),
    /// Compare two saved statuses (status.yaml or `kubectl get bmr NAME -o yaml`): per cell,
    /// phase and endpoint the change in p50, p99, rps and CPU, marked regression, improvement
    /// or within noise. Exit 3 on a regression beyond --max-regression, 2 on bad input.
    Compare(crate::frontends::compare::CompareArgs),
    /// Print (or serve on /metrics with --listen) the figures of saved, finished runs as the
    /// operator exports them for Prometheus: latency quantiles, rps, errors, target CPU and
    /// throttling per cell, phase and endpoint.
    Metrics(crate::frontends::metrics::MetricsArgs),
    /// The kubectl plugin (`kubectl benchmatrix`, when installed as `kubectl-benchmatrix`):
    /// run a BenchmarkRun on the cluster and follow it to its verdict; report, compare and
    /// read the logs of runs there.
    Kubectl(crate::frontends::kubectl::KubectlArgs),
    /// Print the BenchmarkRun CustomResourceDefinition (YAML) to stdout.
    Crd,
    /// Print the Grafana dashboard of the figures `metrics` and the operator export (JSON) to
    /// stdout: the chart's charts/benchmatrix/dashboards/benchmatrix.json.
    Dashboard,
    /// Run the Kubernetes operator that reconciles BenchmarkRuns.
    Operator(crate::executors::cluster::OperatorArgs),
    /// Run the built-in target service (the same program as `benchmatrix-target`).
    #[command(disable_help_flag = true)]
    Target {
        /// Arguments passed to the target unchanged.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Run the load generator (the same program as `benchmatrix-loadgen`).
    #[command(disable_help_flag = true)]
    Loadgen {
        /// Arguments passed to the load generator unchanged.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

/// Parses `args` (program name first) and runs the chosen role; under the plugin's name, the
/// plugin.
pub fn main(args: Vec<OsString>) -> ExitCode {
    broken_pipe::exit_quietly_on_broken_pipe();
    if args
        .first()
        .is_some_and(|program| crate::frontends::kubectl::is_plugin(program))
    {
        return crate::frontends::kubectl::plugin_main(args);
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(crate::engine::verdict::exit::BAD_INPUT)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        CliCommand::Run(run) => crate::executors::local::run(run),
        CliCommand::Size(args) => size(args),
        CliCommand::Report(report) => crate::frontends::report::run(report),
        CliCommand::Compare(args) => crate::frontends::compare::run(args),
        CliCommand::Metrics(args) => crate::frontends::metrics::run(args),
        CliCommand::Operator(args) => crate::executors::cluster::main(args),
        CliCommand::Kubectl(args) => crate::frontends::kubectl::main(args),
        CliCommand::Dashboard => {
            print!("{}", crate::run_metrics::dashboard::dashboard_json());
            ExitCode::SUCCESS
        }
        CliCommand::Crd => {
            print!("{}", crate::resource::crdgen::crd_yaml());
            ExitCode::SUCCESS
        }
        CliCommand::Target { args } => {
            benchmatrix_target::cli::main(with_program("benchmatrix target", args))
        }
        CliCommand::Loadgen { args } => {
            benchmatrix_loadgen::cli::main(with_program("benchmatrix loadgen", args))
        }
    }
}

/// Prepends a program name, as the delegated parsers expect `args[0]` to be one.
fn with_program(name: &str, args: Vec<OsString>) -> Vec<OsString> {
    std::iter::once(OsString::from(name)).chain(args).collect()
}

/// `benchmatrix size`: what `run` takes, and where the manifests go.
#[derive(Debug, clap::Args)]
struct SizeArgs {
    #[command(flatten)]
    run: crate::executors::local::RunArgs,
    #[command(flatten)]
    manifests: crate::frontends::size::ManifestArgs,
}

/// A saved status is printed as it is; a BenchmarkRun with spec.sizing is run here first (as
/// `benchmatrix run`, into --out) and its status printed once it has ended. Anything else is
/// refused before anything starts (exit 2), saying what `size` expected.
fn size(args: SizeArgs) -> ExitCode {
    const COMMAND: &str = "benchmatrix size";
    let Some(file) = args.run.file.clone() else {
        eprintln!("{COMMAND}: give FILE: {SIZE_EXPECTS}");
        return ExitCode::from(crate::engine::verdict::exit::BAD_INPUT);
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("{COMMAND}: cannot read {}: {e}", file.display());
            return ExitCode::from(crate::engine::verdict::exit::BAD_INPUT);
        }
    };
    match FileKind::of(&text) {
        FileKind::Spec { sizing: true } => {}
        FileKind::Results => match crate::frontends::report::parse_status(&text) {
            Ok(status) => {
                let code = crate::frontends::size::print(&status, &args.manifests, COMMAND);
                return ExitCode::from(code);
            }
            Err(e) => return size_refused(&file, &format!("not a status ({e})")),
        },
        FileKind::Spec { sizing: false } => {
            return size_refused(&file, "a BenchmarkRun without spec.sizing");
        }
        other => return size_refused(&file, &other.describe()),
    }
    let out = args.run.out.clone();
    let dry_run = args.run.dry_run;
    let started = std::time::SystemTime::now();
    let code = crate::executors::local::run(args.run);
    if dry_run {
        return code;
    }
    let path = out.join("status.yaml");
    // Only a status this run wrote: one left in --out by an earlier run is not this answer.
    let fresh = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= started);
    match crate::frontends::report::read_status_file(&path) {
        Ok(status) if fresh && status.sizing.is_some() => {
            println!();
            ExitCode::from(crate::frontends::size::print(
                &status,
                &args.manifests,
                COMMAND,
            ))
        }
        // Refused before it ran (the reason is printed).
        _ => code,
    }
}

/// What `benchmatrix size` reads.
const SIZE_EXPECTS: &str = "a BenchmarkRun with spec.sizing (the traffic to hold and the \
                            configurations to search; manifests/samples/sizing.yaml is one) to \
                            run here, or the results of one (its status.yaml, or `kubectl get \
                            bmr NAME -o yaml`)";

/// Exit 2 for a `size` FILE of the wrong kind (`what` it is), saying what was expected.
fn size_refused(file: &std::path::Path, what: &str) -> ExitCode {
    eprintln!(
        "benchmatrix size: {} is {what}; expected {SIZE_EXPECTS}. Nothing was run: to measure \
         the matrix of a BenchmarkRun without spec.sizing, use `benchmatrix run FILE`",
        file.display()
    );
    ExitCode::from(crate::engine::verdict::exit::BAD_INPUT)
}
