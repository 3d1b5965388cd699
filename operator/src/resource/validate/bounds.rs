//! The CRD schema's bounds on how many items the spec's lists hold (`maxItems`) and how many
//! entries its maps hold (`maxProperties`), checked by the operator before anything else.
//!
//! The API server refuses a spec past them at apply time, but an object can still reach the
//! operator with lists of any length: written before the CRD had a bound, under another
//! version's CRD, or with validation skipped. Several checks behind this one take time or
//! memory with those lengths (the size bound counts every figure of every probe of every cell),
//! so a list of 100,000 SLO figures would hold a reconcile for minutes. Refused here, such a
//! spec costs one pass over it. The bounds are read from the CRD this build installs, so they
//! cannot drift from the schema.

use std::sync::OnceLock;

use serde_json::Value;

use crate::resource::BenchmarkRunSpec;
use crate::resource::validate::FieldError;

/// The spec's schema in the CRD this build installs, made once.
fn spec_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let crd = crate::resource::crdgen::crd_value();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].clone()
    })
}

/// Every list of `spec` with more items than the schema allows it, and every map with more
/// entries, each at its path (`spec.capacity.slo: 35746 items; ...`). What such a list holds is
/// not looked at.
pub fn beyond_schema(spec: &BenchmarkRunSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Ok(value) = serde_json::to_value(spec) {
        walk(&value, spec_schema(), "spec", &mut errors);
    }
    errors
}

fn walk(value: &Value, schema: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let most = |key: &str| schema.get(key).and_then(Value::as_u64);
    let beyond = |count: usize, max: u64, what: &str| {
        FieldError::new(
            at,
            format!(
                "{count} {what}; the BenchmarkRun schema allows at most {max} (the API server \
                 refuses more when the object is applied)"
            ),
        )
    };
    match value {
        Value::Array(items) => {
            if let Some(max) = most("maxItems").filter(|&max| items.len() as u64 > max) {
                errors.push(beyond(items.len(), max, "items"));
                return;
            }
            if let Some(item) = schema.get("items") {
                for (i, x) in items.iter().enumerate() {
                    walk(x, item, &format!("{at}[{i}]"), errors);
                }
            }
        }
        Value::Object(map) => {
            if let Some(max) = most("maxProperties").filter(|&max| map.len() as u64 > max) {
                errors.push(beyond(map.len(), max, "entries"));
                return;
            }
            let fields = schema.get("properties").and_then(Value::as_object);
            let others = schema.get("additionalProperties").filter(|s| s.is_object());
            for (key, x) in map {
                if let Some(s) = fields.and_then(|f| f.get(key)).or(others) {
                    walk(x, s, &format!("{at}.{key}"), errors);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::BenchmarkRun;

    fn sample(name: &str) -> BenchmarkRun {
        let path = format!(
            "{}/../manifests/samples/{name}.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        crate::resource::validate::parse_benchmark_run(&std::fs::read_to_string(path).unwrap())
            .unwrap()
    }

    #[test]
    fn the_samples_are_within_the_schemas_bounds() {
        for name in ["sizing", "capacity", "quickstart", "node-express"] {
            assert_eq!(beyond_schema(&sample(name).spec), Vec::new(), "{name}");
        }
    }

    /// A list past its bound is named with its length and the bound, and nothing in it is
    /// looked at; maps past theirs too, at any depth.
    #[test]
    fn lists_and_maps_past_the_schemas_bounds_are_named() {
        let mut run = sample("sizing");
        let capacity = run.spec.capacity.as_mut().unwrap();
        capacity.slo = vec![capacity.slo[0].clone(); 100_000];
        let search = &mut run.spec.sizing.as_mut().unwrap().search;
        for k in 0..5 {
            search.env.insert(format!("K{k}"), vec!["1".into()]);
        }
        let errors = beyond_schema(&run.spec);
        let said: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            said,
            [
                "spec.capacity.slo: 100000 items; the BenchmarkRun schema allows at most 16 \
                 (the API server refuses more when the object is applied)",
                "spec.sizing.search.env: 5 entries; the BenchmarkRun schema allows at most 4 \
                 (the API server refuses more when the object is applied)",
            ]
        );
    }

    /// The operator refuses such a run at once, with those errors alone: before, its size bound
    /// counted 40 probes of 100,000 figures for each of 12 cells, and every smaller run it
    /// might suggest, for minutes.
    #[test]
    fn a_run_past_the_bounds_is_refused_for_a_cluster_before_anything_else() {
        let mut run = sample("sizing");
        let capacity = run.spec.capacity.as_mut().unwrap();
        capacity.slo = vec![capacity.slo[0].clone(); 100_000];
        let started = std::time::Instant::now();
        let refused = crate::resource::validate::validate_for_cluster(&run).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(refused.errors.len(), 1, "{refused}");
        assert_eq!(refused.errors[0].path, "spec.capacity.slo");
    }
}
