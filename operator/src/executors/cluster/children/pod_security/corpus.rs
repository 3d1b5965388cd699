//! The upstream corpus as an opt-in test: `k8s.io/pod-security-admission`'s
//! `test/testdata/{baseline,restricted}/vX.Y/{pass,fail}/*.yaml`, pods that each level must
//! admit or refuse, one check exercised per file. Nobody here wrote them, and none is copied
//! into this repository: the test reads a copy from `PSA_TESTDATA` and is ignored otherwise.
//!
//! ```text
//! PSA_TESTDATA=/path/to/pod-security-admission/test/testdata \
//!   cargo nextest run -p benchmatrix --run-ignored only --no-capture -E 'test(/corpus/)'
//! ```
//!
//! For the newest version folder of each level, every fixture is judged twice:
//!
//! - as a pod, by [`crate::resource::pod_security::check`], the function enforcement runs on each merged pod: every
//!   `fail` fixture must be refused naming the check its file name says (at restricted, the
//!   restricted check that replaces a baseline one), and every `pass` fixture accepted;
//! - as a run's `spec.target.podTemplate`, through the operator's own path (the spec's
//!   validation, then [`super::refusals`] on the pods the
//!   operator would create). There the operator fills in what a template leaves out (the pod
//!   security context, the target container's), so some `fail` fixtures that fail only by a
//!   missing field are run compliant; those are counted apart, as are fixtures the spec's own
//!   template rules refuse first. Every `pass` fixture must be accepted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::resource::pod_security::{Level, check, check_ids};

/// The restricted check that stands for a baseline one at restricted.
fn at_restricted(id: &str) -> &str {
    match id {
        "capabilities_baseline" => "capabilities_restricted",
        "hostPathVolumes" => "restrictedVolumes",
        "procMount" => "procMount_restricted",
        "seccompProfile_baseline" => "seccompProfile_restricted",
        other => other,
    }
}

/// The check a fixture exercises, from its file name: `allowprivilegeescalation0.yaml` is
/// `allowPrivilegeEscalation`, `hostprobesandhostlifecycle3.yaml` is
/// `hostProbesAndHostLifecycle`. None for the `base*` pass fixtures.
fn check_of(file: &str) -> Option<&'static str> {
    let stem = file
        .trim_end_matches(".yaml")
        .trim_end_matches(|c: char| c.is_ascii_digit());
    let mut ids = check_ids(Level::Restricted);
    ids.extend(check_ids(Level::Baseline));
    ids.into_iter().find(|id| id.eq_ignore_ascii_case(stem))
}

/// The newest `vX.Y` folder under `dir`, by version number (v1.35 after v1.9).
fn newest_version(dir: &Path) -> PathBuf {
    let mut versions: Vec<((u32, u32), PathBuf)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let (major, minor) = name.strip_prefix('v')?.split_once('.')?;
            Some(((major.parse().ok()?, minor.parse().ok()?), e.path()))
        })
        .collect();
    versions.sort();
    versions.pop().expect("a vX.Y folder").1
}

/// The pod metadata and spec a fixture holds: a Pod's own, or the pod template of a kind that
/// has one (`spec.template`, `spec.jobTemplate.spec.template`). None for other kinds.
fn pod_of(doc: &serde_json::Value) -> Option<(ObjectMeta, PodSpec, &'static str)> {
    let kind = doc["kind"].as_str().unwrap_or_default();
    let (meta, spec, kind) = match kind {
        "Pod" => (&doc["metadata"], &doc["spec"], "Pod"),
        "CronJob" => {
            let t = &doc["spec"]["jobTemplate"]["spec"]["template"];
            (&t["metadata"], &t["spec"], "CronJob")
        }
        _ if doc["spec"]["template"].is_object() => {
            let t = &doc["spec"]["template"];
            (&t["metadata"], &t["spec"], "other pod-bearing kind")
        }
        _ => return None,
    };
    let meta: ObjectMeta = serde_json::from_value(meta.clone()).unwrap_or_default();
    let spec: PodSpec = serde_json::from_value(spec.clone()).expect("a pod spec");
    Some((meta, spec, kind))
}

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
    fail_refused_naming_check: usize,
    fail_refused_with_others_too: usize,
    pass_total: usize,
    pass_accepted: usize,
    run_fail_refused_naming_check: usize,
    run_fail_made_compliant: Vec<String>,
    run_fail_template_rules: Vec<String>,
    run_pass_accepted: usize,
    kinds: BTreeMap<&'static str, usize>,
    not_pods: usize,
    problems: Vec<String>,
}

