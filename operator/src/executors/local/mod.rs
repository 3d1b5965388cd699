//! `benchmatrix run FILE`: the whole matrix on this machine, with real CPU quotas.
//!
//! The same BenchmarkRun YAML the operator runs: validated up front (exit 2 with the field
//! path and line before anything starts), then each step the run engine's machine commands
//! (`crate::engine::machine`): replicas sharing a port, each in its own cgroup, the load
//! generator in another; and finally `status.yaml` (the operator's status schema),
//! `report.md` and SVG charts in the output folder.

pub mod cell;
pub mod cgroup;
pub mod cluster_only;
pub mod dry_run;
pub mod guard;
pub mod loadgen;
pub mod machine_checks;
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
    /// The BenchmarkRun YAML to run. Left out: the quickstart sample built into this binary
    /// (manifests/samples/quickstart.yaml: replicas or an in-process pool, four configurations
    /// of 2 CPUs, about four and a half minutes).
    pub file: Option<std::path::PathBuf>,
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
    /// Check everything a run checks before it starts (the spec, Pod Security, the Secrets of
    /// --secrets, the target command, each CPU against this machine's cores, --out and the CI
    /// files) and print the cells, the measurements, the planned load, the largest status and
    /// how the CPU limits will be enforced here, without running anything or leaving anything
    /// behind. Exit 0 when it would run, 2 when not.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs the matrix described by `args.file`: exit 0 when every cell was measured, 1 when a
/// cell failed (the others still ran), 2 for an unreadable or invalid file or an `--out` that
/// is not a writable folder, 3 when a threshold failed or a candidate variant regressed beyond
/// `--max-regression`, 130 on Ctrl-C.
pub fn run(mut args: RunArgs) -> ExitCode {
    let source = Source::of(&args);
    let (run, header_values) = match checked_run(&args, &source) {
        Ok(checked) => checked,
        Err(code) => return code,
    };
    args.gate = args.gate.resolved(!run.spec().variants.is_empty());
    if args.dry_run {
        return dry_run(&args, &run, &source);
    }
    if let Err(e) = crate::frontends::report::files::check_writable_folder(&args.out) {
        eprintln!("benchmatrix run: --out {}: {e}", args.out.display());
        return ExitCode::from(exit::BAD_INPUT);
    }
    if let Err(e) = args.ci.check() {
        eprintln!("benchmatrix run: {e}");
        return ExitCode::from(exit::BAD_INPUT);
    }
    let name = run_name(&run, &source.path);
    // First, while this process has one thread: the guard that ends every child should the
    // runner be killed. Then the handlers, before the first child exists, so no Ctrl-C can
    // orphan one.
    guard::start();
    signals::install();
    let code = match runner::Runner::new(run, source.path.clone(), args.out.clone(), header_values)
    {
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
fn checked_run(args: &RunArgs, source: &Source) -> Result<(ValidatedRun, HeaderValues), ExitCode> {
    let file = source.path.display();
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
    let text = source
        .text()
        .map_err(|e| refuse(format!("cannot read {file}: {e}"), &[]))?;
    let invalid = format!("{file} is not a valid BenchmarkRun:");
    let run = ValidatedRun::parse(&text).map_err(|e| refuse(invalid.clone(), &e.errors))?;
    let placed = |errors: Vec<FieldError>| -> Vec<FieldError> {
        errors.into_iter().map(|e| e.placed_in(&text)).collect()
    };
    let cluster_only = placed(cluster_only::refusals(run.spec()));
    if !cluster_only.is_empty() {
        let headline = format!("{file} describes a service only a cluster can start:");
        return Err(refuse(headline, &cluster_only));
    }
    let missing = placed(machine_checks::missing_programs(run.spec()));
    if !missing.is_empty() {
        let headline = format!("{file} names a target command this machine cannot start:");
        return Err(refuse(headline, &missing));
    }
    for warning in machine_checks::cpu_warnings(&run) {
        eprintln!("benchmatrix run: warning: {warning}");
    }
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

/// `--dry-run`: the checks a run makes before it starts that touch this machine (the output
/// files, made and removed again), then what the run would do and how its CPU limits would be
/// enforced. Exit 0 when it would run, 2 when not.
fn dry_run(args: &RunArgs, run: &ValidatedRun, source: &Source) -> ExitCode {
    let problems = crate::frontends::outputs::problems(&args.out, &args.ci);
    if !problems.is_empty() {
        for p in problems {
            eprintln!("benchmatrix run: {p}");
        }
        return ExitCode::from(exit::BAD_INPUT);
    }
    print!(
        "{}",
        dry_run::describe(run, &source.path, args.pod_security)
    );
    println!("CPU limits: {}", machine_checks::enforcement());
    ExitCode::SUCCESS
}

/// The quickstart sample `benchmatrix run` runs when given no FILE, so the main question is
/// one command away on a fresh checkout (or a lone binary).
pub const QUICKSTART: &str = include_str!("../../../../manifests/samples/quickstart.yaml");

/// Where the run's YAML comes from: FILE, or the built-in [`QUICKSTART`] without one.
struct Source {
    /// FILE, or the sample's path in the repository (for messages and the report).
    path: std::path::PathBuf,
    /// True for the built-in sample.
    builtin: bool,
}

impl Source {
    fn of(args: &RunArgs) -> Source {
        match &args.file {
            Some(file) => Source {
                path: file.clone(),
                builtin: false,
            },
            None => Source {
                path: "manifests/samples/quickstart.yaml".into(),
                builtin: true,
            },
        }
    }

    /// The YAML; for the built-in sample, said in one line first (stderr: stdout stays the
    /// run's own).
    fn text(&self) -> std::io::Result<String> {
        if self.builtin {
            eprintln!(
                "benchmatrix run: no FILE given: running the built-in quickstart sample ({}); \
                 `benchmatrix run FILE` runs yours",
                self.path.display()
            );
            return Ok(QUICKSTART.to_owned());
        }
        std::fs::read_to_string(&self.path)
    }
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
