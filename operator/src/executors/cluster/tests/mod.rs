//! The reconciler against a faked API server: whole runs, restarts, failures, bad specs.
//!
//! Each test drives `reconcile` the way the controller would after each watch event, plays
//! the cluster's other controllers (Deployment availability, pods, Job completion, logs)
//! through the fake, and checks objects, status, and the calls made. Every test has a timeout.

mod burst;
mod caches;
mod capacity;
pub(crate) mod fake;
mod gate;
mod identity;
mod images;
mod namespaces;
mod neighbours;
mod pod_security;
mod repeat;
mod requests;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use benchmatrix_loadgen::result::{LatencyMs, PhaseResult, RunResult, StreamResult};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action as Requeue;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;
use serde_json::{Value, json};

use super::reconciler::error::Error;
use super::reconciler::reconcile::{Context, error_policy, reconcile};
use crate::executors::cluster::telemetry::metrics::Metrics;
use crate::fixtures::fast_then_mixed;
use crate::resource::conditions;
use crate::resource::{BenchmarkRun, CellPhase, Configuration, Mode, RunPhase};
use fake::FakeApi;

pub(crate) const NS: &str = "bench";
const TEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How the simulated cluster treats a cell.
#[derive(Clone)]
pub(crate) enum Behaviour {
    /// Replicas become ready; the Job succeeds printing this log.
    Healthy(String),
    /// Target pods stuck in ImagePullBackOff.
    ImagePull,
    /// Target pods run but never pass the readiness probe.
    NeverReady,
    /// The Job fails; its pod's last words.
    JobFails(String),
    /// Replicas become ready; the Job keeps running.
    Busy,
}

pub(crate) struct Harness {
    pub(crate) fake: FakeApi,
    ctx: Arc<Context>,
    now: Arc<AtomicI64>,
}

/// Whatever a test did, each call it made must be one the chart's ClusterRole is checked
/// against (`process::calls::API_CALLS`).
impl Drop for Harness {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.fake.check_calls_are_declared();
        }
    }
}

impl Harness {
    pub(crate) fn new() -> Self {
        let fake = FakeApi::default();
        let now = Arc::new(AtomicI64::new(1_800_000_000));
        let ctx = Self::context(&fake, &now, 1, Writer::default());
        Self { fake, ctx, now }
    }

    fn context(
        fake: &FakeApi,
        now: &Arc<AtomicI64>,
        max_active: usize,
        runs: Writer<DeserializeGuard<BenchmarkRun>>,
    ) -> Arc<Context> {
        let mut ctx = Context::new(
            fake.client(),
            runs.as_reader(),
            max_active,
            Arc::new(Metrics::default()),
        );
        let clock = now.clone();
        ctx.clock = Arc::new(move || conditions::time_from_secs(clock.load(Ordering::SeqCst)));
        Arc::new(ctx)
    }

    /// A new controller process over the same cluster: nothing but the API state carries over.
    fn restart(&mut self) {
        self.ctx = Self::context(&self.fake, &self.now, 1, Writer::default());
    }

    fn advance(&self, secs: i64) {
        self.now.fetch_add(secs, Ordering::SeqCst);
    }

    fn guard(&self, name: &str) -> DeserializeGuard<BenchmarkRun> {
        let value = self
            .fake
            .get("benchmarkruns", NS, name)
            .expect("the run exists");
        serde_json::from_value(value).expect("a guard always deserializes")
    }

    fn run(&self, name: &str) -> BenchmarkRun {
        self.guard(name).0.expect("a well-formed run")
    }

    /// One reconcile, and its Events out (they are published behind it).
    async fn reconcile(&self, name: &str) -> Result<Requeue, Error> {
        let result = reconcile(Arc::new(self.guard(name)), self.ctx.clone()).await;
        self.ctx.events.published().await;
        result
    }

    /// Reconciles from `cached`, a copy of the run the controller's cache may still hold while
    /// the API server has a newer one.
    async fn reconcile_from(
        &self,
        cached: &DeserializeGuard<BenchmarkRun>,
    ) -> Result<Requeue, Error> {
        let copy: DeserializeGuard<BenchmarkRun> =
            serde_json::from_value(serde_json::to_value(cached.0.as_ref().unwrap()).unwrap())
                .unwrap();
        let result = reconcile(Arc::new(copy), self.ctx.clone()).await;
        self.ctx.events.published().await;
        result
    }

