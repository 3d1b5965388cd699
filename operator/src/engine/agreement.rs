//! The two executors agree: one run told to the operator's `decide` (as Kubernetes objects)
//! and to the local runner's recording (as cell outcomes) ends in the same status document,
//! field by field, apart from the fields that describe the executor itself.

use std::time::Duration;

use benchmatrix_loadgen::result::{LatencyMs, PhaseResult, RunResult, StreamResult};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use serde_json::json;

use super::*;
use crate::api::BenchmarkRun;
use crate::api::conditions::time_from_secs;
use crate::controller::decide::{Observation, Settings, decide};
use crate::local::cell::{self, CellOutcome};
use crate::local::runner::{deploying, events_of};

const SPEC: &str = r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: agree, namespace: ns, uid: u1, generation: 1}
spec:
  configurations:
    - {name: a, cpu: "1"}
    - {name: b, mode: pool, cpu: "1"}
  workload:
    endpoints: [{name: fast, path: /fast}]
    warmup: 1s
    phases: [{name: p, duration: 5s, load: [{endpoint: fast, connections: 1}]}]
"#;

/// The result document both executors read for cell a.
fn result_doc() -> RunResult {
    RunResult {
        version: 1,
        target: "http://10.96.0.10:8080".into(),
        threads: 1,
        generators: 1,
        preflight_seconds: Some(0.01),
        phases: vec![PhaseResult {
            name: "p".into(),
            duration_secs: 5.0,
            streams: vec![StreamResult {
                endpoint: "fast".into(),
                requests: 5000,
                errors: 3,
                rps: 999.4,
                latency_ms: Some(LatencyMs {
                    p50: 1.0,
                    p90: 2.0,
                    p99: 4.0,
                    p999: 8.0,
                    max: 9.0,
                    mean: 1.2,
                }),
                ..StreamResult::default()
            }],
            target_stats: vec![],
            started_unix_ms: None,
        }],
    }
}

fn ready_objects() -> Observation {
    let deployment: Deployment =
        serde_json::from_value(json!({"status": {"replicas": 1, "availableReplicas": 1}})).unwrap();
    let service: Service =
        serde_json::from_value(json!({"spec": {"clusterIP": "10.96.0.10"}})).unwrap();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "pod-0", "uid": "p1"},
        "status": {"phase": "Running", "podIP": "10.1.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "target", "ready": true, "restartCount": 0,
                "image": "x", "imageID": ""}]},
    }))
    .unwrap();
    Observation {
        deployment: Some(deployment),
        service: Some(service),
        target_pods: vec![pod],
        ..Observation::default()
    }
}

/// The run on a cluster: cell a measured, cell b never finishes its load (a timeout).
fn on_a_cluster() -> BenchmarkRunStatus {
    let mut run: BenchmarkRun = crate::validate::parse_benchmark_run(SPEC).unwrap();
    let settings = Settings::default();
    let mut step = |obs: Observation, at: i64| {
        let d = decide(&run, &obs, &time_from_secs(at), &settings);
        run.status = Some(d.status);
    };
    step(Observation::default(), 0); // admitted, a deploying
    step(ready_objects(), 2); // a's load starts
    let done = Observation {
        job: Some(Job::default()),
        result: Some(Ok(result_doc())),
        ..ready_objects()
    };
    step(done, 9); // a measured
    step(Observation::default(), 9); // b deploying
    step(ready_objects(), 10); // b's load starts
    let running = Observation {
        job: Some(Job::default()),
        ..ready_objects()
    };
    // Past the check's bound (the default ready timeout), warm-up + phase and the default slack.
    step(running, 10 + 300 + 6 + 120);
    step(Observation::default(), 436); // the run ends
    run.status.unwrap()
}

