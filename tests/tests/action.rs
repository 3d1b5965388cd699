//! The GitHub Action (action.yml) against the script that does its work
//! (scripts/action/run.sh) and its documentation (docs/book/src/ci.md):
//!
//! - every input reaches the script as the variable of its name in capitals (`-` as `_`), with
//!   the same default on both sides, so the script run by hand behaves as the action;
//! - no `run:` step holds a `${{ }}` expression (an input spliced into shell code could inject a
//!   command), and every output is one the script writes;
//! - every input and output is in the documentation's tables with the action's default, and the
//!   documentation's example workflow passes only inputs the action has, the required ones
//!   included;
//! - the job summary (scripts/action/summary.sh) made from a report.md and a compare.md rendered
//!   by benchmatrix itself keeps the tables a reviewer reads and drops the images.
//!
//! The script's flow (order of steps, exit codes) is checked against stand-ins by
//! tests/action/selftest.sh, and actionlint checks the action's inputs through
//! .github/workflows/bench.yml (scripts/check-delivery.sh runs both).

use std::collections::BTreeMap;
use std::process::{Command, ExitCode};

use serde_yaml::Value;

use benchmatrix_tests::repo_root;

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn action() -> Value {
    serde_yaml::from_str(&read("action.yml")).expect("action.yml parses")
}

/// The action's inputs: name -> default ("" when none), plus whether it is required.
fn inputs(action: &Value) -> BTreeMap<String, (String, bool)> {
    action["inputs"]
        .as_mapping()
        .expect("action.yml has inputs")
        .iter()
        .map(|(name, spec)| {
            let default = match &spec["default"] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => panic!("input {name:?}: default {other:?} is not a string"),
            };
            let required = spec["required"].as_bool().unwrap_or(false);
            (name.as_str().unwrap().to_owned(), (default, required))
        })
        .collect()
}

fn steps(action: &Value) -> &Vec<Value> {
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    action["runs"]["steps"]
        .as_sequence()
        .expect("a composite action has steps")
}

/// The step that runs scripts/action/run.sh.
fn run_step(action: &Value) -> &Value {
    let step = steps(action)
        .iter()
        .find(|s| s["id"].as_str() == Some("run"))
        .expect("a step with id: run");
    assert_eq!(
        step["run"].as_str().map(str::trim),
        Some(r#"bash "${GITHUB_ACTION_PATH}/scripts/action/run.sh""#)
    );
    step
}

fn env_name(input: &str) -> String {
    input.to_uppercase().replace('-', "_")
}

/// The script's default for variable `name`, from its `readonly NAME="${NAME:-default}"`.
fn script_default(script: &str, name: &str) -> Option<String> {
    let re = regex::Regex::new(&format!(
        r#"(?m)^readonly {name}="\$\{{{name}:-([^}}]*)\}}"$"#
    ))
    .unwrap();
    re.captures(script).map(|c| c[1].to_owned())
}

#[test]
fn every_input_reaches_the_script_under_its_own_name_with_the_same_default() {
    let action = action();
    let script = read("scripts/action/run.sh");
    let env = run_step(&action)["env"]
        .as_mapping()
        .expect("the run step passes the inputs as env");
    let inputs = inputs(&action);
    assert!(!inputs.is_empty());
    for (input, (default, _)) in &inputs {
        let name = env_name(input);
        assert_eq!(
            env.get(name.as_str()).and_then(Value::as_str),
            Some(format!("${{{{ inputs.{input} }}}}").as_str()),
            "input {input} must reach the script as env {name}: ${{{{ inputs.{input} }}}}"
        );
        assert_eq!(
            script_default(&script, &name).as_deref(),
            Some(default.as_str()),
            "scripts/action/run.sh must read {name} with the action's default {default:?} \
             (readonly {name}=\"${{{name}:-{default}}}\")"
        );
    }
    // Nothing else: a variable the action sets that is not an input would be a hidden knob.
    for key in env.keys() {
        let key = key.as_str().unwrap();
        assert!(
            inputs.keys().any(|i| env_name(i) == key),
            "env {key} of the run step is not an input"
        );
    }
}

#[test]
fn no_run_step_splices_an_expression_into_shell_code() {
    let action = action();
    let runs: Vec<&str> = steps(&action)
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect();
    assert!(!runs.is_empty());
    for run in runs {
        assert!(
            !run.contains("${{"),
            "a run: step holds an expression; pass it through env instead: {run}"
        );
    }
}

#[test]
fn every_output_is_one_the_script_writes() {
    let action = action();
    let script = read("scripts/action/run.sh");
    let outputs = action["outputs"].as_mapping().expect("outputs");
    assert!(outputs.len() >= 2);
    for (name, spec) in outputs {
        let name = name.as_str().unwrap();
        assert_eq!(
            spec["value"].as_str(),
            Some(format!("${{{{ steps.run.outputs.{name} }}}}").as_str()),
            "output {name}"
        );
        assert!(
            script.contains(&format!("echo \"{name}=")),
            "scripts/action/run.sh never writes output {name} to $GITHUB_OUTPUT"
        );
    }
}

#[test]
fn the_out_folder_is_uploaded_even_when_the_run_fails() {
    let action = action();
    let upload = steps(&action)
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .expect("an upload-artifact step");
    assert_eq!(upload["if"].as_str(), Some("always()"));
    assert_eq!(upload["with"]["path"].as_str(), Some("${{ inputs.out }}"));
    assert_eq!(
        upload["with"]["name"].as_str(),
        Some("${{ inputs.artifact-name }}")
    );
}

#[test]
fn report_html_is_uploaded_alone_for_the_comment_to_link() {
    let action = action();
    let upload = steps(&action)
        .iter()
        .find(|s| s["with"]["name"].as_str() == Some("${{ inputs.artifact-name }}-report"))
        .expect("an upload step of report.html");
    assert_eq!(upload["if"].as_str(), Some("always()"));
    let paths = upload["with"]["path"].as_str().unwrap_or_default();
    assert!(paths.contains("${{ inputs.out }}/report.html"), "{paths}");
    assert!(paths.contains("forest.svg"), "{paths}");
}

/// The rows of the Markdown table whose header's first cell is `first`: first cell (without
/// backticks) -> the other cells.
fn doc_table(doc: &str, first: &str) -> BTreeMap<String, Vec<String>> {
    let cells = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_owned())
            .collect()
    };
    let mut lines = doc
        .lines()
        .skip_while(|l| !l.starts_with('|') || cells(l).first().map(String::as_str) != Some(first));
    assert!(lines.next().is_some(), "no table headed '{first}'");
    lines
        .skip(1) // the |---| rule
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let mut c = cells(l);
            let key = c.remove(0).trim_matches('`').to_owned();
            (key, c)
        })
        .collect()
}

