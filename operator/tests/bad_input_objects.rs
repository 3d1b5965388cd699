//! A malformed BenchmarkRun that the CRD schema would refuse, but that reaches the operator
//! anyway (schema skew, an object written before a CRD upgrade, a status written by another
//! version), never panics a reconcile: thousands of them, generated from the samples by a seeded
//! generator, each end in a clear refusal or a run that goes on.
//!
//! The generator mutates valid objects rather than writing random ones: a random object is
//! refused at its first field, while a valid one with one node broken reaches every check
//! behind it. It is a small xorshift generator, not `proptest`: the objects are JSON trees with
//! their own shapes (a sample, a status built by the engine), which the mutations walk
//! directly, and a failure names its seed and mutations, replayed with `BAD_INPUT_SEED`.
//!
//! Two halves:
//! - the object as the operator's watch reads it (text, decoded as `DeserializeGuard` with
//!   serde_json's own limits), then one reconcile's turn of the engine (`adapter::turn`, which
//!   validates it as `ValidatedRun::for_cluster` does) or, for an object that does not decode,
//!   the patch that marks it refused (`write::malformed_status`);
//! - a valid run whose status is broken: one that does not decode is marked refused as above;
//!   one that does is driven by the machine (`engine::machine::advance`) through several turns
//!   of facts an executor may see, and what it writes decodes again.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use benchmatrix::engine::machine::{self, QueuePlace, Ready, Seen};
use benchmatrix::engine::verdict::outcome::Outcome;
use benchmatrix::engine::{Cause, Ctx, Measured};
use benchmatrix::executors::cluster::adapter::{self, Observation, Settings};
use benchmatrix::executors::cluster::reconciler::write::malformed_status;
use benchmatrix::resource::conditions::{self, time_from_secs};
use benchmatrix::resource::size::{Moment, Shape, worst_status};
use benchmatrix::resource::status::RecordedPod;
use benchmatrix::resource::{BenchmarkRun, BenchmarkRunStatus, CellResult, LatencyMs};
use benchmatrix::resource::{RunPhase, ValidatedRun};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::core::DeserializeGuard;
use serde_json::{Value, json};

/// Objects thrown at each half.
const CASES: u64 = 1_500;

/// A list made huge holds up to 100,000 items, in at most this many bytes: an object the API
/// server takes (a request of at most 3 MiB), and that a debug build reads in milliseconds.
const HUGE_LIST: usize = 400_000;

/// Where a node is replaced by an object nested this deep: the placeholder, and the depths
/// (below serde_json's limit of 128 levels, where the object decodes and the nesting reaches the
/// code, and above it, up to what the API server's own decoder accepts).
const DEEP: &str = "@@deep@@";
const DEPTHS: [usize; 4] = [60, 120, 200, 10_000];

/// A small seeded generator (xorshift64*): the same seed, the same objects everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// The base seed: `BAD_INPUT_SEED` replays a failure; each case's seed follows from it.
fn base_seed() -> u64 {
    std::env::var("BAD_INPUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED)
}

fn samples() -> Vec<(String, BenchmarkRun)> {
    let dir = format!("{}/../manifests/samples", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(format!("{dir}/{n}")).unwrap();
            let mut run = benchmatrix::resource::validate::parse_benchmark_run(&text)
                .unwrap_or_else(|e| panic!("{n}: {e}"));
            run.metadata.namespace = Some("default".into());
            run.metadata.generation = Some(1);
            (n, run)
        })
        .collect()
}

fn now(at: i64) -> Time {
    time_from_secs(1_700_000_000 + at)
}

/// The status after one reconcile of `run` on an empty cluster: admitted, its first step being
/// deployed (a status as the engine writes it).
fn after_a_turn(run: &BenchmarkRun) -> BenchmarkRunStatus {
    adapter::turn(run, &Observation::default(), &now(0), &Settings::default()).status
}

