mod restart;

use super::*;
use crate::resource::bound;
use crate::resource::conditions;
use crate::resource::conditions::{find, time_from_secs};
use crate::resource::{BenchmarkRunStatus, CellPhase, RunPhase};
use crate::resource::{CellResult, LatencyMs};

/// What these tests' runs measure: a fixed load, whose recorder takes the repetitions from
/// the context's `repeat`; the events the tests send say what each measurement measured.
static FIXED: std::sync::LazyLock<Measure> = std::sync::LazyLock::new(|| {
    Measure::FixedLoad(crate::resource::measure::FixedLoad {
        workload: crate::resource::Workload::default(),
        thresholds: Vec::new(),
        repeat: Repeat::default(),
    })
});

fn ctx(now: &Time, repeat: impl Into<Repeat>, stop_on_failure: bool) -> Ctx<'_> {
    Ctx {
        generation: Some(1),
        now,
        stop_on_failure,
        repeat: repeat.into(),
        thresholds: &[],
        limits: Limits::default(),
        cells: &[],
        parallelism: Default::default(),
        measure: &FIXED,
        deprecations: &[],
    }
}

fn result(p99: f64, requests: u64) -> CellResult {
    CellResult {
        phase: "mixed".into(),
        endpoint: "fast".into(),
        requests,
        errors: 0,
        samples: requests,
        rps: requests as f64 / 10.0,
        latency_ms: Some(LatencyMs {
            p50: p99 / 2.0,
            p90: p99 / 1.5,
            p99,
            p999: p99,
            max: p99,
            mean: p99 / 2.0,
        }),
        unsupported_percentiles: Vec::new(),
        spread: None,
    }
}

fn measured(cell: usize, p99: f64, requests: u64, cpu: f64) -> Event {
    Event::CellMeasured {
        cell,
        measured: Box::new(Measured {
            results: vec![result(p99, requests)],
            target: Some(TargetStats {
                cpu_seconds_used: Some(cpu),
                ..TargetStats::default()
            }),
            message: "measured".into(),
            ..Measured::default()
        }),
    }
}

/// Drives a run to its end, measuring each step with `measure(cell, repetition)`; returns the
/// order of the steps taken.
fn drive(
    status: &mut BenchmarkRunStatus,
    repeat: impl Into<Repeat>,
    mut measure: impl FnMut(usize, u32) -> Event,
) -> Vec<(usize, u32)> {
    let now = time_from_secs(1_000);
    let c = ctx(&now, repeat, false);
    let mut order = Vec::new();
    while let Some(step) = next_step(status) {
        order.push((step.cell, step.repetition));
        reduce(
            status,
            Event::CellDeploying {
                cell: step.cell,
                message: "deploying".into(),
            },
            &c,
        );
        reduce(status, measure(step.cell, step.repetition), &c);
        assert!(order.len() < 100, "the run never ends: {order:?}");
    }
    reduce(status, Event::Finished { interrupted: false }, &c);
    order
}

fn admitted(cells: &[&str], repeat: impl Into<Repeat>) -> BenchmarkRunStatus {
    let now = time_from_secs(1_000);
    let mut status = BenchmarkRunStatus::default();
    let cells = cells
        .iter()
        .map(|c| Admission {
            name: c.to_string(),
            variant_of: None,
            reserved_cpu: Some(2.0),
        })
        .collect();
    reduce(
        &mut status,
        Event::Admitted { cells },
        &ctx(&now, repeat, false),
    );
    status
}

#[test]
fn repetitions_are_interleaved_every_cell_once_then_every_cell_again() {
    let mut status = admitted(&["a", "b", "c"], 3);
    let order = drive(&mut status, 3, |cell, _| measured(cell, 10.0, 100, 1.0));
    assert_eq!(
        order,
        vec![
            (0, 1),
            (1, 1),
            (2, 1),
            (0, 2),
            (1, 2),
            (2, 2),
            (0, 3),
            (1, 3),
            (2, 3)
        ]
    );
    assert_eq!(status.phase, RunPhase::Succeeded);
    for c in &status.cells {
        assert_eq!(c.phase, CellPhase::Succeeded);
        assert_eq!(c.repetitions.len(), 3);
    }
    assert_eq!(status.progress.as_deref(), Some("9/9"), "measurements done");
}

