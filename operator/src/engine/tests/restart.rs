//! An operator restarted mid-search or mid-sizing goes on to the same answer: the status is the
//! engine's whole state, so nothing a restart loses may be needed to go on.
//!
//! Each run is driven through the engine's machine by the simulated executor of
//! [`crate::fixtures::sim_engine`], once to its end; then again, restarted after a turn: its
//! status written to YAML and read back, as a restarted operator reads it from the API server
//! (which keeps only what the status serializes). Restarted after any one turn, and after every
//! turn, the run must end in the same status. A status an older operator saved mid-run (with the
//! fields this one no longer writes, `operator/tests/fixtures/older/`) must go on to the answer
//! that operator reached.

use crate::fixtures::sim_engine::SimEngine;
use crate::resource::capacity::{CapacityStatus, ProbeStatus};
use crate::resource::conditions::secs_of;
use crate::resource::matrix::Cell;
use crate::resource::{BenchmarkRun, BenchmarkRunStatus, CellPhase, RunPhase, ValidatedRun};

/// Two cells searched one after the other, the second holding half the first's rate.
const CAPACITY: &str = r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: capacity-restart, namespace: default}
spec:
  configurations:
    - {name: one-cpu, cpu: "1"}
    - {name: half-cpu, cpu: 500m}
  workload:
    endpoints: [{name: fast, path: /fast}]
    warmup: 1s
  capacity:
    slo: [{endpoint: fast, p99: {below: 100ms}}, {errorRate: {below: 0.01}}]
    resolution: 5%
    startRate: 20
    maxRate: 400
    probeDuration: 10s
"#;

/// Twelve configurations sized for 30 rps plus 20%, with confirmations and rule-out probes.
const SIZING: &str = r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: sizing-restart, namespace: default}
spec:
  workload:
    endpoints: [{name: fast, path: /fast}]
    warmup: 1s
  capacity:
    slo: [{endpoint: fast, p99: {below: 100ms}}, {errorRate: {below: 0.01}}]
    resolution: 10%
    startRate: 10
    maxRate: 400
    probeDuration: 10s
  sizing:
    traffic: 30
    margin: 20%
    search:
      replicas: [1, 2]
      cpu: [250m, 500m, "1"]
      mode: [single, pool]
    budget: 8
    confirmations: 2
    ruleOut: 2
"#;

/// [`CAPACITY`] searched twice over, each round on a fresh target.
fn rounds() -> String {
    CAPACITY
        .replace("spec:\n", "spec:\n  repeat: 2\n")
        .replace("capacity-restart", "rounds-restart")
}

/// The capacity runs' targets: the first cell holds 94 rps in its first round and 95 in its
/// second, the second 46.5 (so that its search meets a failure close to the limit).
fn capacity_truth(cell: usize, round: u32) -> f64 {
    if cell == 0 {
        93.0 + f64::from(round)
    } else {
        46.5
    }
}

/// The sized service: in mode single one event loop uses one core at most (30 rps a core),
/// a pool every core it gets (44 rps a core); replicas add with 5% contention.
fn sizing_truth(cells: &[Cell]) -> impl Fn(usize, u32) -> f64 + '_ {
    |i, _| {
        let c = &cells[i];
        let cpu = c.cpu.cpu_cores().unwrap_or(0.0);
        let per = if c.mode.to_string() == "single" {
            30.0 * cpu.min(1.0)
        } else {
            44.0 * cpu
        };
        let n = f64::from(c.replicas);
        per * n / (1.0 + 0.05 * (n - 1.0))
    }
}

/// `status` as a restarted operator reads it: written to YAML and read back.
fn reread(status: &BenchmarkRunStatus) -> BenchmarkRunStatus {
    let yaml = serde_yaml::to_string(status).expect("a status serializes");
    serde_yaml::from_str(&yaml).expect("a status it wrote reads back")
}

/// True when a measurement is under way in `status`: a search or a check with probes
/// recorded whose cell has not ended (in line for its next probe, settling on its kept
/// target, or loaded), where a restart would lose whatever the status did not keep.
fn mid_measurement(status: &BenchmarkRunStatus) -> bool {
    status.cells.iter().any(|c| {
        !c.phase.is_finished() && c.capacity.as_ref().is_some_and(|k| !k.probes.is_empty())
    })
}

