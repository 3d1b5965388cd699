//! `benchmatrix run` as a CI gate: thresholds judged at the end of the run (exit code 3 when one
//! fails, condition ThresholdsMet, the report's section), and repetitions measured interleaved
//! with their spread.

mod local_common;

use benchmatrix::fixtures::{connections, phase};
use benchmatrix::resource::{BenchmarkRun, Configuration, Mode, Repeat, Threshold};
use local_common::{assert_valid_junit, cell, quickstart, run, run_with, status, text};

/// /fast burns about 12 ms of CPU per request: no p50 can be below a millisecond, while one
/// request a second is easily served. One threshold must fail, the other pass.
#[test]
fn a_failed_threshold_exits_3_names_itself_and_the_passing_one_holds() {
    let dir = tempfile::tempdir().unwrap();
    let gated = quickstart("0s", "2s", "1s")
        .with_cell(Configuration::named("single-x1"))
        .with_threshold(
            Threshold::p50_below("1ms")
                .in_phase("fast-only")
                .on_endpoint("fast"),
        )
        .with_threshold(
            Threshold::rps_above(1.0)
                .in_phase("fast-only")
                .on_endpoint("fast"),
        );
    let junit = dir.path().join("ci/junit.xml");
    let bench = dir.path().join("ci/bench.json");
    let (o, out) = run_with(
        dir.path(),
        &gated.to_yaml(),
        &[
            "--junit".as_ref(),
            junit.as_os_str(),
            "--benchmark-json".as_ref(),
            bench.as_os_str(),
        ],
    );
    let t = text(&o);
    assert_eq!(
        o.status.code(),
        Some(3),
        "a failed threshold is exit 3: {t}"
    );
    let st = status(&out);
    assert_eq!(
        st["phase"].as_str(),
        Some("Succeeded"),
        "the cells ran: {t}"
    );
    let gate = st["conditions"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|c| c["type"].as_str() == Some("ThresholdsMet"))
        .expect("a ThresholdsMet condition");
    assert_eq!(gate["status"].as_str(), Some("False"), "{gate:?}");
    assert!(
        gate["message"].as_str().unwrap().contains("p50"),
        "the failed threshold is named: {gate:?}"
    );
    let verdicts: Vec<&str> = st["thresholds"]
        .as_sequence()
        .expect("status.thresholds")
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["Fail", "Pass"], "{:?}", st["thresholds"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Thresholds"), "{md}");
    assert!(t.contains("thresholds:"), "the verdict is printed: {t}");
    // The CI files: the failed threshold a failed test case, the figures for the tracker.
    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuites name=\"benchmatrix t\" tests=\"3\" failures=\"1\""),
        "{xml}"
    );
    assert!(
        xml.contains("name=\"fast-only/fast p50 below 1ms [single-x1]\""),
        "{xml}"
    );
    assert!(t.contains(&format!("wrote {}", junit.display())), "{t}");
    let smaller: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("ci/bench.smaller.json")).unwrap(),
    )
    .unwrap();
    let p50 = smaller
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "fast-only/fast single-x1 p50")
        .expect("the p50 entry");
    assert_eq!(p50["unit"], "ms");
    assert!(p50["value"].as_f64().unwrap() > 1.0, "{p50}");
    let bigger: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("ci/bench.bigger.json")).unwrap(),
    )
    .unwrap();
    assert!(
        bigger
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "fast-only/fast single-x1 rps"),
        "{bigger}"
    );
}