#[test]
fn a_run_without_repeat_measures_each_cell_once_and_keeps_no_repetitions() {
    let mut status = admitted(&["a", "b"], 1);
    let order = drive(&mut status, 1, |cell, _| measured(cell, 10.0, 100, 1.0));
    assert_eq!(order, vec![(0, 1), (1, 1)]);
    assert!(status.cells.iter().all(|c| c.repetitions.is_empty()));
    assert_eq!(status.cells[0].results, vec![result(10.0, 100)]);
}

#[test]
fn a_repeated_cell_reports_the_median_its_spread_and_totals() {
    let mut status = admitted(&["a"], 3);
    let p99s = [10.0, 30.0, 20.0];
    drive(&mut status, 3, |cell, r| {
        measured(cell, p99s[r as usize - 1], 100, 2.0)
    });
    let cell = &status.cells[0];
    let r = &cell.results[0];
    assert_eq!(r.latency_ms.unwrap().p99, 20.0, "the median of 10, 30, 20");
    assert_eq!(r.requests, 300, "counts add up over repetitions");
    assert_eq!(
        r.samples, 300,
        "samples add up: the merged histogram holds them all"
    );
    let spread = r.spread.as_ref().expect("a repeated cell has a spread");
    assert_eq!(spread.repetitions, 3);
    let p99 = &spread.figures["p99"];
    assert_eq!((p99.min, p99.max, p99.median), (10.0, 30.0, 20.0));
    assert_eq!(p99.values, vec![10.0, 30.0, 20.0], "in the order measured");
    assert!(p99.unstable, "30 / 10 is more than 2x apart");
    assert!(!spread.figures["rps"].unstable);
    assert_eq!(
        cell.target.as_ref().unwrap().cpu_seconds_used,
        Some(6.0),
        "CPU seconds add up, like the requests they served"
    );
}

#[test]
fn a_failed_repetition_fails_its_cell_and_says_which_repetition() {
    let mut status = admitted(&["a", "b"], 2);
    let order = drive(&mut status, 2, |cell, r| {
        if cell == 0 && r == 2 {
            Event::CellFailed {
                cell,
                cause: Cause::ReplicaExited,
                message: "replica a-0 exited".into(),
                overhead_seconds: None,
                enforcement: None,
            }
        } else {
            measured(cell, 10.0, 100, 1.0)
        }
    });
    assert_eq!(order, vec![(0, 1), (1, 1), (0, 2), (1, 2)]);
    let a = &status.cells[0];
    assert_eq!(a.phase, CellPhase::Failed);
    assert_eq!(a.reason.as_deref(), Some(Cause::ReplicaExited.as_str()));
    assert_eq!(
        a.message.as_deref(),
        Some("repetition 2/2: replica a-0 exited")
    );
    assert_eq!(a.repetitions.len(), 2);
    assert_eq!(a.repetitions[1].phase, CellPhase::Failed);
    let failed = find(&status.conditions, conditions::CELL_FAILED).unwrap();
    assert_eq!(failed.status, "True");
    assert_eq!(failed.reason, Cause::ReplicaExited.as_str());
}

#[test]
fn stop_on_failure_skips_every_unfinished_cell_even_one_earlier_in_the_matrix() {
    let mut status = admitted(&["a", "b"], 2);
    let now = time_from_secs(1_000);
    let c = ctx(&now, 2, true);
    // a measured once, then b fails its first repetition: a's second never runs.
    reduce(&mut status, measured(0, 10.0, 100, 1.0), &c);
    assert_eq!(
        status.progress.as_deref(),
        Some("1/4"),
        "one of 2 x 2 measured"
    );
    let notes = reduce(
        &mut status,
        Event::CellFailed {
            cell: 1,
            cause: Cause::NeverReady,
            message: "not ready".into(),
            overhead_seconds: None,
            enforcement: None,
        },
        &c,
    );
    assert!(notes[0].warning);
    assert_eq!(status.cells[0].phase, CellPhase::Skipped);
    assert_eq!(next_step(&status), None);
    reduce(&mut status, Event::Finished { interrupted: false }, &c);
    assert_eq!(status.phase, RunPhase::Failed);
}

/// A histogram of `n` samples at each of `micros`, encoded.
fn histogram_of(micros: &[u64], n: u64) -> String {
    use benchmatrix_loadgen::histogram;
    let mut h = histogram::new_histogram(histogram::PHASE_SIGFIG);
    for &m in micros {
        h.record_n(m, n).unwrap();
    }
    histogram::encode(&h)
}

