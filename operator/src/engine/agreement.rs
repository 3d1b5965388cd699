//! The two executors agree: a scenario is written once, as moments in time, and told to the
//! operator's `decide` (as the Kubernetes objects a cluster would show) and to the machine as
//! the local runner tells it (as the facts its processes show). Both must give the same
//! commands at each moment and end in the same status document, field by field, apart from the
//! fields that describe the executor itself.

use std::time::Duration;

use benchmatrix_loadgen::result::{LatencyMs, PhaseResult, RunResult, StreamResult};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use serde_json::json;

use super::*;
use crate::engine::machine::{self, Command, Seen};
use crate::engine::results;
use crate::executors::cluster::adapter::{Observation, Settings, turn};
use crate::resource::BenchmarkRun;
use crate::resource::conditions::time_from_secs;
use crate::resource::{BenchmarkRunStatus, CellPhase};

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

/// Something that happens in a scenario, at a time: told to the operator as the objects a
/// cluster would show, and to the machine as the facts the local runner reports.
#[derive(Debug, Clone)]
enum Moment {
    /// Time passes with nothing new to see.
    Nothing,
    /// Every replica is ready.
    Ready,
    /// The load generator ended with this result.
    Result,
    /// A target replica exited while the load ran.
    ReplicaExit,
    /// The load generator failed with these last words.
    LoadgenFailed(&'static str),
}

/// A scenario: moments at whole seconds, and the commands the machine must give for each
/// (their kinds: "deploy", "start", "collect", "stop", "end"; wake-ups are left out).
struct Scenario {
    /// The BenchmarkRun, as YAML.
    spec: String,
    moments: Vec<(i64, Moment)>,
    commands: Vec<Vec<&'static str>>,
}

fn kinds(commands: &[Command]) -> Vec<&'static str> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Deploy(_) => Some("deploy"),
            Command::StartLoad(_) => Some("start"),
            Command::Collect(_) => Some("collect"),
            Command::Stop { .. } => Some("stop"),
            Command::Ended => Some("end"),
            Command::WakeIn(_) => None,
        })
        .collect()
}

/// The scenario on a cluster, through `decide`; the machine's commands at each moment.
fn on_a_cluster(scenario: &Scenario) -> (BenchmarkRunStatus, Vec<Vec<&'static str>>) {
    let mut run: BenchmarkRun =
        crate::resource::validate::parse_benchmark_run(&scenario.spec).unwrap();
    let settings = Settings::default();
    let mut commands = Vec::new();
    for (at, moment) in &scenario.moments {
        let phase = run
            .status
            .as_ref()
            .and_then(|s| Some(crate::engine::next_step(s)?.phase(s)));
        let obs = match (moment, phase) {
            (Moment::Ready, _) => ready_objects(),
            (Moment::Result, _) => Observation {
                job: Some(Job::default()),
                result: Some(Ok(result_doc())),
                ..ready_objects()
            },
            (Moment::ReplicaExit, _) => {
                let mut obs = Observation {
                    job: Some(Job::default()),
                    ..ready_objects()
                };
                obs.target_pods[0].metadata.uid = Some("p2".into());
                obs
            }
            (Moment::LoadgenFailed(words), _) => Observation {
                job: Some(failed_job()),
                loadgen_failure: Some(words.to_string()),
                ..ready_objects()
            },
            // While the load runs, its Job is there.
            (Moment::Nothing, Some(CellPhase::Running)) => Observation {
                job: Some(Job::default()),
                ..ready_objects()
            },
            (Moment::Nothing, _) => Observation {
                deployment: ready_objects().deployment,
                service: ready_objects().service,
                ..Observation::default()
            },
        };
        let d = turn(&run, &obs, &time_from_secs(*at), &settings);
        commands.push(kinds(&d.commands));
        run.status = Some(d.status);
    }
    (run.status.unwrap(), commands)
}

