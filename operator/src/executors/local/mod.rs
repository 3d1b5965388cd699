//! `benchmatrix run FILE`: the whole matrix on this machine, with real CPU quotas.
//!
//! The same BenchmarkRun YAML the operator runs: validated up front (exit 2 with the field
//! path and line before anything starts), then each step the run engine's machine commands
//! (`crate::engine::machine`): replicas sharing a port, each in its own cgroup, the load
//! generator in another; and finally `status.yaml` (the operator's status schema),
//! `report.md` and SVG charts in the output folder.

pub mod cell;
pub mod cgroup;
pub mod dry_run;
pub mod guard;
pub mod loadgen;
pub mod process;
pub mod replica_set;
pub mod runner;
pub mod secrets;
pub mod signals;
pub mod wake;

use std::process::ExitCode;

use benchmatrix_loadgen::request::HeaderValues;

use crate::engine::verdict::exit;
use crate::resource::ValidatedRun;
use crate::resource::validate::FieldError;

/// Arguments of `benchmatrix run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The BenchmarkRun YAML to run.
    pub file: std::path::PathBuf,
    /// Folder for status.yaml, report.md and charts; made if missing. A path that is not a
    /// writable folder is refused (exit 2) before anything starts.
    #[arg(long, default_value = "benchmatrix-out")]
    pub out: std::path::PathBuf,
    /// Folder holding the Secrets that header values name (`valueFrom.secretKeyRef`), laid
    /// out as a mounted Secret: DIR/NAME/KEY is a file holding the value. Every value is read
    /// before anything starts; a missing one is refused (exit 2).
    #[arg(long, value_name = "DIR")]
    pub secrets: Option<std::path::PathBuf>,
    /// The regression gate over spec.variants.
    #[command(flatten)]
    pub gate: crate::frontends::variants::GateArgs,
    /// JUnit XML and benchmark JSON for CI, on request.
    #[command(flatten)]
    pub ci: crate::frontends::report::ci::CiFiles,
    /// The Pod Security Standards level the file's pod templates are held to, as the operator
    /// holds them (its --pod-security, the chart's operator.podSecurity): restricted, baseline
    /// or privileged. A local run does not use the templates, but a file meant for a cluster
    /// fails here as it would there (exit 2).
    #[arg(
        long = "pod-security",
        default_value = "restricted",
        value_name = "LEVEL"
    )]
    pub pod_security: crate::resource::pod_security::Level,
    /// Check the file as a run would (the spec, Pod Security, the Secrets of --secrets) and
    /// print the cells, the measurements, the planned load and the largest status, without
    /// running anything. Exit 0 when it would run, 2 when not.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs the matrix described by `args.file`: exit 0 when every cell was measured, 1 when a
/// cell failed (the others still ran), 2 for an unreadable or invalid file or an `--out` that
/// is not a writable folder, 3 when a threshold failed or a candidate variant regressed beyond
/// `--max-regression`, 130 on Ctrl-C.
pub fn run(args: RunArgs) -> ExitCode {
    let (run, header_values) = match checked_run(&args) {
        Ok(checked) => checked,
        Err(code) => return code,
    };
    if args.dry_run {
        // Before --out is made: a dry run leaves nothing behind.
        print!("{}", dry_run::describe(&run, &args.file, args.pod_security));
        return ExitCode::SUCCESS;
    }
    if let Err(e) = crate::frontends::report::files::check_writable_folder(&args.out) {
        eprintln!("benchmatrix run: --out {}: {e}", args.out.display());
        return ExitCode::from(exit::BAD_INPUT);
    }
    if let Err(e) = args.ci.check() {
        eprintln!("benchmatrix run: {e}");
        return ExitCode::from(exit::BAD_INPUT);
    }
    let name = run_name(&run, &args.file);
    // First, while this process has one thread: the guard that ends every child should the
    // runner be killed. Then the handlers, before the first child exists, so no Ctrl-C can
    // orphan one.
    guard::start();
    signals::install();
    let code = match runner::Runner::new(run, args.file.clone(), args.out.clone(), header_values) {
        Ok(r) => {
            let status = r.with_max_regression(args.gate.max_regression).run_to_end();
            for line in args.ci.write(&name, &status, args.gate.max_regression) {
                match line {
                    Ok(wrote) => println!("{wrote}"),
                    Err(e) => eprintln!("benchmatrix run: {e}"),
                }
            }
            let code = crate::frontends::variants::finish(&status, &args.gate, |line| {
                println!("{line}");
            });
            ExitCode::from(code)
        }
        Err(e) => {
            eprintln!(
                "benchmatrix run: --out {}: cannot prepare it: {e}",
                args.out.display()
            );
            ExitCode::from(exit::BAD_INPUT)
        }
    };
    guard::finish();
    code
}

/// The run of `args.file` as this machine can run it, with the header values it names, or the
/// exit code of why not (each problem said on stderr): a bad `--max-regression`, a file that
/// cannot be read or is no valid BenchmarkRun, pods the `--pod-security` level refuses, header
/// values this machine cannot supply. The deprecated fields it uses are warned of.
fn checked_run(args: &RunArgs) -> Result<(ValidatedRun, HeaderValues), ExitCode> {
    let file = args.file.display();
    let refuse = |headline: String, problems: &[FieldError]| {
        eprintln!("benchmatrix run: {headline}");
        for fe in problems {
            eprintln!("  {fe}");
        }
        ExitCode::from(exit::BAD_INPUT)
    };
    if let Some(problem) = args.gate.problem() {
        return Err(refuse(problem, &[]));
    }
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| refuse(format!("cannot read {file}: {e}"), &[]))?;
    let invalid = format!("{file} is not a valid BenchmarkRun:");
    let run = ValidatedRun::parse(&text).map_err(|e| refuse(invalid.clone(), &e.errors))?;
    for old in crate::resource::validate::deprecations(run.spec()) {
        eprintln!("benchmatrix run: warning: {old}");
    }
    let refused = crate::executors::cluster::children::pod_security::refusals(
        &run,
        args.pod_security,
        crate::resource::spec::DEFAULT_TARGET_IMAGE,
        crate::resource::spec::DEFAULT_LOADGEN_IMAGE,
    );
    if !refused.is_empty() {
        return Err(refuse(invalid, &refused));
    }
    let header_values = secrets::read(run.spec(), args.secrets.as_deref()).map_err(|errors| {
        let headline = format!("{file} names header values this machine cannot supply:");
        refuse(headline, &errors)
    })?;
    Ok((run, header_values))
}

/// The run's name for the CI files: its `metadata.name`, else the file's name without its
/// extension (a local run needs no name).
fn run_name(run: &crate::resource::ValidatedRun, file: &std::path::Path) -> String {
    run.run()
        .metadata
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .or_else(|| file.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "benchmatrix".into())
}
