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
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use kube::api::{ListParams, LogParams};
use kube::{Api, ResourceExt};

use std::sync::Arc;

use super::error::Error;
use crate::engine::Step;
use crate::engine::machine::Look;
use crate::engine::machine::QueuePlace;
use crate::executors::cluster::adapter::{self, Checked, Observation};
use crate::executors::cluster::children::build::{self, LOADGEN_CONTAINER};
use crate::executors::cluster::children::child_caches::Caches;
use crate::executors::cluster::placement::{fit, requested};
use crate::executors::cluster::telemetry::kubelet::reader::{self, KubeletReader};
use crate::executors::cluster::telemetry::kubelet::{ContainerFigures, Window};
use crate::resource::labels::{self, ROLE_LOADGEN, ROLE_TARGET};
use crate::resource::{BenchmarkRun, RunPhase};

/// How many log lines are read from the end of a load generator's log: the document is the
/// last line of stdout, but stderr lines written after it (the log merges both) must not hide
/// it.
const LOG_TAIL_LINES: i64 = 20;

/// The most bytes read from one load generator's log (its last `LOG_TAIL_LINES` lines), so a
/// custom image printing a huge line cannot exhaust the operator's memory (its limit in the
/// chart is 256Mi). A real result document is far smaller. Its size is dominated by each
/// stream's per-second timeline, one point with its own compact histogram per second: real
/// documents measured 150-210 bytes per point (a 20 s, 3-stream result was 9.4 KB; latencies
/// from milliseconds to seconds at 100 requests per second changed little). Allowing up to
/// 1 KiB per point for busy, widely spread streams, 16 MiB holds 16,000-80,000 stream-seconds,
/// e.g. 8 streams over 30 minutes of phases.
pub const LOG_LIMIT_BYTES: usize = 16 << 20;

/// The most bytes read from all the load generators' logs of one cell: every document is held
/// until they are merged, so with many generators each gets a share (at least 1 MiB).
pub const LOGS_BUDGET_BYTES: usize = 48 << 20;

/// The byte limit of each of `generators` load generators' logs.
pub fn log_limit(generators: usize) -> usize {
    (LOGS_BUDGET_BYTES / generators.max(1)).clamp(1 << 20, LOG_LIMIT_BYTES)
}

/// Reads what this turn's `looks` name of `run` (checked as `checked`): for each step, its
/// cell's children and pods, and the load generator's result once it is in.
#[allow(clippy::too_many_arguments)]
pub async fn observe(
    client: &kube::Client,
    run: &BenchmarkRun,
    checked: &Checked,
    looks: &[Look],
    queue: QueuePlace,
    kubelet: Option<&Arc<KubeletReader>>,
    children: &Caches,
) -> Result<Observation, Error> {
    let mut obs = Observation {
        queue,
        ..Observation::default()
    };
    let status = run.status.clone().unwrap_or_default();
    if status.phase == RunPhase::Pending && !queue.admits() {
        // It waits in the queue: nothing of it is deployed, and nothing will be this turn.
        return Ok(obs);
    }
    let ns = run.namespace().unwrap_or_else(|| "default".into());
    if status.phase == RunPhase::Pending {
        // Before anything of the run is created: the namespace may ask for a stricter Pod
        // Security level than the operator's own.
        obs.namespace_pod_security = namespace_pod_security(client, &ns).await?;
    }
    let parallel = checked
        .validated()
        .is_some_and(|v| v.spec().parallelism.is_parallel());
    if status.phase == RunPhase::Pending && parallel {
        // The run is about to cut its node sets: they must fit what others leave free.
        obs.node_requests = requests_of_other_pods(client).await?;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let at = Reads {
        client,
        pods: &pods,
        ns: &ns,
        run,
        checked,
        status: &status,
        kubelet,
        caches: children,
    };
    // One look per step of the turn: several at once in a parallel run, each step's objects
    // in an observation of its own; the run's pods and the nodes are read once.
    for (i, &look) in looks.iter().enumerate() {
        let mut one = Observation::default();
        if let Look::BeforeDeploy { .. } = look
            && i > 0
        {
            if obs.run_pods.is_empty() {
                obs.run_pods = run_pods(&pods, run).await?;
            }
            if obs.nodes.is_none() {
                obs.nodes = nodes(client, children).await?;
            }
            one.run_pods = obs.run_pods.clone();
            one.nodes = obs.nodes.clone();
        } else {
            let target = if i == 0 { &mut obs } else { &mut one };
            observe_step(&at, look, target).await?;
        }
        if i > 0
            && let Some(step) = look.at()
        {
            obs.others.insert(step.cell, one);
        }
    }
    Ok(obs)
}

/// What every read of one reconcile shares: the clients, the run as checked, and its status.
struct Reads<'a> {
    client: &'a kube::Client,
    pods: &'a Api<Pod>,
    ns: &'a str,
    run: &'a BenchmarkRun,
    checked: &'a Checked,
    status: &'a crate::resource::BenchmarkRunStatus,
    kubelet: Option<&'a Arc<KubeletReader>>,
    caches: &'a Caches,
}