/// How a driven run ended.
#[derive(Debug, PartialEq)]
struct Ended {
    /// The status at its end.
    status: BenchmarkRunStatus,
    /// The clock at its end.
    now: i64,
    /// The turns it took.
    turns: usize,
}

/// Drives `run` against targets of capacity `truth` to its end, restarting it after each turn
/// `restart` names. Returns how it ended and how many restarts came while a measurement was
/// under way.
fn drive(
    run: &ValidatedRun,
    truth: &dyn Fn(usize, u32) -> f64,
    restart: &dyn Fn(usize) -> bool,
) -> (Ended, usize) {
    let mut sim = SimEngine::new(run, truth);
    let mut mid = 0;
    for turns in 0..5_000 {
        if !sim.turn() {
            let (status, now) = (sim.status, sim.now);
            return (Ended { status, now, turns }, mid);
        }
        if restart(turns) {
            mid += usize::from(mid_measurement(&sim.status));
            sim.status = reread(&sim.status);
        }
    }
    panic!("the run did not end: {:#?}", sim.status);
}

/// `run` restarted after every turn, and after each one turn alone, ends as it ends never
/// restarted, having been restarted mid-measurement at least `mid_at_least` times.
fn restarts_change_nothing(
    run: &ValidatedRun,
    truth: &dyn Fn(usize, u32) -> f64,
    mid_at_least: usize,
) -> BenchmarkRunStatus {
    let (whole, _) = drive(run, truth, &|_| false);
    assert_eq!(
        whole.status.phase,
        RunPhase::Succeeded,
        "{:#?}",
        whole.status
    );
    let same = |restarted: &Ended, when: &str| {
        // The answer first, in a few lines, then everything else the status says.
        assert_eq!(answer(&restarted.status), answer(&whole.status), "{when}");
        assert!(
            *restarted == whole,
            "{when}: the same answer, but not the same status"
        );
    };
    let (every, mid) = drive(run, truth, &|_| true);
    assert!(mid >= mid_at_least, "only {mid} restarts mid-measurement");
    same(&every, "restarted after every turn");
    for k in 0..whole.turns {
        let (once, _) = drive(run, truth, &|t| t == k);
        same(&once, &format!("restarted after turn {k}"));
    }
    whole.status
}

#[test]
fn a_capacity_search_restarted_after_any_turn_ends_as_if_never_restarted() {
    let run = ValidatedRun::parse(CAPACITY).unwrap();
    let status = restarts_change_nothing(&run, &capacity_truth, 20);
    // The runs restarted went through what a restart could lose: a kept target settling, a
    // failure close to the limit probed again, a fresh target after a backlog.
    let cap = |i: usize| status.cells[i].capacity.clone().unwrap();
    let half = cap(1);
    assert!(half.probes.iter().any(|p| p.settle_seconds.is_some()));
    assert!(half.probes.iter().any(|p| p.close));
    assert!(half.targets > 1, "{half:#?}");
    assert_eq!(
        (cap(0).held_rate, half.held_rate),
        (Some(92.5), Some(46.25))
    );

    let run = ValidatedRun::parse(&rounds()).unwrap();
    let status = restarts_change_nothing(&run, &capacity_truth, 40);
    let first = cap_of(&status, 0);
    assert_eq!(first.rounds.len(), 2, "{first:#?}");
}

#[test]
fn a_sizing_search_restarted_after_any_turn_ends_as_if_never_restarted() {
    let run = ValidatedRun::parse(SIZING).unwrap();
    let truth = sizing_truth(run.cells());
    let status = restarts_change_nothing(&run, &truth, 40);
    let sizing = status.sizing.as_ref().unwrap();
    let chosen = sizing.chosen.as_ref().map(|c| c.configuration.as_str());
    assert_eq!(chosen, Some("pool-x1-cpu1"), "{sizing:#?}");
    // Restarts came in its confirmation and its rule-out probes too.
    let checked: Vec<&str> = status
        .cells
        .iter()
        .filter(|c| c.capacity.as_ref().is_some_and(|k| k.check.is_some()))
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        checked,
        ["pool-x1-cpu500m", "pool-x1-cpu1", "pool-x2-cpu250m"]
    );
}

