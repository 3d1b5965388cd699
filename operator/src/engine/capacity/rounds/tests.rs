//! Repeated searches through the engine's own reducer and schedule: a simulated target whose
//! capacity is known per round (and per variant) answers each probe, held below it and failed
//! above it, as a real target's p99 does at its knee.

use crate::engine::results::variants::CAPACITY;
use crate::engine::verdict::gate::RegressionGate;
use crate::engine::{Admission, Ctx, Event, Limits, Measured, next_step, reduce};
use crate::resource::capacity::{CapacitySpec, PROBE_PHASE};
use crate::resource::conditions::time_from_secs;
use crate::resource::measure::{Capacity, Measure};
use crate::resource::status::{ChangeVerdict, Percentile};
use crate::resource::{BenchmarkRunStatus, CellPhase, CellResult, LatencyMs, Repeat, Workload};

const CAPACITY_SPEC: &str = "slo: [{endpoint: fast, p99: {below: 100ms}}]\nstartRate: 25\n\
                             maxRate: 1000\nresolution: 5%\nprobeDuration: 10s";

fn specs() -> (CapacitySpec, Workload) {
    let workload: Workload =
        serde_yaml::from_str("endpoints: [{name: fast, path: /fast}]").unwrap();
    (serde_yaml::from_str(CAPACITY_SPEC).unwrap(), workload)
}

/// A probe at `rate` of a target that holds `capacity`: p99 40 ms below it, 400 ms above.
fn probe(rate: f64, capacity: f64) -> Event {
    let samples = (rate * 10.0) as u64;
    let p99 = if rate <= capacity { 40.0 } else { 400.0 };
    let result = CellResult {
        phase: PROBE_PHASE.into(),
        endpoint: "fast".into(),
        requests: samples,
        errors: 0,
        samples,
        rps: rate,
        latency_ms: Some(LatencyMs {
            p50: p99 / 2.0,
            p90: p99 * 0.8,
            p99,
            p999: p99,
            max: p99,
            mean: p99 / 2.0,
        }),
        unsupported_percentiles: Percentile::unsupported_by(samples),
        spread: None,
    };
    Event::CellMeasured {
        cell: usize::MAX,
        measured: Box::new(Measured {
            results: vec![result],
            message: "measured".into(),
            sends: Some(crate::engine::Sends {
                offered: rate * 10.0,
                late: 0,
                unanswered: 0,
                sent_p99_ms: Some(p99),
            }),
            ..Measured::default()
        }),
    }
}

/// Runs the cells `cells` (name, and with variants its configuration and variant) to the end
/// under `repeat`, each probe answered by a target of capacity `capacity(cell, round)`;
/// returns the status and each step taken (cell, round of its search).
fn run(
    cells: &[(&str, Option<(&str, &str)>)],
    repeat: Repeat,
    capacity: impl Fn(usize, u32) -> f64,
) -> (BenchmarkRunStatus, Vec<(usize, u32)>) {
    let now = time_from_secs(1_000);
    let (spec, workload) = specs();
    let measure = Measure::Capacity(Capacity {
        search: spec.clone(),
        workload,
        repeat,
    });
    let ctx = Ctx {
        generation: Some(1),
        now: &now,
        stop_on_failure: false,
        repeat,
        thresholds: &[],
        limits: Limits::default(),
        cells: &[],
        parallelism: Default::default(),
        measure: &measure,
        deprecations: &[],
    };
    let mut status = BenchmarkRunStatus::default();
    let admission = cells
        .iter()
        .map(|(name, of)| Admission {
            name: name.to_string(),
            variant_of: of.map(|(c, v)| (c.to_owned(), v.to_owned())),
            reserved_cpu: Some(1.0),
        })
        .collect();
    reduce(&mut status, Event::Admitted { cells: admission }, &ctx);
    let mut steps = Vec::new();
    while let Some(step) = next_step(&status) {
        let cell = step.cell;
        let cap = status.cells[cell].capacity.clone().unwrap_or_default();
        let round = cap.current_round();
        if status.cells[cell].phase == CellPhase::Pending {
            let deploying = Event::CellDeploying {
                cell,
                message: "deploying".into(),
            };
            reduce(&mut status, deploying, &ctx);
        }
        let rate = crate::engine::capacity::probe_rate(&spec, &status.cells[cell]);
        let Event::CellMeasured { measured, .. } = probe(rate, capacity(cell, round)) else {
            unreachable!()
        };
        reduce(&mut status, Event::CellMeasured { cell, measured }, &ctx);
        steps.push((cell, round));
        assert!(steps.len() < 500, "the run never ends");
    }
    reduce(&mut status, Event::Finished { interrupted: false }, &ctx);
    (status, steps)
}

