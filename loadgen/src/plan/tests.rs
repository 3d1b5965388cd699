use super::*;

const SAMPLE: &str = r#"
target: http://127.0.0.1:8080
replicas: ["127.0.0.1:8080"]
workload:
  endpoints: [{name: fast, path: /fast}, {name: slow, path: /slow}]
  warmup: 15s
  phases:
    - name: fast-only
      duration: 30s
      load: [{endpoint: fast, connections: 2}]
    - name: mixed
      duration: 1m15s
      load: [{endpoint: fast, connections: 2}, {endpoint: slow, rate: 2.5}]
"#;

#[test]
fn parses_the_design_sample() {
    let plan = parse_plan_file(SAMPLE).unwrap();
    assert_eq!(plan.workload.warmup, Duration::from_secs(15));
    assert_eq!(plan.workload.phases[1].duration, Duration::from_secs(75));
    assert_eq!(
        plan.workload.phases[1].load[1].mode(),
        Some(LoadMode::Open { rate: 2.5 })
    );
    assert_eq!(plan.workload.timeout_or_default(), DEFAULT_TIMEOUT);
}

#[test]
fn json_is_accepted_too() {
    let json = r#"{"target":"http://h:1","workload":{"endpoints":[{"name":"a","path":"/"}],
            "phases":[{"name":"p","duration":"1s","load":[{"endpoint":"a","connections":1}]}]}}"#;
    let plan = parse_plan_file(json).unwrap();
    assert_eq!(plan.workload.warmup, Duration::default());
}

#[test]
fn type_errors_name_the_field() {
    let bad = SAMPLE.replace("duration: 30s", "duration: 30");
    let errs = parse_plan_file(&bad).unwrap_err();
    assert_eq!(errs[0].path, "workload.phases[0].duration", "{errs:?}");
    assert!(errs[0].message.contains("duration"), "{errs:?}");
    let misspelt = SAMPLE.replace("phases:", "phasez:");
    let errs = parse_plan_file(&misspelt).unwrap_err();
    assert_eq!(errs[0].path, "workload.phasez", "{errs:?}");
    assert_eq!(errs[1].path, "workload.phases", "{errs:?}");
    assert!(
        errs[1].message.contains("at least one phase is required"),
        "{errs:?}"
    );
}

#[test]
fn unknown_fields_are_reported_with_their_path() {
    let bad = SAMPLE.replace(
        "connections: 2}]\n    - name: mixed",
        "conections: 2}]\n    - name: mixed",
    );
    let errs = parse_plan_file(&bad).unwrap_err();
    let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
    assert!(
        paths.contains(&"workload.phases[0].load[0].conections"),
        "{paths:?}"
    );
    // Without connections the stream names neither mode, which validation also says.
    assert!(paths.contains(&"workload.phases[0].load[0]"), "{paths:?}");
}

fn check(mutate: impl FnOnce(&mut Workload), path: &str) {
    let mut w = parse_plan_file(SAMPLE).unwrap().workload;
    mutate(&mut w);
    let errs = w.validate().unwrap_err();
    assert!(
        errs.iter().any(|e| e.path == path),
        "expected {path}, got {errs:?}"
    );
}

#[test]
fn validation_names_each_field() {
    check(
        |w| w.phases[1].load[0].endpoint = "nope".into(),
        "workload.phases[1].load[0].endpoint",
    );
    check(
        |w| w.phases[0].load[0].connections = Some(0),
        "workload.phases[0].load[0].connections",
    );
    check(
        |w| w.phases[1].load[1].rate = Some(0.0),
        "workload.phases[1].load[1].rate",
    );
    check(
        |w| w.phases[1].load[1].rate = Some(f64::NAN),
        "workload.phases[1].load[1].rate",
    );
    check(
        |w| w.phases[1].load[1].connections = Some(3),
        "workload.phases[1].load[1]",
    );
    check(
        |w| w.phases[0].duration = Duration::default(),
        "workload.phases[0].duration",
    );
    check(
        |w| w.phases[1].name = "fast-only".into(),
        "workload.phases[1].name",
    );
    check(|w| w.phases[0].load.clear(), "workload.phases[0].load");
    check(|w| w.phases.clear(), "workload.phases");
    check(
        |w| w.endpoints[1].path = "slow".into(),
        "workload.endpoints[1].path",
    );
    check(
        |w| w.endpoints[1].name = "fast".into(),
        "workload.endpoints[1].name",
    );
    check(
        |w| w.timeout = Some(Duration::default()),
        "workload.timeout",
    );
    check(
        |w| w.phases[1].load[1].endpoint = "fast".into(),
        "workload.phases[1].load[1].endpoint",
    );
}

