//! Every sample in manifests/samples/ is a BenchmarkRun the API server would accept: it
//! validates against the generated CRD's OpenAPI v3 schema (as the API server checks it, with
//! unknown fields treated as errors, since the server would silently drop them) and passes the
//! operator's own validation (which states the CRD's CEL rules with field paths).
//!
//! The schema checker is small and local: it covers the keywords the generated schema uses
//! (type, properties, required, items, additionalProperties, enum, pattern, min/max, lengths,
//! nullable, x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields). A negative test
//! shows it refuses what the API server refuses.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The generated CRD's openAPIV3Schema as JSON.
fn schema() -> Value {
    let crd: Value = serde_yaml::from_str(&benchmatrix::crdgen::crd_yaml()).unwrap();
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
        if let Err(e) = benchmatrix::validate::parse_benchmark_run(text) {
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

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn check(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    let at = if path.is_empty() { "(root)" } else { path };
    if value.is_null() {
        if schema["nullable"] != Value::Bool(true) {
            errors.push(format!("{at}: null is not allowed"));
        }
        return;
    }
    if let Some(options) = schema["enum"].as_array()
        && !options.contains(value)
    {
        errors.push(format!("{at}: {value} is not one of {options:?}"));
    }
    if schema["x-kubernetes-int-or-string"] == Value::Bool(true) {
        if !(value.is_string() || value.is_i64() || value.is_u64()) {
            errors.push(format!("{at}: expected an integer or string, got {value}"));
        }
        return;
    }
    match schema["type"].as_str() {
        Some("object") => {
            let Some(obj) = value.as_object() else {
                errors.push(format!("{at}: expected object, got {value}"));
                return;
            };
            for req in schema["required"].as_array().into_iter().flatten() {
                let req = req.as_str().unwrap_or_default();
                if !obj.contains_key(req) {
                    errors.push(format!("{}: required", join(path, req)));
                }
            }
            let props = schema["properties"].as_object();
            let extra = &schema["additionalProperties"];
            let preserve = schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true);
            for (key, v) in obj {
                let here = join(path, key);
                match props.and_then(|p| p.get(key)) {
                    Some(sub) => check(sub, v, &here, errors),
                    None if extra.is_object() => check(extra, v, &here, errors),
                    None if preserve => {}
                    None => errors.push(format!(
                        "{here}: unknown field (the API server would drop it)"
                    )),
                }
            }
        }
        Some("array") => {
            let Some(items) = value.as_array() else {
                errors.push(format!("{at}: expected array, got {value}"));
                return;
            };
            if let Some(min) = schema["minItems"].as_u64()
                && (items.len() as u64) < min
            {
                errors.push(format!("{at}: fewer than {min} items"));
            }
            if let Some(max) = schema["maxItems"].as_u64()
                && (items.len() as u64) > max
            {
                errors.push(format!("{at}: more than {max} items"));
            }
            for (i, item) in items.iter().enumerate() {
                check(&schema["items"], item, &format!("{path}[{i}]"), errors);
            }
        }
        Some("string") => {
            let Some(s) = value.as_str() else {
                errors.push(format!("{at}: expected string, got {value}"));
                return;
            };
            if let Some(pattern) = schema["pattern"].as_str() {
                let re = regex::Regex::new(pattern).expect("schema patterns compile");
                if !re.is_match(s) {
                    errors.push(format!("{at}: {s:?} does not match {pattern}"));
                }
            }
            let len = s.chars().count() as u64;
            if schema["minLength"].as_u64().is_some_and(|m| len < m) {
                errors.push(format!("{at}: shorter than minLength"));
            }
            if schema["maxLength"].as_u64().is_some_and(|m| len > m) {
                errors.push(format!("{at}: longer than maxLength"));
            }
        }
        Some("integer") => {
            if !(value.is_i64() || value.is_u64()) {
                errors.push(format!("{at}: expected integer, got {value}"));
                return;
            }
            check_range(schema, value, at, errors);
        }
        Some("number") => {
            if !value.is_number() {
                errors.push(format!("{at}: expected number, got {value}"));
                return;
            }
            check_range(schema, value, at, errors);
        }
        Some("boolean") if !value.is_boolean() => {
            errors.push(format!("{at}: expected boolean, got {value}"));
        }
        Some("boolean") => {}
        Some(other) => errors.push(format!("{at}: schema has unknown type {other}")),
        None => {}
    }
}

fn check_range(schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let v = value.as_f64().unwrap_or_default();
    if schema["minimum"].as_f64().is_some_and(|m| v < m) {
        errors.push(format!(
            "{at}: {v} is below the minimum {}",
            schema["minimum"]
        ));
    }
    if schema["maximum"].as_f64().is_some_and(|m| v > m) {
        errors.push(format!(
            "{at}: {v} is above the maximum {}",
            schema["maximum"]
        ));
    }
}