fn measured_with_histogram(cell: usize, histogram: String) -> Event {
    let Event::CellMeasured { cell, mut measured } = measured(cell, 10.0, 100, 1.0) else {
        unreachable!()
    };
    measured.histograms.insert(
        crate::resource::status::histogram_key("mixed", "fast"),
        histogram,
    );
    Event::CellMeasured { cell, measured }
}

#[test]
fn repetitions_add_their_histograms_into_the_cell_which_drops_them_once_merged() {
    use benchmatrix_loadgen::histogram;
    let mut status = admitted(&["a"], 3);
    let now = time_from_secs(1_000);
    let c = ctx(&now, 3, false);
    let reps = [
        histogram_of(&[1_000], 50),
        histogram_of(&[2_000, 90_000], 30),
        histogram_of(&[3_000], 20),
    ];
    let key = crate::resource::status::histogram_key("mixed", "fast");
    let mut sum = histogram::decode(&reps[0]).unwrap();
    for (i, h) in reps.iter().enumerate() {
        reduce(&mut status, measured_with_histogram(0, h.clone()), &c);
        if i > 0 {
            histogram::add(&mut sum, &histogram::decode(h).unwrap()).unwrap();
        }
        let cell = &status.cells[0];
        if i < 2 {
            // One running sum per stream, never one histogram per repetition.
            assert_eq!(cell.histograms.len(), 1);
            let kept = histogram::decode(&cell.histograms[&key]).unwrap();
            assert_eq!(kept, sum, "after repetition {}", i + 1);
        }
    }
    let cell = &status.cells[0];
    assert_eq!(cell.phase, CellPhase::Succeeded);
    assert!(
        cell.histograms.is_empty(),
        "the figures stay, not the histograms"
    );
    let merged = cell.results[0].spread.as_ref().unwrap().merged_latency_ms;
    assert_eq!(
        merged,
        LatencyMs::from_histogram(&sum),
        "exactly the sum of all three"
    );
    assert_eq!(merged.unwrap().p50, 2.0);
    assert_eq!(merged.unwrap().max, 90.047);
}

#[test]
fn a_stream_whose_histogram_outgrows_its_share_has_no_merged_latency() {
    let now = time_from_secs(1_000);
    let c = ctx(&now, 2, false);
    // Each of 16 cells of one stream may keep 8 KiB: a histogram of every 10th value up to
    // 100 ms, each seen a different number of times, encodes to about twice that.
    let values: Vec<u64> = (1..10_000).map(|v| v * 10).collect();
    let wide = {
        use benchmatrix_loadgen::histogram;
        let mut h = histogram::new_histogram(histogram::PHASE_SIGFIG);
        for (i, &v) in values.iter().enumerate() {
            h.record_n(v, 1 + (i as u64 * 7919) % 100_003).unwrap();
        }
        histogram::encode(&h)
    };
    let cells: Vec<String> = (0..16).map(|i| format!("c{i}")).collect();
    let mut status = admitted(&cells.iter().map(String::as_str).collect::<Vec<_>>(), 2);
    assert_eq!(bound::histogram_share(16, 1), Some(8 * 1024));
    assert!(wide.len() > 8 * 1024, "{}", wide.len());
    reduce(&mut status, measured_with_histogram(0, wide), &c);
    assert!(status.cells[0].histograms.is_empty());
    reduce(
        &mut status,
        measured_with_histogram(0, histogram_of(&[1_000], 10)),
        &c,
    );
    let spread = status.cells[0].results[0].spread.as_ref().unwrap();
    assert_eq!(
        spread.merged_latency_ms, None,
        "not the merge of only the repetitions that fitted"
    );
    assert_eq!(spread.repetitions, 2, "the spread still covers both");
}