/// Each sample as an object: without a status, with the status of its first reconcile, and
/// with a status of every field the engine writes (its largest, while running and finished,
/// for at most 2 repetitions and 2 probes a cell and with short histograms, so that a case
/// takes milliseconds).
fn objects() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (name, run) in samples() {
        let mut shape = Shape::of(&run.spec);
        shape.repeat = shape.repeat.min(2);
        if let Some((probes, _)) = &mut shape.capacity {
            *probes = (*probes).min(2);
        }
        let mut running = worst_status(&shape, Moment::Running);
        running.phase = RunPhase::Running;
        for c in &mut running.cells {
            // Their budget (128 KiB) says nothing more than a few characters do.
            c.histograms.values_mut().for_each(|h| h.truncate(64));
        }
        let statuses = [
            ("no status", None),
            ("first turn", Some(after_a_turn(&run))),
            ("largest, running", Some(running)),
            (
                "largest, finished",
                Some(worst_status(&shape, Moment::Finished)),
            ),
        ];
        for (what, status) in statuses {
            let mut object = run.clone();
            object.status = status;
            out.push((
                format!("{name} ({what})"),
                serde_json::to_value(&object).unwrap(),
            ));
        }
    }
    out
}

/// A node of `v` reached by a random walk down from it (stopping on the way now and then),
/// and its path.
fn some_node<'a>(v: &'a mut Value, rng: &mut Rng, path: &mut String) -> &'a mut Value {
    let children = match v {
        Value::Array(a) => a.len(),
        Value::Object(o) => o.len(),
        _ => 0,
    };
    if children == 0 || rng.chance(0.15) {
        return v;
    }
    let i = rng.below(children);
    match v {
        Value::Array(a) => {
            path.push_str(&format!("/{i}"));
            some_node(&mut a[i], rng, path)
        }
        Value::Object(o) => {
            let (key, child) = o.iter_mut().nth(i).unwrap();
            path.push('/');
            path.push_str(key);
            some_node(child, rng, path)
        }
        _ => v,
    }
}

/// Every node of `v` that `wanted` picks (by its key and value), as JSON pointers.
fn pointers(
    v: &Value,
    at: &str,
    key: &str,
    wanted: &dyn Fn(&str, &Value) -> bool,
    out: &mut Vec<String>,
) {
    if wanted(key, v) {
        out.push(at.to_owned());
    }
    match v {
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, &format!("{at}/{i}"), key, wanted, out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let escaped = k.replace('~', "~0").replace('/', "~1");
                pointers(x, &format!("{at}/{escaped}"), k, wanted, out);
            }
        }
        _ => {}
    }
}

/// A value of another type than `like` (or of an odd size): the kinds of wrong a field takes.
fn another_value(like: &Value, rng: &mut Rng) -> Value {
    let odd = [
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(4_294_967_296u64),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e308),
        json!(-1e308),
        json!(0.5),
        json!(5e-324),
        json!(""),
        json!("-1"),
        json!("1e999"),
        json!("🙂\u{0}\u{2028}"),
        json!("<&>".repeat(3_000)),
        json!([]),
        json!([like.clone()]),
        json!({}),
        json!({"unknown": like.clone()}),
    ];
    for _ in 0..8 {
        let v = odd[rng.below(odd.len())].clone();
        if std::mem::discriminant(&v) != std::mem::discriminant(like) {
            return v;
        }
    }
    Value::Null
}

/// A value of the same type as `like` that the schema refuses or the code may not expect: out
/// of range, empty, too long, doubled.
fn odd_of_its_kind(like: &Value, rng: &mut Rng) -> Value {
    let pick = |rng: &mut Rng, xs: Vec<Value>| xs[rng.below(xs.len())].clone();
    match like {
        Value::Number(_) => pick(
            rng,
            vec![
                json!(0),
                json!(-1),
                json!(1e308),
                json!(-1e308),
                json!(4_294_967_296u64),
                json!(1e-9),
                json!(65_536),
                json!(i64::MAX),
            ],
        ),
        Value::String(_) => pick(
            rng,
            vec![
                json!(""),
                json!(" "),
                json!("x".repeat(300)),
                json!("a/b\u{0}"),
                json!("1e999"),
                json!("-5s"),
                json!("0s"),
                json!("99999999999999999999h"),
                json!("1.5.5"),
                json!("🙂"),
            ],
        ),
        Value::Bool(b) => json!(!b),
        Value::Array(a) if rng.chance(0.5) => json!(a.iter().chain(a).cloned().collect::<Vec<_>>()),
        Value::Array(_) => json!([]),
        Value::Object(_) => json!({}),
        Value::Null => json!(0),
    }
}

