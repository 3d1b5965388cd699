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
//! every phase, reason, condition, repetition and count the engine writes. What describes the
//! executor (the figures a real load measured against canned ones, the sentences each writes
//! about its own work, times) is left out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use benchmatrix::engine::drive::{self, Executor, Waits};
use benchmatrix::engine::machine::{Command, Look, Seen};
use benchmatrix::executors::cluster::adapter::{Observation, Settings, turn};
use benchmatrix::executors::local::runner::Runner;
use benchmatrix::fixtures::sim_cluster::result_doc;
use benchmatrix::fixtures::{connections, endpoint, phase};
use benchmatrix::frontends::progress::{Display, Plan};
use benchmatrix::resource::conditions::time_from_secs;
use benchmatrix::resource::{BenchmarkRun, BenchmarkRunStatus, Configuration, ValidatedRun};
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
    })
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
    use benchmatrix::fixtures::sim_cluster::{SimCluster, nodes};
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