#[test]
fn every_input_and_output_is_documented_with_its_default() {
    let action = action();
    let doc = read("docs/book/src/ci.md");
    let documented = doc_table(&doc, "input");
    let inputs = inputs(&action);
    assert_eq!(
        documented.keys().collect::<Vec<_>>(),
        inputs.keys().collect::<Vec<_>>(),
        "docs/book/src/ci.md's inputs table and action.yml's inputs differ"
    );
    for (input, (default, required)) in &inputs {
        let want = match (required, default.is_empty()) {
            (true, _) => "required".to_owned(),
            (false, true) => "empty".to_owned(),
            (false, false) => format!("`{default}`"),
        };
        assert_eq!(
            documented[input][0], want,
            "docs/book/src/ci.md: the default of {input}"
        );
    }
    let outputs: std::collections::BTreeSet<String> = action["outputs"]
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        doc_table(&doc, "output")
            .into_keys()
            .collect::<std::collections::BTreeSet<_>>(),
        outputs,
        "docs/book/src/ci.md's outputs table and action.yml's outputs differ"
    );
}

#[test]
fn the_documented_workflow_passes_only_inputs_the_action_has() {
    let action = action();
    let inputs = inputs(&action);
    let doc = read("docs/book/src/ci.md");
    let yaml: String = doc
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("docs/book/src/ci.md starts with a yaml example")
        .to_owned();
    let workflow: Value = serde_yaml::from_str(&yaml).expect("the example workflow parses");
    let steps = workflow["jobs"]["bench"]["steps"]
        .as_sequence()
        .expect("jobs.bench.steps");
    let uses = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("benchmatrix/benchmatrix@"))
        })
        .expect("the example uses benchmatrix/benchmatrix@...");
    let with = uses["with"].as_mapping().expect("with:");
    for key in with.keys() {
        let key = key.as_str().unwrap();
        assert!(
            inputs.contains_key(key),
            "the example passes {key}, which action.yml lacks"
        );
    }
    for (input, (_, required)) in &inputs {
        if *required {
            assert!(
                with.contains_key(input.as_str()),
                "the example leaves out the required {input}"
            );
        }
    }
}

