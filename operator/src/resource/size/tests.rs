use crate::engine::Cause;
use std::collections::BTreeMap;

use benchmatrix_loadgen::histogram;
use benchmatrix_loadgen::result::{
    PhaseResult, ReplicaStats, RunResult, StatsSnapshot as Snapshot, StreamResult,
};
use serde_json::Value;

use super::*;
use crate::engine::results;
use crate::engine::{self, Ctx, Event, Measured};
use crate::fixtures::{connections, endpoint, phase, rate};
use crate::resource::ValidatedRun;
use crate::resource::validate::{parse_benchmark_run, validate_for_cluster};
use crate::resource::{Configuration, Mode, Threshold, Workload};

mod searches;

fn sample(name: &str) -> String {
    let path = format!(
        "{}/../manifests/samples/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

const SAMPLES: [&str; 8] = [
    "capacity",
    "sizing",
    "quickstart",
    "ci-gate",
    "ci-smoke",
    "node-express",
    "open-loop",
    "replicas-vs-pool",
];

/// A run of `cells` cells of one replica, `phases` phases of `streams` streams each and
/// `repeat`, every name as long as the schema allows (cells 40, endpoints and phases 63, the
/// run 63 characters).
fn spec(cells: usize, repeat: u32, phases: usize, streams: usize) -> BenchmarkRun {
    spec_with_replicas(cells, 1, repeat, phases, streams)
}

/// [`spec`] with `replicas` replicas in every cell.
fn spec_with_replicas(
    cells: usize,
    replicas: u32,
    repeat: u32,
    phases: usize,
    streams: usize,
) -> BenchmarkRun {
    let endpoint_name = |e: usize| format!("e{e:02}-{}", "y".repeat(59));
    let load = || (0..streams).map(|e| connections(&endpoint_name(e), 1));
    let mut run = BenchmarkRun::sample()
        .named(&"r".repeat(63))
        .repeated(repeat)
        .with_endpoints((0..streams).map(|e| endpoint(&endpoint_name(e), &format!("/e{e}"))))
        .with_phases(
            (0..phases).map(|p| phase(&format!("p{p:02}-{}", "z".repeat(59)), "1s", load())),
        );
    for c in 0..cells {
        run = run.with_cell(
            Configuration::named(&format!("c{c:02}-{}", "x".repeat(36)))
                .replicas(replicas)
                .cpu("100m"),
        );
    }
    run
}

fn run_of(yaml: &str) -> BenchmarkRun {
    parse_benchmark_run(yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"))
}

fn refusal_of(run: &BenchmarkRun) -> Option<String> {
    match validate_for_cluster(run) {
        Ok(()) => None,
        Err(e) => Some(e.to_string()),
    }
}

/// The API server's length of the largest status of `run`, built in full at both moments,
/// with the run around it.
fn built_object(run: &BenchmarkRun) -> usize {
    let shape = Shape::of(&run.spec);
    let mut applied = run.clone();
    [Moment::Running, Moment::Finished]
        .into_iter()
        .map(|m| {
            applied.status = Some(worst_status(&shape, m));
            len(&applied)
        })
        .max()
        .unwrap()
}

#[test]
fn the_bound_is_the_size_of_the_status_it_describes() {
    let mut shapes: Vec<Shape> = SAMPLES
        .iter()
        .map(|s| Shape::of(&run_of(&sample(s)).spec))
        .collect();
    // Names the API server writes longer than serde_json does, in every list.
    let odd = Shape {
        cells: vec![("a".into(), 3), ("b-<&>".into(), 1), ("é".into(), 2)],
        variants_of: vec![
            ("c<".into(), "base".into()),
            ("c<".into(), "cand&".into()),
            ("é".into(), "base".into()),
        ],
        comparisons: vec![
            ("c<".into(), vec!["cand&".into()]),
            ("é".into(), vec!["cand&".into()]),
        ],
        phases: vec!["solo<".into(), "mixed\u{8}".into()],
        streams: vec![
            ("solo<".into(), "fast&".into()),
            ("mixed\u{8}".into(), "fast&".into()),
            ("mixed\u{8}".into(), "slow\"".into()),
        ],
        repeat: 4,
        adaptive: true,
        generators: 3,
        slots: 0,
        thresholds: vec![vec![0, 2], vec![], vec![1]],
        interference: vec![("fast&".into(), "solo<".into(), "mixed\u{8}".into())],
        capacity: Some((3, vec!["fast&".into(), "slow\"".into()])),
        sizing: Some((
            vec!["single-x1-cpu1-w<1".into(), "pool-x2-cpu500m-wé".into()],
            vec![crate::resource::EnvVar::new("W<", "é&")],
        )),
    };
    shapes.push(odd.clone());
    shapes.push(Shape {
        adaptive: false,
        ..odd.clone()
    });
    shapes.push(odd.with_repeat(1));
    // A capacity run's cells search in rounds; a sizing run's also check at a fixed rate.
    shapes.push(Shape {
        sizing: None,
        ..odd.clone()
    });
    let sized = Shape {
        variants_of: Vec::new(),
        comparisons: Vec::new(),
        thresholds: Vec::new(),
        ..odd.clone()
    };
    shapes.push(sized.largest_configurations(2).with_max_probes(2));
    // Many cells: a small histogram share, then none at all.
    shapes.push(Shape::of(&spec(64, 3, 1, 2).spec));
    shapes.push(Shape::of(&spec(64, 2, 2, 4).spec));
    for shape in &shapes {
        for moment in [Moment::Running, Moment::Finished] {
            assert_eq!(
                status_bound(shape, moment),
                len(&worst_status(shape, moment)),
                "{moment:?} {shape:#?}"
            );
        }
    }
    assert_eq!(bound::histogram_share(64, 4), Some(512));
    assert!(
        worst_status(&shapes[shapes.len() - 2], Moment::Running).cells[0]
            .histograms
            .values()
            .all(|h| h.len() == 1024)
    );
    assert!(
        worst_status(&shapes[shapes.len() - 1], Moment::Running).cells[0]
            .histograms
            .is_empty()
    );
}

/// Every field of the status schema appears in the largest status (at one moment or the
/// other), so a field added later is counted or this fails.
#[test]
fn the_largest_status_sets_every_field_of_the_schema() {
    use kube::CustomResourceExt;
    let crd = serde_json::to_value(BenchmarkRun::crd()).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
    // Adaptive repetitions, so that each cell's precision is there too.
    let shape = Shape {
        adaptive: true,
        capacity: Some((2, vec!["fast".into()])),
        ..Shape::of(&run_of(&sample("ci-gate")).spec).with_repeat(5)
    };
    let mut docs: Vec<Value> = [Moment::Running, Moment::Finished]
        .into_iter()
        .map(|m| serde_json::to_value(worst_status(&shape, m)).unwrap())
        .collect();
    // Where two forms exclude each other the bound counts the longer; both are counted here.
    let (e, solo, mixed) = &shape.interference[0];
    let both = Summary {
        comparisons: vec![Comparison {
            cells: cell_ratios(&shape, "a").to_vec(),
            ..comparison(&shape, "p", "e", false)
        }],
        interference: interferences("a", e, solo, mixed).to_vec(),
        ..Summary::default()
    };
    docs.push(serde_json::json!({"summary": both}));
    // A node's neighbours: with their figures, or why they are missing.
    let forms = neighbour_forms();
    docs.push(serde_json::json!({"cells": [{
        "neighbours": forms,
        "repetitions": [{"neighbours": forms}],
    }]}));
    // With variants (cells name their configuration and variant; the finished run compares
    // them), and measured once (a cell records its nodes itself).
    let mut variants = shape.with_repeat(1);
    variants.variants_of = shape
        .cells
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (name.clone(), format!("v{}", i % 2)))
        .collect();
    variants.comparisons = vec![(shape.cells[0].0.clone(), vec!["v1".into()])];
    // In parallel (the run records its slots, each cell its current one).
    variants.slots = 2;
    for m in [Moment::Running, Moment::Finished] {
        docs.push(serde_json::to_value(worst_status(&variants, m)).unwrap());
    }
    // Sized (a search over configurations, with a check at a fixed rate in each cell).
    let sized = Shape {
        sizing: Some((
            shape.cells.iter().map(|(n, _)| n.clone()).collect(),
            vec![crate::resource::EnvVar::new("W", "1")],
        )),
        ..shape.clone()
    };
    for m in [Moment::Running, Moment::Finished] {
        docs.push(serde_json::to_value(worst_status(&sized, m)).unwrap());
    }
    let mut missing = Vec::new();
    unset_fields(
        schema,
        &docs.iter().collect::<Vec<_>>(),
        "status",
        &mut missing,
    );
    // A repetition's results are its own figures: a spread exists only over repetitions.
    let never = ["status.cells[].repetitions[].results[].spread"];
    assert_eq!(missing, never, "fields the size bound does not count");
}

fn unset_fields(schema: &Value, docs: &[&Value], path: &str, out: &mut Vec<String>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (key, sub) in props {
            let at = format!("{path}.{key}");
            let children: Vec<&Value> = docs.iter().filter_map(|d| d.get(key)).collect();
            if children.is_empty() {
                out.push(at);
            } else {
                unset_fields(sub, &children, &at, out);
            }
        }
    }
    if let Some(items) = schema.get("items") {
        let children: Vec<&Value> = docs.iter().filter_map(|d| d.as_array()).flatten().collect();
        unset_fields(items, &children, &format!("{path}[]"), out);
    }
    if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        let children: Vec<&Value> = docs
            .iter()
            .filter_map(|d| d.as_object())
            .flat_map(|m| m.values())
            .collect();
        unset_fields(values, &children, &format!("{path}.*"), out);
    }
}