    /// Plays the Deployment controller, the scheduler, the kubelet and the Job controller.
    fn simulate(&self, behaviour: &dyn Fn(&str) -> Behaviour) {
        for svc in self.fake.list("services") {
            let name = svc["metadata"]["name"].as_str().unwrap().to_owned();
            self.fake.edit("services", NS, &name, |s| {
                s["spec"]["clusterIP"] = json!("10.96.0.10");
            });
        }
        for dep in self.fake.list("deployments") {
            let name = dep["metadata"]["name"].as_str().unwrap().to_owned();
            let cell = dep["metadata"]["labels"]["benchmatrix.dev/cell"]
                .as_str()
                .unwrap()
                .to_owned();
            let replicas = dep["spec"]["replicas"].as_i64().unwrap();
            let labels = dep["spec"]["template"]["metadata"]["labels"].clone();
            let b = behaviour(&cell);
            for i in 0..replicas {
                let pod = format!("{name}-pod{i}");
                let (ready, container_state) = match &b {
                    Behaviour::ImagePull => (
                        false,
                        json!({"waiting": {"reason": "ImagePullBackOff",
                            "message": "Back-off pulling image \"nope:1\""}}),
                    ),
                    Behaviour::NeverReady => (false, json!({"running": {}})),
                    _ => (true, json!({"running": {}})),
                };
                if self.fake.get("pods", NS, &pod).is_none() {
                    self.fake.insert(
                        "pods",
                        json!({
                            "apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": pod, "namespace": NS, "labels": labels,
                                "ownerReferences": [replica_set_of(&dep)]},
                            "spec": {"containers": [{"name": "target"}]},
                            "status": {
                                "phase": "Running",
                                "podIP": format!("10.1.0.{}", i + 1),
                                "conditions": [{"type": "Ready",
                                    "status": if ready { "True" } else { "False" }}],
                                "containerStatuses": [{"name": "target", "ready": ready,
                                    "restartCount": 0, "image": "x", "imageID": "",
                                    "state": container_state}],
                            },
                        }),
                    );
                }
            }
            let available = if matches!(
                b,
                Behaviour::Healthy(_) | Behaviour::JobFails(_) | Behaviour::Busy
            ) {
                replicas
            } else {
                0
            };
            self.fake.edit("deployments", NS, &name, |d| {
                d["status"] = json!({"replicas": replicas, "availableReplicas": available});
            });
        }
        for job in self.fake.list("jobs") {
            let name = job["metadata"]["name"].as_str().unwrap().to_owned();
            if job["status"]["succeeded"].is_number() || job["status"]["failed"].is_number() {
                continue;
            }
            let cell = job["metadata"]["labels"]["benchmatrix.dev/cell"]
                .as_str()
                .unwrap()
                .to_owned();
            let labels = job["spec"]["template"]["metadata"]["labels"].clone();
            let pod = format!("{name}-0-abcde");
            let (phase, terminated, status) = match behaviour(&cell) {
                Behaviour::Healthy(log) => {
                    self.fake.set_log(NS, &pod, &log);
                    (
                        "Succeeded",
                        json!({"exitCode": 0, "reason": "Completed"}),
                        json!({"succeeded": 1}),
                    )
                }
                Behaviour::JobFails(words) => (
                    "Failed",
                    json!({"exitCode": 2, "reason": "Error", "message": words}),
                    json!({"failed": 1, "conditions": [{"type": "Failed", "status": "True",
                        "reason": "BackoffLimitExceeded",
                        "message": "Job has reached the specified backoff limit"}]}),
                ),
                Behaviour::Busy => {
                    self.fake
                        .edit("jobs", NS, &name, |j| j["status"] = json!({"active": 1}));
                    continue;
                }
                _ => continue,
            };
            self.fake.insert(
                "pods",
                json!({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": pod, "namespace": NS, "labels": labels,
                        "ownerReferences": [owner(&job)]},
                    "spec": {"containers": [{"name": "loadgen"}]},
                    "status": {"phase": phase, "containerStatuses": [{"name": "loadgen",
                        "ready": false, "restartCount": 0, "image": "x", "imageID": "",
                        "state": {"terminated": terminated}}]},
                }),
            );
            self.fake.edit("jobs", NS, &name, |j| j["status"] = status);
        }
    }

    /// Reconciles and simulates until the run finishes; returns the run phases seen.
    pub(crate) async fn drive(
        &self,
        name: &str,
        behaviour: &dyn Fn(&str) -> Behaviour,
    ) -> Vec<RunPhase> {
        let mut phases = vec![self.phase(name)];
        for _ in 0..60 {
            self.reconcile(name).await.expect("reconcile succeeds");
            let phase = self.phase(name);
            if phases.last() != Some(&phase) {
                phases.push(phase);
            }
            if phase.is_finished() {
                return phases;
            }
            self.simulate(behaviour);
            self.advance(1);
        }
        panic!(
            "the run did not finish; status: {:#?}",
            self.run(name).status
        );
    }

    fn phase(&self, name: &str) -> RunPhase {
        self.run(name)
            .status
            .map(|s| s.phase)
            .unwrap_or(RunPhase::Pending)
    }
}

/// The controlling owner reference to `object` (a Job of the fake).
pub(crate) fn owner(object: &Value) -> Value {
    json!({"apiVersion": object["apiVersion"], "kind": object["kind"],
        "name": object["metadata"]["name"], "uid": object["metadata"]["uid"],
        "controller": true})
}

/// The controlling owner reference of a pod of Deployment `deployment`: its ReplicaSet, named
/// as the Deployment controller names it (`<deployment>-<pod-template-hash>`).
pub(crate) fn replica_set_of(deployment: &Value) -> Value {
    let name = deployment["metadata"]["name"].as_str().unwrap_or_default();
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{name}-5d8f7c"),
        "uid": format!("rs-{}", deployment["metadata"]["uid"].as_str().unwrap_or_default()),
        "controller": true})
}

/// A run with the given cells (alternately single and pool, the i-th with i + 1 replicas of
/// 500m and 128Mi), the quickstart's workload and short timeouts, as the API server stores it.
pub(crate) fn sample(name: &str, cells: &[&str]) -> Value {
    let mut run = BenchmarkRun::sample()
        .named(name)
        .in_namespace(NS)
        .with_generation(1)
        .with_workload(fast_then_mixed("1s", "5s", "5s"))
        .with_ready_timeout("30s")
        .with_run_slack("20s");
    for (i, cell) in cells.iter().enumerate() {
        let mode = if i % 2 == 0 { Mode::Single } else { Mode::Pool };
        run = run.with_cell(
            Configuration::named(cell)
                .mode(mode)
                .replicas(i as u32 + 1)
                .cpu("500m")
                .memory("128Mi")
                .env("WEB_CONCURRENCY", "2"),
        );
    }
    serde_json::to_value(run).expect("a typed run serializes")
}

/// A canned load generator log: a stderr line, then the result document as the last line.
fn canned_log(fast_mixed_p99: f64) -> String {
    let stream = |endpoint: &str, p99: f64| StreamResult {
        endpoint: endpoint.into(),
        requests: 500,
        errors: 0,
        rps: 100.0,
        latency_ms: Some(LatencyMs {
            p50: p99 / 3.0,
            p90: p99 / 2.0,
            p99,
            p999: p99 * 1.1,
            max: p99 * 1.2,
            mean: p99 / 3.0,
        }),
        ..StreamResult::default()
    };
    let doc = RunResult {
        version: 1,
        target: "http://10.96.0.10:8080".into(),
        threads: 1,
        generators: 1,
        preflight_seconds: None,
        phases: vec![
            PhaseResult {
                name: "fast-only".into(),
                duration_secs: 5.0,
                streams: vec![stream("fast", 10.0)],
                target_stats: vec![],
                started_unix_ms: None,
            },
            PhaseResult {
                name: "mixed".into(),
                duration_secs: 5.0,
                streams: vec![stream("fast", fast_mixed_p99), stream("slow", 800.0)],
                target_stats: vec![],
                started_unix_ms: None,
            },
        ],
    };
    format!(
        "loadgen: phase mixed done\n{}\n",
        serde_json::to_string(&doc).unwrap()
    )
}

pub(crate) fn healthy(cell: &str) -> Behaviour {
    Behaviour::Healthy(canned_log(if cell == "a" { 400.0 } else { 20.0 }))
}