#[test]
fn each_round_is_a_whole_search_on_a_fresh_target_and_the_capacity_is_their_median() {
    // The machine drifts: the same target holds 100, 90, then 110 rps.
    let truth = [100.0, 90.0, 110.0];
    let (status, _) = run(&[("a", None)], Repeat::Times(3), |_, round| {
        truth[round as usize - 1]
    });
    let c = &status.cells[0];
    assert_eq!(c.phase, CellPhase::Succeeded, "{:?}", c.message);
    let cap = c.capacity.as_ref().unwrap();
    assert_eq!(cap.rounds.len(), 3, "{:#?}", cap.rounds);
    for (r, t) in cap.rounds.iter().zip(truth) {
        let held = r.held_rate.unwrap();
        assert!(r.found, "{r:?}");
        assert!(
            held <= t && held >= t / 1.05,
            "round {} held {held} of {t}",
            r.round
        );
        // Each round started over from the start rate, its probes numbered in it.
        let first = cap
            .probes
            .iter()
            .find(|p| p.round == Some(r.round))
            .unwrap();
        assert_eq!(first.rate, 25.0, "{first:?}");
        assert_eq!(
            first.settle_seconds, None,
            "a round starts on a fresh target"
        );
    }
    let held: Vec<f64> = cap.rounds.iter().map(|r| r.held_rate.unwrap()).collect();
    let mut sorted = held.clone();
    sorted.sort_by(f64::total_cmp);
    assert!(cap.found);
    assert_eq!(cap.held_rate, Some(sorted[1]), "the median of {held:?}");
    let (low, high) = (cap.held_rate_low.unwrap(), cap.held_rate_high.unwrap());
    assert!(
        low < sorted[0] && high > sorted[2],
        "{low}..{high} of {held:?}"
    );
    assert!(
        cap.message.contains("the median of 3 rounds"),
        "{}",
        cap.message
    );
    // Every probe of the cell is kept, each with its round.
    assert_eq!(
        cap.probes.len(),
        cap.rounds
            .iter()
            .map(|r| cap.probes_in_round(r.round))
            .sum::<usize>()
    );
    assert!(cap.rounds.iter().all(|r| cap.probes_in_round(r.round) > 0));
    // The progress counts rounds as searches.
    let count = crate::engine::schedule::Measurements::of(&status, Repeat::Times(3));
    assert_eq!((count.done, count.total), (3, 3));
}

#[test]
fn a_candidate_that_holds_less_traffic_is_a_paired_regression_of_capacity() {
    // The candidate holds 20% less than the base in every round; the machine drifts 10% a
    // round, both variants alike, so only the paired ratio is steady.
    let cells = [
        ("a-base", Some(("a", "base"))),
        ("a-cand", Some(("a", "cand"))),
    ];
    let (status, steps) = run(&cells, Repeat::Times(5), |cell, round| {
        let machine = 1.0 + 0.1 * f64::from(round);
        (if cell == 0 { 100.0 } else { 80.0 }) * machine
    });
    // A round's searches run back to back, in ABBA order.
    let mut order: Vec<(usize, u32)> = steps.clone();
    order.dedup();
    assert_eq!(
        order,
        [
            (0, 1),
            (1, 1),
            (1, 2),
            (0, 2),
            (0, 3),
            (1, 3),
            (1, 4),
            (0, 4),
            (0, 5),
            (1, 5)
        ]
    );
    let v = &status.variants[0];
    assert_eq!(v.rounds, 5);
    assert_eq!(v.figures.len(), 1, "capacity alone is compared: {v:?}");
    let f = &v.figures[0];
    assert_eq!(f.figure, CAPACITY);
    assert!((0.75..=0.85).contains(&f.ratio), "{f:?}");
    assert_eq!(f.p_worse, 1.0 / 32.0, "every round worse");
    assert_eq!(f.verdict, ChangeVerdict::Regression);
    let said = crate::frontends::report::variants::figure_sentence(v, f);
    assert!(
        said.contains("cand holds") && said.contains("% less traffic than base"),
        "{said}"
    );
    let gate = RegressionGate::judge(&status, Some(10.0));
    assert!(gate.failed(), "{gate:?}");
}