/// A histogram of `n` latencies spread log-uniformly from `lo` to `hi` µs (deterministic).
fn wide_histogram(n: u64, lo: f64, hi: f64) -> String {
    let mut h = histogram::new_histogram(histogram::PHASE_SIGFIG);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        histogram::record(&mut h, (lo.ln() + u * (hi.ln() - lo.ln())).exp() as u64);
    }
    histogram::encode(&h)
}

/// Words a pod or a target could say: long, and full of what the API server escapes.
fn words(n: usize) -> String {
    "<pod said & did> \"quoted\"\u{8} é ".repeat(n / 30 + 1)
}

/// A load generator's document for `workload` with the longest figures a real one holds.
fn document(workload: &Workload, replicas: u32, small: &str, big: &str) -> RunResult {
    let snapshot = Snapshot {
        mode: Some(words(500)),
        quota_source: Some(words(2000)),
        host_cpus: Some(1.000_000_000_000_1e15),
        detected_cpus: Some(1.000_000_000_000_1e15),
        cpu_quota: Some(0.000_012_345_678_901_234_5),
        pool_size: Some(1.000_000_000_000_1e15),
        cpu_seconds_used: Some(0.000_012_345_678_901_234_5),
        rss_bytes: Some(1.234_567_890_123_456_7e300),
        rss_peak_bytes: Some(1.234_567_890_123_456_7e300),
        ..Snapshot::default()
    };
    let phases = workload
        .phases
        .iter()
        .map(|p| PhaseResult {
            name: p.name.clone(),
            duration_secs: 1.0,
            streams: p
                .load
                .iter()
                .enumerate()
                .map(|(i, s)| StreamResult {
                    endpoint: s.endpoint.clone(),
                    requests: u64::MAX / 8,
                    errors: u64::MAX / 9,
                    rps: 0.000_012_345_678_901_234_5,
                    latency_ms: Some(LatencyMs {
                        p50: 1_234_567.890_123_456_7,
                        p90: 0.000_012_345_678_901_234_5,
                        p99: 2_345_678.901_234_567,
                        p999: 3_456_789.012_345_678,
                        max: 1.234_567_890_123_456_7e300,
                        mean: 0.000_012_345_678_901_234_5,
                    }),
                    histogram: if i == 0 { big } else { small }.to_owned(),
                    ..StreamResult::default()
                })
                .collect(),
            target_stats: (0..replicas)
                .map(|r| ReplicaStats {
                    address: format!("[fd00:1234:5678:9abc:def0:1234:5678:{r:04x}]:65535"),
                    start: Some(snapshot.clone()),
                    end: Some(snapshot.clone()),
                    cpu_seconds_in_phase: Some(0.000_012_345_678_901_234_5),
                    requests_served_in_phase: Some(1.234_567_890_123_456_7e300),
                    error: None,
                })
                .collect(),
            started_unix_ms: None,
        })
        .collect();
    RunResult {
        version: 1,
        target: words(100),
        threads: 1,
        generators: 1,
        preflight_seconds: Some(1.234_567_890_123_456_7e300),
        phases,
    }
}