/// The scenario on one machine: the facts a `LocalStep` reports for each moment, given to the
/// machine as the local runner gives them.
fn on_one_machine(scenario: &Scenario) -> (BenchmarkRunStatus, Vec<Vec<&'static str>>) {
    let v = ValidatedRun::parse(&scenario.spec).unwrap();
    let mut status = BenchmarkRunStatus::default();
    let start = time_from_secs(0);
    reduce(
        &mut status,
        Event::admitted(v.cells()),
        &Ctx::of(&v, None, &start),
    );
    let mut commands = Vec::new();
    for (at, moment) in &scenario.moments {
        let now = time_from_secs(*at);
        let ctx = Ctx::of(&v, None, &now);
        let seen = match moment {
            Moment::Nothing => Seen::default(),
            Moment::Ready => Seen {
                ready: Some(Ok(machine::Ready::default())),
                ..Seen::default()
            },
            // The load generator's end is seen first, then (after the collect) its result.
            Moment::Result => {
                let ended = Seen {
                    load_exited: true,
                    ..Seen::default()
                };
                let first = machine::advance(&mut status, ended, &ctx);
                let doc = result_doc();
                let measured = Measured {
                    results: results::cell_results(&doc),
                    target: results::target_stats(&doc),
                    message: "warm-up + phases 6.0 s ran in 6.1 s".into(),
                    histograms: results::histograms(&doc),
                    ..Measured::default()
                };
                let read = Seen {
                    result: Some(Ok(Box::new(measured))),
                    ..Seen::default()
                };
                let mut both = first.commands;
                both.extend(machine::advance(&mut status, read, &ctx).commands);
                commands.push(
                    kinds(&both)
                        .into_iter()
                        .filter(|k| *k != "collect")
                        .collect(),
                );
                continue;
            }
            Moment::ReplicaExit => Seen {
                replica_exited: Some("replica pod-0 exited".into()),
                ..Seen::default()
            },
            Moment::LoadgenFailed(words) => Seen {
                load_failed: Some((
                    Cause::of_loadgen_failure(words),
                    format!("load generator failed: x; last log line: {words}"),
                )),
                ..Seen::default()
            },
        };
        commands.push(kinds(&machine::advance(&mut status, seen, &ctx).commands));
    }
    (status, commands)
}