#[test]
fn a_round_without_a_capacity_ends_the_cell_without_one_and_says_which() {
    // Round 2 fails even at the start rate (25 rps).
    let (status, _) = run(&[("a", None)], Repeat::Times(3), |_, round| {
        if round == 2 { 20.0 } else { 100.0 }
    });
    let cap = status.cells[0].capacity.as_ref().unwrap();
    assert_eq!(cap.rounds.len(), 2, "no third round: {:#?}", cap.rounds);
    assert!(!cap.found);
    assert!(
        cap.message
            .starts_with("round 2 of the search: failed even at the start rate")
            && cap.message.contains("round 1 held"),
        "{}",
        cap.message
    );
}

#[test]
fn a_candidate_without_a_capacity_is_not_passed_by_the_gate() {
    let cells = [
        ("a-base", Some(("a", "base"))),
        ("a-cand", Some(("a", "cand"))),
    ];
    let (status, _) = run(&cells, Repeat::Times(2), |cell, _| {
        if cell == 0 { 100.0 } else { 10.0 }
    });
    assert!(
        status.variants[0].figures.is_empty(),
        "{:?}",
        status.variants
    );
    let gate = RegressionGate::judge(&status, Some(10.0));
    assert!(
        matches!(gate, RegressionGate::Uncompared { .. }) && gate.failed(),
        "{gate:?}"
    );
}

#[test]
fn repeated_until_precise_a_steady_capacity_stops_at_min_and_a_spread_one_at_max() {
    let until = Repeat::UntilPrecise {
        min: 2,
        max: 4,
        precision: 5.0,
    };
    let (steady, _) = run(&[("a", None)], until, |_, _| 100.0);
    let c = &steady.cells[0];
    assert_eq!(c.capacity.as_ref().unwrap().rounds.len(), 2);
    assert!(c.precision.as_ref().unwrap().precise, "{:?}", c.precision);
    let (spread, _) = run(&[("a", None)], until, |_, round| {
        [60.0, 100.0, 70.0, 120.0][round as usize - 1]
    });
    let c = &spread.cells[0];
    assert_eq!(c.capacity.as_ref().unwrap().rounds.len(), 4);
    let p = c.precision.as_ref().unwrap();
    assert!(
        !p.precise && p.message.starts_with("max of 4 reached"),
        "{p:?}"
    );
}

#[test]
fn a_candidate_that_loses_its_capacity_in_a_later_round_is_not_passed() {
    // Round 1: 50 against 100; round 2: the candidate fails even at the start rate. Pairing
    // round 1 alone would give one ratio, never significant, and a gate that passes.
    let cells = [
        ("a-base", Some(("a", "base"))),
        ("a-cand", Some(("a", "cand"))),
    ];
    let (status, _) = run(&cells, Repeat::Times(5), |cell, round| {
        match (cell, round) {
            (0, _) => 100.0,
            (_, 1) => 50.0,
            _ => 10.0,
        }
    });
    assert!(!status.cells[1].capacity.as_ref().unwrap().found);
    assert!(
        status.variants[0].figures.is_empty(),
        "{:?}",
        status.variants
    );
    let gate = RegressionGate::judge(&status, Some(10.0));
    assert!(
        matches!(gate, RegressionGate::Uncompared { .. }),
        "{gate:?}"
    );
}

#[test]
fn a_failed_cell_is_the_runs_failure_not_an_uncompared_capacity() {
    let cells = [
        ("a-base", Some(("a", "base"))),
        ("a-cand", Some(("a", "cand"))),
    ];
    let (mut status, _) = run(&cells, Repeat::Times(2), |_, _| 100.0);
    // The candidate's target never became ready: its cell failed, and the run says so
    // (exit 1); the gate has nothing of its own to add.
    status.cells[1].phase = CellPhase::Failed;
    status.variants = crate::engine::results::variants::compare(&status.cells);
    status.variants[0].figures.clear();
    let gate = RegressionGate::judge(&status, Some(10.0));
    assert!(matches!(gate, RegressionGate::Held { .. }), "{gate:?}");
}