const POST: &str = r#"
target: http://127.0.0.1:8080
workload:
  endpoints:
    - name: order
      path: /orders
      method: POST
      headers:
        - {name: Content-Type, value: application/json}
        - name: Authorization
          valueFrom: {env: BENCHMATRIX_HEADER_0_1}
      body: '{"item": 1}'
      successCodes: ["2xx", 404, "500-502"]
  phases: [{name: p, duration: 1s, load: [{endpoint: order, connections: 1}]}]
"#;

#[test]
fn a_post_endpoint_reads_and_keeps_its_request_fields() {
    let plan = parse_plan_file(POST).unwrap();
    let e = &plan.workload.endpoints[0];
    assert_eq!(e.method_or_default(), "POST");
    assert_eq!(e.headers[0].value.as_deref(), Some("application/json"));
    assert_eq!(
        e.headers[1].value_from.as_ref().unwrap().env.as_deref(),
        Some("BENCHMATRIX_HEADER_0_1")
    );
    assert_eq!(e.body.as_deref(), Some(r#"{"item": 1}"#));
    let success = crate::plan::SuccessSet::of(e.success_codes.as_deref());
    assert!(success.contains(201) && success.contains(404) && success.contains(502));
    assert!(!success.contains(503));
    // A plan written back reads the same (the operator writes plans this way).
    let back = parse_plan_file(&serde_yaml::to_string(&plan).unwrap()).unwrap();
    assert_eq!(back, plan);
    // A GET endpoint writes none of the new fields, so older plans round-trip as they were.
    let plain = serde_yaml::to_string(&parse_plan_file(SAMPLE).unwrap()).unwrap();
    for field in ["method", "headers", "body", "successCodes"] {
        assert!(!plain.contains(field), "{plain}");
    }
}

#[test]
fn bad_request_fields_are_refused_at_their_paths() {
    let base = parse_plan_file(POST).unwrap().workload;
    let refused = |mutate: &dyn Fn(&mut Endpoint), path: &str, words: &str| {
        let mut w = base.clone();
        mutate(&mut w.endpoints[0]);
        let errs = w.validate().unwrap_err();
        assert!(
            errs.iter()
                .any(|e| e.path == path && e.message.contains(words)),
            "expected {path} saying {words:?}, got {errs:?}"
        );
    };
    let header = |name: &str, value: &str| Header {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    };
    refused(
        &|e| e.headers[0] = header("X-Evil\r\nInjected", "v"),
        "workload.endpoints[0].headers[0].name",
        "line break",
    );
    refused(
        &|e| e.headers[0] = header("Content Type", "v"),
        "workload.endpoints[0].headers[0].name",
        "spaces",
    );
    refused(
        &|e| e.headers[0] = header("X-Ok", "a\r\nX-Injected: 1"),
        "workload.endpoints[0].headers[0].value",
        "line break",
    );
    refused(
        &|e| e.headers[0] = header("X-Ok", "a\u{1}b"),
        "workload.endpoints[0].headers[0].value",
        "control",
    );
    for owned in ["Host", "content-length", "Transfer-Encoding", "Connection"] {
        refused(
            &|e| e.headers[0] = header(owned, "x"),
            "workload.endpoints[0].headers[0].name",
            "written by the load generator",
        );
    }
    refused(
        &|e| e.headers[0].value_from = e.headers[1].value_from.clone(),
        "workload.endpoints[0].headers[0]",
        "not both",
    );
    refused(
        &|e| e.headers[1].value_from = Some(HeaderValueFrom::default()),
        "workload.endpoints[0].headers[1].valueFrom",
        "secretKeyRef",
    );
    refused(
        &|e| {
            e.headers[1].value_from = Some(HeaderValueFrom {
                secret_key_ref: Some(SecretKeyRef {
                    name: "Api_Token".into(),
                    key: "../token".into(),
                }),
                env: None,
            })
        },
        "workload.endpoints[0].headers[1].valueFrom.secretKeyRef.name",
        "Secret name",
    );
    refused(
        &|e| {
            e.headers[1].value_from = Some(HeaderValueFrom {
                secret_key_ref: Some(SecretKeyRef {
                    name: "api".into(),
                    key: "../token".into(),
                }),
                env: None,
            })
        },
        "workload.endpoints[0].headers[1].valueFrom.secretKeyRef.key",
        "Secret key",
    );
    refused(
        &|e| e.method = Some("GET".into()),
        "workload.endpoints[0].body",
        "GET request carries no body",
    );
    refused(
        &|e| e.method = Some("HEAD".into()),
        "workload.endpoints[0].body",
        "HEAD",
    );
    refused(
        &|e| e.method = Some("post".into()),
        "workload.endpoints[0].method",
        "\"POST\"",
    );
    refused(
        &|e| e.method = Some("PO ST".into()),
        "workload.endpoints[0].method",
        "spaces",
    );
    refused(
        &|e| e.method = Some("CONNECT".into()),
        "workload.endpoints[0].method",
        "tunnel",
    );
    refused(
        &|e| e.body = Some("x".repeat(crate::limits::MAX_BODY_BYTES + 1)),
        "workload.endpoints[0].body",
        "65536",
    );
    refused(
        &|e| e.headers = vec![header("X-A", "v"); crate::limits::MAX_HEADERS + 1],
        "workload.endpoints[0].headers",
        "at most 64",
    );
    refused(
        &|e| e.headers = vec![header("X-Big", &"v".repeat(9000))],
        "workload.endpoints[0].headers",
        "8192",
    );
    refused(
        &|e| e.success_codes = Some(vec![SuccessCode::new("2xx"), SuccessCode::new("700")]),
        "workload.endpoints[0].successCodes[1]",
        "100 to 599",
    );
    refused(
        &|e| e.success_codes = Some(vec![]),
        "workload.endpoints[0].successCodes",
        "at least one",
    );
    // Each field is refused alone: the base itself is fine.
    base.validate().unwrap();
}

#[test]
fn values_beyond_the_limits_are_refused_naming_the_field_and_the_limit() {
    use crate::limits::*;
    let over = |mutate: fn(&mut Workload), path: &str, limit: &str| {
        let mut w = parse_plan_file(SAMPLE).unwrap().workload;
        mutate(&mut w);
        let errs = w.validate().unwrap_err();
        assert!(
            errs.iter()
                .any(|e| e.path == path && e.message.contains(limit)),
            "expected {path} naming {limit}, got {errs:?}"
        );
    };
    over(
        |w| w.phases[0].load[0].connections = Some(1_000_000_000),
        "workload.phases[0].load[0].connections",
        "10000",
    );
    over(
        |w| w.phases[1].load[1].rate = Some(1e12),
        "workload.phases[1].load[1].rate",
        "10000000",
    );
    over(
        |w| w.phases[0].duration = Duration::from_secs(24 * 3600 + 1),
        "workload.phases[0].duration",
        "24h",
    );
    over(
        |w| w.warmup = Duration::from_secs(25 * 3600),
        "workload.warmup",
        "24h",
    );
    over(
        |w| w.timeout = Some(Duration::from_secs(25 * 3600)),
        "workload.timeout",
        "24h",
    );
    // Several streams each within the bound can still exceed the phase's total.
    over(
        |w| {
            w.endpoints.push(Endpoint {
                name: "third".into(),
                path: "/third".into(),
                ..Default::default()
            });
            w.phases[1].load = ["fast", "slow", "third"]
                .into_iter()
                .map(|e| Stream {
                    endpoint: e.into(),
                    connections: Some(MAX_CONNECTIONS_PER_STREAM),
                    rate: None,
                })
                .collect();
        },
        "workload.phases[1].load",
        "20000",
    );
    // The bounds themselves are accepted.
    let mut w = parse_plan_file(SAMPLE).unwrap().workload;
    w.phases[0].load[0].connections = Some(MAX_CONNECTIONS_PER_STREAM);
    w.phases[1].load[1].rate = Some(MAX_RATE_PER_STREAM);
    w.phases[0].duration = MAX_DURATION;
    w.warmup = MAX_DURATION;
    w.timeout = Some(MAX_DURATION);
    w.validate().unwrap();
}

#[test]
fn plan_file_counts_beyond_the_limits_are_refused() {
    let mut plan = parse_plan_file(SAMPLE).unwrap();
    plan.threads = Some(100_000);
    plan.generators = 1000;
    plan.replicas = vec!["127.0.0.1:8080".into(); 65];
    let errs = plan.validate().unwrap_err();
    let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["replicas", "threads", "generators"], "{errs:?}");
    assert!(errs[0].message.contains("64"), "{errs:?}");
    assert!(errs[1].message.contains("256"), "{errs:?}");
    assert!(errs[2].message.contains("32"), "{errs:?}");
}

#[test]
fn type_errors_print_the_field_path_once() {
    let bad = SAMPLE.replace(
        "connections: 2}]\n    - name: mixed",
        "connections: x}]\n    - name: mixed",
    );
    let errs = parse_plan_file(&bad).unwrap_err();
    let e = errs.last().unwrap();
    assert_eq!(e.path, "workload.phases[0].load[0].connections", "{errs:?}");
    let line = e.to_string();
    assert_eq!(
        line.matches("workload.phases[0].load[0].connections")
            .count(),
        1,
        "{line}"
    );
    assert!(line.contains("invalid type"), "{line}");
    // Line 10 of SAMPLE (it starts with a newline), column of the `x`.
    assert_eq!((e.line, e.column), (Some(10), Some(44)), "{line}");
    assert!(line.ends_with(" (line 10, column 44)"), "{line}");
}

#[test]
fn several_unknown_fields_are_all_reported() {
    let bad = SAMPLE
        .replace("warmup: 15s", "warmup: 15s\n  warmpu: 1s")
        .replace("- name: mixed", "- name: mixed\n      durration: 1s");
    let errs = parse_plan_file(&bad).unwrap_err();
    let unknown: Vec<_> = errs
        .iter()
        .filter(|e| e.message == "unknown field")
        .map(|e| e.path.as_str())
        .collect();
    assert_eq!(
        unknown,
        ["workload.warmpu", "workload.phases[1].durration"],
        "{errs:?}"
    );
}

#[test]
fn schema_publishes_the_stream_limits() {
    use crate::limits::*;
    let schema = serde_json::to_value(schemars::schema_for!(Workload)).unwrap();
    let stream = &schema["$defs"]["Stream"]["properties"];
    assert_eq!(
        stream["connections"]["maximum"].as_f64(),
        Some(f64::from(MAX_CONNECTIONS_PER_STREAM)),
        "{stream}"
    );
    assert_eq!(stream["connections"]["minimum"].as_f64(), Some(1.0));
    assert_eq!(
        stream["rate"]["maximum"].as_f64(),
        Some(MAX_RATE_PER_STREAM)
    );
    // The field docs state the same numbers.
    let doc = |f: &str| stream[f]["description"].as_str().unwrap().to_owned();
    assert!(doc("connections").contains(&MAX_CONNECTIONS_PER_STREAM.to_string()));
    assert!(doc("rate").contains(&format!("{MAX_RATE_PER_STREAM}")));
    let phase = &schema["$defs"]["Phase"]["properties"]["duration"]["description"];
    assert!(
        phase.as_str().unwrap().contains(&MAX_DURATION.to_string()),
        "{phase}"
    );
}

#[test]
fn plan_level_fields_are_checked() {
    let mut plan = parse_plan_file(SAMPLE).unwrap();
    plan.target = "localhost:8080".into();
    plan.replicas = vec!["10.0.0.1".into()];
    plan.threads = Some(0);
    let errs = plan.validate().unwrap_err();
    let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["target", "replicas[0]", "threads"]);
}

