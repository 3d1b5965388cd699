//! `kubectl benchmatrix logs NAME`: the logs of a run's pods (the targets and the load
//! generators), found by the labels the operator puts on them
//! (`executors::cluster::children::build`), each log headed by its pod and container.
//!
//! The operator deletes each repetition's objects when the repetition ends unless
//! `spec.cleanup` keeps them, so a finished run usually has no pods left; the command says so
//! and how to keep them, rather than printing nothing.

use crate::engine::verdict::exit;
use std::io::Write;
use std::process::ExitCode;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};

use super::connect::Cluster;
use super::runs::{runs_api, status_of};
use crate::resource::labels::{
    CELL_LABEL, REPETITION_LABEL, ROLE_LABEL, ROLE_LOADGEN, ROLE_TARGET, RUN_LABEL, RUN_UID_LABEL,
};

const COMMAND: &str = "kubectl benchmatrix logs";

/// Which pods of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// The service under test.
    Target,
    /// The load generator.
    Loadgen,
}

impl Role {
    fn label(self) -> &'static str {
        match self {
            Role::Target => ROLE_TARGET,
            Role::Loadgen => ROLE_LOADGEN,
        }
    }
}

/// Arguments of `kubectl benchmatrix logs`.
#[derive(Debug, Clone, clap::Args)]
pub struct LogsArgs {
    /// The BenchmarkRun.
    pub name: String,
    /// Only this cell's pods (default: every cell's).
    #[arg(long, value_name = "CELL")]
    pub cell: Option<String>,
    /// Only this repetition's pods (1-based; default: every repetition's).
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..))]
    pub repetition: Option<u32>,
    /// Only the targets' or only the load generators' pods (default: both).
    #[arg(long, value_enum)]
    pub role: Option<Role>,
}

/// The label selector of the pods `args` asks for, of the run with UID `uid` only: pods an
/// earlier run of the same name left behind are not this run's.
pub fn selector(args: &LogsArgs, uid: &str) -> String {
    let mut s = format!("{RUN_LABEL}={},{RUN_UID_LABEL}={uid}", args.name);
    if let Some(cell) = &args.cell {
        s.push_str(&format!(",{CELL_LABEL}={cell}"));
    }
    if let Some(r) = args.repetition {
        s.push_str(&format!(",{REPETITION_LABEL}={r}"));
    }
    if let Some(role) = args.role {
        s.push_str(&format!(",{ROLE_LABEL}={}", role.label()));
    }
    s
}

/// Prints the logs of the pods `args` selects to `out`: 0 when there were some, 1 when no pod
/// matched (with why and how to keep them on stderr), 2 for an unknown run or cell, 5 when the
/// API server cannot be asked.
pub async fn logs(cluster: &Cluster, args: &LogsArgs, out: &mut dyn Write) -> ExitCode {
    let ns = &cluster.namespace;
    let run = match runs_api(cluster, ns).get_opt(&args.name).await {
        Ok(Some(run)) => run,
        Ok(None) => {
            eprintln!(
                "{COMMAND}: no BenchmarkRun {} in namespace {ns} ({})",
                args.name, cluster.describe
            );
            return ExitCode::from(exit::BAD_INPUT);
        }
        Err(e) => return cannot(&format!("read benchmarkrun {ns}/{}", args.name), &e),
    };
    let cells: Vec<String> = status_of(&run)
        .map(|s| s.cells.into_iter().map(|c| c.name).collect())
        .unwrap_or_default();
    if let Some(cell) = &args.cell
        && !cells.is_empty()
        && !cells.contains(cell)
    {
        eprintln!(
            "{COMMAND}: benchmarkrun {ns}/{} has no cell {cell:?} (its cells: {})",
            args.name,
            cells.join(", ")
        );
        return ExitCode::from(exit::BAD_INPUT);
    }
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), ns);
    let mut found = match pods
        .list(&ListParams::default().labels(&selector(args, &run_uid(&run))))
        .await
    {
        Ok(list) => list.items,
        Err(e) => {
            let what = format!("list the pods of benchmarkrun {ns}/{}", args.name);
            return cannot(&what, &e);
        }
    };
    if found.is_empty() {
        let cleanup = run.data["spec"]["cleanup"].as_str().unwrap_or("Always");
        eprintln!("{COMMAND}: {}", no_pods_message(args, ns, cleanup));
        return ExitCode::from(exit::FAILED);
    }
    // Cells in matrix order, then repetitions, targets before load generators.
    found.sort_by_key(|p| {
        let label = |k: &str| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(k).cloned())
                .unwrap_or_default()
        };
        let cell = cells
            .iter()
            .position(|c| *c == label(CELL_LABEL))
            .unwrap_or(usize::MAX);
        let repetition: u32 = label(REPETITION_LABEL).parse().unwrap_or(1);
        let role = u8::from(label(ROLE_LABEL) != ROLE_TARGET);
        (cell, repetition, role, p.metadata.name.clone())
    });
    for pod in &found {
        write_pod_logs(&pods, pod, out).await;
    }
    let _ = out.flush();
    ExitCode::SUCCESS
}