/// Two cells, three repetitions each: measured a b a b a b (checked by when each repetition's
/// load started), every figure a median with its spread, and a gate that holds exits 0.
#[test]
fn repetitions_run_interleaved_and_a_gate_that_holds_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let repeated = quickstart("0s", "1s", "1s")
        .with_cell(Configuration::named("a"))
        .with_cell(Configuration::named("b").mode(Mode::Pool))
        .repeated(3)
        .with_threshold(
            Threshold::rps_above(1.0)
                .in_phase("fast-only")
                .on_endpoint("fast"),
        );
    let (o, out) = run(dir.path(), &repeated.to_yaml());
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let st = status(&out);
    // The order the six measurements happened in, from their completion times and, within a
    // second, from the engine's own order of entries (each cell's repetitions are in order).
    let mut done: Vec<(String, u64, String)> = Vec::new();
    for name in ["a", "b"] {
        let reps = cell(&st, name)["repetitions"]
            .as_sequence()
            .expect("repetitions kept");
        assert_eq!(reps.len(), 3, "{reps:?}");
        for r in reps {
            done.push((
                r["startTime"].as_str().unwrap().to_owned(),
                r["repetition"].as_u64().unwrap(),
                name.to_owned(),
            ));
        }
    }
    done.sort();
    let order: Vec<(u64, &str)> = done.iter().map(|(_, r, c)| (*r, c.as_str())).collect();
    // Start times have whole seconds, so compare repetition rounds: every cell's first before
    // any cell's second, and so on.
    let rounds: Vec<u64> = order.iter().map(|(r, _)| *r).collect();
    assert_eq!(rounds, [1, 1, 2, 2, 3, 3], "interleaved rounds: {order:?}");
    let fast = cell(&st, "a")["results"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|r| r["phase"].as_str() == Some("fast-only"))
        .unwrap();
    let spread = &fast["spread"];
    assert_eq!(spread["repetitions"].as_u64(), Some(3), "{fast:?}");
    let p50 = &spread["figures"]["p50"];
    assert_eq!(p50["values"].as_sequence().unwrap().len(), 3);
    assert!(p50["min"].as_f64() <= p50["median"].as_f64());
    assert!(p50["median"].as_f64() <= p50["max"].as_f64());
    assert_eq!(
        fast["latencyMs"]["p50"].as_f64(),
        p50["median"].as_f64(),
        "the cell's figure is the median"
    );
    assert!(
        spread["mergedLatencyMs"]["p50"].as_f64().is_some(),
        "the repetitions' histograms merged: {spread:?}"
    );
}

/// `repeat: {min, max, precision}` on real processes, asked for an impossible precision: the
/// cell runs `max` times and says, in the status, the closing lines and the report, that it is
/// still spread. No two repetitions' p99 are equal to a millionth, so this holds on any machine.
#[test]
fn adaptive_repetitions_stop_at_max_when_imprecise() {
    let spec = quickstart("0s", "2s", "1s")
        .with_cell(Configuration::named("a"))
        .repeated(Repeat::UntilPrecise {
            min: 2,
            max: 3,
            precision: 0.0001,
        })
        .to_yaml();
    let dir = tempfile::tempdir().unwrap();
    let (o, out) = run(dir.path(), &spec);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let st = status(&out);
    let a = cell(&st, "a");
    assert_eq!(a["repetitions"].as_sequence().unwrap().len(), 3, "{a:?}");
    let p = &a["precision"];
    assert_eq!(p["precise"].as_bool(), Some(false), "{p:?}");
    assert_eq!(p["repetitions"].as_u64(), Some(3));
    // Which figure is the least precise is the machine's: one of the cell's p99s (a phase's
    // endpoint's).
    let widest = p["widestFigure"].as_str().expect("a widest figure");
    let p99s: Vec<String> = a["results"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}/{} p99",
                r["phase"].as_str().unwrap(),
                r["endpoint"].as_str().unwrap()
            )
        })
        .collect();
    assert!(p99s.iter().any(|f| f == widest), "{widest} not in {p99s:?}");
    assert!(
        t.contains(&format!(
            "repetitions until precise: a 3 (max reached, {widest} at"
        )),
        "the closing lines say why: {t}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    // The cell's row says why (its message holds the precision's), and only there.
    assert!(
        md.contains(&format!(
            "max of 3 reached and still spread: widest {widest} at"
        )),
        "{md}"
    );
    assert!(
        !md.contains("repetitions until precise"),
        "said twice: {md}"
    );
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .starts_with("max of 3 reached"),
        "{p:?}"
    );
}

