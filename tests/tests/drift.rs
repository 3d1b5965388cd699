//! The checked-in CRD files are exactly what the Rust types generate.
//!
//! The CRD is never written by hand: `benchmatrix crd` prints it from operator/src/api, and
//! this test fails when manifests/crd.yaml or the chart's crds/ file has drifted, saying how to
//! regenerate them. It also checks that the YAML is a valid apiextensions.k8s.io/v1 CRD.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};

const FILES: [&str; 2] = [
    "manifests/crd.yaml",
    "charts/benchmatrix/crds/benchmatrix.dev_benchmarkruns.yaml",
];

const REGENERATE: &str = "regenerate with:\n  cargo run -p benchmatrix -- crd > manifests/crd.yaml\n  \
     cp manifests/crd.yaml charts/benchmatrix/crds/benchmatrix.dev_benchmarkruns.yaml";

use benchmatrix_tests::repo_root;

#[test]
fn checked_in_crd_files_match_the_generated_crd() {
    let generated = benchmatrix::resource::crdgen::crd_yaml();
    for file in FILES {
        let path = repo_root().join(file);
        let on_disk = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {file}: {e}\n{REGENERATE}"));
        if on_disk != generated {
            let first_diff = on_disk
                .lines()
                .zip(generated.lines())
                .position(|(a, b)| a != b)
                .map_or_else(
                    || "the files differ in length".to_owned(),
                    |i| format!("first difference at line {}", i + 1),
                );
            panic!("{file} has drifted from the Rust types ({first_diff}); {REGENERATE}");
        }
    }
}

/// The chart's Grafana dashboard is what `benchmatrix dashboard` generates from the metric
/// families the operator exports, so no panel can query a metric that is not there.
#[test]
fn the_charts_dashboard_is_the_generated_one() {
    let file = "charts/benchmatrix/dashboards/benchmatrix.json";
    let on_disk = std::fs::read_to_string(repo_root().join(file)).unwrap_or_default();
    let generated = benchmatrix::run_metrics::dashboard::dashboard_json();
    assert!(
        on_disk == generated,
        "{file} has drifted from the exporter's families; regenerate with:\n  \
         cargo run -p benchmatrix -- dashboard > {file}"
    );
}

#[test]
fn the_generated_crd_parses_as_apiextensions_v1() {
    let crd: CustomResourceDefinition =
        serde_yaml::from_str(&benchmatrix::resource::crdgen::crd_yaml())
            .expect("the generated CRD is an apiextensions.k8s.io/v1 CustomResourceDefinition");
    assert_eq!(crd.spec.group, "benchmatrix.dev");
    assert_eq!(crd.spec.names.kind, "BenchmarkRun");
    assert_eq!(crd.spec.names.plural, "benchmarkruns");
    assert_eq!(crd.spec.scope, "Namespaced");
    let version = &crd.spec.versions[0];
    assert!(version.served && version.storage);
    let schema = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("an OpenAPI v3 schema");
    let mut problems = Vec::new();
    check_structural(schema, "openAPIV3Schema", true, &mut problems);
    assert!(
        problems.is_empty(),
        "the schema is not structural:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_spec_field_has_a_description_for_kubectl_explain() {
    let crd: CustomResourceDefinition =
        serde_yaml::from_str(&benchmatrix::resource::crdgen::crd_yaml()).unwrap();
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .unwrap();
    let spec = &schema.properties.as_ref().unwrap()["spec"];
    let mut missing = Vec::new();
    fn walk(s: &JSONSchemaProps, path: &str, missing: &mut Vec<String>) {
        for (name, prop) in s.properties.iter().flatten() {
            let here = format!("{path}.{name}");
            if prop.description.as_deref().unwrap_or("").is_empty() {
                missing.push(here.clone());
            }
            walk(prop, &here, missing);
            if let Some(items) = &prop.items
                && let k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray::Schema(item) = items
            {
                walk(item, &format!("{here}[]"), missing);
            }
        }
    }
    walk(spec, "spec", &mut missing);
    assert!(
        missing.is_empty(),
        "fields without a description: {missing:?}"
    );
}

/// The parts of the structural-schema rules that code generation can get wrong: every node
/// has a type (or is int-or-string / preserve-unknown-fields), no `$ref`, no
/// `additionalProperties: false` and no `additionalProperties` beside `properties`, and
/// `anyOf`/`oneOf`/`allOf` only as the int-or-string idiom.
fn check_structural(s: &JSONSchemaProps, path: &str, root: bool, problems: &mut Vec<String>) {
    let int_or_string = s.x_kubernetes_int_or_string == Some(true);
    let preserve = s.x_kubernetes_preserve_unknown_fields == Some(true);
    if s.type_.is_none() && !int_or_string && !preserve && !root {
        problems.push(format!("{path}: no type"));
    }
    if s.ref_path.is_some() {
        problems.push(format!("{path}: $ref is not allowed"));
    }
    if s.properties.is_some() && s.additional_properties.is_some() {
        problems.push(format!(
            "{path}: properties and additionalProperties together"
        ));
    }
    if let Some(
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrBool::Bool(false),
    ) = &s.additional_properties
    {
        problems.push(format!("{path}: additionalProperties: false"));
    }
    for (kw, list) in [("oneOf", &s.one_of), ("allOf", &s.all_of)] {
        if list.is_some() {
            problems.push(format!("{path}: {kw} (not structural)"));
        }
    }
    if s.any_of.is_some() && !int_or_string {
        problems.push(format!("{path}: anyOf outside int-or-string"));
    }
    for (name, prop) in s.properties.iter().flatten() {
        check_structural(prop, &format!("{path}.{name}"), false, problems);
    }
    if let Some(k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray::Schema(item)) = &s.items {
        check_structural(item, &format!("{path}[]"), false, problems);
    }
    if let Some(k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrBool::Schema(v)) = &s.additional_properties {
        check_structural(v, &format!("{path}{{}}"), false, problems);
    }
}

/// The book's spec reference is what the CRD's own schema generates, so a field's description
/// in the book is the one `kubectl explain` prints.
#[test]
fn the_books_spec_reference_is_the_generated_one() {
    let file = "docs/book/src/reference/spec.md";
    let on_disk = std::fs::read_to_string(repo_root().join(file)).unwrap_or_default();
    let generated = benchmatrix::resource::reference::spec_reference();
    assert!(
        on_disk == generated,
        "{file} has drifted from the CRD's schema; regenerate with:\n  make docs"
    );
}
