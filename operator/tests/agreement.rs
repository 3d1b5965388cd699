//! The two executors agree. Each scenario is written once, as a spec and the commands the
//! machine must give, and happens twice:
//!
//! - on the operator's adapter (`executors::cluster::adapter::turn`), fed the objects a cluster
//!   would show at each moment (a simulated clock, whole seconds);
//! - on the local runner, for real: the real target and load generator as processes, watched
//!   through the runner's own process layer, with the fault made by hand where the scenario
//!   has one (a replica killed, the load generator stopped with SIGSTOP).
//!
//! Both must give the same commands in the same order and end in the same status skeleton:
//! every phase, reason, condition, repetition and count the engine writes, and for a search
//! every probe's rate, verdict and settle, its ending and the sizing answer. What describes the
//! executor (the figures a real load measured against canned ones, the sentences each writes
//! about its own work, times) is left out.
//!
//! A capacity search and a sizing search run against a service whose capacity is known: it
//! holds up to a rate and falls behind above it. On the cluster the simulated load generator
//! answers from the plan its Job was given ([`SimCluster::answering`]); on this machine the
//! service is a real process that reads the plan the runner wrote for its load generator. So
//! both sides judge the probes the engine commanded, at the rates their executors wrote into
//! the plans, on targets their executors kept or made afresh, and a probe that either executor
//! loads differently, or a target it drops or keeps against the command, shows as a status
//! that differs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use benchmatrix::engine::drive::{self, Executor, Waits};
use benchmatrix::engine::machine::{Command, Look, Seen};
use benchmatrix::executors::cluster::adapter::{Observation, Settings, turn};
use benchmatrix::executors::local::runner::Runner;
use benchmatrix::fixtures::sim_cluster::{SimCluster, nodes, result_doc};
use benchmatrix::fixtures::{connections, endpoint, phase};
use benchmatrix::frontends::progress::{Display, Plan};
use benchmatrix::resource::conditions::time_from_secs;
use benchmatrix::resource::{BenchmarkRun, BenchmarkRunStatus, Configuration, ValidatedRun};
use benchmatrix_loadgen::plan::PlanFile;
use benchmatrix_loadgen::result::{LatencyMs, PhaseResult, RunResult, StreamMode, StreamResult};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

/// The `benchmatrix` binary, which serves the local runner's target and load generator.
fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_benchmatrix"))
}

/// A run of cells `a` and `b` and one 1 s phase against /fast, with short timeouts (2 s to be
/// ready, 1 s of slack: a load deadline of 4 s). Locally the target is the built-in one,
/// started through a shell so that a cell with STALL in its env never listens.
fn spec(b_env: Option<(&str, &str)>) -> BenchmarkRun {
    let stall_or_serve = "if [ -n \"$STALL\" ]; then exec sleep 60; fi; \
                          exec \"$0\" target --port \"$PORT\" --host \"$BENCH_HOST\" \
                          --mode \"$BENCH_MODE\"";
    let program = program();
    let mut b = Configuration::named("b").cpu("1");
    if let Some((name, value)) = b_env {
        b = b.env(name, value);
    }
    BenchmarkRun::sample()
        .named("agree")
        .in_namespace("ns")
        .with_uid("u1")
        .with_generation(1)
        .with_cell(Configuration::named("a").cpu("1"))
        .with_cell(b)
        .with_endpoints([endpoint("fast", "/fast")])
        .with_warmup("0s")
        .with_phases([phase("p", "1s", [connections("fast", 1)])])
        .with_target_command(["sh", "-c", stall_or_serve, &program.display().to_string()])
        .with_ready_timeout("2s")
        .with_run_slack("1s")
}

/// Something that happens in a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Moment {
    /// Time passes with nothing new to see.
    Nothing,
    /// Every replica is ready.
    Ready,
    /// The load generator ended with its result.
    Result,
    /// A target replica exited while the load ran.
    ReplicaExit,
}

/// A fault the local side makes by hand once a cell's load has started.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    /// SIGKILL to the cell's target replica.
    KillReplica,
    /// SIGSTOP to the cell's load generator: it never ends by itself.
    StopLoadgen,
}