/// Keys whose values are names from a closed list (phases, verdicts, endpings, purposes...).
const ENUM_KEYS: [&str; 12] = [
    "phase", "verdict", "ending", "purpose", "outcome", "state", "mode", "check", "status",
    "cleanup", "figure", "type",
];

/// A status as a later version might write it: another shape for the same facts.
fn foreign_status(status: &Value, rng: &mut Rng) -> Value {
    fn snake(v: &Value) -> Value {
        match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| {
                        let mut s = String::new();
                        for c in k.chars() {
                            if c.is_ascii_uppercase() {
                                s.push('_');
                            }
                            s.push(c.to_ascii_lowercase());
                        }
                        (s, snake(x))
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(snake).collect()),
            other => other.clone(),
        }
    }
    match rng.below(4) {
        0 => snake(status),
        1 => json!({
            "phase": "Measuring",
            "measure": {"kind": "Sizing", "stage": {"Confirming": {"probes": 3}}},
            "cells": {"single-x1": {"phase": "Done", "capacity": {"ending": {"kind": "Found"}}}},
            "observedGeneration": "7",
        }),
        2 => {
            let mut s = status.clone();
            if let Some(o) = s.as_object_mut() {
                o.insert("phase".into(), json!("Paused"));
                o.insert("conditions".into(), json!({"SpecValid": true}));
                o.insert("summary".into(), json!("moved to a ConfigMap"));
            }
            s
        }
        _ => json!({"version": 2, "results": [{"cell": "a", "p99": "12ms"}]}),
    }
}