/// Waits until `ready` holds (the Controllers, or a watch, work on their own tasks), for 10 s
/// at most.
pub(crate) async fn until(what: &str, ready: impl Fn() -> bool) {
    for _ in 0..500 {
        if ready() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

pub(crate) async fn with_timeout<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(TEST_TIMEOUT, f)
        .await
        .expect("the test finished within its timeout");
}

fn assert_only_expected_calls(fake: &FakeApi) {
    for call in fake.calls() {
        assert!(
            [
                "benchmarkruns",
                "deployments",
                "services",
                "configmaps",
                "jobs",
                "pods",
                "events",
                "nodes",
                // The run's namespace, read for its Pod Security label while the run is pending.
                "namespaces"
            ]
            .contains(&call.resource.as_str()),
            "unexpected call {}",
            call.short()
        );
    }
}

#[tokio::test]
async fn two_cells_walk_pending_running_succeeded_with_the_right_objects() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("demo", &["a", "b"]));
        let uid = h.fake.get("benchmarkruns", NS, "demo").unwrap()["metadata"]["uid"].clone();

        // First steps by hand, to look at the objects of cell a while it is deployed.
        h.reconcile("demo").await.unwrap();
        assert_eq!(h.phase("demo"), RunPhase::Running);
        let deps = h.fake.list("deployments");
        assert_eq!(deps.len(), 1);
        let dep = &deps[0];
        assert_eq!(dep["spec"]["replicas"], 1);
        assert_eq!(dep["metadata"]["ownerReferences"][0]["uid"], uid);
        assert_eq!(dep["metadata"]["ownerReferences"][0]["controller"], true);
        let container = &dep["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["resources"]["limits"]["cpu"], "500m");
        assert_eq!(container["resources"]["requests"]["cpu"], "500m");
        assert_eq!(container["resources"]["limits"]["memory"], "128Mi");
        let env: Vec<(String, String)> = container["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().unwrap().into(),
                    e["value"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert!(
            env.contains(&("BENCH_MODE".into(), "single".into())),
            "{env:?}"
        );
        assert!(env.contains(&("BENCH_POOL_SIZE".into(), "auto".into())));
        assert!(env.contains(&("WEB_CONCURRENCY".into(), "2".into())));
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/healthz");
        let sc = &container["securityContext"];
        assert_eq!(sc["allowPrivilegeEscalation"], false);
        assert_eq!(sc["readOnlyRootFilesystem"], true);
        assert_eq!(sc["capabilities"]["drop"][0], "ALL");
        assert_eq!(
            dep["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"],
            true
        );
        assert_eq!(h.fake.list("services").len(), 1);
        assert!(
            h.fake.list("jobs").is_empty(),
            "no Job before the target is ready"
        );

        h.simulate(&healthy);
        h.reconcile("demo").await.unwrap();
        let jobs = h.fake.list("jobs");
        assert_eq!(jobs.len(), 1);
        let job = &jobs[0];
        assert_eq!(job["spec"]["backoffLimit"], 0);
        assert_eq!(job["metadata"]["ownerReferences"][0]["uid"], uid);
        let lg = &job["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(lg["args"][0], "--plan");
        assert_eq!(lg["securityContext"]["runAsNonRoot"], true);
        let cm = &h.fake.list("configmaps")[0];
        let plan = cm["data"]["plan-0.yaml"].as_str().unwrap();
        assert!(plan.contains("target: http://10.96.0.10:8080"), "{plan}");
        assert!(
            plan.contains("10.1.0.1:8080"),
            "replica addresses for /stats: {plan}"
        );

        let phases = h.drive("demo", &healthy).await;
        assert_eq!(phases, [RunPhase::Running, RunPhase::Succeeded]);
        let run = h.run("demo");
        let status = run.status.unwrap();
        assert_eq!(status.progress.as_deref(), Some("2/2"));
        assert!(status.completion_time.is_some());
        assert!(status.cells.iter().all(|c| c.phase == CellPhase::Succeeded));
        let a = &status.cells[0];
        assert_eq!(a.results.len(), 3);
        assert_eq!(a.results[1].latency_ms.unwrap().p99, 400.0);
        let summary = status.summary.unwrap();
        let mixed_fast = summary
            .comparisons
            .iter()
            .find(|c| c.phase == "mixed" && c.endpoint == "fast")
            .unwrap();
        assert_eq!(mixed_fast.best_cell.as_deref(), Some("b"));
        assert!((mixed_fast.cells[0].p99_ratio.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(summary.interference.len(), 2);
        let complete = conditions::find(&status.conditions, conditions::COMPLETE).unwrap();
        assert_eq!(complete.status, "True");

        // Children cleaned up (policy Always); Events published on transitions only.
        assert!(h.fake.list("deployments").is_empty());
        assert!(h.fake.list("services").is_empty());
        assert!(h.fake.list("jobs").is_empty());
        assert!(h.fake.list("configmaps").is_empty());
        let reasons: Vec<String> = h
            .fake
            .list("events")
            .iter()
            .map(|e| e["reason"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(reasons.contains(&"CellStarted".to_owned()), "{reasons:?}");
        assert!(reasons.contains(&"RunSucceeded".to_owned()), "{reasons:?}");
        assert_only_expected_calls(&h.fake);

        let calls = h.fake.calls();
        let non_event = calls.iter().filter(|c| c.resource != "events").count();
        eprintln!(
            "API calls for 2 cells: {} in all, {} without Events ({} per cell)",
            calls.len(),
            non_event,
            non_event / 2
        );
        for c in &calls {
            eprintln!("  {}", c.short());
        }
        // 22: one of them is the node list of the fit check before each cell is deployed, and
        // one run's worth the GET of the run by an operator that has not written it yet.
        assert!(non_event / 2 <= 22, "too many calls per cell: {non_event}");

        // Where the reconciles' time went, part by part: every part of the walk is counted
        // under its name and the run's phase when its reconcile began.
        let text = h.ctx.metrics.render();
        for (stage, phase) in [
            ("observe-deploy", "Pending"),
            ("status", "Pending"),
            ("children", "Pending"),
            ("observe-target", "Running"),
            ("observe-load", "Running"),
            ("observe-result", "Running"),
            ("decide", "Running"),
            ("status", "Running"),
            ("children", "Running"),
        ] {
            let series = format!(
                "benchmatrix_reconcile_stage_duration_seconds_count{{stage=\"{stage}\",phase=\"{phase}\"}}"
            );
            assert!(text.contains(&series), "no {series} in:\n{text}");
        }

        // A finished run is left alone: no call at all.
        let before = h.fake.calls().len();
        let requeue = h.reconcile("demo").await.unwrap();
        assert_eq!(requeue, Requeue::await_change());
        assert_eq!(h.fake.calls().len(), before);
    })
    .await;
}

#[tokio::test]
async fn a_restarted_controller_creates_nothing_twice_and_finishes_the_run() {
    with_timeout(async {
        let mut h = Harness::new();
        h.fake
            .insert("benchmarkruns", sample("restart", &["a", "b"]));
        // Cell a done, cell b's Job running.
        let busy_b = |cell: &str| {
            if cell == "a" {
                healthy(cell)
            } else {
                Behaviour::Busy
            }
        };
        for _ in 0..20 {
            h.reconcile("restart").await.unwrap();
            let status = h.run("restart").status.unwrap_or_default();
            if status.cells.get(1).map(|c| c.phase) == Some(CellPhase::Running) {
                break;
            }
            h.simulate(&busy_b);
            h.advance(1);
        }
        let captured = h.run("restart").status.unwrap();
        assert_eq!(captured.cells[0].phase, CellPhase::Succeeded);
        assert_eq!(captured.cells[1].phase, CellPhase::Running);
        let jobs_before = h.fake.list("jobs");
        assert_eq!(jobs_before.len(), 1);

        // A new controller over the captured cluster, reconciling a few times while the Job runs.
        h.restart();
        for _ in 0..3 {
            h.reconcile("restart").await.unwrap();
            h.simulate(&busy_b);
            h.advance(1);
        }
        assert_eq!(h.fake.list("jobs").len(), 1, "no second Job");
        assert_eq!(
            h.fake.list("jobs")[0]["metadata"]["uid"],
            jobs_before[0]["metadata"]["uid"],
            "the same Job, not a new one"
        );
        // The Job completes; the run finishes with cell a's results intact.
        for job in h.fake.list("jobs") {
            let name = job["metadata"]["name"].as_str().unwrap().to_owned();
            h.fake.edit("jobs", NS, &name, |j| j["status"] = json!({}));
        }
        let phases = h.drive("restart", &healthy).await;
        assert_eq!(phases.last(), Some(&RunPhase::Succeeded));
        let status = h.run("restart").status.unwrap();
        assert_eq!(status.cells[0].results, captured.cells[0].results);
        assert!(status.cells.iter().all(|c| c.phase == CellPhase::Succeeded));

        let mut creations = h.fake.creations();
        creations.retain(|(r, _)| r != "events");
        let mut unique = creations.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            creations.len(),
            unique.len(),
            "created twice: {creations:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_finished_run_is_exported_on_metrics_and_again_after_a_restart() {
    with_timeout(async {
        let mut h = Harness::new();
        h.fake.insert("benchmarkruns", sample("exported", &["a", "b"]));
        let p99 = |text: &str| {
            text.lines()
                .find(|l| {
                    l.starts_with("benchmatrix_run_latency_seconds{")
                        && l.contains(r#"run="exported",cell="b",phase="mixed",endpoint="fast",percentile="p99""#)
                })
                .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        };
        h.reconcile("exported").await.unwrap();
        assert_eq!(p99(&h.ctx.metrics.render()), None, "a running run exports nothing");
        h.drive("exported", &healthy).await;
        let text = h.ctx.metrics.render();
        // Cell b's canned mixed/fast p99 is 20 ms: the status's figure, in seconds.
        let status = h.run("exported").status.unwrap();
        let in_status = status.cells[1].results[1].latency_ms.as_ref().unwrap().p99;
        assert_eq!(in_status, 20.0);
        assert_eq!(p99(&text), Some(0.02), "{text}");
        assert!(
            text.contains(r#"benchmatrix_runs_finished_total{outcome="all_measured"} 1"#),
            "{text}"
        );
        // A new operator process: the run is reconciled once as every run is at start-up, and
        // its figures are back, without counting it as finished again.
        h.restart();
        assert_eq!(p99(&h.ctx.metrics.render()), None);
        h.reconcile("exported").await.unwrap();
        let text = h.ctx.metrics.render();
        assert_eq!(p99(&text), Some(0.02), "{text}");
        assert!(!text.contains("benchmatrix_runs_finished_total"), "{text}");
    })
    .await;
}

#[tokio::test]
async fn failures_end_their_cell_with_the_cause_and_the_run_goes_on() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert(
            "benchmarkruns",
            sample("failing", &["pull", "never", "jobfail", "garbage", "good"]),
        );
        let behaviour = |cell: &str| match cell {
            "pull" => Behaviour::ImagePull,
            "never" => Behaviour::NeverReady,
            "jobfail" => Behaviour::JobFails("error: connect to 10.96.0.10:8080 refused".into()),
            "garbage" => Behaviour::Healthy("panicked at src/main.rs\n{\"version\": oops".into()),
            _ => healthy(cell),
        };
        // The never-ready cell needs its 30 s readiness timeout to pass.
        let mut phases = vec![];
        for _ in 0..200 {
            h.reconcile("failing").await.unwrap();
            let phase = h.phase("failing");
            phases.push(phase);
            if phase.is_finished() {
                break;
            }
            h.simulate(&behaviour);
            h.advance(5);
        }
        let status = h.run("failing").status.unwrap();
        assert_eq!(status.phase, RunPhase::Succeeded, "{status:#?}");
        let by_name = |n: &str| status.cells.iter().find(|c| c.name == n).unwrap();

        let pull = by_name("pull");
        assert_eq!(pull.phase, CellPhase::Failed);
        assert_eq!(pull.reason.as_deref(), Some("ImagePullBackOff"));
        assert!(
            pull.message
                .as_ref()
                .unwrap()
                .contains("Back-off pulling image")
        );

        let never = by_name("never");
        assert_eq!(never.phase, CellPhase::Failed);
        assert_eq!(never.reason.as_deref(), Some("NeverReady"));
        assert!(
            never
                .message
                .as_ref()
                .unwrap()
                .contains("readiness probe not passing"),
            "{never:?}"
        );

        let jobfail = by_name("jobfail");
        assert_eq!(jobfail.reason.as_deref(), Some("LoadgenFailed"));
        assert!(
            jobfail.message.as_ref().unwrap().contains("refused"),
            "{jobfail:?}"
        );

        let garbage = by_name("garbage");
        assert_eq!(garbage.reason.as_deref(), Some("ResultUnparsable"));
        assert!(garbage.message.as_ref().unwrap().contains("does not parse"));

        assert_eq!(by_name("good").phase, CellPhase::Succeeded);
        let failed = conditions::find(&status.conditions, conditions::CELL_FAILED).unwrap();
        assert_eq!(failed.status, "True");
        assert!(
            status
                .message
                .as_ref()
                .unwrap()
                .contains("1 of 5 cells measured")
        );
        assert!(
            h.fake.list("deployments").is_empty(),
            "failed cells cleaned up too"
        );
    })
    .await;
}

#[tokio::test]
async fn keep_failed_leaves_a_failed_cells_objects_for_debugging() {
    with_timeout(async {
        let h = Harness::new();
        let mut run = sample("keep", &["pull", "good"]);
        run["spec"]["cleanup"] = json!("KeepFailed");
        h.fake.insert("benchmarkruns", run);
        h.drive("keep", &|cell| {
            if cell == "pull" {
                Behaviour::ImagePull
            } else {
                healthy(cell)
            }
        })
        .await;
        let deps = h.fake.list("deployments");
        assert_eq!(deps.len(), 1);
        assert_eq!(
            deps[0]["metadata"]["labels"]["benchmatrix.dev/cell"],
            "pull"
        );
    })
    .await;
}

#[tokio::test]
async fn a_bad_spec_fails_the_run_naming_the_field_without_children_or_requeue() {
    with_timeout(async {
        let h = Harness::new();
        h.fake
            .insert("benchmarkruns", sample("bad", &["same", "same"]));
        let requeue = h.reconcile("bad").await.unwrap();
        assert_eq!(requeue, Requeue::await_change(), "no hot requeue");
        let status = h.run("bad").status.unwrap();
        assert_eq!(status.phase, RunPhase::Failed);
        let message = status.message.unwrap();
        assert!(
            message.contains("spec.configurations[1].name: duplicate name \"same\""),
            "{message}"
        );
        let valid = conditions::find(&status.conditions, conditions::SPEC_VALID).unwrap();
        assert_eq!(valid.status, "False");
        for kind in ["deployments", "services", "jobs", "configmaps"] {
            assert!(h.fake.list(kind).is_empty(), "{kind} created");
        }
        // Reconciling again writes nothing.
        let before = h.fake.calls().len();
        h.reconcile("bad").await.unwrap();
        assert_eq!(h.fake.calls().len(), before);
    })
    .await;
}

#[tokio::test]
async fn a_run_whose_status_could_outgrow_etcd_is_refused_at_its_first_reconcile() {
    with_timeout(async {
        let h = Harness::new();
        let names: Vec<String> = (0..64).map(|i| format!("c{i}")).collect();
        let mut run = sample(
            "huge",
            &names.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        run["spec"]["repeat"] = json!(20);
        h.fake.insert("benchmarkruns", run);
        h.reconcile("huge").await.unwrap();
        let status = h.run("huge").status.unwrap();
        assert_eq!(status.phase, RunPhase::Failed);
        let valid = conditions::find(&status.conditions, conditions::SPEC_VALID).unwrap();
        assert_eq!(
            (valid.status.as_str(), valid.reason.as_str()),
            ("False", "InvalidSpec")
        );
        assert!(
            valid
                .message
                .starts_with("invalid spec: spec: the run's object could grow to ")
                && valid
                    .message
                    .contains("(64 cells x 20 repetitions x 3 streams)")
                && valid
                    .message
                    .contains("more than the 1 MiB a BenchmarkRun may take")
                && valid.message.contains("it fits with only the first "),
            "{}",
            valid.message
        );
        for kind in ["deployments", "services", "jobs", "configmaps"] {
            assert!(h.fake.list(kind).is_empty(), "{kind} created");
        }
    })
    .await;
}

#[tokio::test]
async fn a_malformed_object_is_reported_and_not_retried_hot() {
    with_timeout(async {
        let h = Harness::new();
        let mut run = sample("malformed", &["a"]);
        run["spec"]["configurations"][0]["replicas"] = json!("many");
        h.fake.insert("benchmarkruns", run);
        let guard = Arc::new(h.guard("malformed"));
        assert!(
            guard.0.is_err(),
            "the guard holds the error, the watch goes on"
        );
        let err = reconcile(guard.clone(), h.ctx.clone()).await.unwrap_err();
        assert!(err.to_string().contains("bench/malformed"), "{err}");
        assert!(err.is_permanent());
        assert_eq!(
            error_policy(guard, &err, h.ctx.clone()),
            Requeue::await_change()
        );
        let calls: Vec<String> = h.fake.calls().iter().map(|c| c.short()).collect();
        assert_eq!(calls, ["PATCH benchmarkruns/malformed/status"]);
        let stored = h.fake.get("benchmarkruns", NS, "malformed").unwrap();
        assert_eq!(stored["status"]["phase"], "Failed");
        assert!(
            stored["status"]["message"]
                .as_str()
                .unwrap()
                .contains("invalid spec"),
            "{stored}"
        );
        assert!(h.ctx.metrics.render().contains("error=\"malformed\""));
    })
    .await;
}

#[tokio::test]
async fn runs_beyond_the_limit_wait_pending_with_a_queue_message() {
    with_timeout(async {
        let fake = FakeApi::default();
        let now = Arc::new(AtomicI64::new(1_800_000_000));
        fake.insert("benchmarkruns", sample("first", &["a"]));
        fake.insert("benchmarkruns", sample("second", &["a"]));
        let mut writer: Writer<DeserializeGuard<BenchmarkRun>> = Writer::default();
        let load = |name: &str| -> DeserializeGuard<BenchmarkRun> {
            serde_json::from_value(fake.get("benchmarkruns", NS, name).unwrap()).unwrap()
        };
        // The controller's cache sees the first run already Running.
        h_start(&fake, &now, "first").await;
        writer.apply_watcher_event(&watcher::Event::Apply(load("first")));
        writer.apply_watcher_event(&watcher::Event::Apply(load("second")));
        let ctx = Harness::context(&fake, &now, 1, writer);
        let requeue = reconcile(Arc::new(load("second")), ctx.clone())
            .await
            .unwrap();
        let second = load("second").0.unwrap().status.unwrap();
        assert_eq!(second.phase, RunPhase::Pending);
        assert!(
            second
                .message
                .as_ref()
                .unwrap()
                .contains("queued: position 1 in line; 1 run(s) active, at most 1"),
            "{second:?}"
        );
        assert_ne!(requeue, Requeue::await_change(), "queued runs look again");
        assert!(
            fake.list("deployments").len() == 1,
            "only the first run deployed"
        );
        fake.check_calls_are_declared();
    })
    .await;
}

/// Starts `name` with a controller that sees no other run.
async fn h_start(fake: &FakeApi, now: &Arc<AtomicI64>, name: &str) {
    let ctx = Harness::context(fake, now, 1, Writer::default());
    let guard: DeserializeGuard<BenchmarkRun> =
        serde_json::from_value(fake.get("benchmarkruns", NS, name).unwrap()).unwrap();
    reconcile(Arc::new(guard), ctx).await.unwrap();
}

#[tokio::test]
async fn a_ttl_deletes_the_finished_run() {
    with_timeout(async {
        let h = Harness::new();
        let mut run = sample("ttl", &["a"]);
        run["spec"]["ttlAfterFinished"] = json!("1m");
        h.fake.insert("benchmarkruns", run);
        h.drive("ttl", &healthy).await;
        let requeue = h.reconcile("ttl").await.unwrap();
        assert_ne!(requeue, Requeue::await_change());
        h.advance(61);
        h.reconcile("ttl").await.unwrap();
        assert!(h.fake.get("benchmarkruns", NS, "ttl").is_none());
    })
    .await;
}

/// The other direction of `process::calls::API_CALLS` (every test fails on a call it lacks): each
/// call listed for the reconciler is one it really makes, so the chart's ClusterRole, checked
/// against the list, grants nothing stale. One plain run with a TTL makes them all. Only the
/// Controllers' list + watch streams are not the reconciler's (kube's Controller makes them;
/// `namespaces::scoped_controllers_make_every_listed_watch_call` checks those).
#[tokio::test]
async fn every_listed_reconciler_call_is_made_by_a_run_with_a_ttl() {
    use crate::executors::cluster::process::calls::NODE_WATCH_CALLS;
    with_timeout(async {
        let h = Harness::new();
        let mut run = sample("all", &["a", "b"]);
        run["spec"]["ttlAfterFinished"] = json!("1m");
        h.fake.insert("benchmarkruns", run);
        let stale = h.guard("all");
        h.drive("all", &healthy).await;
        // A copy the cache may still hold after this operator's writes: read again (get).
        h.reconcile_from(&stale).await.unwrap();
        h.advance(61);
        h.reconcile("all").await.unwrap();
        assert!(h.fake.get("benchmarkruns", NS, "all").is_none());
        let recorded = h.fake.api_calls();
        let unused: Vec<String> = crate::executors::cluster::API_CALLS
            .iter()
            // The reconciler's calls: within the run's namespace (not the controller's own
            // watches), and the nodes and the run's namespace (cluster-scoped).
            .filter(|c| {
                (c.namespaced && !crate::executors::cluster::process::calls::is_controller_watch(c))
                    || c.resource == "nodes"
                    || c.resource == "namespaces"
            })
            .filter(|c| !crate::executors::cluster::process::calls::KUBELET_CALLS.contains(c))
            // The node watch is the node cache's (placement/node_cache.rs tests make it); the list
            // is also the reconcile's, made while no node watch follows (none runs here).
            .filter(|c| c.verb != "watch" || !NODE_WATCH_CALLS.contains(c))
            .filter(|c| {
                !recorded.iter().any(|r| {
                    r.verb == c.verb
                        && r.group == c.group
                        && r.resource == c.resource
                        && r.subresource == c.subresource
                        && r.namespaced == c.namespaced
                })
            })
            .map(ToString::to_string)
            .collect();
        assert!(
            unused.is_empty(),
            "API_CALLS lists calls the reconciler did not make: {unused:#?}"
        );
        assert!(
            crate::executors::cluster::API_CALLS
                .iter()
                .filter(|c| !c.namespaced
                    && !crate::executors::cluster::process::calls::KUBELET_CALLS.contains(c)
                    && !crate::executors::cluster::process::calls::GATE_CALLS.contains(c))
                .all(|c| ["list", "watch"].contains(&c.verb)
                    || (c.verb == "get" && c.resource == "namespaces")),
            "only the Controller's watch streams, the node list and the read of a run's own \
             namespace are made cluster-wide (and the kubelets' reads, which the kubelets \
             authorize, and the gate's read of the CRD)"
        );
    })
    .await;
}

#[tokio::test]
async fn a_job_deleted_behind_the_operators_back_is_applied_again_under_the_same_name() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("gone", &["a"]));
        h.reconcile("gone").await.unwrap();
        h.simulate(&|_| Behaviour::NeverReady);
        for pod in h.fake.list("pods") {
            let name = pod["metadata"]["name"].as_str().unwrap().to_owned();
            h.fake.edit("pods", NS, &name, |p| {
                p["status"]["conditions"][0]["status"] = json!("True")
            });
        }
        for dep in h.fake.list("deployments") {
            let name = dep["metadata"]["name"].as_str().unwrap().to_owned();
            h.fake.edit("deployments", NS, &name, |d| {
                d["status"]["availableReplicas"] = json!(1)
            });
        }
        h.reconcile("gone").await.unwrap();
        let job = h.fake.list("jobs").remove(0);
        let name = job["metadata"]["name"].as_str().unwrap().to_owned();
        h.fake.remove("jobs", NS, &name);
        h.reconcile("gone").await.unwrap();
        let again = h.fake.list("jobs");
        assert_eq!(again.len(), 1);
        assert_eq!(again[0]["metadata"]["name"], json!(name));
    })
    .await;
}

#[test]
fn backoff_grows_and_is_capped() {
    use super::reconciler::backoff::reconcile_retry;
    assert_eq!(reconcile_retry(1, false), Duration::from_secs(1));
    assert_eq!(reconcile_retry(3, false), Duration::from_secs(4));
    assert_eq!(reconcile_retry(30, false), Duration::from_secs(300));
}

#[tokio::test]
async fn a_conflict_is_retried_with_backoff_and_a_denial_waits_for_a_change() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("conflict", &["a"]));

        // One 409 on the status write: the run is read again and decided anew, at once.
        h.fake.fail_next("PATCH", "benchmarkruns", 409);
        h.reconcile("conflict").await.unwrap();
        assert_eq!(h.phase("conflict"), RunPhase::Running);
        assert_eq!(h.fake.list("deployments").len(), 1);

        // A run that keeps changing under every try (409 each time): transient, retried with a
        // growing delay, and nothing applied meanwhile.
        let deployment = h.fake.list("deployments")[0]["metadata"]["name"].clone();
        h.fake
            .remove("deployments", NS, deployment.as_str().unwrap());
        h.fake.edit("benchmarkruns", NS, "conflict", |r| {
            r["status"] = json!(null);
        });
        let conflicts = |h: &Harness| {
            for _ in 0..3 {
                h.fake.fail_next("PATCH", "benchmarkruns", 409);
            }
        };
        conflicts(&h);
        let err = h.reconcile("conflict").await.unwrap_err();
        assert!(
            h.fake.list("deployments").is_empty(),
            "nothing applied without a status"
        );
        assert!(!err.is_permanent());
        let guard = Arc::new(h.guard("conflict"));
        assert_eq!(
            error_policy(guard.clone(), &err, h.ctx.clone()),
            Requeue::requeue(Duration::from_secs(1))
        );
        conflicts(&h);
        let err = h.reconcile("conflict").await.unwrap_err();
        assert_eq!(
            error_policy(guard.clone(), &err, h.ctx.clone()),
            Requeue::requeue(Duration::from_secs(2))
        );
        // The retry succeeds.
        h.reconcile("conflict").await.unwrap();
        assert_eq!(h.fake.list("deployments").len(), 1);
        assert_eq!(h.phase("conflict"), RunPhase::Running);

        // 403 (RBAC denies creating the Job): permanent, no hot loop.
        h.simulate(&healthy);
        h.fake.fail_next("PATCH", "jobs", 403);
        let err = h.reconcile("conflict").await.unwrap_err();
        assert!(err.is_permanent(), "{err}");
        assert_eq!(err.metric_label(), "forbidden");
        assert_eq!(
            error_policy(guard, &err, h.ctx.clone()),
            Requeue::await_change()
        );
        let text = h.ctx.metrics.render();
        assert!(text.contains("error=\"conflict\"} 2"), "{text}");
        assert!(text.contains("error=\"forbidden\"} 1"), "{text}");
    })
    .await;
}