/// The name of the part of a reconcile that [`observe`] is, for the operator's metrics: what
/// the first of the turn's `looks` is (`observe-deploy` before a deploy, `observe-target` while
/// a target comes up, `observe-load` while the load runs, `observe` otherwise: a waiting or
/// finished run's), or `observe-result` when the reads brought a measurement's result.
pub fn stage(phase: RunPhase, looks: &[Look], obs: &Observation) -> &'static str {
    if obs.result.is_some() || obs.others.values().any(|other| other.result.is_some()) {
        return "observe-result";
    }
    if phase == RunPhase::Pending && !obs.queue.admits() {
        return "observe";
    }
    match looks.first() {
        Some(Look::BeforeDeploy { .. }) => "observe-deploy",
        Some(Look::Target { .. }) => "observe-target",
        Some(Look::Load { .. }) => "observe-load",
        Some(Look::Nothing) | None => "observe",
    }
}

/// Every pod labelled with `run`'s name: its own, and any an earlier run of the name left.
async fn run_pods(pods: &Api<Pod>, run: &BenchmarkRun) -> Result<Vec<Pod>, Error> {
    Ok(pods
        .list(&ListParams::default().labels(&format!("{}={}", labels::RUN_LABEL, run.name_any())))
        .await?
        .items)
}

/// Reads what `look` names of one step into `obs`.
async fn observe_step(at: &Reads<'_>, look: Look, obs: &mut Observation) -> Result<(), Error> {
    let (client, pods, ns, caches) = (at.client, at.pods, at.ns, at.caches);
    let cached = caches.of(ns);
    // The objects of step `step`: its cell's, for its repetition.
    let child = |step: Step| {
        let cell = &at.status.cells.get(step.cell)?.name;
        Some(build::CellRun {
            run: at.run,
            cell,
            repetition: step.repetition,
        })
    };
    match look {
        Look::Nothing => {}
        Look::BeforeDeploy { .. } => {
            // Pods of an earlier step, or of an earlier run of the same name, whose containers
            // still run would take CPU from this one: the machine waits for them (and the
            // adapter deletes this run's left behind). The first step looks too: a run created
            // again under its old name starts while the old one's pods may still be stopping.
            obs.run_pods = run_pods(pods, at.run).await?;
            obs.nodes = nodes(client, caches).await?;
        }
        Look::Target { at: step, kept } => {
            let Some(cell) = child(step) else {
                return Ok(());
            };
            let name = cell.child_name();
            // A target kept for the step's next load: the last load's Job, on its way out, has
            // the name the next one's will have, so it is looked for too.
            if let Some(cached) = cached {
                // From the watches' caches (`child_caches`); an object they lack may have been
                // applied a moment ago, and is read before it is taken for missing.
                obs.target_pods = own(
                    &cell,
                    ROLE_TARGET,
                    cached.pods(ns, |labels| cell.selects(ROLE_TARGET, labels)),
                    None,
                );
                (obs.deployment, obs.service) =
                    match (cached.deployment(ns, &name), cached.service(ns, &name)) {
                        (Some(d), Some(s)) => (Some(d), Some(s)),
                        _ => deployment_and_service(client, ns, &name).await?,
                    };
                if kept {
                    obs.job = cached.job(ns, &name);
                }
                return Ok(());
            }
            // The reads at once, not one after the other.
            let jobs = Api::<Job>::namespaced(client.clone(), ns);
            let (children, targets, job) = futures::try_join!(
                deployment_and_service(client, ns, &name),
                target_pods(pods, &cell),
                async {
                    match kept {
                        true => jobs.get_opt(&name).await.map_err(Error::from),
                        false => Ok(None),
                    }
                }
            )?;
            ((obs.deployment, obs.service), obs.target_pods, obs.job) = (children, targets, job);
        }
        Look::Load {
            at: step,
            load_over,
        } => {
            let Some(cell) = child(step) else {
                return Ok(());
            };
            read_load(at, &cell, load_over, obs).await?;
        }
    }
    Ok(())
}