/// The real engine, told the longest things executors can tell it, never writes a status larger
/// than the bound: checked after every event of a repeated run with thresholds, interference,
/// recorded pods, histograms too large for their share, and a failed last repetition.
#[test]
fn a_real_run_told_the_longest_words_stays_within_its_bound() {
    // Names the API server writes longer than serde_json does: markup, quotes, a non-ASCII
    // letter.
    let (fast, mixed) = ("fast<&>", "mixed \"quoted\"");
    let run = BenchmarkRun::sample()
        .named("bounded")
        .repeated(3)
        .with_load_generators(2)
        .with_cell(Configuration::named("single-x1"))
        .with_cell(
            Configuration::named("pool-x3-with-a-name-of-forty-characters")
                .mode(Mode::Pool)
                .replicas(3),
        )
        .with_cell(
            Configuration::named("threads-x2")
                .mode(Mode::Threads)
                .replicas(2),
        )
        .with_cell(Configuration::named("last").replicas(2))
        .with_endpoints([
            endpoint(fast, "/fast"),
            endpoint("slow", "/slow"),
            endpoint("é", "/e"),
        ])
        .with_phases([
            phase("solo", "5s", [connections(fast, 2)]),
            phase(
                mixed,
                "5s",
                [connections(fast, 2), rate("slow", 3.0), connections("é", 2)],
            ),
        ])
        .with_threshold(
            Threshold::p99_below("1ms")
                .on_cells("*-x?")
                .in_phase("solo")
                .on_endpoint(fast),
        )
        .with_threshold(
            Threshold::rps_at_least(0.5, "single-x1")
                .in_phase(mixed)
                .on_endpoint("slow"),
        )
        .with_threshold(
            Threshold::error_rate_below(0.01)
                .in_phase(mixed)
                .on_endpoint("é"),
        );
    let v = ValidatedRun::new(run).unwrap();
    let shape = Shape::of(v.spec());
    let (running, finished) = (
        status_bound(&shape, Moment::Running),
        status_bound(&shape, Moment::Finished),
    );
    let small = wide_histogram(2_000, 1_000.0, 2_000.0);
    let big = wide_histogram(200_000, 100.0, 1e6);
    let share = bound::histogram_share(4, 4).unwrap();
    assert!(small.len() < share / 3 && big.len() > share, "{share}");

    let mut status = BenchmarkRunStatus::default();
    let mut largest = 0;
    let mut apply = |status: &mut BenchmarkRunStatus, event: Event, at: i64| {
        let now = time_from_secs(at);
        let ctx = Ctx::of(&v, Some(i64::MAX), &now);
        engine::reduce(status, event, &ctx);
        let size = len(status);
        let bound = if status.phase.is_finished() {
            finished
        } else {
            running
        };
        assert!(size <= bound, "{size} > {bound} after {at}: {status:#?}");
        largest = largest.max(size);
    };
    apply(&mut status, Event::admitted(v.cells()), 0);
    let mut t = 1;
    while let Some(step) = engine::next_step(&status) {
        let cell = &v.cells()[step.cell];
        let message = words(5_000);
        apply(
            &mut status,
            Event::CellDeploying {
                cell: step.cell,
                message: message.clone(),
            },
            t,
        );
        let pods = (0..2 * cell.replicas)
            .map(|i| RecordedPod {
                name: format!("{}-{i:05}", "p".repeat(57)),
                // The longest node name recorded, and every pod on a node of its own: while a
                // replica is replaced the ready pods (up to twice the replicas, with the
                // Deployment's surge) can span that many nodes, and a failed repetition keeps
                // them all.
                node: Some(format!("{}{}", "n".repeat(62), i)),
                uid: "0123456789abcdef0123456789abcdef0123".into(),
                restarts: i32::MAX,
            })
            .collect();
        apply(
            &mut status,
            Event::LoadStarted {
                cell: step.cell,
                message: message.clone(),
                target_pods: pods,
            },
            t,
        );
        let event = if step.cell == 3 && step.repetition == 3 {
            Event::CellFailed {
                cell: step.cell,
                cause: Cause::LoadgenFailed,
                message,
                overhead_seconds: Some(0.000_012_345_678_901_234_5),
                enforcement: None,
            }
        } else {
            let doc = document(&v.spec().workload, cell.replicas, &small, &big);
            Event::CellMeasured {
                cell: step.cell,
                measured: Box::new(Measured {
                    results: results::cell_results(&doc),
                    target: results::target_stats(&doc),
                    enforcement: Some(Enforcement {
                        target: words(300),
                        loadgen: Some(words(300)),
                        detail: Some(words(5_000)),
                    }),
                    overhead_seconds: Some(1.234_567_890_123_456_7e300),
                    message,
                    histograms: results::histograms(&doc),
                    sends: None,
                    // Every node busy with more pods than are listed, at names longer than
                    // kept, but one whose figures are missing, at length.
                    neighbours: (0..cell.replicas)
                        .map(|i| crate::resource::status::Neighbours {
                            node: format!("{}{i}", "n".repeat(62)),
                            foreign_cpu: Some(1.234_567_890_123_456_7e300),
                            window_seconds: Some(0.000_012_345_678_901_234_5),
                            busy: true,
                            pods: (0..9)
                                .map(|_| crate::resource::status::NeighbourPod {
                                    pod: words(500),
                                    cpu: 1.234_567_890_123_456_7e300,
                                })
                                .collect(),
                            more_pods: Some(u32::MAX),
                            missing: (i == 1).then(|| words(5_000)),
                        })
                        .collect(),
                    neighbours_missing: Some(words(5_000)),
                }),
            }
        };
        apply(&mut status, event, t);
        t += 100_000;
    }
    apply(&mut status, Event::Finished { interrupted: false }, t);
    // The run went where the bound looks: merged latencies (from the histograms that fit),
    // verdicts on every selected cell, interference, and a failed cell.
    let merged: Vec<bool> = status.cells[0]
        .results
        .iter()
        .map(|r| r.spread.as_ref().unwrap().merged_latency_ms.is_some())
        .collect();
    assert_eq!(merged, [false, false, true, true]);
    assert!(status.cells.iter().all(|c| c.histograms.is_empty()));
    assert!(status.cells.iter().all(|c| c.target_pods.is_empty()));
    // "*-x?" selects single-x1 and threads-x2; the others every cell.
    assert_eq!(status.thresholds.len(), 2 + 4 + 4);
    assert_eq!(status.summary.as_ref().unwrap().interference.len(), 3);
    assert_eq!(status.cells[3].phase, CellPhase::Failed);
    // Each measured repetition records its nodes' neighbours, clipped to their bounds.
    // Started against 6 ready pods on 6 nodes, a cell of 3 replicas keeps 3 of them: what the
    // bound counts, a failed repetition included.
    let pool = &status.cells[1].repetitions[0];
    assert_eq!(pool.nodes.len(), 3, "3 replicas, 6 pods on 6 nodes");
    assert_eq!(pool.neighbours.len(), 3);
    assert_eq!(status.cells[3].repetitions[2].phase, CellPhase::Failed);
    assert_eq!(status.cells[3].repetitions[2].nodes.len(), 2);
    assert!(pool.neighbours[0].busy && pool.neighbours[0].pods.len() == 3);
    assert_eq!(pool.neighbours[0].more_pods, Some(u32::MAX));
    assert!(pool.neighbours[1].missing.is_some() && pool.neighbours[1].pods.is_empty());
    // The finished status, the one that stays, is not far off its bound.
    let at_the_end = len(&status);
    assert!(
        at_the_end * 2 > finished,
        "{at_the_end} of {finished} ({largest})"
    );
}