/// A run deleted between the read its turn was decided from and the status write (404): the
/// reconcile ends quietly, with no refusal said and nothing applied for a run that is gone.
#[tokio::test]
async fn a_run_deleted_before_its_status_write_ends_the_reconcile_quietly() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("gone", &["a"]));
        h.fake.fail_next("PATCH", "benchmarkruns", 404);
        let requeue = h.reconcile("gone").await.expect("not an error");
        assert_eq!(requeue, Requeue::await_change());
        assert!(h.fake.list("deployments").is_empty(), "nothing applied");
        assert!(
            !h.fake
                .list("events")
                .iter()
                .any(|e| e["reason"] == "StatusWriteFailed"),
            "no refusal said"
        );
        assert!(
            !h.ctx
                .metrics
                .render()
                .contains("benchmatrix_status_write_refused_total{"),
            "nor counted"
        );
    })
    .await;
}

/// The CRD-skew case seen on a real cluster: every status write answered 500 (a field the
/// installed CRD no longer has). The run must not wait in silence: a Warning Event with the API's
/// words, a metric by cause, and a retry with backoff, until a write is taken.
#[tokio::test]
async fn a_refused_status_write_is_retried_and_said_out_loud() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("refused", &["a"]));
        let guard = Arc::new(h.guard("refused"));
        for attempt in 1..=2u64 {
            h.fake.fail_next("PATCH", "benchmarkruns", 500);
            let err = h.reconcile("refused").await.unwrap_err();
            assert!(!err.is_permanent(), "{err}");
            assert_eq!(err.metric_label(), "status_refused");
            assert!(err.to_string().contains("injected failure"), "{err}");
            assert_eq!(
                error_policy(guard.clone(), &err, h.ctx.clone()),
                Requeue::requeue(Duration::from_secs(1 << (attempt - 1))),
                "retried with a growing delay, never left to wait for a change"
            );
            assert!(
                h.fake.list("deployments").is_empty(),
                "nothing applied without a status"
            );
        }
        let warnings: Vec<Value> = h
            .fake
            .list("events")
            .into_iter()
            .filter(|e| e["reason"] == "StatusWriteFailed")
            .collect();
        assert!(!warnings.is_empty(), "a Warning Event on the run");
        let event = &warnings[0];
        assert_eq!(event["type"], "Warning");
        assert_eq!(event["regarding"]["name"], "refused");
        let note = event["note"].as_str().unwrap();
        assert!(
            note.contains("500 InternalError") && note.contains("injected failure"),
            "{note}"
        );
        let text = h.ctx.metrics.render();
        assert!(
            text.contains("benchmatrix_status_write_refused_total{cause=\"InternalError\"} 2"),
            "{text}"
        );
        // The write is taken again: the run goes on.
        h.reconcile("refused").await.unwrap();
        assert_eq!(h.phase("refused"), RunPhase::Running);
        assert_eq!(h.fake.list("deployments").len(), 1);
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Broken measurements: replicas that exit under load, cells that cannot be scheduled, huge logs