struct Scenario {
    name: &'static str,
    run: BenchmarkRun,
    /// On the cluster: the moments, at whole seconds.
    moments: Vec<(i64, Moment)>,
    /// Locally: a fault per cell, made when its load starts.
    faults: Vec<(usize, Fault)>,
    /// The commands the machine gives, one list per turn that acts, by kind ("deploy",
    /// "start", "stop", "end"; the local runner's "collect" and every wake-up left out).
    commands: Vec<&'static str>,
}

/// Cell a measured; cell b never ready (it never listens), failing at the ready timeout.
fn measured_then_never_ready() -> Scenario {
    Scenario {
        name: "measured then never ready",
        run: spec(Some(("STALL", "1"))),
        moments: vec![
            (0, Moment::Nothing), // a deploying
            (1, Moment::Ready),   // a's load starts
            (2, Moment::Result),  // a measured
            (2, Moment::Nothing), // b deploying
            (4, Moment::Nothing), // b not ready after 2 s
            (4, Moment::Nothing), // the run ends
        ],
        faults: vec![],
        commands: vec!["deploy", "start", "stop", "deploy", "stop", "end"],
    }
}

/// Cell a loses its replica during its load; cell b's load generator hangs past its deadline.
fn replica_exit_then_timeout() -> Scenario {
    Scenario {
        name: "replica exit then timeout",
        run: spec(None),
        moments: vec![
            (0, Moment::Nothing),
            (1, Moment::Ready),
            (2, Moment::ReplicaExit),
            (2, Moment::Nothing),
            (3, Moment::Ready),
            // 2 s for the target check, 1 s of load, 1 s of slack.
            (7, Moment::Nothing),
            (7, Moment::Nothing),
        ],
        faults: vec![(0, Fault::KillReplica), (1, Fault::StopLoadgen)],
        commands: vec!["deploy", "start", "stop", "deploy", "start", "stop", "end"],
    }
}

/// `repeat: 2`: a1 b1 a2 b2, interleaved, then the end.
fn repeated_and_interleaved() -> Scenario {
    let mut run = spec(None);
    run.spec.repeat = benchmatrix::resource::Repeat::Times(2);
    let mut moments: Vec<(i64, Moment)> = [0, 10, 20, 30]
        .into_iter()
        .flat_map(|t| {
            [
                (t, Moment::Nothing),
                (t + 1, Moment::Ready),
                (t + 2, Moment::Result),
            ]
        })
        .collect();
    moments.push((40, Moment::Nothing));
    Scenario {
        name: "repeated and interleaved",
        run,
        moments,
        faults: vec![],
        commands: [["deploy", "start", "stop"]; 4]
            .into_iter()
            .flatten()
            .chain(["end"])
            .collect(),
    }
}

fn kind(c: &Command) -> Option<&'static str> {
    match c {
        Command::Deploy(_) => Some("deploy"),
        Command::StartLoad { .. } => Some("start"),
        Command::Stop { .. } => Some("stop"),
        Command::EndLoad(_) => Some("end load"),
        Command::Ended => Some("end"),
        Command::Collect(_) | Command::WakeIn(_) => None,
    }
}

// ---- On a cluster: the adapter, fed objects over a simulated clock.

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

/// What the cluster shows at `moment`, given whether the current step's load runs.
fn objects(moment: Moment, load_runs: bool) -> Observation {
    let with_job = |obs: Observation| Observation {
        job: Some(Job::default()),
        ..obs
    };
    match moment {
        Moment::Ready => ready_objects(),
        Moment::Result => Observation {
            result: Some(Ok(result_doc())),
            ..with_job(ready_objects())
        },
        Moment::ReplicaExit => {
            let mut obs = with_job(ready_objects());
            obs.target_pods[0].metadata.uid = Some("p2".into());
            obs
        }
        Moment::Nothing if load_runs => with_job(ready_objects()),
        // Deploying: the objects exist, no pod is ready.
        Moment::Nothing => Observation {
            deployment: ready_objects().deployment,
            service: ready_objects().service,
            ..Observation::default()
        },
    }
}