#[test]
fn stats_addresses_are_checked_like_replicas_and_must_match_them_one_to_one() {
    let mut plan = parse_plan_file(SAMPLE).unwrap();
    plan.replicas = vec!["127.0.0.2:8080".into(), "127.0.0.3:8080".into()];
    plan.stats_addresses = vec!["127.0.0.2".into()];
    let errs = plan.validate().unwrap_err();
    let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["statsAddresses[0]", "statsAddresses"], "{errs:?}");
    plan.stats_addresses = vec!["127.0.0.2:9091".into(), "127.0.0.3:9091".into()];
    assert!(plan.validate().is_ok());
    // Replicas sharing one address (service spread) may have a statistics address each.
    plan.replicas = vec!["127.0.0.1:8080".into()];
    assert!(plan.validate().is_ok());
}

#[test]
fn round_robin_spread_needs_replica_addresses_and_reads_from_yaml() {
    let text = SAMPLE.replace("workload:\n", "workload:\n  spread: roundRobin\n");
    let plan = parse_plan_file(&text).unwrap();
    assert_eq!(plan.workload.spread, Spread::RoundRobin);
    let errs = parse_plan_file(&text.replace("replicas: [\"127.0.0.1:8080\"]\n", "")).unwrap_err();
    assert_eq!(errs[0].path, "replicas", "{errs:?}");
    assert!(errs[0].message.contains("roundRobin"), "{errs:?}");
    // The default is not written out, so older plan files and results round-trip as they were.
    let plain = parse_plan_file(SAMPLE).unwrap();
    assert_eq!(plain.workload.spread, Spread::Service);
    assert!(!serde_yaml::to_string(&plain).unwrap().contains("spread"));
}

#[test]
fn schema_has_docs_and_the_duration_pattern() {
    let schema = serde_json::to_value(schemars::schema_for!(Workload)).unwrap();
    let text = schema.to_string();
    assert!(
        text.contains(&DURATION_PATTERN.replace('\\', "\\\\")),
        "{text}"
    );
    assert_eq!(
        schema["properties"]["warmup"]["type"], "string",
        "Duration is inlined as a string: {text}"
    );
    assert!(
        schema["properties"]["phases"]["description"]
            .as_str()
            .unwrap()
            .contains("back to back")
    );
}