/// A node as the kubelet registers it, with its allocatable CPU and memory.
pub(crate) fn node(name: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    })
}

/// Reconciles and simulates until the first unfinished cell is Running (its Job started).
async fn until_running(h: &Harness, name: &str, behaviour: &dyn Fn(&str) -> Behaviour) {
    for _ in 0..20 {
        h.reconcile(name).await.unwrap();
        let status = h.run(name).status.unwrap_or_default();
        if status.cells.iter().any(|c| c.phase == CellPhase::Running) {
            return;
        }
        h.simulate(behaviour);
        h.advance(1);
    }
    panic!("no cell started its load: {:#?}", h.run(name).status);
}

fn target_pod_names(h: &Harness) -> Vec<String> {
    h.fake
        .list("pods")
        .iter()
        .filter(|p| p["metadata"]["labels"]["benchmatrix.dev/role"] == "target")
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_target_container_restarting_under_load_fails_the_cell_replica_exited() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("crash", &["a"]));
        until_running(&h, "crash", &|_| Behaviour::Busy).await;
        let record = h.run("crash").status.unwrap().cells[0].target_pods.clone();
        assert_eq!(record.len(), 1, "the load's pod is recorded: {record:?}");
        assert_eq!(record[0].restarts, 0);
        // The kubelet restarts the crashed container; the Job then completes with a result.
        let pod = target_pod_names(&h).remove(0);
        h.fake.edit("pods", NS, &pod, |p| {
            let cs = &mut p["status"]["containerStatuses"][0];
            cs["restartCount"] = json!(1);
            cs["lastState"] = json!({"terminated": {"exitCode": 137, "reason": "Error",
                "signal": 9, "finishedAt": "2027-01-15T08:00:05Z"}});
        });
        h.drive("crash", &healthy).await;
        let cell = h.run("crash").status.unwrap().cells.remove(0);
        assert_eq!(cell.phase, CellPhase::Failed, "{cell:#?}");
        assert_eq!(cell.reason.as_deref(), Some("ReplicaExited"));
        let message = cell.message.unwrap();
        assert!(
            message.contains(&format!("target pod {pod} container target restarted"))
                && message.contains("reason Error, exit code 137"),
            "{message}"
        );
        assert!(
            cell.results.is_empty(),
            "no figures from a broken measurement"
        );
        assert_eq!(h.phase("crash"), RunPhase::Failed, "the only cell failed");
    })
    .await;
}