/// Walks `build(k)` up from `from` while the cluster accepts it: returns the largest accepted
/// `k`, after checking that the largest status of that run, built in full, fits the limit and
/// that one more is refused, saying by how much and what to reduce.
fn largest_accepted(from: usize, build: impl Fn(usize) -> BenchmarkRun) -> (usize, String) {
    let mut k = from;
    assert_eq!(refusal_of(&build(k)), None, "{}", build(k).to_yaml());
    while refusal_of(&build(k + 1)).is_none() {
        k += 1;
    }
    let run = build(k);
    let object = built_object(&run);
    assert!(object <= OBJECT_LIMIT, "{object}");
    assert_eq!(object, largest_object(&run, &Shape::of(&run.spec)));
    let refused = refusal_of(&build(k + 1)).unwrap();
    assert!(
        refused.starts_with("spec: the run's object could grow to 1.")
            && refused.contains("MiB once its status holds every figure")
            && refused.contains("more than the 1 MiB a BenchmarkRun may take")
            && refused.contains("; or fewer "),
        "{refused}"
    );
    (k, refused)
}

/// The largest runs along each axis the schema bounds (with every name as long as allowed):
/// their largest status, built in full, is under the 1 MiB limit; one step more is refused.
/// docs/book/src/kubernetes/running.md ("Sizing: what a cell needs") quotes these numbers.
#[test]
fn the_largest_accepted_runs_fit_and_one_more_is_refused() {
    // 64 cells of one stream: repeated at most 3 times (each repetition records its node and
    // the node's neighbours).
    let (repeat, refused) = largest_accepted(1, |r| spec(64, r as u32, 1, 1));
    assert_eq!(repeat, 3);
    assert!(
        refused.contains("(64 cells x 4 repetitions x 1 streams)")
            && refused.contains(
                "it fits with spec.repeat 3 (now 4), or with only the first 60 of its 64 cells; \
                 or fewer streams in spec.workload.phases[].load"
            ),
        "{refused}"
    );
    // 64 cells measured once: 9 streams.
    assert_eq!(largest_accepted(1, |s| spec(64, 1, 1, s)).0, 9);
    // One cell repeated 20 times: 6 phases of 8 streams (48 streams).
    assert_eq!(largest_accepted(1, |p| spec(1, 20, p, 8)).0, 6);
    // The quickstart's 3 streams, repeated 5 times: 31 cells.
    assert_eq!(largest_accepted(1, |c| spec(c, 5, 1, 3)).0, 31);
    // 64 cells of 3 streams measured once: 14 replicas each (a share of every phase apiece, and
    // the nodes they ran on with their neighbours).
    let (replicas, refused) = largest_accepted(1, |r| spec_with_replicas(64, r as u32, 1, 1, 3));
    assert_eq!(replicas, 14);
    assert!(refused.ends_with(", or fewer replicas"), "{refused}");
}