/// Breaks `object` once, somewhere under `root` (a JSON pointer: "" for the whole object);
/// says how. A node nested very deep is left as [`DEEP`] in `deep` for the text.
fn mutate(object: &mut Value, root: &str, rng: &mut Rng, deep: &mut Option<usize>) -> String {
    let Some(top) = object.pointer_mut(root) else {
        return format!("nothing at {root}");
    };
    match rng.below(48) {
        0..=13 => {
            let mut path = root.to_owned();
            let node = some_node(top, rng, &mut path);
            let was = node.clone();
            *node = another_value(&was, rng);
            format!("retyped {path}")
        }
        14..=23 => {
            let mut path = root.to_owned();
            let node = some_node(top, rng, &mut path);
            let was = node.clone();
            *node = odd_of_its_kind(&was, rng);
            format!("odd value at {path}")
        }
        24..=29 => {
            let mut found = Vec::new();
            let enums = rng.chance(0.7);
            let wanted = |k: &str, v: &Value| v.is_string() && (!enums || ENUM_KEYS.contains(&k));
            pointers(top, "", "", &wanted, &mut found);
            let Some(at) = found.get(rng.below(found.len())).cloned() else {
                return "no text to rename".into();
            };
            *top.pointer_mut(&at).unwrap() = json!(format!("Bogus{}", rng.below(1000)));
            format!("unknown name at {root}{at}")
        }
        30 => {
            let mut found = Vec::new();
            pointers(top, "", "", &|_: &str, v: &Value| v.is_array(), &mut found);
            let at = match found.get(rng.below(found.len())) {
                Some(at) => at.clone(),
                None => String::new(),
            };
            let list = top.pointer_mut(&at).unwrap();
            let item = match list {
                Value::Array(a) if !a.is_empty() => a[rng.below(a.len())].clone(),
                _ => json!("x"),
            };
            let each = serde_json::to_string(&item).unwrap().len() + 1;
            let n = 100_000.min(HUGE_LIST / each).max(2);
            *list = Value::Array(vec![item; n]);
            format!("{n} items at {root}{at}")
        }
        31..=34 => {
            let depth = DEPTHS[rng.below(DEPTHS.len())];
            let templates = [
                "/spec/target/podTemplate",
                "/spec/repeat",
                "/spec/variants/0/podTemplate",
            ];
            let mut at = if root == "/spec" && rng.chance(0.7) {
                templates[rng.below(templates.len())].to_owned()
            } else {
                let mut path = root.to_owned();
                some_node(top, rng, &mut path);
                path
            };
            if object.pointer(&at).is_none() {
                // No variants: the target's template, set where it was left out.
                at = "/spec/target/podTemplate".into();
                if let Some(target) = object
                    .pointer_mut("/spec/target")
                    .and_then(Value::as_object_mut)
                {
                    target.insert("podTemplate".into(), Value::Null);
                }
            }
            match object.pointer_mut(&at) {
                Some(node) if deep.is_none() => {
                    *node = json!(DEEP);
                    *deep = Some(depth);
                    format!("{depth} levels at {at}")
                }
                _ => "no room for a deep template".into(),
            }
        }
        35..=40 => {
            let mut path = root.to_owned();
            let node = some_node(top, rng, &mut path);
            match node.as_object_mut() {
                Some(o) if !o.is_empty() => {
                    let key = o.keys().nth(rng.below(o.len())).cloned().unwrap();
                    o.remove(&key);
                    format!("removed {path}/{key}")
                }
                Some(o) => {
                    o.insert("zzFuture".into(), json!({"from": "v1beta2"}));
                    format!("unknown field at {path}")
                }
                None => match node.as_array_mut() {
                    Some(a) if !a.is_empty() => {
                        let i = rng.below(a.len());
                        a.remove(i);
                        format!("removed {path}/{i}")
                    }
                    _ => format!("left {path}"),
                },
            }
        }
        41..=44 => {
            let mut path = root.to_owned();
            let node = some_node(top, rng, &mut path);
            if let Some(o) = node.as_object_mut() {
                o.insert(
                    format!("zzField{}", rng.below(100)),
                    another_value(&Value::Null, rng),
                );
            }
            format!("unknown field at {path}")
        }
        _ => {
            let status = object.get("status").cloned().unwrap_or(Value::Null);
            object["apiVersion"] = json!("benchmatrix.dev/v1beta1");
            object["status"] = foreign_status(&status, rng);
            "a status of another version".into()
        }
    }
}

/// `object` as the API server sends it, with [`DEEP`] nested `deep` levels deep.
fn text_of(object: &Value, deep: Option<usize>) -> String {
    let text = serde_json::to_string(object).unwrap();
    match deep {
        Some(depth) => text.replacen(
            &format!("\"{DEEP}\""),
            &format!("{}{{}}{}", "{\"a\":".repeat(depth), "}".repeat(depth)),
            1,
        ),
        None => text,
    }
}

/// How an object ended with the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ended {
    /// The text is not a document serde_json reads (nested past its 128 levels).
    Unreadable,
    /// It decodes as JSON but not as a BenchmarkRun: marked refused.
    Marked,
    /// Its spec was refused: SpecValid False.
    Refused,
    /// Accepted, or already finished: the run went on (or waits for its TTL).
    WentOn,
}

fn is_refused(status: &BenchmarkRunStatus) -> bool {
    conditions::find(&status.conditions, conditions::SPEC_VALID)
        .is_some_and(|c| c.status == conditions::status::FALSE)
}