fn failed_job() -> Job {
    serde_json::from_value(json!({"status": {"failed": 1, "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "x"}]}}))
    .unwrap()
}

/// The commands of `steps` steps, each deployed, loaded and stopped, then the run's end.
fn steps_then_end(steps: usize) -> Vec<Vec<&'static str>> {
    let mut commands: Vec<Vec<&'static str>> = (0..steps)
        .flat_map(|_| [vec!["deploy"], vec!["start"], vec!["stop"]])
        .collect();
    commands.push(vec!["end"]);
    commands
}

/// Cell a measured, cell b never finishes its load (a timeout).
fn measured_then_timed_out() -> Scenario {
    Scenario {
        spec: SPEC.into(),
        moments: vec![
            (0, Moment::Nothing), // a deploying
            (2, Moment::Ready),   // a's load starts
            (9, Moment::Result),  // a measured
            (9, Moment::Nothing), // b deploying
            (10, Moment::Ready),  // b's load starts
            // Past the check's bound (the default ready timeout), warm-up + phase and the
            // default slack.
            (10 + 300 + 6 + 120, Moment::Nothing),
            (436, Moment::Nothing), // the run ends
        ],
        commands: steps_then_end(2),
    }
}

/// Cell a loses a replica during its load; cell b's load generator cannot reach the target;
/// a replica exit and the result seen at once go to the exit.
fn replica_exit_then_unreachable() -> Scenario {
    Scenario {
        spec: SPEC.into(),
        moments: vec![
            (0, Moment::Nothing),
            (2, Moment::Ready),
            (5, Moment::ReplicaExit),
            (5, Moment::Nothing),
            (6, Moment::Ready),
            (
                8,
                Moment::LoadgenFailed(benchmatrix_loadgen::preflight::UNREACHABLE),
            ),
            (8, Moment::Nothing),
        ],
        commands: steps_then_end(2),
    }
}

/// `repeat: {min: 2, max: 3, precision: 5}` and the same figures every time: each cell is
/// precise after its second repetition, a1 b1 a2 b2, and the run ends without a third round.
fn adaptive_repetitions_precise_at_min() -> Scenario {
    let measured = |t: i64| {
        [
            (t, Moment::Nothing),
            (t + 2, Moment::Ready),
            (t + 9, Moment::Result),
        ]
    };
    let mut moments: Vec<(i64, Moment)> = [0, 10, 20, 30].into_iter().flat_map(measured).collect();
    moments.push((40, Moment::Nothing));
    Scenario {
        spec: SPEC.replace(
            "spec:\n",
            "spec:\n  repeat: {min: 2, max: 3, precision: 5}\n",
        ),
        moments,
        commands: steps_then_end(4),
    }
}

fn scenarios() -> [(&'static str, Scenario); 3] {
    [
        ("measured then timed out", measured_then_timed_out()),
        (
            "replica exit then unreachable",
            replica_exit_then_unreachable(),
        ),
        (
            "adaptive repetitions precise at min",
            adaptive_repetitions_precise_at_min(),
        ),
    ]
}

#[test]
fn both_executors_give_the_same_commands_for_the_same_scenario() {
    for (name, scenario) in scenarios() {
        let (_, cluster) = on_a_cluster(&scenario);
        let (_, local) = on_one_machine(&scenario);
        assert_eq!(cluster, scenario.commands, "{name}: on a cluster");
        assert_eq!(local, scenario.commands, "{name}: on one machine");
    }
}

#[test]
fn a_failure_scenario_ends_alike_with_the_causes_the_machine_chose() {
    let scenario = replica_exit_then_unreachable();
    let cluster = without_executor_fields(on_a_cluster(&scenario).0);
    let local = without_executor_fields(on_one_machine(&scenario).0);
    assert_eq!(cluster["cells"][0]["reason"], Cause::ReplicaExited.as_str());
    assert_eq!(local["cells"][0]["reason"], Cause::ReplicaExited.as_str());
    assert_eq!(
        cluster["cells"][1]["reason"],
        Cause::TargetUnreachable.as_str()
    );
    assert_eq!(
        local["cells"][1]["reason"],
        Cause::TargetUnreachable.as_str()
    );
    assert_eq!(cluster["phase"], "Failed", "no cell measured");
    assert_eq!(cluster["phase"], local["phase"]);
}

/// Clears what describes the executor rather than the run: the spec generation (a cluster
/// has one), how limits were enforced, the runner's overhead, the pods the load ran against,
/// and the sentence a measured cell's (or repetition's) executor wrote about its timing.
fn without_executor_fields(mut status: BenchmarkRunStatus) -> serde_json::Value {
    status.observed_generation = None;
    for c in &mut status.conditions {
        c.observed_generation = None;
    }
    for c in &mut status.cells {
        c.enforcement = None;
        c.overhead_seconds = None;
        c.target_pods.clear();
        // The sentence each executor writes about a measurement or a failure is its own.
        c.message = None;
        for r in &mut c.repetitions {
            r.message = None;
            r.overhead_seconds = None;
        }
    }
    serde_json::to_value(&status).unwrap()
}

#[test]
fn a_run_on_a_cluster_and_on_one_machine_end_in_the_same_status_field_by_field() {
    // The failure scenario's messages carry each executor's own words about the failure.
    for (name, scenario) in [
        ("measured then timed out", measured_then_timed_out()),
        (
            "adaptive repetitions precise at min",
            adaptive_repetitions_precise_at_min(),
        ),
    ] {
        let cluster = without_executor_fields(on_a_cluster(&scenario).0);
        let local = without_executor_fields(on_one_machine(&scenario).0);
        // Field by field, so a disagreement names its path.
        let mut differences = Vec::new();
        compare("status", &cluster, &local, &mut differences);
        assert!(
            differences.is_empty(),
            "{name}: the executors disagree:\n{}",
            differences.join("\n")
        );
    }
    let adaptive = on_a_cluster(&adaptive_repetitions_precise_at_min()).0;
    for c in &adaptive.cells {
        assert_eq!(c.repetitions.len(), 2, "{}", c.name);
        let p = c.precision.as_ref().expect("why it stopped");
        assert!(
            p.precise && p.message.starts_with("precise after 2"),
            "{p:?}"
        );
    }
    let scenario = measured_then_timed_out();
    let cluster = without_executor_fields(on_a_cluster(&scenario).0);
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
    let cluster_status = on_a_cluster(&scenario).0;
    assert_eq!(
        cluster_status.cells[1].message.as_deref(),
        Some(timeout_message(Duration::from_secs(300 + 6 + 120)).as_str())
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