/// Asked for a loose precision, a steady cell stops well before `max` and says it is precise.
/// Steady by construction: one connection to /fast (about 12 ms of CPU a request, no queue),
/// one phase with some 250 samples a repetition, and the machine to itself (a `timing_` test
/// runs alone). Its p99 then moves by some percent between runs, and the interval over three
/// or four of them is far narrower than 100%. Among other tests on two cores the same p99 was
/// seen 122% spread over six repetitions: that is the machine, not the rule, so the rule is
/// checked where the ground truth holds.
#[test]
fn timing_adaptive_repetitions_stop_early_when_precise() {
    let spec = BenchmarkRun::sample()
        .named("t")
        .with_phases([phase("fast-only", "3s", [connections("fast", 1)])])
        .with_cell(Configuration::named("a"))
        .repeated(Repeat::UntilPrecise {
            min: 2,
            max: 8,
            precision: 100.0,
        })
        .to_yaml();
    let dir = tempfile::tempdir().unwrap();
    let (o, out) = run(dir.path(), &spec);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let st = status(&out);
    let a = cell(&st, "a");
    let taken = a["repetitions"].as_sequence().unwrap().len();
    let p = &a["precision"];
    assert_eq!(p["precise"].as_bool(), Some(true), "{p:?}");
    assert!((2..=5).contains(&taken), "stopped after {taken}: {p:?}");
    assert_eq!(p["repetitions"].as_u64(), Some(taken as u64));
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("precise after {taken}")),
        "{p:?}"
    );
    assert_eq!(
        st["progress"].as_str(),
        Some(format!("{taken}/{taken}").as_str())
    );
}

/// Base and candidate of known cost, side by side: /fast burns 4 ms of CPU per request in the
/// base and 12 ms in the candidate, so every round's ratio is near 3. Five rounds, measured in
/// ABBA order; the candidate must be caught by `--max-regression` (exit 3) and by a threshold
/// relative to the base variant, and neither a lax gate nor the base's own cells may be.
#[test]
fn a_candidate_three_times_slower_is_caught_by_the_paired_gate_and_its_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: paired}
spec:
  repeat: 5
  configurations: [{name: threads, mode: threads, cpu: "1"}]
  variants:
    - {name: base, env: [{name: BENCH_FAST_MS, value: "4"}]}
    - {name: candidate, env: [{name: BENCH_FAST_MS, value: "12"}]}
  workload:
    endpoints: [{name: fast, path: /fast}]
    warmup: 0s
    phases: [{name: steady, duration: 1s, load: [{endpoint: fast, connections: 1}]}]
  thresholds:
    - {variant: candidate, p50: {atMost: 1.5, ofVariant: base}}
"#;
    let file = dir.path().join("run.yaml");
    std::fs::write(&file, yaml).unwrap();
    let gate = |pct: &str, out: &str| {
        std::process::Command::new(local_common::exe())
            .args(["run", file.to_str().unwrap(), "--out"])
            .arg(dir.path().join(out))
            .args(["--max-regression", pct])
            .output()
            .expect("start benchmatrix run")
    };
    let o = gate("20", "strict");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("figure(s) regressed beyond 20% (--max-regression): exit 3"),
        "{t}"
    );
    let st = status(&dir.path().join("strict"));
    let variants = st["variants"].as_sequence().expect("status.variants");
    assert_eq!(variants.len(), 1, "{variants:?}");
    assert_eq!(variants[0]["rounds"].as_u64(), Some(5));
    let p50 = variants[0]["figures"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|f| f["figure"].as_str() == Some("p50"))
        .expect("a p50 ratio");
    let ratio = p50["ratio"].as_f64().unwrap();
    assert!((2.0..4.0).contains(&ratio), "12 ms over 4 ms: {p50:?}");
    assert_eq!(p50["verdict"].as_str(), Some("Regression"), "{p50:?}");
    assert!(p50["pWorse"].as_f64().unwrap() < 0.05, "{p50:?}");
    // The threshold judged the candidate only, on the ratio, and failed.
    let verdicts = st["thresholds"].as_sequence().expect("status.thresholds");
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert_eq!(verdicts[0]["cell"].as_str(), Some("threads-candidate"));
    assert_eq!(verdicts[0]["verdict"].as_str(), Some("Fail"));
    assert!(verdicts[0]["ratio"].as_f64().unwrap() > 1.5, "{verdicts:?}");
    // Rounds alternate: base first in odd rounds, the candidate first in even ones.
    let started = |cell: &str, round: usize| {
        local_common::cell(&st, cell)["repetitions"][round]["startTime"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(started("threads-base", 0) <= started("threads-candidate", 0));
    assert!(started("threads-candidate", 1) <= started("threads-base", 1));
    let md = std::fs::read_to_string(dir.path().join("strict/report.md")).unwrap();
    assert!(md.contains("## Variants"), "{md}");
    assert!(
        md.contains("| threads | candidate vs base steady/fast p50 |"),
        "{md}"
    );
}