/// What the operator does with the object `text`: its watch decodes it, then one reconcile.
fn reconcile(text: &str) -> Ended {
    let guard = match serde_json::from_str::<DeserializeGuard<BenchmarkRun>>(text) {
        Ok(guard) => guard,
        Err(e) => {
            assert!(e.to_string().contains("recursion limit exceeded"), "{e}");
            return Ended::Unreadable;
        }
    };
    let run = match guard.0 {
        Ok(run) => run,
        Err(invalid) => {
            let patch = malformed_status(&invalid);
            let marked: BenchmarkRunStatus = serde_json::from_value(patch["status"].clone())
                .expect("the mark is a status this version reads");
            assert_eq!(Outcome::of(&marked), Outcome::Refused, "{patch}");
            return Ended::Marked;
        }
    };
    let before = run.status.clone().unwrap_or_default();
    let finished = before.phase.is_finished();
    let valid = ValidatedRun::for_cluster(run.clone()).is_ok();
    let mut turned = run.clone();
    for at in 0..2 {
        let turn = adapter::turn(
            &turned,
            &Observation::default(),
            &now(at),
            &Settings::default(),
        );
        let written = serde_json::to_string(&turn.status).unwrap();
        let read: BenchmarkRunStatus = serde_json::from_str(&written).expect("it reads back");
        assert_eq!(read.phase, turn.status.phase);
        turned.status = Some(turn.status);
    }
    let status = turned.status.unwrap_or_default();
    // Refused now: the spec failed validation (or Pod Security, which needs the namespace);
    // a finished run is not validated again.
    let refused = is_refused(&status) && status.phase == RunPhase::Failed && !is_refused(&before);
    if finished {
        Ended::WentOn
    } else if !valid || refused {
        assert!(
            is_refused(&status) && status.phase == RunPhase::Failed,
            "a spec that does not validate went on: {status:?}"
        );
        Ended::Refused
    } else {
        Ended::WentOn
    }
}

/// Runs `case` for `CASES` seeds, each under `catch_unwind`, and tallies how each ended; a
/// panic or a slow case fails the test with its seed and what was done.
fn each_case(what: &str, mut case: impl FnMut(&mut Rng) -> (String, Ended)) {
    let base = base_seed();
    let mut tally = std::collections::BTreeMap::new();
    let mut slowest = (Duration::ZERO, String::new());
    let started = Instant::now();
    for i in 0..CASES {
        let seed = base.wrapping_add(i);
        let mut rng = Rng::new(seed);
        let t = Instant::now();
        let ended = catch_unwind(AssertUnwindSafe(|| case(&mut rng)));
        let took = t.elapsed();
        match ended {
            Ok((said, ended)) => {
                *tally.entry(ended).or_insert(0) += 1;
                if took > slowest.0 {
                    slowest = (took, format!("seed {seed}: {said}"));
                }
            }
            Err(_) => panic!("{what}: seed {seed} (BAD_INPUT_SEED={seed}) panicked, see above"),
        }
    }
    eprintln!(
        "{what}: {CASES} objects in {:.1} s: {tally:?}; slowest {:.0} ms ({})",
        started.elapsed().as_secs_f64(),
        slowest.0.as_secs_f64() * 1000.0,
        slowest.1
    );
    assert!(slowest.0 < Duration::from_secs(5), "{what}: {slowest:?}");
}

/// Objects broken anywhere (spec, status, the whole): each ends refused, marked refused, unread
/// by the JSON decoder (nested past its limit), or goes on as a valid run; never a panic.
#[test]
fn a_malformed_object_is_refused_never_a_panic() {
    let objects = objects();
    each_case("objects", |rng| {
        let (name, base) = &objects[rng.below(objects.len())];
        let mut object = base.clone();
        let mut deep = None;
        let mut said = vec![name.clone()];
        for _ in 0..1 + rng.below(3) {
            // Metadata is the API server's, valid whatever the schema says; the rest may not be.
            let root = match rng.below(20) {
                0..=11 => "/spec",
                12..=18 => "/status",
                _ => ["/apiVersion", "/kind"][rng.below(2)],
            };
            said.push(mutate(&mut object, root, rng, &mut deep));
        }
        let text = text_of(&object, deep);
        let said = said.join("; ");
        eprintln!("{said}");
        (said, reconcile(&text))
    });
}