#[test]
fn what_an_executor_says_is_clipped_and_recorded_pods_go_with_the_measurement() {
    let now = time_from_secs(1_000);
    let c = ctx(&now, 1, false);
    let mut status = admitted(&["a", "b"], 1);
    let pods = vec![RecordedPod {
        name: "a-0".into(),
        node: Some("n1".into()),
        uid: "u".into(),
        restarts: 0,
    }];
    for cell in [0, 1] {
        reduce(
            &mut status,
            Event::LoadStarted {
                cell,
                message: "running".into(),
                target_pods: pods.clone(),
            },
            &c,
        );
        assert_eq!(status.cells[cell].target_pods, pods);
    }
    reduce(&mut status, measured(0, 10.0, 100, 1.0), &c);
    let words = "the pod said <this> & that. ".repeat(1_000);
    reduce(
        &mut status,
        Event::CellFailed {
            cell: 1,
            cause: Cause::LoadgenFailed,
            message: words.clone(),
            overhead_seconds: None,
            enforcement: None,
        },
        &c,
    );
    assert!(status.cells.iter().all(|c| c.target_pods.is_empty()));
    let message = status.cells[1].message.as_deref().unwrap();
    assert!(words.starts_with(message.trim_end_matches('…')));
    assert!(message.ends_with('…'));
    assert!(bound::json_len(message) <= bound::SENTENCE_MAX);
    let failed = find(&status.conditions, conditions::CELL_FAILED).unwrap();
    assert!(bound::json_len(&failed.message) <= bound::SENTENCE_MAX);
    assert!(failed.message.starts_with("cell b: the pod said <this>"));
}

#[test]
fn each_repetition_records_its_nodes_neighbours_and_a_busy_one_is_a_warning() {
    use crate::resource::status::{NeighbourPod, Neighbours};
    let now = time_from_secs(1_000);
    let c = ctx(&now, 2, false);
    let mut status = admitted(&["a"], 2);
    let pod = |name: &str, node: &str| RecordedPod {
        name: name.into(),
        node: Some(node.into()),
        uid: name.into(),
        restarts: 0,
    };
    reduce(
        &mut status,
        Event::LoadStarted {
            cell: 0,
            message: "running".into(),
            target_pods: vec![pod("a-0", "n1"), pod("a-1", "n2")],
        },
        &c,
    );
    let Event::CellMeasured {
        cell,
        measured: mut told,
    } = measured(0, 10.0, 100, 1.0)
    else {
        unreachable!()
    };
    // The executor read n1 (busy) and a node the measurement did not record; of n2, nothing.
    let busy = Neighbours {
        node: "n1".into(),
        foreign_cpu: Some(0.65),
        window_seconds: Some(10.0),
        busy: true,
        pods: vec![NeighbourPod {
            pod: "other/busy".into(),
            cpu: 0.6,
        }],
        ..Neighbours::default()
    };
    let stray = Neighbours {
        node: "n9".into(),
        ..busy.clone()
    };
    told.neighbours = vec![stray, busy.clone()];
    told.neighbours_missing = Some("the kubelet of n2 did not answer".into());
    let notes = reduce(
        &mut status,
        Event::CellMeasured {
            cell,
            measured: told,
        },
        &c,
    );
    let rep = &status.cells[0].repetitions[0];
    assert_eq!(rep.nodes, ["n1", "n2"]);
    assert_eq!(rep.neighbours.len(), 2);
    assert_eq!(rep.neighbours[0], busy);
    assert_eq!(rep.neighbours[1].node, "n2");
    assert_eq!(
        rep.neighbours[1].missing.as_deref(),
        Some("the kubelet of n2 did not answer")
    );
    assert!(
        status.cells[0].neighbours.is_empty(),
        "a repeated cell's are per repetition"
    );
    let warning = notes
        .iter()
        .find(|n| n.reason == "BusyNeighbours")
        .expect("a BusyNeighbours note");
    assert!(warning.warning);
    assert_eq!(
        warning.note,
        "cell a repetition 1/2 shared its node n1: 0.650 CPU of other use, most by other/busy \
         (0.600)"
    );
    // A quiet measurement (and a local one, with no nodes) says nothing.
    let notes = reduce(&mut status, measured(0, 10.0, 100, 1.0), &c);
    assert!(notes.iter().all(|n| n.reason != "BusyNeighbours"));
    assert!(status.cells[0].repetitions[1].neighbours.is_empty());
}

#[test]
fn an_interrupted_run_keeps_no_histogram_of_its_unfinished_cells() {
    let now = time_from_secs(1_000);
    let c = ctx(&now, 2, false);
    let mut status = admitted(&["a"], 2);
    reduce(
        &mut status,
        measured_with_histogram(0, histogram_of(&[1_000], 10)),
        &c,
    );
    assert_eq!(status.cells[0].histograms.len(), 1);
    reduce(&mut status, Event::Finished { interrupted: true }, &c);
    assert_eq!(status.phase, RunPhase::Failed);
    assert!(status.cells[0].histograms.is_empty());
    assert_eq!(status.cells[0].repetitions.len(), 1, "the figures stay");
}