#[tokio::test]
async fn a_target_pod_replaced_under_load_fails_the_cell_even_after_an_operator_restart() {
    with_timeout(async {
        let mut h = Harness::new();
        h.fake.insert("benchmarkruns", sample("evicted", &["a"]));
        until_running(&h, "evicted", &|_| Behaviour::Busy).await;
        // The operator restarts; the pod is evicted and the Deployment makes a new one, ready.
        h.restart();
        let old = target_pod_names(&h).remove(0);
        let mut replacement = h.fake.get("pods", NS, &old).unwrap();
        h.fake.remove("pods", NS, &old);
        replacement["metadata"]["name"] = json!(format!("{old}-new"));
        if let Some(meta) = replacement["metadata"].as_object_mut() {
            meta.remove("uid");
        }
        h.fake.insert("pods", replacement);
        h.drive("evicted", &healthy).await;
        let cell = h.run("evicted").status.unwrap().cells.remove(0);
        assert_eq!(cell.reason.as_deref(), Some("ReplicaExited"), "{cell:#?}");
        let message = cell.message.unwrap();
        assert!(
            message.contains(&format!("target pod {old} is gone"))
                && message.contains(&format!("replaced by {old}-new")),
            "{message}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_cell_that_cannot_fit_the_only_node_fails_unschedulable_at_once_without_a_deployment() {
    with_timeout(async {
        let h = Harness::new();
        h.fake
            .insert_cluster_scoped("nodes", node("kind-control-plane", "2", "8Gi"));
        // The quickstart's shape: 2 CPUs for the target plus 1 for the load generator.
        let mut run = sample("quick", &["big", "small"]);
        run["spec"]["configurations"][0]["cpu"] = json!("2");
        run["spec"]["configurations"][1]["cpu"] = json!("500m");
        run["spec"]["configurations"][1]["replicas"] = json!(1);
        run["spec"]["loadgen"] = json!({"cpu": "1"});
        h.fake.insert("benchmarkruns", run);
        h.reconcile("quick").await.unwrap();
        let status = h.run("quick").status.unwrap();
        let big = &status.cells[0];
        assert_eq!(big.phase, CellPhase::Failed, "{status:#?}");
        assert_eq!(big.reason.as_deref(), Some("Unschedulable"));
        let message = big.message.as_deref().unwrap();
        assert!(
            message.contains(
                "needs 3 CPUs on one node; the largest allocatable is 2 (node kind-control-plane)"
            ),
            "{message}"
        );
        assert!(
            !h.fake.creations().iter().any(|(r, _)| r == "deployments"),
            "nothing deployed for a cell that cannot fit: {:?}",
            h.fake.creations()
        );
        // The next cell fits and runs.
        h.drive("quick", &healthy).await;
        let status = h.run("quick").status.unwrap();
        assert_eq!(status.cells[1].phase, CellPhase::Succeeded, "{status:#?}");
        assert_eq!(status.phase, RunPhase::Succeeded);
    })
    .await;
}

#[tokio::test]
async fn a_pod_the_scheduler_cannot_place_fails_the_cell_unschedulable_not_never_ready() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("pending", &["a"]));
        h.reconcile("pending").await.unwrap();
        let dep = h.fake.list("deployments").remove(0);
        let labels = dep["spec"]["template"]["metadata"]["labels"].clone();
        let said = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are \
                    available: 1 No preemption victims found for incoming pod.";
        h.fake.insert(
            "pods",
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "pending-pod", "namespace": NS, "labels": labels,
                    "ownerReferences": [replica_set_of(&dep)]},
                "spec": {"containers": [{"name": "target"}]},
                "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
                    "status": "False", "reason": "Unschedulable", "message": said}]},
            }),
        );
        h.advance(2);
        h.reconcile("pending").await.unwrap();
        let cell = h.run("pending").status.unwrap().cells.remove(0);
        assert_eq!(cell.phase, CellPhase::Failed, "{cell:#?}");
        assert_eq!(cell.reason.as_deref(), Some("Unschedulable"));
        assert!(
            cell.message.as_deref().unwrap().contains(
                "pending-pod cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu"
            ),
            "{cell:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn an_operator_that_may_not_list_nodes_still_runs_the_cell() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("norbac", &["a"]));
        h.fake.fail_next("GET", "nodes", 403);
        h.reconcile("norbac").await.unwrap();
        assert_eq!(h.fake.list("deployments").len(), 1);
        assert_eq!(h.phase("norbac"), RunPhase::Running);
    })
    .await;
}