fn judge_level(root: &Path, level: Level) -> (PathBuf, Tally) {
    let dir = newest_version(&root.join(level.name()));
    let mut t = Tally::default();
    for outcome in ["fail", "pass"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(outcome))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        for path in files {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let doc: serde_json::Value = serde_yaml::from_str(&text).unwrap();
            let Some((meta, spec, kind)) = pod_of(&doc) else {
                t.not_pods += 1;
                continue;
            };
            *t.kinds.entry(kind).or_default() += 1;
            let found = check(level, Some(&meta), &spec);
            let ids: Vec<&str> = found.iter().map(|v| v.check).collect();
            let run_errors = crate::resource::validate::parse_benchmark_run(&as_run(&meta, &spec))
                .and_then(crate::resource::ValidatedRun::for_cluster);
            if outcome == "fail" {
                t.fail_total += 1;
                let want = check_of(&file).map(|id| {
                    if level == Level::Restricted {
                        at_restricted(id)
                    } else {
                        id
                    }
                });
                match want {
                    Some(want) if ids.contains(&want) => {
                        t.fail_refused_naming_check += 1;
                        if ids.len() > 1 {
                            t.fail_refused_with_others_too += 1;
                        }
                    }
                    _ => t
                        .problems
                        .push(format!("{outcome}/{file}: want {want:?}, got {ids:?}")),
                }
                match run_errors {
                    Err(_) => t.run_fail_template_rules.push(file.clone()),
                    Ok(v) => {
                        let refused = super::refusals(
                            &v,
                            level,
                            "registry.k8s.io/pause",
                            "registry.k8s.io/pause",
                        );
                        let named = want.is_some_and(|w| {
                            refused
                                .iter()
                                .any(|e| e.message.ends_with(&format!("[check {w}]")))
                        });
                        if named {
                            t.run_fail_refused_naming_check += 1;
                        } else if refused.is_empty() {
                            t.run_fail_made_compliant.push(file.clone());
                        } else {
                            t.problems.push(format!(
                                "{outcome}/{file} as a run: want {want:?}, got {refused:?}"
                            ));
                        }
                    }
                }
            } else {
                t.pass_total += 1;
                if ids.is_empty() {
                    t.pass_accepted += 1;
                } else {
                    t.problems
                        .push(format!("{outcome}/{file}: refused by {ids:?}"));
                }
                match run_errors {
                    Ok(v) => {
                        let refused = super::refusals(
                            &v,
                            level,
                            "registry.k8s.io/pause",
                            "registry.k8s.io/pause",
                        );
                        if refused.is_empty() {
                            t.run_pass_accepted += 1;
                        } else {
                            t.problems
                                .push(format!("{outcome}/{file} as a run: refused {refused:?}"));
                        }
                    }
                    Err(e) => t
                        .problems
                        .push(format!("{outcome}/{file} as a run: invalid {e}")),
                }
            }
        }
    }
    (dir, t)
}

#[test]
#[ignore = "needs a copy of pod-security-admission's test/testdata in PSA_TESTDATA"]
fn the_upstream_corpus_is_judged_as_pod_security_admission_judges_it() {
    let root = PathBuf::from(
        std::env::var("PSA_TESTDATA").expect("PSA_TESTDATA: the testdata folder to read"),
    );
    let mut problems = Vec::new();
    for level in [Level::Baseline, Level::Restricted] {
        let (dir, t) = judge_level(&root, level);
        println!(
            "{level} ({}): fail refused naming the check {}/{} ({} also name other checks); \
             pass accepted {}/{}; kinds {:?}, not pod-bearing {}",
            dir.display(),
            t.fail_refused_naming_check,
            t.fail_total,
            t.fail_refused_with_others_too,
            t.pass_accepted,
            t.pass_total,
            t.kinds,
            t.not_pods,
        );
        println!(
            "{level} as a run's podTemplate: fail refused naming the check {}, refused first by \
             the template rules {} {:?}, run compliant after the operator's defaults {} {:?} \
             (of {}); pass accepted {}/{}",
            t.run_fail_refused_naming_check,
            t.run_fail_template_rules.len(),
            t.run_fail_template_rules,
            t.run_fail_made_compliant.len(),
            t.run_fail_made_compliant,
            t.fail_total,
            t.run_pass_accepted,
            t.pass_total,
        );
        assert!(
            t.fail_total > 0 && t.pass_total > 0,
            "{level}: no fixtures in {}",
            dir.display()
        );
        problems.extend(t.problems.into_iter().map(|p| format!("{level}: {p}")));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn fixture_names_map_to_check_ids() {
    assert_eq!(
        check_of("allowprivilegeescalation0.yaml"),
        Some("allowPrivilegeEscalation")
    );
    assert_eq!(
        check_of("hostprobesandhostlifecycle4.yaml"),
        Some("hostProbesAndHostLifecycle")
    );
    assert_eq!(
        check_of("procmount_restricted1.yaml"),
        Some("procMount_restricted")
    );
    assert_eq!(
        check_of("seccompprofile_baseline2.yaml"),
        Some("seccompProfile_baseline")
    );
    assert_eq!(check_of("base_windows.yaml"), None);
    assert_eq!(at_restricted("hostPathVolumes"), "restrictedVolumes");
}
