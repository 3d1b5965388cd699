//! `benchmatrix metrics FILE...`: the figures the operator exports for finished runs, for
//! statuses saved on disk (a local run's `status.yaml`, a run kept from `kubectl get bmr -o
//! yaml`, a CI artifact), so a Prometheus without a cluster can scrape them: printed once, or
//! served on `/metrics` with `--listen` until SIGTERM or Ctrl-C. The figures are rendered by
//! [`crate::run_metrics`], as the operator renders its own.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::resource::BenchmarkRunStatus;
use crate::run_metrics::RunMetrics;

/// Arguments of `benchmatrix metrics`.
#[derive(Debug, clap::Args)]
pub struct MetricsArgs {
    /// Saved statuses: status.yaml files (bare statuses, which --run names) or whole
    /// BenchmarkRuns (`kubectl get bmr NAME -o yaml`, named by their metadata). Each must be
    /// finished; every one is exported (no bound, as you chose them).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Serve them on http://ADDR/metrics instead of printing them once, e.g. 127.0.0.1:9464
    /// (port 0: any free port; the address is printed on the first line).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// The `run` label of a bare status.yaml (which has no name of its own); one file only.
    #[arg(long, value_name = "NAME")]
    pub run: Option<String>,
    /// The `namespace` label of bare statuses (left out when not given).
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
}

/// A saved, finished run.
struct Saved {
    namespace: Option<String>,
    name: String,
    status: BenchmarkRunStatus,
}

/// Reads `file`: a whole BenchmarkRun named by its metadata, or a bare status named by
/// `--run`/`--namespace`.
fn read(file: &std::path::Path, args: &MetricsArgs) -> Result<Saved, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let status = super::report::parse_status(&text)
        .map_err(|e| format!("{} is not a BenchmarkRun status: {e}", file.display()))?;
    if !status.phase.is_finished() {
        return Err(format!(
            "{} is a run in phase {}: only finished runs have figures to export",
            file.display(),
            status.phase
        ));
    }
    let value: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| e.to_string())?;
    let meta = value.get("spec").and(value.get("metadata"));
    let field = |key: &str| {
        meta.and_then(|m| m.get(key))
            .and_then(serde_yaml::Value::as_str)
            .map(str::to_owned)
    };
    let (namespace, name) = match field("name") {
        Some(name) => (field("namespace"), name),
        None => match &args.run {
            Some(name) => (args.namespace.clone(), name.clone()),
            None => {
                return Err(format!(
                    "{} is a bare status, which has no name: name its run with --run NAME",
                    file.display()
                ));
            }
        },
    };
    Ok(Saved {
        namespace,
        name,
        status,
    })
}

/// `benchmatrix metrics`: exit 0, or 2 for a file that is not a finished status or a bad
/// flag, 1 when the address cannot be served.
pub fn run(args: MetricsArgs) -> ExitCode {
    const COMMAND: &str = "benchmatrix metrics";
    if args.run.is_some() && args.files.len() > 1 {
        eprintln!("{COMMAND}: --run names one bare status; give one file, or whole BenchmarkRuns");
        return ExitCode::from(crate::engine::verdict::exit::BAD_INPUT);
    }
    let mut saved = Vec::new();
    for file in &args.files {
        match read(file, &args) {
            Ok(s) => saved.push(s),
            Err(e) => {
                eprintln!("{COMMAND}: {e}");
                return ExitCode::from(crate::engine::verdict::exit::BAD_INPUT);
            }
        }
    }
    let metrics = Arc::new(RunMetrics::new(saved.len()));
    for s in &saved {
        metrics.record(s.namespace.as_deref(), &s.name, &s.status);
    }
    let Some(addr) = args.listen else {
        print!("{}", metrics.render());
        return ExitCode::SUCCESS;
    };
    let served = tokio::runtime::Runtime::new()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(serve(addr, metrics)));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{COMMAND}: --listen {addr}: {e:#}");
            ExitCode::from(crate::engine::verdict::exit::FAILED)
        }
    }
}

/// Serves `metrics` on `addr` until SIGTERM or Ctrl-C.
async fn serve(addr: SocketAddr, metrics: Arc<RunMetrics>) -> anyhow::Result<()> {
    use axum::http::header;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let text = metrics.render();
            async move {
                (
                    [(header::CONTENT_TYPE, crate::run_metrics::CONTENT_TYPE)],
                    text,
                )
            }
        }),
    );
    println!("serving on http://{bound}/metrics");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        })
        .await?;
    Ok(())
}