/// Facts an executor may see of a run's current step, some of each at random: a step ready or
/// not, a result measured (of the run's own phases and endpoints) or failed, a replica that
/// exited, a load generator that failed, time passing.
fn some_facts(v: &ValidatedRun, rng: &mut Rng) -> Seen {
    let mut seen = Seen {
        queue: Some(QueuePlace {
            active: 0,
            ahead: 0,
            max_active: 1,
        }),
        ..Seen::default()
    };
    if rng.chance(0.5) {
        seen.ready = Some(Ok(Ready {
            message: "ready".into(),
            target_pods: vec![RecordedPod {
                name: "t-1".into(),
                node: Some("n".into()),
                uid: "u".into(),
                restarts: 0,
            }],
        }));
    }
    if rng.chance(0.3) {
        let probe;
        let workload = match v.spec().capacity.as_ref() {
            Some(c) => {
                probe = c.probe_workload(&v.spec().workload, c.start_rate);
                &probe
            }
            None => &v.spec().workload,
        };
        let results = workload
            .phases
            .iter()
            .flat_map(|p| {
                p.load
                    .iter()
                    .map(move |s| (p.name.clone(), s.endpoint.clone()))
            })
            .map(|(phase, endpoint)| CellResult {
                phase,
                endpoint,
                requests: 1_000,
                samples: 1_000,
                rps: 100.0,
                latency_ms: Some(LatencyMs {
                    p50: 1.0,
                    p90: 2.0,
                    p99: 3.0,
                    p999: 4.0,
                    max: 5.0,
                    mean: 1.5,
                }),
                ..CellResult::default()
            })
            .collect();
        seen.load_exited = true;
        seen.result = Some(Ok(Box::new(Measured {
            results,
            message: "measured".into(),
            sends: Some(benchmatrix::engine::Sends {
                offered: 1_000.0,
                late: 0,
                unanswered: 0,
                sent_p99_ms: Some(1.0),
            }),
            ..Measured::default()
        })));
    } else if rng.chance(0.1) {
        seen.result = Some(Err((Cause::ResultUnparsable, "garbled".into())));
    }
    if rng.chance(0.05) {
        seen.replica_exited = Some("t-1 restarted".into());
    }
    if rng.chance(0.05) {
        seen.load_failed = Some((Cause::LoadgenFailed, "exit 1".into()));
    }
    if rng.chance(0.05) {
        seen.target_missing = true;
    }
    seen
}

/// Valid runs whose status is broken: one that does not decode is marked refused, as any object
/// that does not decode; one that does is driven through several turns of the machine with the
/// facts an executor may see, and each status it writes reads back; never a panic.
#[test]
fn a_malformed_status_is_refused_or_driven_never_a_panic() {
    let runs: Vec<(Value, ValidatedRun)> = objects()
        .into_iter()
        .filter(|(_, o)| o.get("status").is_some())
        .filter_map(|(_, o)| {
            let run: BenchmarkRun = serde_json::from_value(o.clone()).ok()?;
            Some((o, ValidatedRun::for_cluster(run).ok()?))
        })
        .collect();
    assert!(runs.len() >= 20, "{}", runs.len());
    each_case("statuses", |rng| {
        let (base, v) = &runs[rng.below(runs.len())];
        let mut object = base.clone();
        let mut said = vec![v.run().metadata.name.clone().unwrap_or_default()];
        let mut deep = None;
        for _ in 0..1 + rng.below(3) {
            said.push(mutate(&mut object, "/status", rng, &mut deep));
        }
        let said = said.join("; ");
        eprintln!("{said}");
        // A status left out or null is none: the object is read as a run not yet started.
        let status = match object.get("status") {
            Some(s) if deep.is_none() && !s.is_null() => {
                serde_json::from_value::<BenchmarkRunStatus>(s.clone())
            }
            _ => return (said, reconcile(&text_of(&object, deep))),
        };
        let Ok(mut status) = status else {
            let ended = reconcile(&text_of(&object, deep));
            assert_eq!(ended, Ended::Marked, "a status that does not decode");
            return (said, ended);
        };
        for at in 0..4 {
            let when = now(at * 30);
            let ctx = Ctx::of(v, Some(1), &when);
            machine::advance(&mut status, some_facts(v, rng), &ctx);
        }
        let written = serde_json::to_string(&status).unwrap();
        serde_json::from_str::<BenchmarkRunStatus>(&written).expect("it reads back");
        let ended = if is_refused(&status) {
            Ended::Refused
        } else {
            Ended::WentOn
        };
        (said, ended)
    });
}
