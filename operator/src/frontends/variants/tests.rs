use super::*;
use crate::engine::verdict::exit;
use crate::frontends::compare::CompareOptions;
use crate::frontends::compare::within::compare_within;
use crate::frontends::report::variants::{closing_lines, report_section, table};
use crate::resource::{CellPhase, CellResult, CellStatus, LatencyMs, RepetitionStatus};
use std::process::ExitCode;

/// A cell of configuration `threads` and variant `variant`, measured in one round per value
/// of `p50s` (milliseconds; p99 twice that, rps a fixed 100 over it).
fn cell(variant: &str, p50s: &[f64]) -> CellStatus {
    let repetitions = p50s
        .iter()
        .enumerate()
        .map(|(i, &p50)| RepetitionStatus {
            repetition: i as u32 + 1,
            phase: CellPhase::Succeeded,
            results: vec![CellResult {
                phase: "mixed".into(),
                endpoint: "fast".into(),
                requests: 5000,
                samples: 5000,
                rps: 1000.0 / p50,
                latency_ms: Some(LatencyMs {
                    p50,
                    p99: 2.0 * p50,
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        })
        .collect();
    CellStatus {
        name: format!("threads-{variant}"),
        configuration: Some("threads".into()),
        variant: Some(variant.into()),
        phase: CellPhase::Succeeded,
        repetitions,
        ..Default::default()
    }
}

/// The status the engine writes for a base and a candidate measured in the same rounds.
fn status(base: &[f64], candidate: &[f64]) -> BenchmarkRunStatus {
    let cells = vec![cell("base", base), cell("candidate", candidate)];
    BenchmarkRunStatus {
        variants: crate::engine::results::variants::compare(&cells),
        cells,
        ..Default::default()
    }
}

/// Six rounds with drift between them (the base moves 30% from round to round) and the
/// candidate 8% slower in every one.
fn eight_percent_slower() -> BenchmarkRunStatus {
    let base = [20.0, 26.0, 21.0, 24.0, 19.5, 25.0];
    let candidate: Vec<f64> = base.iter().map(|b| b * 1.08).collect();
    status(&base, &candidate)
}

/// The exit code and the lines a finished run `status` prints under `--max-regression max`.
fn gated(status: &BenchmarkRunStatus, max: Option<f64>) -> (u8, Vec<String>) {
    let mut lines = Vec::new();
    let gate = GateArgs {
        max_regression: max,
    };
    let code = finish(status, &gate, |line| lines.push(line.to_owned()));
    (code, lines)
}

#[test]
fn a_consistent_slowdown_fails_the_gate_below_it_and_passes_above_it() {
    let s = eight_percent_slower();
    let (code, lines) = gated(&s, Some(3.0));
    assert_eq!(code, exit::GATE_FAILED, "{lines:?}");
    // p50 and p99 are 8% higher, throughput 8% lower (measured as latency is).
    assert!(
        lines[0].starts_with("3 figure(s) regressed beyond 3%"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("threads: candidate vs base mixed/fast p50 +8.0% (ratio 1.080"),
        "{lines:?}"
    );
    let (code, lines) = gated(&s, Some(10.0));
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(
        lines,
        ["no candidate regressed beyond 10% (--max-regression)"]
    );
}

#[test]
fn without_the_option_or_after_an_interrupt_the_code_stands() {
    use crate::resource::conditions::{self, Reason, now, set_condition, status as cs};
    let s = eight_percent_slower();
    assert_eq!(gated(&s, None), (0, Vec::new()));
    let with_condition = |type_: &str, value: &str, reason: Reason| {
        let mut s = eight_percent_slower();
        set_condition(&mut s.conditions, type_, value, reason, "", None, &now());
        s
    };
    let interrupted = with_condition(conditions::COMPLETE, cs::TRUE, Reason::Interrupted);
    assert_eq!(gated(&interrupted, Some(0.0)), (130, Vec::new()));
    let refused = with_condition(conditions::SPEC_VALID, cs::FALSE, Reason::InvalidSpec);
    assert_eq!(gated(&refused, Some(0.0)), (2, Vec::new()));
    // A failed cell elsewhere: the regression is still what the gate answers.
    let mut one_failed = eight_percent_slower();
    one_failed.cells.push(CellStatus {
        name: "other".into(),
        phase: CellPhase::Failed,
        ..Default::default()
    });
    assert_eq!(gated(&one_failed, None).0, 1);
    assert_eq!(gated(&one_failed, Some(0.0)).0, exit::GATE_FAILED);
}

#[test]
fn noise_without_a_direction_is_not_a_regression() {
    // The candidate is as often faster as slower: the median ratio is near 1, p is large.
    let base = [20.0, 20.0, 20.0, 20.0, 20.0, 20.0];
    let candidate = [21.0, 19.0, 20.8, 19.2, 21.5, 18.8];
    let s = status(&base, &candidate);
    let (code, _) = gated(&s, Some(0.0));
    assert_eq!(code, 0);
    // Five rounds all in one direction (p = 1/32) is enough evidence; four (p = 1/16) is not.
    let five = status(&[20.0; 5], &[21.0; 5]);
    let four = status(&[20.0; 4], &[21.0; 4]);
    assert_eq!(gated(&five, Some(3.0)).0, exit::GATE_FAILED);
    assert_eq!(gated(&four, Some(3.0)).0, 0);
}

#[test]
fn a_run_without_variants_says_the_gate_had_nothing_to_judge() {
    let (code, lines) = gated(&BenchmarkRunStatus::default(), Some(5.0));
    assert_eq!(code, 0);
    assert!(lines[0].contains("compared no variants"), "{lines:?}");
}

#[test]
fn the_table_shows_both_sides_the_ratio_its_interval_and_the_verdict() {
    let table = table(&eight_percent_slower().variants, None);
    let p99 = table
        .lines()
        .find(|l| l.contains("mixed/fast p99"))
        .unwrap();
    assert!(
        p99.starts_with("| threads | candidate vs base mixed/fast p99 | 45.00 ms | 48.60 ms | 1.080 (+8.0%) | 1.080–1.080 | 0.016 | regression |"),
        "{p99}"
    );
    let rps = table.lines().find(|l| l.contains("rps")).unwrap();
    assert!(rps.contains("(+8.0%)"), "{rps}");
    assert!(report_section(&BenchmarkRunStatus::default(), None).is_empty());
    assert!(report_section(&eight_percent_slower(), None).contains("## Variants"));
}

/// The exit code, the terminal's lines, report.md's table and the JUnit case say the same of
/// one figure under one `--max-regression`: a +4% candidate (within the status's own 5% rule)
/// gated at 3% is a regression everywhere; a +8% one (a regression by that rule) gated at 10%
/// passes everywhere.
#[test]
fn the_exit_code_the_terminal_the_report_and_junit_agree_under_max_regression() {
    let base = [20.0, 26.0, 21.0, 24.0, 19.5, 25.0];
    let slower = |by: f64| -> BenchmarkRunStatus {
        let candidate: Vec<f64> = base.iter().map(|b| b * by).collect();
        status(&base, &candidate)
    };
    for (by, max, regressed_everywhere) in [(1.04, 3.0, true), (1.08, 10.0, false)] {
        let s = slower(by);
        let (code, _) = gated(&s, Some(max));
        assert_eq!(
            code == exit::GATE_FAILED,
            regressed_everywhere,
            "+{by} at {max}%: exit {code}"
        );
        let p50_line = |lines: &[String]| -> String {
            lines
                .iter()
                .find(|l| l.contains("mixed/fast p50"))
                .cloned()
                .unwrap_or_default()
        };
        let terminal = p50_line(&closing_lines(&s, Some(max)));
        let report: Vec<String> = report_section(&s, Some(max))
            .lines()
            .map(String::from)
            .collect();
        let report = p50_line(&report);
        for (what, line) in [("terminal", &terminal), ("report.md", &report)] {
            assert_eq!(
                line.contains(&format!("regression beyond {max}%")),
                regressed_everywhere,
                "+{by} at {max}%: {what}: {line}"
            );
            if !regressed_everywhere {
                assert!(
                    line.contains(&format!("worse, within {max}%")),
                    "{what}: {line}"
                );
            }
        }
        let junit = crate::frontends::report::junit::junit_xml("gate", &s, Some(max));
        assert_eq!(
            junit.contains("<failure"),
            regressed_everywhere,
            "+{by} at {max}%: {junit}"
        );
    }
}

#[test]
fn base_and_candidate_images_become_the_specs_variants() {
    let text = "apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: gate}\nspec:\n  target: {image: app:latest}\n";
    let out = with_images(text, "app:main", "app:pr-12").unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&out).unwrap();
    let variants = &doc["spec"]["variants"];
    assert_eq!(variants[0]["name"], "base");
    assert_eq!(variants[0]["image"], "app:main");
    assert_eq!(variants[1]["name"], "candidate");
    assert_eq!(variants[1]["image"], "app:pr-12");
    assert_eq!(doc["spec"]["target"]["image"], "app:latest");

    let already = format!("{text}  variants: [{{name: a}}, {{name: b}}]\n");
    assert!(
        with_images(&already, "x", "y")
            .unwrap_err()
            .contains("already sets spec.variants")
    );
    assert!(
        with_images(text, "app main", "y")
            .unwrap_err()
            .contains("--base \"app main\" is not an image reference")
    );
    assert!(
        with_images("kind: X\n", "x", "y")
            .unwrap_err()
            .contains("no spec")
    );
}

#[test]
fn compare_with_one_run_gates_its_variants_and_writes_the_table() {
    use crate::frontends::compare::{CompareOptions, Compared};
    let dir = tempfile::tempdir().unwrap();
    let options = |max_regression: f64, out: Option<std::path::PathBuf>| CompareOptions {
        out,
        max_regression,
        min_change: 5.0,
    };
    let run = Compared {
        label: "pr/status.yaml".into(),
        status: eight_percent_slower(),
    };
    let code = compare_within(&run, &options(0.0, Some(dir.path().into())), "test");
    assert_eq!(code, ExitCode::from(exit::GATE_FAILED));
    let md = std::fs::read_to_string(dir.path().join("compare.md")).unwrap();
    assert!(
        md.starts_with("# Variants\n\n- run: `pr/status.yaml`"),
        "{md}"
    );
    assert!(
        md.contains("3 figure(s) regressed beyond 0% (--max-regression): exit 3"),
        "{md}"
    );
    // +8% passes a 10% gate.
    assert_eq!(
        compare_within(&run, &options(10.0, None), "test"),
        ExitCode::SUCCESS
    );
    // It gates as the run does: at 7%, +8% fails both, whatever --min-change (two runs') says.
    let mut wide = options(7.0, None);
    wide.min_change = 10.0;
    let (outcome, _) = Outcome::gated(&run.status, Some(7.0));
    assert_eq!(outcome.code(), exit::GATE_FAILED);
    assert_eq!(
        compare_within(&run, &wide, "test"),
        ExitCode::from(exit::GATE_FAILED)
    );
    // A run without variants has nothing to show: bad input, as two runs are needed then.
    let plain = Compared {
        label: "x".into(),
        status: BenchmarkRunStatus::default(),
    };
    assert_eq!(
        compare_within(&plain, &options(0.0, None), "test"),
        ExitCode::from(exit::BAD_INPUT)
    );
}

/// A run whose every candidate round failed compared nothing: `compare RUN` must not pass it.
#[test]
fn variants_that_compared_no_round_exit_2() {
    let mut s = eight_percent_slower();
    for c in &mut s.cells {
        c.phase = CellPhase::Failed;
        for r in &mut c.repetitions {
            r.phase = CellPhase::Failed;
            r.results.clear();
        }
    }
    s.variants = crate::engine::results::variants::compare(&s.cells);
    assert!(!s.variants.is_empty() && s.variants.iter().all(|c| c.figures.is_empty()));
    let run = crate::frontends::compare::Compared {
        label: "all-failed.yaml".into(),
        status: s,
    };
    let options = CompareOptions {
        out: None,
        max_regression: 0.0,
        min_change: 0.0,
    };
    let code = compare_within(&run, &options, "benchmatrix compare");
    assert_eq!(code, ExitCode::from(exit::BAD_INPUT));
}

/// One gate default: the Action's input and its script say the number the binary uses.
#[test]
fn the_action_gates_at_the_binary_s_default() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let action = std::fs::read_to_string(format!("{root}/action.yml")).unwrap();
    let input = action.split("\n  max-regression:").nth(1).unwrap();
    let default = input
        .lines()
        .find_map(|l| l.trim().strip_prefix("default:"))
        .unwrap();
    let default: f64 = default.trim().trim_matches('"').parse().unwrap();
    assert_eq!(default, crate::frontends::variants::DEFAULT_MAX_REGRESSION);
    let script = std::fs::read_to_string(format!("{root}/scripts/action/run.sh")).unwrap();
    let want = format!(
        "MAX_REGRESSION=\"${{MAX_REGRESSION:-{}}}\"",
        crate::frontends::variants::DEFAULT_MAX_REGRESSION
    );
    assert!(script.contains(&want), "scripts/action/run.sh lacks {want}");
}