const UNTIL_PRECISE: Repeat = Repeat::UntilPrecise {
    min: 3,
    max: 6,
    precision: 5.0,
};

/// A cell whose p99 varies by about 1% stops after `min`; one that swings by 50% goes on to
/// `max`, still interleaved with the cells left, and says how far it still spreads.
#[test]
fn adaptive_repetitions_stop_a_precise_cell_at_min_and_a_spread_one_at_max() {
    let mut status = admitted(&["steady", "noisy"], UNTIL_PRECISE);
    assert_eq!(status.progress.as_deref(), Some("0/12"), "planned at most");
    let steady = [100.0, 101.0, 99.0, 100.0, 100.0, 100.0];
    let noisy = [100.0, 150.0, 80.0, 120.0, 60.0, 140.0];
    let order = drive(&mut status, UNTIL_PRECISE, |cell, r| {
        let p99 = [steady, noisy][cell][r as usize - 1];
        measured(cell, p99, 1000, 1.0)
    });
    assert_eq!(
        order,
        vec![
            (0, 1),
            (1, 1),
            (0, 2),
            (1, 2),
            (0, 3),
            (1, 3),
            (1, 4),
            (1, 5),
            (1, 6)
        ]
    );
    let (a, b) = (&status.cells[0], &status.cells[1]);
    assert_eq!((a.phase, a.repetitions.len()), (CellPhase::Succeeded, 3));
    let pa = a.precision.as_ref().expect("why it stopped");
    assert!(pa.precise);
    assert_eq!(pa.repetitions, 3);
    assert_eq!(pa.widest_figure.as_deref(), Some("mixed/fast p99"));
    assert!(pa.widest_percent.unwrap() < 5.0, "{pa:?}");
    assert!(pa.message.starts_with("precise after 3"), "{}", pa.message);
    assert_eq!((b.phase, b.repetitions.len()), (CellPhase::Succeeded, 6));
    let pb = b.precision.as_ref().unwrap();
    assert!(!pb.precise);
    assert!(pb.widest_percent.unwrap() > 5.0);
    assert!(
        pb.message.starts_with("max of 6 reached and still spread"),
        "{}",
        pb.message
    );
    assert!(
        b.message.as_deref().unwrap().contains("max of 6 reached"),
        "{:?}",
        b.message
    );
    assert_eq!(status.progress.as_deref(), Some("9/9"), "the plan shrank");
}

/// No cell is judged precise before `min`, however close its repetitions, and a fixed count
/// records no precision at all.
#[test]
fn adaptive_repetitions_run_min_first_and_a_fixed_count_records_no_precision() {
    let mut status = admitted(&["a"], UNTIL_PRECISE);
    let order = drive(&mut status, UNTIL_PRECISE, |cell, _| {
        measured(cell, 100.0, 1000, 1.0)
    });
    assert_eq!(order.len(), 3);
    let mut status = admitted(&["a"], 3);
    drive(&mut status, 3, |cell, _| measured(cell, 100.0, 1000, 1.0));
    assert_eq!(status.cells[0].precision, None);
}

/// A threshold on throughput makes the cell's rps decide too: steady p99s but rps swinging
/// 2x keep it going to `max`.
#[test]
fn a_judged_figure_keeps_a_cell_repeating_until_it_is_precise() {
    let thresholds: Vec<Threshold> =
        serde_yaml::from_str("[{phase: mixed, endpoint: fast, rps: {above: 1}}]").unwrap();
    let now = time_from_secs(1_000);
    let c = Ctx {
        thresholds: &thresholds,
        ..ctx(&now, UNTIL_PRECISE, false)
    };
    let mut status = admitted(&["a"], UNTIL_PRECISE);
    let requests = [1000, 2000, 1000, 2000, 1000, 2000];
    let mut r = 0;
    while let Some(step) = next_step(&status) {
        reduce(
            &mut status,
            measured(step.cell, 100.0, requests[r], 1.0),
            &c,
        );
        r += 1;
    }
    let p = status.cells[0].precision.as_ref().unwrap();
    assert_eq!((p.precise, p.repetitions), (false, 6));
    assert_eq!(p.widest_figure.as_deref(), Some("mixed/fast rps"));
}