/// The same run on one machine, as the local runner records its cells' outcomes.
fn on_one_machine() -> BenchmarkRunStatus {
    let v = ValidatedRun::parse(SPEC).unwrap();
    let mut status = BenchmarkRunStatus::default();
    let apply_at = |status: &mut BenchmarkRunStatus, event: Event, at: i64| {
        let now = time_from_secs(at);
        let ctx = Ctx {
            generation: None,
            now: &now,
            stop_on_failure: false,
            repeat: v.repeat(),
            thresholds: &[],
        };
        apply(status, event, &ctx);
    };
    apply_at(&mut status, Event::admitted(v.cells()), 0);
    apply_at(&mut status, deploying(&v.cells()[0]), 0);
    let doc = result_doc();
    let measured = CellOutcome::Measured(Box::new(cell::Measured {
        results: results::cell_results(&doc),
        target: results::target_stats(&doc).unwrap_or_default(),
        enforcement: Enforcement::default(),
        overhead_seconds: 0.4,
        message: "warm-up + phases 6.0 s ran in 6.1 s".into(),
        start_time: time_from_secs(0),
        load_start_time: time_from_secs(2),
        raw: doc,
    }));
    let (events, _) = events_of(0, measured, time_from_secs(9));
    for (event, at) in events {
        apply_at(&mut status, event, conditions::secs_of(&at));
    }
    apply_at(&mut status, deploying(&v.cells()[1]), 9);
    let timed_out = CellOutcome::Failed {
        cause: Cause::Timeout,
        message: timeout_message(v.load_deadline()),
        overhead_seconds: 0.2,
        start_time: time_from_secs(9),
        load_start_time: Some(time_from_secs(10)),
        enforcement: None,
    };
    let (events, _) = events_of(1, timed_out, time_from_secs(436));
    for (event, at) in events {
        apply_at(&mut status, event, conditions::secs_of(&at));
    }
    apply_at(&mut status, Event::Finished { interrupted: false }, 436);
    status
}

/// Clears what describes the executor rather than the run: the spec generation (a cluster
/// has one), how limits were enforced, the runner's overhead, the pods the load ran against,
/// and the sentence a measured cell's executor wrote about its timing.
fn without_executor_fields(mut status: BenchmarkRunStatus) -> serde_json::Value {
    status.observed_generation = None;
    for c in &mut status.conditions {
        c.observed_generation = None;
    }
    for c in &mut status.cells {
        c.enforcement = None;
        c.overhead_seconds = None;
        c.target_pods.clear();
        if c.phase == CellPhase::Succeeded {
            c.message = None;
        }
    }
    serde_json::to_value(&status).unwrap()
}

#[test]
fn a_run_on_a_cluster_and_on_one_machine_end_in_the_same_status_field_by_field() {
    let cluster = without_executor_fields(on_a_cluster());
    let local = without_executor_fields(on_one_machine());
    // Field by field, so a disagreement names its path.
    let mut differences = Vec::new();
    compare("status", &cluster, &local, &mut differences);
    assert!(
        differences.is_empty(),
        "the executors disagree:\n{}",
        differences.join("\n")
    );
    // And the document is the interesting one: a measured cell, a timed-out one, conditions.
    assert_eq!(cluster["phase"], "Succeeded");
    assert_eq!(cluster["cells"][1]["reason"], Cause::Timeout.as_str());
    let types: Vec<&str> = cluster["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    for t in ["SpecValid", "CellFailed", "Progressing", "Complete"] {
        assert!(types.contains(&t), "{types:?}");
    }
    assert_eq!(
        cluster["cells"][1]["message"],
        timeout_message(Duration::from_secs(300 + 6 + 120))
    );
}

fn compare(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let null = Value::Null;
                compare(
                    &format!("{path}.{key}"),
                    x.get(key).unwrap_or(&null),
                    y.get(key).unwrap_or(&null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                compare(&format!("{path}[{i}]"), p, q, out);
            }
        }
        _ if a != b => out.push(format!("{path}: cluster {a} / local {b}")),
        _ => {}
    }
}