#[test]
fn the_run_of_the_issue_is_refused_at_its_first_reconcile_with_what_fits() {
    // 64 cells, repeat 20, 4 phases of 8 streams: the schema accepts it.
    let mut run = spec(64, 20, 4, 8);
    let refused = refusal_of(&run).unwrap();
    assert!(
        refused.starts_with("spec: the run's object could grow to ")
            && refused.contains("(64 cells x 20 repetitions x 32 streams)")
            && refused.ends_with(
                "it fits with only the first of its 64 cells; or fewer streams in spec.workload.phases[].load"
            ),
        "{refused}"
    );
    let size: f64 = refused["spec: the run's object could grow to ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(size > 20.0, "{refused}");
    // Locally nothing is refused: the status is a file.
    assert!(ValidatedRun::new(run.clone()).is_ok());
    // Once running (an operator that counted otherwise admitted it), it is left to finish.
    run.status = Some(BenchmarkRunStatus {
        phase: RunPhase::Running,
        ..Default::default()
    });
    assert!(validate_for_cluster(&run).is_ok());
    // Pending (queued) is not started yet.
    run.status.as_mut().unwrap().phase = RunPhase::Pending;
    assert!(validate_for_cluster(&run).is_err());
}

#[test]
fn every_sample_fits_with_room() {
    for name in SAMPLES {
        let run = run_of(&sample(name));
        let size = largest_object(&run, &Shape::of(&run.spec));
        assert!(size < OBJECT_LIMIT / 2, "{name}: {size}");
        assert_eq!(validate_for_cluster(&run), Ok(()), "{name}");
    }
}

#[test]
fn the_spread_names_its_figures_as_the_bound_counts_them() {
    let rep = |p99: f64| RepetitionStatus {
        phase: CellPhase::Succeeded,
        results: vec![CellResult {
            phase: "p".into(),
            endpoint: "e".into(),
            requests: 10,
            samples: 10,
            rps: 1.0,
            latency_ms: Some(LatencyMs {
                p99,
                ..LatencyMs::default()
            }),
            ..CellResult::default()
        }],
        ..RepetitionStatus::default()
    };
    let merged = results::repeat::merge(&[rep(1.0), rep(2.0)], &BTreeMap::new());
    let keys: Vec<&str> = merged[0]
        .spread
        .as_ref()
        .unwrap()
        .figures
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = FIGURES.to_vec();
    expected.sort();
    assert_eq!(keys, expected);
}

/// The way to fewer repetitions is one the validation accepts: an adaptive `max` is never
/// suggested below its `min`, nor the adaptive form below two repetitions.
#[test]
fn fewer_repetitions_are_suggested_in_a_form_the_spec_accepts() {
    use crate::resource::Repeat;
    let adaptive = Repeat::UntilPrecise {
        min: 4,
        max: 10,
        precision: 5.0,
    };
    assert_eq!(
        fewer_repetitions(&Repeat::Times(6), 5),
        "spec.repeat 5 (now 6)"
    );
    assert_eq!(
        fewer_repetitions(&adaptive, 6),
        "spec.repeat.max 6 (now 10)"
    );
    assert_eq!(
        fewer_repetitions(&adaptive, 3),
        "spec.repeat.min and spec.repeat.max 3 (now 4 and 10)"
    );
    assert_eq!(
        fewer_repetitions(&adaptive, 1),
        "spec.repeat 1, a plain count (now {min: 4, max: 10})"
    );
    let suggested = [
        Repeat::UntilPrecise {
            min: 4,
            max: 6,
            precision: 5.0,
        },
        Repeat::UntilPrecise {
            min: 3,
            max: 3,
            precision: 5.0,
        },
        Repeat::Times(1),
    ];
    for repeat in suggested {
        let yaml = BenchmarkRun::sample()
            .with_cell(Configuration::named("a"))
            .repeated(repeat)
            .to_yaml();
        assert!(
            crate::resource::validate::parse_benchmark_run(&yaml).is_ok(),
            "the suggestion {repeat:?} is accepted"
        );
    }
    let below_two = BenchmarkRun::sample()
        .with_cell(Configuration::named("a"))
        .repeated(Repeat::UntilPrecise {
            min: 1,
            max: 1,
            precision: 5.0,
        })
        .to_yaml();
    assert!(
        crate::resource::validate::parse_benchmark_run(&below_two).is_err(),
        "the adaptive form below two is refused, so it is never suggested"
    );
}