/// Drives the machine through the moments `(seconds, facts)` of a one-cell run without
/// repeat (ready within 20 s, the load within 60 s, 10 s planned); returns the status and the
/// commands of the last moment.
fn machine_moments(
    moments: Vec<(i64, machine::Seen)>,
) -> (BenchmarkRunStatus, Vec<machine::Command>) {
    let mut status = admitted(&["a"], 1);
    let mut last = Vec::new();
    for (at, seen) in moments {
        let now = time_from_secs(at);
        let mut c = ctx(&now, 1, false);
        c.limits = Limits {
            ready: std::time::Duration::from_secs(20),
            load_deadline: std::time::Duration::from_secs(60),
            planned_load: std::time::Duration::from_secs(10),
            ..Limits::default()
        };
        last = machine::advance(&mut status, seen, &c).commands;
    }
    (status, last)
}

fn ready() -> machine::Seen {
    machine::Seen {
        ready: Some(Ok(machine::Ready::default())),
        ..machine::Seen::default()
    }
}

/// A step whose objects all vanished 30 s into its load starts again from its deployment; the
/// new target's wait for readiness is timed from the new deployment (the step's start), not
/// from the lost step's start (which is beyond the 20 s `ready` limit by then).
#[test]
fn a_lost_step_times_its_new_target_from_the_new_deployment() {
    let lost = machine::Seen {
        load_missing: true,
        ..machine::Seen::default()
    };
    let not_ready = machine::Seen {
        not_ready: "0 of 1 ready".into(),
        ..machine::Seen::default()
    };
    let (status, commands) = machine_moments(vec![
        (1_000, machine::Seen::default()),
        (1_005, ready()),
        (1_030, lost),
        (1_031, machine::Seen::default()),
        (1_033, not_ready),
    ]);
    let c = &status.cells[0];
    assert_eq!(c.phase, CellPhase::Deploying, "{:?}", c.message);
    assert_eq!(c.step_start_time, Some(time_from_secs(1_031)));
    // The cell started with its first step, lost or not.
    assert_eq!(c.start_time, Some(time_from_secs(1_000)));
    assert_eq!(
        commands,
        [machine::Command::WakeIn(std::time::Duration::from_secs(18))]
    );
}

/// An operator down for 5 minutes between writing a step (deploying) and making its target
/// finds the target missing, makes it, and gives it the whole 20 s `ready` limit from when it
/// looked again; only a target not ready 20 s after that fails.
#[test]
fn a_target_the_operator_was_down_to_make_is_made_and_timed_from_then() {
    let missing_since = |at: i64| machine::Seen {
        target_missing: true,
        target_since: Some(time_from_secs(at)),
        ..machine::Seen::default()
    };
    let made_at = |at: i64| machine::Seen {
        target_since: Some(time_from_secs(at)),
        not_ready: "0 of 1 ready".into(),
        ..machine::Seen::default()
    };
    let (status, commands) = machine_moments(vec![
        (1_000, machine::Seen::default()),
        (1_300, missing_since(1_300)),
    ]);
    let c = &status.cells[0];
    assert_eq!(c.phase, CellPhase::Deploying, "{:?}", c.message);
    assert_eq!(
        commands,
        [
            machine::Command::Deploy(Step {
                cell: 0,
                repetition: 1
            }),
            machine::Command::WakeIn(std::time::Duration::from_secs(20))
        ]
    );
    let (status, _) = machine_moments(vec![
        (1_000, machine::Seen::default()),
        (1_300, missing_since(1_300)),
        (1_310, made_at(1_301)),
    ]);
    assert_eq!(status.cells[0].phase, CellPhase::Deploying);
    let (status, _) = machine_moments(vec![
        (1_000, machine::Seen::default()),
        (1_300, missing_since(1_300)),
        (1_325, made_at(1_301)),
    ]);
    assert_eq!(status.cells[0].phase, CellPhase::Failed);
    assert_eq!(
        status.cells[0].reason.as_deref(),
        Some(Cause::NeverReady.as_str())
    );
}

