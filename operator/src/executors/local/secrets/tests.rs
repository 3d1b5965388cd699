use super::*;

const RUN: &str = r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: post}
spec:
  configurations: [{name: x1, mode: single, cpu: "1"}]
  workload:
    endpoints:
      - name: order
        path: /orders
        method: POST
        headers:
          - {name: Content-Type, value: application/json}
          - name: Authorization
            valueFrom: {secretKeyRef: {name: api-token, key: token}}
        body: '{"item": 1}'
    phases: [{name: p, duration: 1s, load: [{endpoint: order, connections: 1}]}]
"#;

fn spec() -> BenchmarkRunSpec {
    crate::resource::validate::parse_benchmark_run(RUN)
        .unwrap()
        .spec
}

#[test]
fn a_value_is_read_from_dir_name_key_without_its_trailing_newline() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("api-token")).unwrap();
    std::fs::write(dir.path().join("api-token/token"), "Bearer s3cret\n").unwrap();
    let values = read(&spec(), Some(dir.path())).unwrap();
    let got: Vec<_> = values.iter().collect();
    assert_eq!(got, [("BENCHMATRIX_HEADER_0_1", "Bearer s3cret")]);
}

#[test]
fn a_missing_folder_file_or_flag_is_refused_at_the_header_path() {
    let at = "spec.workload.endpoints[0].headers[1].valueFrom.secretKeyRef";
    let errs = read(&spec(), None).unwrap_err();
    assert_eq!(errs[0].path, at);
    assert!(errs[0].message.contains("--secrets DIR"), "{errs:?}");
    assert!(errs[0].message.contains("api-token/token"), "{errs:?}");

    let dir = tempfile::tempdir().unwrap();
    let errs = read(&spec(), Some(dir.path())).unwrap_err();
    assert_eq!(errs[0].path, at);
    assert!(errs[0].message.contains("no file"), "{errs:?}");

    std::fs::create_dir(dir.path().join("api-token")).unwrap();
    std::fs::write(
        dir.path().join("api-token/token"),
        "Bearer a\nX-Injected: 1",
    )
    .unwrap();
    let errs = read(&spec(), Some(dir.path())).unwrap_err();
    assert!(errs[0].message.contains("line break"), "{errs:?}");
    assert!(
        !errs[0].message.contains("Bearer"),
        "never quotes the value: {errs:?}"
    );

    // Headers that grow past the limit with the value read are refused now, not when the
    // load generator starts.
    std::fs::write(dir.path().join("api-token/token"), "x".repeat(9000)).unwrap();
    let errs = read(&spec(), Some(dir.path())).unwrap_err();
    assert_eq!(
        errs[0].path, "spec.workload.endpoints[0].headers",
        "{errs:?}"
    );
    assert!(errs[0].message.contains("8192"), "{errs:?}");
}
