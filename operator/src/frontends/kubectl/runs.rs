//! Runs as `report` and `compare` take them: a saved file (a status.yaml, or a whole
//! BenchmarkRun from `kubectl get -o yaml`) or a BenchmarkRun on the cluster, by name. An
//! argument that is an existing file is the file; anything else is a run name in the
//! namespace. Both commands then do exactly what `benchmatrix report` and `benchmatrix
//! compare` do with a status, with the same flags and exit codes; and, as every plugin
//! command, exit 5 when the cluster cannot be reached or asked.

use crate::engine::verdict::exit;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kube::Api;
use kube::api::{ApiResource, DynamicObject};

use super::connect::{Cluster, Connection};
use crate::frontends::compare::{self, CompareOptions, Compared};
use crate::frontends::report;
use crate::resource::{BenchmarkRun, BenchmarkRunStatus};

/// Arguments of `kubectl benchmatrix report`.
#[derive(Debug, clap::Args)]
pub struct PluginReportArgs {
    /// A BenchmarkRun on the cluster (its name), or a saved status.yaml / `kubectl get -o
    /// yaml` file (an existing file is taken as one).
    #[arg(value_name = "NAME|FILE")]
    pub run: String,
    /// Folder for report.md and the charts (default: for a file, its folder; for a run on the
    /// cluster, a folder named after the run, which also gets its status.yaml).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Arguments of `kubectl benchmatrix compare`.
#[derive(Debug, clap::Args)]
pub struct PluginCompareArgs {
    /// The baseline: a run on the cluster (its name) or a saved file.
    #[arg(value_name = "BASE")]
    pub base: String,
    /// The run to judge against it, in the same forms. Left out: BASE's own variants side
    /// by side, each candidate against the base (as `benchmatrix compare RUN`).
    #[arg(value_name = "NEW")]
    pub new: Option<String>,
    /// How to judge, and where to write (as `benchmatrix compare`).
    #[command(flatten)]
    pub options: CompareOptions,
}

/// Arguments of `kubectl benchmatrix size`.
#[derive(Debug, clap::Args)]
pub struct PluginSizeArgs {
    /// A BenchmarkRun with spec.sizing on the cluster (its name), or a saved status.yaml /
    /// `kubectl get -o yaml` file (an existing file is taken as one).
    #[arg(value_name = "NAME|FILE")]
    pub run: String,
    /// Where the manifests go and what they name.
    #[command(flatten)]
    pub manifests: crate::frontends::size::ManifestArgs,
}

/// A run's status and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// `path/status.yaml`, or `benchmarkrun NAMESPACE/NAME`.
    pub label: String,
    /// The status.
    pub status: BenchmarkRunStatus,
    /// The file it was read from, if any.
    pub file: Option<PathBuf>,
}

/// The BenchmarkRuns of `namespace`, read without the typed spec: following and reporting a
/// run needs its metadata and status only, and should not fail on a spec field this binary does
/// not know.
pub fn runs_api(cluster: &Cluster, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        cluster.client.clone(),
        namespace,
        &ApiResource::erase::<BenchmarkRun>(&()),
    )
}

/// The status of a run object (empty when the operator has written none yet).
pub fn status_of(object: &DynamicObject) -> Result<BenchmarkRunStatus, String> {
    match object.data.get("status") {
        None | Some(serde_json::Value::Null) => Ok(BenchmarkRunStatus::default()),
        Some(s) => serde_json::from_value(s.clone()).map_err(|e| format!("its status: {e}")),
    }
}

/// Why a run could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The argument names no usable run: a file that cannot be read or is no status, a name
    /// with no run of that name, a status this binary cannot read ([`exit::BAD_INPUT`]).
    BadInput(String),
    /// The cluster could not be reached or asked: no kubeconfig, a refused connection, an API
    /// error such as a refused permission or a server error ([`exit::CLUSTER`]).
    Cluster(String),
}

impl LoadError {
    /// What went wrong, in words.
    pub fn message(&self) -> &str {
        match self {
            LoadError::BadInput(m) | LoadError::Cluster(m) => m,
        }
    }

    /// The exit code it makes.
    pub fn code(&self) -> u8 {
        match self {
            LoadError::BadInput(_) => exit::BAD_INPUT,
            LoadError::Cluster(_) => exit::CLUSTER,
        }
    }
}