/// What a running load shows: the Job, the target pods, the load generator's pods, and its
/// result once it has ended (or, `load_over`, once it has printed it); the kubelet sampler is
/// started with the load and finished with the result.
async fn read_load(
    at: &Reads<'_>,
    cell: &build::CellRun<'_>,
    load_over: bool,
    obs: &mut Observation,
) -> Result<(), Error> {
    let (client, pods, ns) = (at.client, at.pods, at.ns);
    let name = cell.child_name();
    let (job, targets, loadgen) = load_objects(at, cell, &name).await?;
    let job_uid = job.as_ref().and_then(|j| j.metadata.uid.clone());
    let mut loadgen = own(cell, ROLE_LOADGEN, loadgen, job_uid.as_deref());
    (obs.job, obs.target_pods) = (job, targets);
    let Some(job) = &obs.job else {
        // A missing Job is made again from the Service address and the pod IPs.
        (obs.deployment, obs.service) = deployment_and_service(client, ns, &name).await?;
        return Ok(());
    };
    if adapter::job_failed(job) {
        obs.loadgen_failure = read_failure(pods, cell, job_uid.as_deref()).await?;
        if let Some(k) = at.kubelet {
            k.forget(&name);
        }
        return Ok(());
    }
    start_sampling(at, cell, &name, &obs.target_pods).await;
    // The result is read as soon as every load generator container has ended well, not when
    // the Job controller gets round to marking the Job complete (a second or more later on a
    // busy control plane).
    if adapter::job_complete(job) && !all_succeeded(job, &loadgen) {
        // The pods were listed beside the Job (or come from a cache that has not seen their
        // end yet), perhaps from a moment before it completed: they are listed again, after
        // it, from the API server, so a completed Job's pods are never taken for gone; the
        // target pods with them, so a replica that left before the end is seen too.
        let listed;
        (listed, obs.target_pods) =
            futures::try_join!(loadgen_pods(pods, cell), target_pods(pods, cell))?;
        loadgen = own(cell, ROLE_LOADGEN, listed, job_uid.as_deref());
    }
    if adapter::job_complete(job) || all_succeeded(job, &loadgen) {
        // The load is over: the kubelets' last scrape goes beside the reads of the result.
        let read = read_results(pods, &loadgen);
        obs.result = Some(match at.kubelet {
            Some(k) => futures::join!(read, k.scrape_last(&name)).0?,
            None => read.await?,
        });
    } else if load_over {
        // The load should be over, but the kubelet has not reported the pods' end yet (it can
        // take seconds, more after an API server outage): the result is the last line a load
        // generator prints, so a whole document there is the result, whatever the pod's status
        // says.
        obs.result = read_printed_results(pods, job, &loadgen).await?;
    }
    if let Some(result) = &obs.result {
        log_read(cell, job, &loadgen, result);
        let neighbours;
        (obs.kubelet, neighbours) =
            read_node_figures(at.kubelet, &name, result, &obs.target_pods, &loadgen).await;
        match neighbours {
            Ok(list) => obs.neighbours = list,
            Err(why) => obs.neighbours_missing = Some(why),
        }
    }
    obs.loadgen_pods = loadgen;
    Ok(())
}

