//! Reads what the next decision needs, and only that: the current cell's children, its pods,
//! and, once the load generator Job has completed, its result document.
//!
//! The result travels in the load generator pod's log, as its last line (`--json` prints the
//! document as one line, last). A termination message would be simpler but is cut at 4 KiB,
//! and a result with per-second timelines and compact histograms is far larger; a ConfigMap or
//! an object store would need write access from the Job's pod. The log needs nothing: the
//! kubelet keeps it until the pod is deleted, which the operator does only after reading it.

use benchmatrix_loadgen::result::{RunResult, merge};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{ListParams, LogParams};
use kube::{Api, ResourceExt};

use super::build::{self, LOADGEN_CONTAINER, ROLE_LOADGEN, ROLE_TARGET};
use super::decide::{self, Observation, QueueView};
use super::error::Error;
use crate::api::{BenchmarkRun, CellPhase};

/// How many log lines are read from the end of a load generator's log: the document is the
/// last line of stdout, but stderr lines written after it (the log merges both) must not hide
/// it.
const LOG_TAIL_LINES: i64 = 20;

/// Reads the current cell's children of `run`.
pub async fn observe(
    client: &kube::Client,
    run: &BenchmarkRun,
    queue: QueueView,
) -> Result<Observation, Error> {
    let mut obs = Observation {
        queue,
        ..Observation::default()
    };
    let Some((index, phase)) = decide::current_cell(run.status.as_ref()) else {
        return Ok(obs);
    };
    let ns = run.namespace().unwrap_or_else(|| "default".into());
    let Some(cell) = run
        .status
        .as_ref()
        .and_then(|s| s.cells.get(index))
        .map(|c| c.name.clone())
    else {
        return Ok(obs);
    };
    let name = build::cell_child_name(run, &cell);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    match phase {
        CellPhase::Deploying => {
            (obs.deployment, obs.service) = deployment_and_service(client, &ns, &name).await?;
            obs.target_pods = target_pods(&pods, run, &cell).await?;
        }
        CellPhase::Running => {
            obs.job = Api::<Job>::namespaced(client.clone(), &ns)
                .get_opt(&name)
                .await?;
            obs.target_pods = target_pods(&pods, run, &cell).await?;
            if let Some(job) = &obs.job {
                if decide::job_complete(job) {
                    obs.result = Some(read_results(&pods, run, &cell).await?);
                } else if decide::job_failed(job) {
                    obs.loadgen_failure = read_failure(&pods, run, &cell).await?;
                }
            } else {
                // A missing Job is re-created from the Service address and the pod IPs.
                (obs.deployment, obs.service) = deployment_and_service(client, &ns, &name).await?;
            }
        }
        CellPhase::Pending if index > 0 => {
            // Pods of the previous cell that are still terminating would take CPU from this
            // one; they are counted so the next cell waits for them.
            obs.terminating_pods = pods
                .list(&ListParams::default().labels(&format!(
                    "{}={}",
                    build::RUN_LABEL,
                    run.name_any()
                )))
                .await?
                .items
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_some())
                .map(|p| p.name_any())
                .collect();
        }
        _ => {}
    }
    Ok(obs)
}

/// The cell's Deployment and Service, each if it exists.
async fn deployment_and_service(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<(Option<Deployment>, Option<Service>), Error> {
    let deployment = Api::<Deployment>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await?;
    let service = Api::<Service>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await?;
    Ok((deployment, service))
}

/// The target pods of `cell`.
async fn target_pods(pods: &Api<Pod>, run: &BenchmarkRun, cell: &str) -> Result<Vec<Pod>, Error> {
    Ok(pods
        .list(&ListParams::default().labels(&build::selector(run, cell, ROLE_TARGET)))
        .await?
        .items)
}

/// The merged result document of a completed Job, or why it cannot be had (a cell failure,
/// not an operator error).
async fn read_results(
    pods: &Api<Pod>,
    run: &BenchmarkRun,
    cell: &str,
) -> Result<Result<RunResult, String>, Error> {
    let list = pods
        .list(&ListParams::default().labels(&build::selector(run, cell, ROLE_LOADGEN)))
        .await?
        .items;
    let succeeded: Vec<&Pod> = list
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
        .collect();
    if succeeded.is_empty() {
        return Ok(Err(
            "the load generator Job completed but its pods are gone, and their logs with them"
                .into(),
        ));
    }
    let mut docs = Vec::new();
    for pod in succeeded {
        let log = pods
            .logs(
                &pod.name_any(),
                &LogParams {
                    container: Some(LOADGEN_CONTAINER.into()),
                    tail_lines: Some(LOG_TAIL_LINES),
                    ..LogParams::default()
                },
            )
            .await?;
        match parse_result_log(&log) {
            Ok(doc) => docs.push(doc),
            Err(why) => return Ok(Err(format!("pod {}: {why}", pod.name_any()))),
        }
    }
    Ok(match docs.len() {
        1 => Ok(docs.remove(0)),
        _ => merge(&docs).map_err(|e| format!("merging the load generators' results: {e}")),
    })
}

/// Finds the result document in the tail of a log: the last line that is a JSON object.
pub fn parse_result_log(log: &str) -> Result<RunResult, String> {
    let Some(line) = log
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
    else {
        let last = log.lines().last().unwrap_or("(empty log)");
        return Err(format!(
            "no result document in the log; last line: {}",
            excerpt(last)
        ));
    };
    serde_json::from_str(line).map_err(|e| {
        format!(
            "the result document does not parse ({e}); it starts: {}",
            excerpt(line)
        )
    })
}

fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    if text.len() <= MAX {
        text.to_owned()
    } else {
        let mut end = MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &text[..end])
    }
}

/// The last words of a failed load generator: its termination message (the kubelet fills it
/// from the log on error) or reason such as OOMKilled.
async fn read_failure(
    pods: &Api<Pod>,
    run: &BenchmarkRun,
    cell: &str,
) -> Result<Option<String>, Error> {
    let list = pods
        .list(&ListParams::default().labels(&build::selector(run, cell, ROLE_LOADGEN)))
        .await?
        .items;
    Ok(list.iter().find_map(|p| {
        let cs = p.status.as_ref()?.container_statuses.as_ref()?;
        cs.iter().find_map(|c| {
            let t = c.state.as_ref()?.terminated.as_ref()?;
            if t.exit_code == 0 {
                return None;
            }
            let words = t
                .message
                .as_deref()
                .and_then(|m| m.lines().rev().find(|l| !l.trim().is_empty()))
                .map(str::to_owned);
            Some(match (t.reason.as_deref(), words) {
                (Some("OOMKilled"), _) => format!("OOMKilled (exit code {})", t.exit_code),
                (_, Some(line)) => excerpt(&line),
                (reason, None) => format!(
                    "{} (exit code {})",
                    reason.unwrap_or("terminated"),
                    t.exit_code
                ),
            })
        })
    }))
}