fn on_a_cluster(s: &Scenario) -> (BenchmarkRunStatus, Vec<&'static str>) {
    let mut run = s.run.clone();
    let mut commands = Vec::new();
    for (at, moment) in &s.moments {
        let load_runs = run.status.as_ref().is_some_and(|st| {
            st.cells
                .iter()
                .any(|c| c.phase == benchmatrix::resource::CellPhase::Running)
        });
        let turn = turn(
            &run,
            &objects(*moment, load_runs),
            &time_from_secs(*at),
            &Settings::default(),
        );
        commands.extend(turn.commands.iter().filter_map(kind));
        run.status = Some(turn.status);
    }
    (run.status.unwrap_or_default(), commands)
}

// ---- On one machine: the real runner, with real processes.

/// The local runner, recording the commands it carries out and making the scenario's faults.
struct Recording {
    runner: Runner,
    faults: Vec<(usize, Fault)>,
    commands: Vec<&'static str>,
}

impl Executor for Recording {
    fn look(&mut self, status: &BenchmarkRunStatus, look: Look, now: &Time) -> Seen {
        self.runner.look(status, look, now)
    }

    fn carry_out(&mut self, status: &BenchmarkRunStatus, command: &Command) {
        self.runner.carry_out(status, command);
        self.commands.extend(kind(command));
        if let Command::StartLoad { at, .. } = command
            && let Some(&(_, fault)) = self.faults.iter().find(|(cell, _)| *cell == at.cell)
        {
            make(fault);
        }
    }
}

impl Waits for Recording {
    fn now(&mut self) -> Time {
        self.runner.now()
    }

    fn wait(&mut self, at_most: Duration) {
        self.runner.wait(at_most);
    }
}