/// The Job of a running load, its target pods and its load generator's pods: from the watches'
/// caches (a Job they lack may have been applied a moment ago, and is read), else the three at
/// once from the API server, not one after the other.
async fn load_objects(
    at: &Reads<'_>,
    cell: &build::CellRun<'_>,
    name: &str,
) -> Result<(Option<Job>, Vec<Pod>, Vec<Pod>), Error> {
    let jobs = Api::<Job>::namespaced(at.client.clone(), at.ns);
    Ok(match at.caches.of(at.ns) {
        Some(c) => {
            let job = match c.job(at.ns, name) {
                Some(job) => Some(job),
                None => jobs.get_opt(name).await?,
            };
            let role = |role: &'static str| c.pods(at.ns, |labels| cell.selects(role, labels));
            (
                job,
                own(cell, ROLE_TARGET, role(ROLE_TARGET), None),
                role(ROLE_LOADGEN),
            )
        }
        None => futures::try_join!(
            async { jobs.get_opt(name).await.map_err(Error::from) },
            target_pods(at.pods, cell),
            loadgen_pods(at.pods, cell)
        )?,
    })
}

/// With a measurement's `result`: the kubelets' figures of its target pods and what else used
/// the CPU of their nodes (its own pods are `targets` and `loadgen`), or why there are none.
async fn read_node_figures(
    kubelet: Option<&Arc<KubeletReader>>,
    name: &str,
    result: &Result<RunResult, String>,
    targets: &[Pod],
    loadgen: &[Pod],
) -> (
    Option<ContainerFigures>,
    Result<Vec<crate::resource::status::Neighbours>, String>,
) {
    let Some(k) = kubelet else {
        let why = "the operator does not read kubelets (--kubelet-metrics=false)";
        return (None, Err(why.into()));
    };
    let own: Vec<String> = targets
        .iter()
        .chain(loadgen)
        .map(|p| format!("{}/{}", p.namespace().unwrap_or_default(), p.name_any()))
        .collect();
    kubelet_figures(k, name, result, &own).await
}