#[test]
fn the_summary_keeps_the_tables_of_a_real_report_and_comparison_without_images() {
    let root = repo_root();
    let fixtures = root.join("operator/tests/fixtures/compare");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // report.md and compare.md as benchmatrix renders them.
    let report = benchmatrix::frontends::report::run(benchmatrix::frontends::report::ReportArgs {
        status: fixtures.join("base.yaml"),
        out: Some(out.clone()),
        max_regression: None,
    });
    assert_eq!(report, ExitCode::SUCCESS);
    let compare =
        benchmatrix::frontends::compare::run(benchmatrix::frontends::compare::CompareArgs {
            base: fixtures.join("base.yaml"),
            new: Some(fixtures.join("new-regression.yaml")),
            options: benchmatrix::frontends::compare::CompareOptions {
                out: Some(out.join("compare")),
                max_regression: 10.0,
                min_change: 5.0,
            },
        });
    assert_eq!(
        compare,
        ExitCode::from(3),
        "the fixture pair holds a regression"
    );
    let report_md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report_md.contains("\n![") && report_md.contains("\n## Target resources"),
        "the fixture's report has images and a resources section, so dropping them is tested"
    );

    let summary = Command::new("bash")
        .arg(root.join("scripts/action/summary.sh"))
        .args([
            "--title",
            "bench/my-run.yaml",
            "--verdict",
            "a regression (exit 3)",
        ])
        .arg("--report")
        .arg(out.join("report.md"))
        .arg("--compare")
        .arg(out.join("compare/compare.md"))
        .args(["--files", "Files: the artifact."])
        .output()
        .expect("bash runs");
    assert!(
        summary.status.success(),
        "{}",
        String::from_utf8_lossy(&summary.stderr)
    );
    let summary = String::from_utf8(summary.stdout).unwrap();
    let has_line = |line: &str| summary.lines().any(|l| l == line);

    assert!(has_line("## benchmatrix: bench/my-run.yaml"), "{summary}");
    assert!(has_line("**a regression (exit 3)**"), "{summary}");
    // report.md's lines before its first section, and its sections one level down.
    assert!(has_line("- run phase: Succeeded"), "{summary}");
    // The summary's own verdict (the run's and the comparison's) is the only one it shows.
    assert!(!summary.contains("**verdict: "), "{summary}");
    assert!(has_line("### Cells"), "{summary}");
    assert!(has_line("### Latency and throughput"), "{summary}");
    assert!(has_line("#### fast in phase mixed"), "{summary}");
    let latency_row = summary
        .lines()
        .skip_while(|l| *l != "#### fast in phase mixed")
        .find(|l| l.starts_with("| pool-x1 | 40000 | 0 |"));
    assert!(latency_row.is_some(), "pool-x1's latency row: {summary}");
    // The comparison: its table and counts, under the summary's own heading.
    assert!(has_line("### Against the baseline"), "{summary}");
    assert!(
        summary.contains(
            "| configuration | phase | endpoint | figure | base | new | change | verdict | evidence |"
        ),
        "{summary}"
    );
    assert!(
        summary
            .lines()
            .any(|l| l.starts_with("| pool-x1 | mixed | fast | p99 ms |")
                && l.contains("regression")),
        "{summary}"
    );
    assert!(summary.contains(" regression(s), "), "{summary}");
    assert!(has_line("Files: the artifact."), "{summary}");
    // Left out: titles, images, the sections a summary need not carry.
    for gone in ["# Benchmark report", "# Comparison"] {
        assert!(!has_line(gone), "{gone} kept: {summary}");
    }
    assert!(!summary.contains("!["), "an image kept: {summary}");
    assert!(!summary.contains("Target resources"), "{summary}");
    assert!(
        !summary.contains("How each figure was measured"),
        "{summary}"
    );
}

#[test]
fn the_summary_says_so_when_a_file_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let summary = Command::new("bash")
        .arg(repo_root().join("scripts/action/summary.sh"))
        .args(["--title", "t", "--verdict", "v"])
        .arg("--report")
        .arg(dir.path().join("report.md"))
        .args([
            "--compare-note",
            "Not compared: the run wrote no status.yaml.",
        ])
        .output()
        .expect("bash runs");
    assert!(summary.status.success());
    let summary = String::from_utf8(summary.stdout).unwrap();
    assert!(
        summary.contains("No report: report.md was not written."),
        "{summary}"
    );
    assert!(
        summary.contains("Not compared: the run wrote no status.yaml."),
        "{summary}"
    );
}