fn cap_of(status: &BenchmarkRunStatus, cell: usize) -> CapacityStatus {
    status.cells[cell].capacity.clone().unwrap_or_default()
}

/// The run an older operator saved in `operator/tests/fixtures/older/NAME.yaml`, and its
/// status.
fn saved(name: &str) -> (BenchmarkRun, BenchmarkRunStatus) {
    let path = format!(
        "{}/tests/fixtures/older/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut run: BenchmarkRun =
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let status = run.status.take().expect("a saved status");
    (run, status)
}

/// The latest time `status` records: when it was written, which the clock goes on from.
fn written_at(status: &BenchmarkRunStatus) -> i64 {
    status
        .cells
        .iter()
        .flat_map(|c| [&c.start_time, &c.load_start_time, &c.completion_time])
        .chain([&status.start_time])
        .flatten()
        .map(secs_of)
        .max()
        .unwrap_or_default()
}

/// What a run's answer is made of, per cell: its phase, every probe's rate, verdict and
/// check, how its search and its check ended with their rates, and the sizing's outcome,
/// answer and every configuration's state.
fn answer(status: &BenchmarkRunStatus) -> Vec<String> {
    let probe = |p: &ProbeStatus| format!("{} {:?} {:?} {:?}", p.rate, p.verdict, p.check, p.round);
    let mut out: Vec<String> = status
        .cells
        .iter()
        .map(|c| {
            let cap = c.capacity.clone().unwrap_or_default();
            format!(
                "{} {:?}: {:?} held {:?} failed {:?} [{}] rounds {:?} check {:?}",
                c.name,
                c.phase,
                cap.ended(),
                cap.held_rate,
                cap.failed_rate,
                cap.probes.iter().map(probe).collect::<Vec<_>>().join(", "),
                cap.rounds
                    .iter()
                    .map(|r| (r.round, r.held_rate, r.failed_rate))
                    .collect::<Vec<_>>(),
                cap.check.map(|k| (k.purpose, k.rate, k.done, k.message)),
            )
        })
        .collect();
    if let Some(s) = &status.sizing {
        out.push(format!("{:?} {:?} {}", s.outcome, s.chosen, s.message));
        out.extend(s.configurations.iter().map(|c| format!("{c:?}")));
    }
    out
}

/// A status an older operator saved mid-search, mid-round or mid-check (with `nextRate`,
/// `settleUntil`, the check's counters and `rounds[].probes`, and the cell's `startTime` the
/// probe's) is read by this engine, which goes on to the answer that operator reached.
#[test]
fn a_status_an_older_operator_saved_mid_run_goes_on_to_its_answer() {
    for (mid, end) in [
        ("capacity-mid-search", "capacity-finished"),
        ("rounds-mid-search", "rounds-finished"),
        ("sizing-mid-check", "sizing-finished"),
    ] {
        let (run, status) = saved(mid);
        let (_, theirs) = saved(end);
        assert!(mid_measurement(&status), "{mid} is not mid-run");
        let run = ValidatedRun::new(run).unwrap();
        let cells = run.cells().to_vec();
        let sized = sizing_truth(&cells);
        let truth: &dyn Fn(usize, u32) -> f64 = if run.spec().sizing.is_some() {
            &sized
        } else {
            &capacity_truth
        };
        let mut sim = SimEngine::new(&run, truth);
        sim.now = written_at(&status);
        sim.status = status;
        for _ in 0..5_000 {
            if !sim.turn() {
                break;
            }
        }
        assert_eq!(answer(&sim.status), answer(&theirs), "{mid}");
        // At the same times: each cell starting with its first probe (the older operator
        // kept that start only in `capacity.startTime` while the search ran), each settle
        // waited out from the probe before it, and the run ending when it ended.
        let times = |s: &BenchmarkRunStatus| -> Vec<_> {
            s.cells
                .iter()
                .map(|c| (c.start_time.clone(), c.completion_time.clone()))
                .chain([(s.start_time.clone(), s.completion_time.clone())])
                .collect()
        };
        assert_eq!(times(&sim.status), times(&theirs), "{mid}");
        assert!(
            sim.status
                .cells
                .iter()
                .all(|c| c.phase != CellPhase::Failed),
            "{mid}"
        );
    }
}