/// The namespace's `pod-security.kubernetes.io/enforce` label. An operator that may not read
/// namespaces (an RBAC setup without the chart's rule) applies its own level alone, and says
/// so: the namespace's Pod Security admission still stops what its label refuses, only later
/// (the Deployment is created, its pods are not).
async fn namespace_pod_security(client: &kube::Client, ns: &str) -> Result<Option<String>, Error> {
    use k8s_openapi::api::core::v1::Namespace;
    match Api::<Namespace>::all(client.clone()).get(ns).await {
        Ok(namespace) => Ok(namespace
            .metadata
            .labels
            .and_then(|l| l.get(benchmatrix_pod_security::ENFORCE_LABEL).cloned())),
        Err(kube::Error::Api(status)) if status.code == 403 || status.code == 404 => {
            tracing::warn!(
                namespace = ns,
                error = %status.message,
                "cannot read the namespace's Pod Security label; checking runs at the \
                 operator's own --pod-security level only"
            );
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// The cluster's nodes, for the fit check before a cell is deployed: from the node watch's
/// cache when it follows them (`placement/node_cache.rs`), else from the API server.
async fn nodes(client: &kube::Client, caches: &Caches) -> Result<Option<Vec<Node>>, Error> {
    match caches.nodes() {
        Some(nodes) => Ok(Some(nodes)),
        None => list_nodes(client).await,
    }
}

/// The cluster's nodes, listed from the API server. An operator that may not
/// list nodes (an RBAC setup without the chart's ClusterRole rule) skips the check instead of
/// stalling every run: the scheduler's own verdict still ends an unschedulable cell.
async fn list_nodes(client: &kube::Client) -> Result<Option<Vec<Node>>, Error> {
    match Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        Ok(list) => Ok(Some(list.items)),
        Err(kube::Error::Api(status)) if status.code == 403 => {
            tracing::warn!(
                error = %status.message,
                "may not list nodes; cells are deployed without checking that they fit"
            );
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Per node, what the pods bound there that are not a benchmark run's request
/// ([`requested`]). An operator that may not list pods in every namespace (a namespaced
/// install) cuts its node sets from allocatable alone, and says so in the log.
async fn requests_of_other_pods(
    client: &kube::Client,
) -> Result<Option<std::collections::BTreeMap<String, fit::PodRequest>>, Error> {
    let unfinished = ListParams::default().fields("status.phase!=Succeeded,status.phase!=Failed");
    match Api::<Pod>::all(client.clone()).list(&unfinished).await {
        Ok(list) => Ok(Some(requested::requested_by_others(&list.items))),
        Err(kube::Error::Api(status)) if status.code == 403 => {
            tracing::warn!(
                error = %status.message,
                "may not list pods in every namespace; a parallel run's node sets are cut from \
                 the nodes' allocatable, not what other pods leave free"
            );
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// The cell's Deployment and Service, each if it exists.
async fn deployment_and_service(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<(Option<Deployment>, Option<Service>), Error> {
    // Two round trips at once, not one after the other.
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns);
    let services = Api::<Service>::namespaced(client.clone(), ns);
    let (deployment, service) =
        futures::try_join!(deployments.get_opt(name), services.get_opt(name))?;
    Ok((deployment, service))
}

/// The target pods of one repetition of a cell: those its Deployment made.
async fn target_pods(pods: &Api<Pod>, at: &build::CellRun<'_>) -> Result<Vec<Pod>, Error> {
    let listed = pods
        .list(&ListParams::default().labels(&at.selector(ROLE_TARGET)))
        .await?
        .items;
    Ok(own(at, ROLE_TARGET, listed, None))
}

/// The pods of `listed` that the repetition's own controller made (see
/// [`build::CellRun::owns`]); any other is logged and left out.
fn own(at: &build::CellRun<'_>, role: &str, listed: Vec<Pod>, job_uid: Option<&str>) -> Vec<Pod> {
    listed
        .into_iter()
        .filter(|pod| {
            let owned = at.owns(role, pod, job_uid);
            if !owned {
                tracing::debug!(
                    run = %at.run.name_any(),
                    pod = %pod.name_any(),
                    role,
                    "a pod with the repetition's labels but another owner is not read"
                );
            }
            owned
        })
        .collect()
}

/// Says which pods a repetition's result was read from, and whose they are: the operator's
/// record that every figure came from this run's own load generator Job.
fn log_read(
    at: &build::CellRun<'_>,
    job: &Job,
    loadgen: &[Pod],
    result: &Result<RunResult, String>,
) {
    let pods: Vec<String> = loadgen
        .iter()
        .map(|p| {
            let owner = build::controller_of(p).map_or("", |o| o.uid.as_str());
            format!(
                "{}/{} owner {owner}",
                p.name_any(),
                p.metadata.uid.as_deref().unwrap_or_default()
            )
        })
        .collect();
    tracing::info!(
        run = %at.run.name_any(),
        run_uid = at.run.metadata.uid.as_deref().unwrap_or_default(),
        cell = at.cell,
        repetition = at.repetition,
        job = %job.name_any(),
        job_uid = job.metadata.uid.as_deref().unwrap_or_default(),
        pods = %pods.join(", "),
        parsed = result.is_ok(),
        "result read"
    );
}

/// The load generator pods of one repetition of a cell, by their labels (their owner, the Job,
/// is checked by the caller, which has it).
async fn loadgen_pods(pods: &Api<Pod>, at: &build::CellRun<'_>) -> Result<Vec<Pod>, Error> {
    Ok(pods
        .list(&ListParams::default().labels(&at.selector(ROLE_LOADGEN)))
        .await?
        .items)
}

/// Starts sampling the kubelets of a repetition's target `pods` (the cell `cell`'s objects,
/// named `key`) for as long as the load is planned, once: a reconcile that finds it sampled
/// already does nothing, as does one without a kubelet reader or for a run that did not
/// validate (it is ended this turn). A failure to find the kubelets is logged and the
/// repetition goes on without their figures.
async fn start_sampling(at: &Reads<'_>, cell: &build::CellRun<'_>, key: &str, pods: &[Pod]) {
    let (Some(kubelet), Some(v)) = (at.kubelet, at.checked.validated()) else {
        return;
    };
    if kubelet.is_sampling(key) || pods.is_empty() {
        return;
    }
    // The cell's variant may have a template of its own, naming its target container.
    let variant = v
        .cells()
        .iter()
        .find(|c| c.name == cell.cell)
        .and_then(|c| c.variant.as_ref());
    let container = build::target_container_name(v.spec(), variant);
    let nodes: Api<Node> = Api::all(at.client.clone());
    match reader::targets_of(&nodes, pods, &container).await {
        Ok(targets) => kubelet.start(key, targets, at.checked.planned_load()),
        Err(why) => tracing::warn!(
            run = %at.run.name_any(),
            repetition = key,
            %why,
            "cannot read the kubelets of the target pods; no kubelet figures for this repetition"
        ),
    }
}

/// The kubelets' figures over the measured phases of `result`, and what else used the CPU of
/// their nodes (`own`: the measurement's pods), ending the sampler.
async fn kubelet_figures(
    kubelet: &KubeletReader,
    key: &str,
    result: &Result<RunResult, String>,
    own: &[String],
) -> (
    Option<ContainerFigures>,
    Result<Vec<crate::resource::status::Neighbours>, String>,
) {
    let window = result.as_ref().ok().and_then(measured_window);
    let Some(window) = window else {
        kubelet.forget(key);
        const NO_TIMES: &str = "the load generator reported no phase start times (an image \
                                older than the operator), so the kubelet's figures cannot be \
                                lined up with the phases";
        let figures = result.is_ok().then(|| ContainerFigures {
            missing: vec![NO_TIMES.into()],
            ..ContainerFigures::default()
        });
        return (figures, Err(NO_TIMES.into()));
    };
    match kubelet.finish(key, window, own).await {
        Some(sampled) => (Some(sampled.figures), Ok(sampled.neighbours)),
        None => (
            None,
            Err(
                "nothing was sampled for this measurement (the operator restarted during the \
                 load, or the target pods' nodes could not be read)"
                    .into(),
            ),
        ),
    }
}

/// From the start of the first measured phase to the end of the last, in wall-clock time.
pub fn measured_window(result: &RunResult) -> Option<Window> {
    let first = result.phases.first()?;
    let last = result.phases.last()?;
    let start_ms = first.started_unix_ms?;
    let end_ms = last.started_unix_ms? + (last.duration_secs * 1000.0).round() as i64;
    (end_ms > start_ms).then_some(Window { start_ms, end_ms })
}

/// The merged result of load generator pods that have printed it but are not yet reported
/// Succeeded: `None` unless every one the Job wants has a whole result document as the last
/// line of its log (a document cut while it is written does not parse, and is waited for).
async fn read_printed_results(
    pods: &Api<Pod>,
    job: &Job,
    list: &[Pod],
) -> Result<Option<Result<RunResult, String>>, Error> {
    let want = job
        .spec
        .as_ref()
        .and_then(|s| s.completions)
        .unwrap_or(1)
        .max(1) as usize;
    let live: Vec<&Pod> = list
        .iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_none()
                && matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Running" | "Succeeded")
                )
        })
        .collect();
    if live.len() != want {
        return Ok(None);
    }
    let limit = log_limit(want);
    let mut docs = Vec::with_capacity(want);
    for pod in live {
        let log = read_log(pods, &pod.name_any(), limit).await?;
        if log.len() >= limit {
            return Ok(None);
        }
        match parse_result_log(&log) {
            Ok(doc) => docs.push(doc),
            Err(_) => return Ok(None),
        }
    }
    Ok(Some(match docs.len() {
        1 => Ok(docs.remove(0)),
        _ => merge(&docs).map_err(|e| format!("merging the load generators' results: {e}")),
    }))
}

/// True when as many load generator pods have succeeded as the Job wants completions.
fn all_succeeded(job: &Job, pods: &[Pod]) -> bool {
    let want = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(1);
    let succeeded = pods
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
        .count();
    want > 0 && succeeded >= want as usize
}

/// The merged result document of a completed Job, or why it cannot be had (a cell failure,
/// not an operator error).
async fn read_results(pods: &Api<Pod>, list: &[Pod]) -> Result<Result<RunResult, String>, Error> {
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
    let limit = log_limit(succeeded.len());
    // Every generator's log at once; the documents are then taken in order.
    let logs = futures::future::try_join_all(
        succeeded
            .iter()
            .map(|pod| async move { read_log(pods, &pod.name_any(), limit).await }),
    )
    .await?;
    let mut docs = Vec::new();
    for (pod, log) in succeeded.into_iter().zip(logs) {
        if log.len() >= limit {
            // The API server stopped at the limit: whatever the last line is, it is cut.
            return Ok(Err(format!(
                "pod {}: the last {LOG_TAIL_LINES} lines of the load generator's log exceed the \
                 operator's read limit of {} MiB, so the result document (its last line) cannot \
                 be read whole; it starts: {}",
                pod.name_any(),
                limit >> 20,
                excerpt(log.lines().next().unwrap_or(""))
            )));
        }
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

/// The tail of a load generator's log, at most `limit` bytes: the API server is asked to stop
/// there (limitBytes), and the operator stops reading there whatever it sends. Read as bytes, as
/// a cut can fall inside a UTF-8 character (replaced, not an error).
async fn read_log(pods: &Api<Pod>, name: &str, limit: usize) -> Result<String, Error> {
    use futures::AsyncReadExt;
    let stream = pods
        .log_stream(
            name,
            &LogParams {
                container: Some(LOADGEN_CONTAINER.into()),
                tail_lines: Some(LOG_TAIL_LINES),
                limit_bytes: Some(limit as i64),
                ..LogParams::default()
            },
        )
        .await?;
    let mut bytes = Vec::new();
    stream
        .take(limit as u64)
        .read_to_end(&mut bytes)
        .await
        .map_err(Error::ReadLog)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
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
    at: &build::CellRun<'_>,
    job_uid: Option<&str>,
) -> Result<Option<String>, Error> {
    let list = own(at, ROLE_LOADGEN, loadgen_pods(pods, at).await?, job_uid);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_load_generator_gets_a_share_of_the_log_budget() {
        const MIB: usize = 1 << 20;
        assert_eq!(log_limit(1), 16 * MIB);
        assert_eq!(log_limit(3), 16 * MIB);
        assert_eq!(log_limit(4), 12 * MIB);
        assert_eq!(log_limit(32), 48 * MIB / 32);
        assert_eq!(log_limit(100), MIB, "never below 1 MiB");
        assert_eq!(log_limit(0), 16 * MIB);
    }
}