/// Reads `arg`: the file if one exists there, else the run of that name on the cluster.
pub async fn load(arg: &str, connection: &mut Connection) -> Result<Loaded, LoadError> {
    let path = Path::new(arg);
    if path.is_file() {
        let status = report::read_status_file(path).map_err(LoadError::BadInput)?;
        return Ok(Loaded {
            label: arg.to_owned(),
            status,
            file: Some(path.to_path_buf()),
        });
    }
    if looks_like_a_file(arg) {
        return Err(LoadError::BadInput(format!(
            "cannot read {arg}: no such file"
        )));
    }
    let cluster = connection.cluster().await.map_err(|e| {
        LoadError::Cluster(format!(
            "no file {arg} here, and no cluster to look for a run of that name on: {e}"
        ))
    })?;
    let ns = &cluster.namespace;
    match runs_api(cluster, ns).get_opt(arg).await {
        Ok(Some(object)) => {
            let status = status_of(&object)
                .map_err(|e| LoadError::BadInput(format!("benchmarkrun {ns}/{arg}: {e}")))?;
            if !status.phase.is_finished() {
                eprintln!(
                    "note: benchmarkrun {ns}/{arg} is {} ({}): what follows is what it has \
                     measured so far",
                    status.phase,
                    status.progress.as_deref().unwrap_or("0 measured")
                );
            }
            Ok(Loaded {
                label: format!("benchmarkrun {ns}/{arg}"),
                status,
                file: None,
            })
        }
        Ok(None) => Err(LoadError::BadInput(format!(
            "no file {arg} here, and no BenchmarkRun {arg} in namespace {ns} ({})",
            cluster.describe
        ))),
        Err(e) => Err(LoadError::Cluster(format!(
            "cannot read benchmarkrun {ns}/{arg} ({}): {}",
            cluster.describe,
            super::api_error(&e)
        ))),
    }
}

/// True when `arg` can only be meant as a file: it is no Kubernetes object name (a DNS
/// subdomain: lower-case letters, digits, '-' and '.'), or it ends as a saved status does.
fn looks_like_a_file(arg: &str) -> bool {
    let name = !arg.is_empty()
        && arg.len() <= 253
        && arg
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    !name
        || [".yaml", ".yml", ".json"]
            .iter()
            .any(|ext| arg.ends_with(ext))
}

/// `kubectl benchmatrix report NAME|FILE`: as `benchmatrix report`; a run from the cluster
/// also leaves its status.yaml in the output folder, so it can be a baseline later.
pub async fn report(args: PluginReportArgs, connection: &mut Connection) -> ExitCode {
    const COMMAND: &str = "kubectl benchmatrix report";
    let loaded = match load(&args.run, connection).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{COMMAND}: {}", e.message());
            return ExitCode::from(e.code());
        }
    };
    match &loaded.file {
        Some(file) => report::render_saved(&loaded.status, file, args.out, COMMAND),
        None => {
            let out = args.out.unwrap_or_else(|| PathBuf::from(&args.run));
            if let Err(e) = report::write_status(&out, &loaded.status) {
                eprintln!("{COMMAND}: cannot write into {}: {e}", out.display());
                return ExitCode::from(crate::engine::verdict::exit::FAILED);
            }
            report::render(&loaded.status, &loaded.label, &[], &out, COMMAND)
        }
    }
}

/// `kubectl benchmatrix size NAME|FILE`: the sizing answer of a run, as `benchmatrix size`
/// prints a saved one.
pub async fn size(args: PluginSizeArgs, connection: &mut Connection) -> ExitCode {
    const COMMAND: &str = "kubectl benchmatrix size";
    match load(&args.run, connection).await {
        Ok(loaded) => ExitCode::from(crate::frontends::size::print(
            &loaded.status,
            &args.manifests,
            COMMAND,
        )),
        Err(e) => {
            eprintln!("{COMMAND}: {}", e.message());
            ExitCode::from(e.code())
        }
    }
}

/// `kubectl benchmatrix compare BASE [NEW]`: as `benchmatrix compare`.
pub async fn compare(args: PluginCompareArgs, connection: &mut Connection) -> ExitCode {
    const COMMAND: &str = "kubectl benchmatrix compare";
    let mut sides = Vec::new();
    for arg in std::iter::once(&args.base).chain(args.new.as_ref()) {
        let side = load(arg, connection).await.and_then(|l| {
            compare::with_cells(l.status, &l.label)
                .map(|status| Compared {
                    label: l.label,
                    status,
                })
                .map_err(LoadError::BadInput)
        });
        match side {
            Ok(s) => sides.push(s),
            Err(e) => {
                eprintln!("{COMMAND}: {}", e.message());
                return ExitCode::from(e.code());
            }
        }
    }
    match sides.as_slice() {
        [run] => crate::frontends::compare::within::compare_within(run, &args.options, COMMAND),
        [base, new] => compare::run_on(base, new, &args.options, COMMAND),
        _ => unreachable!("one or two sides were loaded"),
    }
}