/// This test's children whose command line has `role` as its first argument ("target",
/// "loadgen"): the runner starts them from this process.
fn children(role: &str) -> Vec<i32> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .unwrap_or("");
        // The target is exec'd by the cell's shell, which keeps the shell's pid.
        let argv = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = argv.split(|&b| b == 0).collect();
        if ppid == me && args.get(1).is_some_and(|a| *a == role.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

fn make(fault: Fault) {
    let (role, signal) = match fault {
        Fault::KillReplica => ("target", libc::SIGKILL),
        Fault::StopLoadgen => ("loadgen", libc::SIGSTOP),
    };
    // The target may still be exec'ing from its shell: give it a moment to show its name.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let pids = children(role);
        if !pids.is_empty() {
            for pid in pids {
                // SAFETY: kill has no memory-safety preconditions; the pid is our own child.
                unsafe { libc::kill(pid, signal) };
            }
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no {role} to fault");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn on_one_machine(s: &Scenario, out: &Path) -> (BenchmarkRunStatus, Vec<&'static str>) {
    let v = ValidatedRun::new(s.run.clone()).unwrap();
    let display = Display::plain(Plan::of(&v), Box::new(std::io::sink()));
    let runner = Runner::with_display(
        v.clone(),
        PathBuf::from("agreement.yaml"),
        out.to_path_buf(),
        Default::default(),
        display,
    )
    .unwrap()
    .with_program(program());
    let mut recording = Recording {
        runner,
        faults: s.faults.clone(),
        commands: Vec::new(),
    };
    let mut status = BenchmarkRunStatus::default();
    drive::run_to_end(&mut status, &v, &mut recording);
    recording.runner.finish(&status);
    (status, recording.commands)
}

// ---- The comparison.

/// What the engine decides of a run, without what describes the executor: phases, reasons,
/// conditions (type, status, reason), each cell's repetitions and which streams it measured.
fn skeleton(status: &BenchmarkRunStatus) -> Value {
    let cells: Vec<Value> = status
        .cells
        .iter()
        .map(|c| {
            let streams: Vec<String> = c
                .results
                .iter()
                .map(|r| format!("{}/{}", r.phase, r.endpoint))
                .collect();
            json!({
                "name": c.name,
                "phase": c.phase.to_string(),
                "reason": c.reason,
                "reservedCpu": c.reserved_cpu,
                "streams": streams,
                "repetitions": c.repetitions.iter()
                    .map(|r| json!([r.repetition, r.phase.to_string(), r.reason]))
                    .collect::<Vec<_>>(),
                "search": search_skeleton(json!(c.capacity)),
            })
        })
        .collect();
    let conditions: Vec<Value> = status
        .conditions
        .iter()
        .map(|c| json!([c.type_, c.status, c.reason]))
        .collect();
    json!({
        "phase": status.phase.to_string(),
        "message": status.message,
        "progress": status.progress,
        "conditions": conditions,
        "cells": cells,
        "sizing": sizing_skeleton(json!(status.sizing)),
    })
}

/// `value`'s fields named `keys` (null where it has none).
fn pick(value: &Value, keys: &[&str]) -> Value {
    keys.iter()
        .map(|k| (k.to_string(), value[*k].clone()))
        .collect()
}

/// What the engine decided of a cell's search (`status.cells[].capacity`, as its YAML names
/// it): each probe's rate, verdict, purpose and settle on a kept target, the check a sizing
/// search asked of the cell, how the search ended and on how many targets. The figures each
/// probe measured and the seconds a fresh target took are the executor's.
fn search_skeleton(search: Value) -> Value {
    if search.is_null() {
        return search;
    }
    let probes: Vec<Value> = search["probes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| pick(p, &["probe", "rate", "verdict", "check", "settleSeconds"]))
        .collect();
    let mut out = pick(
        &search,
        &["found", "ending", "heldRate", "failedRate", "targets"],
    );
    out["probes"] = probes.into();
    out["check"] = pick(
        &search["check"],
        &["purpose", "rate", "wanted", "held", "failed"],
    );
    out
}

/// What the engine decided of a sizing search (`status.sizing`): its outcome, what it searched,
/// each configuration's state and the one chosen.
fn sizing_skeleton(sizing: Value) -> Value {
    if sizing.is_null() {
        return sizing;
    }
    let states: Vec<Value> = sizing["configurations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| pick(c, &["name", "state", "heldRate", "failedRate"]))
        .collect();
    let mut out = pick(&sizing, &["outcome", "targetRate", "searched", "next"]);
    out["configurations"] = states.into();
    out["chosen"] = pick(
        &sizing["chosen"],
        &["configuration", "replicas", "cpu", "heldRate"],
    );
    out
}

/// Runs `s` on both executors, checks they agree, and returns the local status.
fn agree(s: Scenario) -> BenchmarkRunStatus {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, cluster_commands) = on_a_cluster(&s);
    let (local, local_commands) = on_one_machine(&s, dir.path());
    assert_eq!(cluster_commands, s.commands, "{}: on a cluster", s.name);
    assert_eq!(local_commands, s.commands, "{}: on one machine", s.name);
    assert_eq!(
        skeleton(&cluster),
        skeleton(&local),
        "{}: the executors' statuses disagree",
        s.name
    );
    local
}

/// `parallelism: 2`, `repeat: 2`: on a cluster of two nodes both cells are measured at once,
/// each on a node of its own, and each cell's second repetition on the other node; on one
/// machine one at a time. The same YAML ends in the same status skeleton.
#[test]
fn a_parallel_run_ends_alike_on_two_nodes_and_on_one_machine() {
    let mut run = spec(None);
    run.spec.repeat = benchmatrix::resource::Repeat::Times(2);
    run.spec.parallelism = benchmatrix::resource::parallelism::Parallelism::Count(2);
    let mut sim = SimCluster::new(nodes(2, "4"), 1, 1);
    let cluster = sim
        .run_to_end(run.clone(), 1000)
        .and_then(|r| r.status)
        .expect("the run ends on the cluster");
    let cluster_commands: Vec<&str> = sim.commands.iter().filter_map(kind).collect();
    let both = ["deploy", "deploy", "start", "start", "stop", "stop"];
    let serial = [["deploy", "start", "stop"]; 4].into_iter().flatten();
    let s = Scenario {
        name: "parallel",
        run,
        moments: Vec::new(),
        faults: vec![],
        commands: serial.chain(["end"]).collect(),
    };
    let dir = tempfile::tempdir().unwrap();
    let (local, local_commands) = on_one_machine(&s, dir.path());
    assert_eq!(local_commands, s.commands, "one at a time on one machine");
    assert_eq!(
        cluster_commands,
        both.into_iter()
            .chain(both)
            .chain(["end"])
            .collect::<Vec<_>>(),
        "two at a time on the cluster"
    );
    assert_eq!(
        skeleton(&cluster),
        skeleton(&local),
        "the statuses disagree"
    );
    assert_eq!(cluster.parallelism.as_ref().map(|p| p.slots), Some(2));
    let l = local.parallelism.as_ref().expect("recorded locally too");
    assert_eq!(l.slots, 1);
    assert!(l.message.contains("one at a time"), "{}", l.message);
    for c in &cluster.cells {
        let nodes: Vec<&String> = c.repetitions.iter().flat_map(|r| &r.nodes).collect();
        assert_eq!(nodes.len(), 2, "{}", c.name);
        assert_ne!(nodes[0], nodes[1], "{}: rotated over the nodes", c.name);
    }
}

fn reasons(status: &BenchmarkRunStatus) -> Vec<Option<&str>> {
    status.cells.iter().map(|c| c.reason.as_deref()).collect()
}

#[test]
fn a_measured_cell_then_one_never_ready_agree() {
    let local = agree(measured_then_never_ready());
    assert_eq!(reasons(&local), [None, Some("NeverReady")]);
    assert_eq!(local.cells[0].results.len(), 1, "a measured its one stream");
}

#[test]
fn a_replica_exit_and_a_load_past_its_deadline_agree() {
    let local = agree(replica_exit_then_timeout());
    assert_eq!(reasons(&local), [Some("ReplicaExited"), Some("Timeout")]);
}

#[test]
fn repeated_cells_interleave_alike() {
    let local = agree(repeated_and_interleaved());
    for c in &local.cells {
        let order: Vec<u32> = c.repetitions.iter().map(|r| r.repetition).collect();
        assert_eq!(order, [1, 2], "{}", c.name);
    }
}

// ---- Searches: a service of known capacity, on both executors.

/// The service the searches measure on this machine (Python's standard library, as the other
/// local tests use). Each replica holds `HOLDS` requests per second: it answers /work at once
/// while the newest load generator plan in `PLANS` asks for at most `HOLDS` times the replicas
/// it names (the load generator deals its connections to each, `spread: roundRobin`), and
/// holds every request 30 s (past the probe's end: a target that fell behind) while it asks
/// for more. The runner writes a step's plan before it starts the load, so the service answers
/// the load the engine commanded and the executor wrote, and nothing the machine's timing
/// could move: the verdicts are the same on every run, on a busy machine too.
const PLAN_SERVICE: &str = r#"
import glob, json, os, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PLANS = os.environ["PLANS"]
HOLDS = float(os.environ["HOLDS"])

def overloaded():
    plans = glob.glob(os.path.join(PLANS, "*.json"))
    if not plans:
        return False
    with open(max(plans, key=os.path.getmtime)) as f:
        plan = json.load(f)
    rate = sum(s.get("rate") or 0 for p in plan["workload"]["phases"] for s in p["load"])
    return rate > HOLDS * max(len(plan.get("replicas") or []), 1)

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path == "/work" and overloaded():
            time.sleep(30)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_port = True
    request_queue_size = 1024

Server((os.environ["BENCH_HOST"], int(os.environ["PORT"])), H).serve_forever()
"#;

/// The total rate `plan`'s phases ask for, over every stream.
fn planned_rate(plan: &PlanFile) -> f64 {
    let streams = plan.workload.phases.iter().flat_map(|p| &p.load);
    streams.filter_map(|s| s.rate).sum()
}

/// What a load generator prints for `plan` against the simulated service whose replicas each
/// hold `holds` requests per second: every send answered in about a millisecond, or, above
/// what the replicas the plan names hold together, none answered by the phase's end.
fn answer(plan: &PlanFile, holds: f64) -> RunResult {
    let keeps_up = planned_rate(plan) <= holds * plan.replicas.len().max(1) as f64;
    let phases = plan.workload.phases.iter().map(|phase| {
        let secs = phase.duration.get().as_secs_f64();
        let streams = phase.load.iter().map(|s| {
            let rate = s.rate.unwrap_or_default();
            let sent = (rate * secs).round() as u64;
            let latency = LatencyMs {
                p50: 1.0,
                p90: 1.5,
                p99: 2.0,
                p999: 3.0,
                max: 4.0,
                mean: 1.1,
            };
            StreamResult {
                endpoint: s.endpoint.clone(),
                mode: StreamMode::Open,
                requests: if keeps_up { sent } else { 0 },
                rps: if keeps_up { rate } else { 0.0 },
                latency_ms: keeps_up.then_some(latency),
                uncorrected_latency_ms: keeps_up.then_some(latency),
                in_flight_at_end: if keeps_up { 0 } else { sent },
                offered_rps: Some(rate),
                late_sends: Some(0),
                ..StreamResult::default()
            }
        });
        PhaseResult {
            name: phase.name.clone(),
            duration_secs: secs,
            streams: streams.collect(),
            target_stats: vec![],
            started_unix_ms: None,
        }
    });
    RunResult {
        phases: phases.collect(),
        ..result_doc()
    }
}

/// A run named `agree` of [`PLAN_SERVICE`] at `script`, reading the plans under `out`, each
/// replica holding `holds` requests per second, with `search` (the rest of its spec, in YAML at
/// the spec's indent): one endpoint whose connections are dealt to every replica, no warm-up,
/// and 5 s for a target to be ready.
fn search_run(script: &Path, out: &Path, holds: f64, search: &str) -> BenchmarkRun {
    let yaml = format!(
        r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: agree, namespace: ns, uid: u1, generation: 1}}
spec:
  target:
    command: [python3, "{script}"]
    env: [{{name: PLANS, value: "{plans}"}}, {{name: HOLDS, value: "{holds}"}}]
  workload:
    endpoints: [{{name: work, path: /work}}]
    spread: roundRobin
  timeouts: {{ready: 5s, runSlack: 2s}}
{search}"#,
        script = script.display(),
        plans = out.join("plans").display(),
    );
    serde_yaml::from_str(&yaml).expect("a BenchmarkRun")
}

/// Runs `run` to its end on a simulated cluster whose service answers as `service` does, and
/// on this machine against [`PLAN_SERVICE`], writing into `out`; checks that both give
/// `commands` and end in the same skeleton, and returns the local status.
fn agree_on_a_search(
    name: &'static str,
    run: BenchmarkRun,
    service: fn(&PlanFile) -> RunResult,
    out: &Path,
    commands: &[&'static str],
) -> BenchmarkRunStatus {
    let mut sim = SimCluster::new(nodes(1, "4"), 1, 1).answering(service);
    let cluster = sim
        .run_to_end(run.clone(), 1000)
        .and_then(|r| r.status)
        .expect("the run ends on the cluster");
    let cluster_commands: Vec<&str> = sim.commands.iter().filter_map(kind).collect();
    let s = Scenario {
        name,
        run,
        moments: Vec::new(),
        faults: vec![],
        commands: commands.to_vec(),
    };
    eprintln!(
        "{}",
        serde_json::to_string_pretty(&skeleton(&cluster)).unwrap()
    );
    let (local, local_commands) = on_one_machine(&s, out);
    assert_eq!(
        skeleton(&cluster),
        skeleton(&local),
        "{name}: the executors' statuses disagree"
    );
    assert_eq!(cluster_commands, s.commands, "{name}: on a cluster");
    assert_eq!(local_commands, s.commands, "{name}: on one machine");
    local
}

/// Each probe of `cell`'s search as (rate, verdict, settle on a kept target).
fn probes(status: &BenchmarkRunStatus, cell: usize) -> Vec<(f64, String, Option<u32>)> {
    let search = status.cells[cell].capacity.as_ref().expect("a search");
    search
        .probes
        .iter()
        .map(|p| (p.rate, format!("{:?}", p.verdict), p.settle_seconds))
        .collect()
}

/// A search of a service that holds 35 rps, from 20 rps, to a resolution of 50%: 20 holds and
/// its target is kept; 40 (grow) fails, leaving a backlog no settle waits for, so the next
/// probe gets a fresh target; 30 (bisect) holds on it, and is confirmed on it kept.
#[test]
fn a_capacity_search_grows_bisects_and_confirms_alike_on_kept_and_fresh_targets() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("service.py");
    std::fs::write(&script, PLAN_SERVICE).unwrap();
    let out = dir.path().join("out");
    let run = search_run(
        &script,
        &out,
        35.0,
        r#"  configurations: [{name: a, cpu: "1"}]
  capacity:
    slo: [{endpoint: work, p50: {below: 500ms}}]
    startRate: 20
    maxRate: 100
    resolution: 50%
    probeDuration: 1s
"#,
    );
    let one_target = ["start", "end load", "start", "stop"];
    let commands: Vec<&str> = ["deploy"]
        .into_iter()
        .chain(one_target)
        .chain(["deploy"])
        .chain(one_target)
        .chain(["end"])
        .collect();
    let local = agree_on_a_search("capacity", run, |plan| answer(plan, 35.0), &out, &commands);
    assert_eq!(
        probes(&local, 0),
        [
            (20.0, "Held".into(), None),
            (40.0, "Failed".into(), Some(1)),
            (30.0, "Held".into(), None),
            (30.0, "Held".into(), Some(1)),
        ]
    );
    let search = local.cells[0].capacity.as_ref().unwrap();
    assert_eq!(
        (search.held_rate, search.failed_rate),
        (Some(30.0), Some(40.0))
    );
}

/// A sizing search for 20 rps over 1 or 2 replicas of 500m or 1 CPU, of a service whose
/// replicas each hold 15 rps. One replica fails at the start rate whatever its CPU; two
/// replicas of 500m, the next cheapest, hold the traffic (the search's upper bound), and a
/// probe at 20 rps on a fresh target confirms them; two of 1 CPU, dearer, are not needed.
#[test]
fn a_sizing_search_chooses_alike_on_both_executors() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("service.py");
    std::fs::write(&script, PLAN_SERVICE).unwrap();
    let out = dir.path().join("out");
    let run = search_run(
        &script,
        &out,
        15.0,
        r#"  capacity:
    slo: [{endpoint: work, p50: {below: 500ms}}]
    startRate: 20
    maxRate: 20
    probeDuration: 1s
  sizing:
    traffic: 20
    margin: 0%
    search: {replicas: [1, 2], cpu: ["500m", "1"]}
    confirmations: 1
    ruleOut: 0
"#,
    );
    let commands: Vec<&str> = [["deploy", "start", "stop"]; 4]
        .into_iter()
        .flatten()
        .chain(["end"])
        .collect();
    let local = agree_on_a_search("sizing", run, |plan| answer(plan, 15.0), &out, &commands);
    let sizing = local.sizing.as_ref().expect("status.sizing");
    let chosen = sizing.chosen.as_ref().expect("an answer");
    assert_eq!(chosen.configuration, "single-x2-cpu500m");
    let states: Vec<(&str, String)> = sizing
        .configurations
        .iter()
        .map(|c| (c.name.as_str(), format!("{:?}", c.state)))
        .collect();
    assert_eq!(
        states,
        [
            ("single-x1-cpu500m", "Measured".into()),
            ("single-x1-cpu1", "Measured".into()),
            ("single-x2-cpu500m", "Chosen".into()),
            ("single-x2-cpu1", "NotNeeded".into()),
        ]
    );
    assert_eq!(local.cells[3].phase.to_string(), "Skipped");
    assert_eq!(
        probes(&local, 2),
        [(20.0, "Held".into(), None), (20.0, "Held".into(), None)]
    );
}
