//! The upstream corpus of Pod Security admission (read by `benchmatrix_pod_security::corpus`)
//! as the operator meets it: each fixture's pod as a run's `spec.target.podTemplate`, through
//! the spec's validation, then [`super::refusals`] on the pods the operator would create. The
//! pod-by-pod half (each fixture judged as a pod) is the crate's own `tests/corpus.rs`.
//!
//! ```text
//! PSA_TESTDATA=/path/to/pod-security-admission/test/testdata \
//!   cargo nextest run -p benchmatrix --run-ignored only --no-capture -E 'test(/corpus/)'
//! ```
//!
//! There the operator fills in what a template leaves out (the pod security context, the
//! target container's), so some `fail` fixtures that fail only by a missing field are run
//! compliant; those are counted apart, as are fixtures the spec's own template rules refuse
//! first. Every `pass` fixture must be accepted, and a `fail` fixture that is refused must be
//! refused naming its check.

use std::path::PathBuf;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use benchmatrix_pod_security::Level;
use benchmatrix_pod_security::corpus::{Fixture, fixtures};

/// A BenchmarkRun whose target's pod template is the fixture's pod (its labels and
/// annotations, and its spec).
fn as_run(meta: &ObjectMeta, spec: &PodSpec) -> String {
    let template = serde_json::json!({
        "metadata": {"labels": meta.labels, "annotations": meta.annotations},
        "spec": spec,
    });
    let run = serde_json::json!({
        "apiVersion": "benchmatrix.dev/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": "corpus"},
        "spec": {
            "target": {"podTemplate": template},
            "configurations": [{"name": "c", "cpu": "500m", "memory": "64Mi"}],
            "workload": {
                "endpoints": [{"name": "e", "path": "/"}],
                "phases": [{"name": "p", "duration": "1s", "load": [{"endpoint": "e", "connections": 1}]}],
            },
        },
    });
    serde_json::to_string(&run).unwrap()
}

#[derive(Default, Debug)]
struct Tally {
    fail_total: usize,
    refused_naming_check: usize,
    made_compliant: Vec<String>,
    template_rules: Vec<String>,
    pass_total: usize,
    pass_accepted: usize,
    problems: Vec<String>,
}

/// The operator's refusals of the pods it would create for fixture `f` as a run's template.
fn judge_as_run(f: &Fixture, level: Level, t: &mut Tally) {
    let run = crate::resource::validate::parse_benchmark_run(&as_run(&f.meta, &f.spec))
        .and_then(crate::resource::ValidatedRun::for_cluster);
    let refused = |v| super::refusals(&v, level, "registry.k8s.io/pause", "registry.k8s.io/pause");
    match (f.outcome, run) {
        ("fail", Err(_)) => t.template_rules.push(f.file.clone()),
        ("fail", Ok(v)) => {
            let refused = refused(v);
            let named = f.want.is_some_and(|w| {
                refused
                    .iter()
                    .any(|e| e.message.ends_with(&format!("[check {w}]")))
            });
            if named {
                t.refused_naming_check += 1;
            } else if refused.is_empty() {
                t.made_compliant.push(f.file.clone());
            } else {
                t.problems.push(format!(
                    "fail/{} as a run: want {:?}, got {refused:?}",
                    f.file, f.want
                ));
            }
        }
        (_, Ok(v)) => {
            let refused = refused(v);
            if refused.is_empty() {
                t.pass_accepted += 1;
            } else {
                t.problems
                    .push(format!("pass/{} as a run: refused {refused:?}", f.file));
            }
        }
        (_, Err(e)) => t
            .problems
            .push(format!("pass/{} as a run: invalid {e}", f.file)),
    }
}

#[test]
#[ignore = "needs a copy of pod-security-admission's test/testdata in PSA_TESTDATA"]
fn the_upstream_corpus_as_a_runs_pod_template_is_judged_as_admission_would() {
    let root = PathBuf::from(
        std::env::var("PSA_TESTDATA").expect("PSA_TESTDATA: the testdata folder to read"),
    );
    let mut problems = Vec::new();
    for level in [Level::Baseline, Level::Restricted] {
        let (dir, all, _) = fixtures(&root, level);
        let mut t = Tally::default();
        for f in &all {
            if f.outcome == "fail" {
                t.fail_total += 1;
            } else {
                t.pass_total += 1;
            }
            judge_as_run(f, level, &mut t);
        }
        println!(
            "{level} ({}) as a run's podTemplate: fail refused naming the check {}, refused \
             first by the template rules {} {:?}, run compliant after the operator's defaults \
             {} {:?} (of {}); pass accepted {}/{}",
            dir.display(),
            t.refused_naming_check,
            t.template_rules.len(),
            t.template_rules,
            t.made_compliant.len(),
            t.made_compliant,
            t.fail_total,
            t.pass_accepted,
            t.pass_total,
        );
        assert!(t.fail_total > 0 && t.pass_total > 0, "{level}: no fixtures");
        problems.extend(t.problems.into_iter().map(|p| format!("{level}: {p}")));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
