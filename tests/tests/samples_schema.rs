//! Every sample in manifests/samples/ (and each example's BenchmarkRun) is a BenchmarkRun the API server would accept: it
//! validates against the generated CRD's OpenAPI v3 schema (as the API server checks it, with
//! unknown fields treated as errors, since the server would silently drop them) and passes the
//! operator's own validation (which states the CRD's CEL rules with field paths).
//!
//! The schema checker (`benchmatrix_tests::schema_check`) is small and local; a negative test
//! shows it refuses what the API server refuses.

use benchmatrix_tests::schema_check::check;
use serde_json::Value;

use benchmatrix_tests::repo_root;

/// The generated CRD's openAPIV3Schema as JSON.
fn schema() -> Value {
    let crd: Value = serde_yaml::from_str(&benchmatrix::resource::crdgen::crd_yaml()).unwrap();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

/// Every YAML document in manifests/samples/, with its file name.
fn samples() -> Vec<(String, String)> {
    let dir = repo_root().join("manifests/samples");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, text));
    }
    // The examples' runs are samples too: users apply them as they are.
    const EXAMPLES: &[&str] = &[
        "examples/own-service/benchmarkrun.yaml",
        "examples/own-service/sizing.yaml",
    ];
    for example in EXAMPLES {
        let text = std::fs::read_to_string(repo_root().join(example)).unwrap();
        out.push(((*example).to_owned(), text));
    }
    out.sort();
    out
}

#[test]
fn every_sample_validates_against_the_crd_schema_and_the_operator_rules() {
    let samples = samples();
    if samples.is_empty() {
        eprintln!("manifests/samples/ has no samples yet; nothing to validate");
        return;
    }
    let schema = schema();
    let mut failures = Vec::new();
    for (name, text) in &samples {
        let value: Value = match serde_yaml::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{name}: not YAML: {e}"));
                continue;
            }
        };
        let mut errors = Vec::new();
        check_root(&schema, &value, &mut errors);
        failures.extend(errors.into_iter().map(|e| format!("{name}: {e}")));
        if let Err(e) = benchmatrix::resource::validate::parse_benchmark_run(text) {
            failures.push(format!("{name}: operator validation: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "samples that the API server or the operator would refuse:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_schema_check_refuses_what_the_api_server_refuses() {
    let schema = schema();
    let good: Value = serde_json::json!({
        "apiVersion": "benchmatrix.dev/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": "x"},
        "spec": {
            "configurations": [{"name": "a", "cpu": "1", "mode": "pool", "replicas": 2}],
            "workload": {
                "endpoints": [{"name": "fast", "path": "/fast"}],
                "phases": [{"name": "p", "duration": "5s",
                            "load": [{"endpoint": "fast", "connections": 2}]}]
            }
        }
    });
    let mut errors = Vec::new();
    check_root(&schema, &good, &mut errors);
    assert!(errors.is_empty(), "{errors:?}");

    let cases = [
        (
            "/spec/configurations/0/mode",
            serde_json::json!("fork"),
            "not one of",
        ),
        (
            "/spec/configurations/0/replicas",
            serde_json::json!("two"),
            "expected integer",
        ),
        (
            "/spec/configurations/0/replicas",
            serde_json::json!(0),
            "below the minimum",
        ),
        (
            "/spec/workload/phases/0/duration",
            serde_json::json!("5 s"),
            "does not match",
        ),
        (
            "/spec/configurations/0/cpu",
            serde_json::json!(0.5),
            "integer or string",
        ),
    ];
    for (pointer, bad, expected) in cases {
        let mut doc = good.clone();
        *doc.pointer_mut(pointer).unwrap() = bad;
        let mut errors = Vec::new();
        check_root(&schema, &doc, &mut errors);
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "{pointer}: expected {expected:?}, got {errors:?}"
        );
    }

    let mut unknown = good.clone();
    unknown["spec"]["configurations"][0]["cpus"] = serde_json::json!("1");
    let mut errors = Vec::new();
    check_root(&schema, &unknown, &mut errors);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("spec.configurations[0].cpus: unknown field")),
        "{errors:?}"
    );

    let mut missing = good.clone();
    missing["spec"].as_object_mut().unwrap().remove("workload");
    let mut errors = Vec::new();
    check_root(&schema, &missing, &mut errors);
    assert!(
        errors.iter().any(|e| e.contains("spec.workload: required")),
        "{errors:?}"
    );
}

/// Checks a whole object: apiVersion, kind and metadata are the API server's, the rest is the
/// schema's.
fn check_root(schema: &Value, doc: &Value, errors: &mut Vec<String>) {
    let Some(obj) = doc.as_object() else {
        errors.push("(document): expected an object".into());
        return;
    };
    let mut rest = obj.clone();
    for key in ["apiVersion", "kind", "metadata"] {
        rest.remove(key);
    }
    check(schema, &Value::Object(rest), "", errors);
}