#[tokio::test]
async fn a_huge_log_line_is_read_only_up_to_the_limit_and_named_in_the_failure() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("huge", &["a"]));
        // A custom image that prints one line larger than the read limit, as its last line.
        let limit = super::reconciler::observe::LOG_LIMIT_BYTES;
        let line = format!(
            "{{\"version\": 1, \"pad\": \"{}\"}}",
            "x".repeat(limit + 1024)
        );
        let log = format!("starting\n{line}\n");
        h.drive("huge", &|_| Behaviour::Healthy(log.clone())).await;
        let served = h.fake.log_bytes_served();
        assert!(!served.is_empty(), "the log was read");
        assert!(
            served.iter().all(|n| *n <= limit),
            "the operator asked for at most {limit} bytes, got {served:?}"
        );
        let cell = h.run("huge").status.unwrap().cells.remove(0);
        assert_eq!(
            cell.reason.as_deref(),
            Some("ResultUnparsable"),
            "{cell:#?}"
        );
        let message = cell.message.unwrap();
        assert!(
            message.contains("exceed the operator's read limit of 16 MiB"),
            "{message}"
        );
        assert!(
            message.len() < 1000,
            "the message is short: {} bytes",
            message.len()
        );
    })
    .await;
}

/// Issue: queued runs waited for a 15 s timer after the run ahead of them finished. Now the
/// reconcile that ends a run wakes the waiting runs at once, oldest first, and the first of them
/// is admitted although the controller's cache has not yet seen the other run finish.
#[tokio::test]
async fn a_finished_run_wakes_the_waiting_runs_in_queue_order_without_a_timer() {
    with_timeout(async {
        let fake = FakeApi::default();
        let now = Arc::new(AtomicI64::new(1_800_000_000));
        for name in ["first", "second", "third"] {
            fake.insert("benchmarkruns", sample(name, &["a"]));
        }
        let load = |name: &str| -> DeserializeGuard<BenchmarkRun> {
            serde_json::from_value(fake.get("benchmarkruns", NS, name).unwrap()).unwrap()
        };
        h_start(&fake, &now, "first").await;
        // The cache as the watch left it: first Running, the others waiting. It is never
        // updated below, as if the watch events of the status writes were still on their way.
        let mut writer: Writer<DeserializeGuard<BenchmarkRun>> = Writer::default();
        writer.apply_watcher_event(&watcher::Event::Init);
        for name in ["first", "second", "third"] {
            writer.apply_watcher_event(&watcher::Event::InitApply(load(name)));
        }
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let (waker, mut wakes) = futures::channel::mpsc::unbounded();
        let ctx = {
            let mut ctx = Context::new(
                fake.client(),
                writer.as_reader(),
                1,
                Arc::new(Metrics::default()),
            );
            let clock = now.clone();
            ctx.clock = Arc::new(move || conditions::time_from_secs(clock.load(Ordering::SeqCst)));
            ctx.queue.add_waker(None, waker);
            Arc::new(ctx)
        };
        let h = Harness {
            fake: fake.clone(),
            ctx: ctx.clone(),
            now: now.clone(),
        };

        // Both wait; the second is first in line.
        for name in ["second", "third"] {
            reconcile(Arc::new(load(name)), ctx.clone()).await.unwrap();
        }
        let message = |name: &str| load(name).0.unwrap().status.unwrap().message.unwrap();
        assert!(
            message("second").contains("position 1 in line"),
            "{}",
            message("second")
        );
        assert!(
            message("third").contains("position 2 in line"),
            "{}",
            message("third")
        );
        assert!(wakes.try_recv().is_err(), "nothing woken while first runs");

        // The first run finishes: the reconcile that writes its end wakes the first in line
        // (one slot freed), not the others, whose place stays the same until it starts.
        let phases = h.drive("first", &healthy).await;
        assert_eq!(phases.last(), Some(&RunPhase::Succeeded));
        let mut woken = || {
            let mut names = Vec::new();
            while let Ok(r) = wakes.try_recv() {
                names.push(r.name);
            }
            names
        };
        assert_eq!(woken(), ["second"], "the first in line, at once");

        // The woken second run is admitted at once, though the cache still says first runs;
        // its start wakes those behind it, whose place moved.
        reconcile(Arc::new(load("second")), ctx.clone())
            .await
            .unwrap();
        assert_eq!(h.phase("second"), RunPhase::Running);
        assert_eq!(woken(), ["third"], "the runs still waiting");
        // Its start moves the third up; the third still waits, now first in line.
        reconcile(Arc::new(load("third")), ctx.clone())
            .await
            .unwrap();
        assert_eq!(h.phase("third"), RunPhase::Pending);
        assert!(
            message("third").contains("position 1 in line; 1 run(s) active"),
            "{}",
            message("third")
        );
        fake.check_calls_are_declared();
    })
    .await;
}