/// A target that cannot be made while the operator watches the whole time still fails within
/// the `ready` limit of the step's start.
#[test]
fn a_target_that_cannot_be_made_under_a_watching_operator_fails_in_time() {
    let missing = || machine::Seen {
        target_missing: true,
        target_since: Some(time_from_secs(1_000)),
        ..machine::Seen::default()
    };
    let (status, _) = machine_moments(vec![
        (1_000, machine::Seen::default()),
        (1_010, missing()),
        (1_021, missing()),
    ]);
    assert_eq!(status.cells[0].phase, CellPhase::Failed);
    assert_eq!(
        status.cells[0].reason.as_deref(),
        Some(Cause::NeverReady.as_str())
    );
}

/// A load generator made again after its Job vanished gets its own deadline: 75 s after the
/// first load started (beyond the 60 s deadline) but 30 s after the second, the step still runs.
#[test]
fn a_load_generator_made_again_has_a_deadline_of_its_own() {
    let vanished = machine::Seen {
        load_missing: true,
        ready: Some(Ok(machine::Ready {
            message: "load generator made again".into(),
            target_pods: Vec::new(),
        })),
        ..machine::Seen::default()
    };
    let (status, commands) = machine_moments(vec![
        (1_000, machine::Seen::default()),
        (1_005, ready()),
        (1_050, vanished),
    ]);
    let restarted = Step {
        cell: 0,
        repetition: 1,
    };
    assert!(
        commands
            .iter()
            .any(|c| matches!(c, machine::Command::StartLoad { at, .. } if *at == restarted))
    );
    assert_eq!(status.cells[0].load_start_time, Some(time_from_secs(1_050)));
    let (status, _) = machine_moments(vec![
        (1_000, machine::Seen::default()),
        (1_005, ready()),
        (
            1_050,
            machine::Seen {
                load_missing: true,
                ready: Some(Ok(machine::Ready::default())),
                ..machine::Seen::default()
            },
        ),
        (1_080, machine::Seen::default()),
    ]);
    let c = &status.cells[0];
    assert_eq!(
        c.phase,
        CellPhase::Running,
        "{:?} {:?}",
        c.reason,
        c.message
    );
}

/// Configurations `configs`, each crossed with variants `base` and `cand`.
fn admitted_with_variants(configs: &[&str], repeat: impl Into<Repeat>) -> BenchmarkRunStatus {
    let now = time_from_secs(1_000);
    let mut status = BenchmarkRunStatus::default();
    let cells = configs
        .iter()
        .flat_map(|c| {
            ["base", "cand"].map(|v| Admission {
                name: format!("{c}-{v}"),
                variant_of: Some((c.to_string(), v.to_string())),
                reserved_cpu: Some(1.0),
            })
        })
        .collect();
    reduce(
        &mut status,
        Event::Admitted { cells },
        &ctx(&now, repeat, false),
    );
    status
}