/// The UID of a run as read from the cluster.
fn run_uid(run: &kube::api::DynamicObject) -> String {
    run.metadata.uid.clone().unwrap_or_default()
}

/// Says that the API server could not be asked to `what`, in its words: exit 5.
fn cannot(what: &str, e: &kube::Error) -> ExitCode {
    eprintln!("{COMMAND}: cannot {what}: {}", super::api_error(e));
    ExitCode::from(exit::CLUSTER)
}

/// Each container's log of `pod` (init containers first, as they ran), headed by the pod and
/// container; a log that cannot be read says why under its heading.
async fn write_pod_logs(pods: &Api<Pod>, pod: &Pod, out: &mut dyn Write) {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let about = format!(
        "cell {}, repetition {}, {}",
        labels.get(CELL_LABEL).map_or("?", String::as_str),
        labels.get(REPETITION_LABEL).map_or("1", String::as_str),
        labels.get(ROLE_LABEL).map_or("?", String::as_str),
    );
    let spec = pod.spec.as_ref();
    let containers = spec
        .into_iter()
        .flat_map(|s| s.init_containers.iter().flatten().chain(&s.containers))
        .map(|c| c.name.clone());
    for container in containers {
        let _ = writeln!(out, "==> pod/{name} container/{container} ({about}) <==");
        let params = LogParams {
            container: Some(container.clone()),
            ..LogParams::default()
        };
        match pods.logs(&name, &params).await {
            Ok(text) => {
                let _ = out.write_all(text.as_bytes());
                if !text.is_empty() && !text.ends_with('\n') {
                    let _ = writeln!(out);
                }
            }
            Err(e) => {
                let _ = writeln!(out, "(no log: {})", super::api_error(&e));
            }
        }
        let _ = writeln!(out);
    }
}

/// Why there is no pod to show, and how to have some next time.
fn no_pods_message(args: &LogsArgs, ns: &str, cleanup: &str) -> String {
    let mut what = format!("benchmarkrun {ns}/{}", args.name);
    if let Some(c) = &args.cell {
        what.push_str(&format!(" cell {c}"));
    }
    if let Some(r) = args.repetition {
        what.push_str(&format!(" repetition {r}"));
    }
    if let Some(role) = args.role {
        what.push_str(&format!(" ({} pods)", role.label()));
    }
    format!(
        "no pods of {what} exist. The operator deletes a repetition's pods when the \
         repetition ends (this run's spec.cleanup is {cleanup}; with KeepFailed only a failed \
         cell's are kept), and creates them only when their cell starts. To keep them for \
         their logs, run it again with spec.cleanup: KeepFailed (a failed cell's pods stay) or \
         Never (every cell's stay until the run is deleted; kept targets hold their CPU)."
    )
}