#[test]
fn a_rounds_variants_run_back_to_back_in_an_order_that_alternates() {
    let mut status = admitted_with_variants(&["a", "b"], 3);
    let order = drive(&mut status, 3, |cell, _| measured(cell, 10.0, 100, 1.0));
    // a-base 0, a-cand 1, b-base 2, b-cand 3: round 1 A B, round 2 B A, round 3 A B, and a
    // configuration's round is never split by another's.
    let cells: Vec<usize> = order.iter().map(|(c, _)| *c).collect();
    assert_eq!(cells, [0, 1, 2, 3, 1, 0, 3, 2, 0, 1, 2, 3]);
    let rounds: Vec<u32> = order.iter().map(|(_, r)| *r).collect();
    assert_eq!(rounds, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
    assert!(status.cells.iter().all(|c| c.phase == CellPhase::Succeeded));
    // Each candidate against its base, over the 3 rounds.
    let names: Vec<(&str, &str, &str, u32)> = status
        .variants
        .iter()
        .map(|v| {
            (
                v.configuration.as_str(),
                v.base.as_str(),
                v.candidate.as_str(),
                v.rounds,
            )
        })
        .collect();
    assert_eq!(names, [("a", "base", "cand", 3), ("b", "base", "cand", 3)]);
}

#[test]
fn the_ratio_of_each_round_carries_the_verdict_and_drift_between_rounds_cancels() {
    // The machine slows down 10% a round, both variants alike; the candidate is 8% slower.
    let mut status = admitted_with_variants(&["a"], 6);
    drive(&mut status, 6, |cell, round| {
        let machine = 1.0 + 0.1 * f64::from(round);
        let p99 = if cell == 1 { 20.0 * 1.08 } else { 20.0 } * machine;
        measured(cell, p99, 1000, 1.0)
    });
    let p99 = status.variants[0]
        .figures
        .iter()
        .find(|f| f.figure == "p99")
        .unwrap();
    assert_eq!(p99.ratios.len(), 6);
    assert!((p99.ratio - 1.08).abs() < 1e-9, "{p99:?}");
    assert_eq!(p99.p_worse, 1.0 / 64.0, "every round worse");
    assert_eq!(
        p99.verdict,
        crate::resource::status::ChangeVerdict::Regression
    );
    // The base's own figures spread 50% over the rounds; the ratio's interval does not.
    assert!(
        p99.ratio_high.unwrap() - p99.ratio_low.unwrap() < 1e-9,
        "{p99:?}"
    );
    // Throughput is equal, round by round: within noise.
    let rps = status.variants[0]
        .figures
        .iter()
        .find(|f| f.figure == "rps")
        .unwrap();
    assert_eq!(
        rps.verdict,
        crate::resource::status::ChangeVerdict::WithinNoise
    );
}

#[test]
fn variants_repeat_until_their_ratios_are_precise_and_stop_together() {
    use crate::resource::Repeat;
    let repeat = Repeat::UntilPrecise {
        min: 3,
        max: 10,
        precision: 5.0,
    };
    // Noisy figures (each round 0-30% off), but the same in both variants of a round: the
    // ratios are exactly 1.03, precise from the third round on.
    let mut status = admitted_with_variants(&["a"], repeat);
    let order = drive(&mut status, repeat, |cell, round| {
        let noise = 1.0 + 0.1 * f64::from(round % 4);
        let p99 = if cell == 1 { 20.6 } else { 20.0 } * noise;
        measured(cell, p99, 1000, 1.0)
    });
    assert_eq!(order.len(), 6, "3 rounds of 2 variants: {order:?}");
    for c in &status.cells {
        let p = c.precision.as_ref().unwrap();
        assert!(
            p.precise && p.message.starts_with("precise after 3"),
            "{p:?}"
        );
        assert!(p.message.contains("candidate/base ratio"), "{p:?}");
    }
}

#[test]
fn a_variant_that_fails_ends_alone_and_its_partner_measures_on() {
    let mut status = admitted_with_variants(&["a"], 3);
    let order = drive(&mut status, 3, |cell, round| {
        if cell == 1 && round == 2 {
            Event::CellFailed {
                cell,
                cause: Cause::ReplicaExited,
                message: "exited".into(),
                overhead_seconds: None,
                enforcement: None,
            }
        } else {
            measured(cell, 10.0, 100, 1.0)
        }
    });
    assert_eq!(order, [(0, 1), (1, 1), (1, 2), (0, 2), (0, 3)]);
    assert_eq!(status.cells[0].phase, CellPhase::Succeeded);
    assert_eq!(status.cells[1].phase, CellPhase::Failed);
    // The one round both measured is compared.
    assert_eq!(status.variants[0].rounds, 1);
}

/// A spec that sets a field under its old name is admitted, with the deprecation in the
/// SpecValid condition and one Warning Event; without one, neither.
#[test]
fn a_deprecated_field_is_said_at_admission_without_stopping_the_run() {
    let now = time_from_secs(1_000);
    let said =
        ["spec.loadgen.parallelism: is deprecated: write spec.loadgen.generators".to_owned()];
    for deprecations in [&said[..], &[]] {
        let c = Ctx {
            deprecations,
            ..ctx(&now, 1, false)
        };
        let mut status = BenchmarkRunStatus::default();
        let cells = vec![Admission {
            name: "a".into(),
            variant_of: None,
            reserved_cpu: None,
        }];
        let notes = reduce(&mut status, Event::Admitted { cells }, &c);
        assert_eq!(status.phase, RunPhase::Running);
        let valid = find(&status.conditions, conditions::SPEC_VALID).unwrap();
        assert_eq!(valid.status, "True");
        assert_eq!(valid.message, deprecations.join("; "));
        let warned: Vec<_> = notes.iter().filter(|n| n.reason == "Deprecated").collect();
        assert_eq!(warned.len(), deprecations.len(), "{notes:?}");
        assert!(warned.iter().all(|n| n.warning && n.note == said[0]));
    }
}
