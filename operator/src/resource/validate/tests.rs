use super::*;

const GOOD: &str = r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata:
  name: quickstart
spec:
  configurations:
    - name: single-x1
      mode: single
      replicas: 1
      cpu: 2
    - name: pool-x2
      mode: pool
      replicas: 2
      cpu: "1"
      memory: 128Mi
      poolSize: auto
  workload:
    endpoints: [{name: fast, path: /fast}, {name: slow, path: /slow}]
    warmup: 2s
    phases:
      - name: fast-only
        duration: 5s
        load: [{endpoint: fast, connections: 2}]
      - name: mixed
        duration: 5s
        load: [{endpoint: fast, connections: 2}, {endpoint: slow, rate: 4}]
"#;

fn errors_of(yaml: &str) -> Vec<String> {
    match parse_benchmark_run(yaml) {
        Ok(_) => vec![],
        Err(e) => e.errors.iter().map(|e| e.to_string()).collect(),
    }
}

fn assert_error(yaml: &str, expected: &str) {
    let errs = errors_of(yaml);
    assert!(
        errs.iter().any(|e| e.contains(expected)),
        "expected an error containing {expected:?}, got {errs:#?}"
    );
}

#[test]
fn a_good_spec_parses_with_defaults() {
    let run = parse_benchmark_run(GOOD).unwrap();
    assert_eq!(run.spec.configurations.len(), 2);
    assert_eq!(run.spec.configurations[0].memory.as_str(), "256Mi");
    assert_eq!(run.spec.target.port, 8080);
    assert_eq!(run.spec.loadgen.generators(), 1);
}

#[test]
fn yaml_syntax_errors_have_line_and_column() {
    let broken = GOOD.replace("    - name: pool-x2", "    - name: [pool-x2");
    let err = parse_benchmark_run(&broken).unwrap_err();
    let e = &err.errors[0];
    assert!(e.message.contains("YAML syntax error"), "{e}");
    assert!(e.line.is_some() && e.column.is_some(), "{e}");
}

#[test]
fn unknown_fields_are_named_with_their_path() {
    let typo = GOOD.replace("      poolSize: auto", "      poolsize: auto");
    assert_error(&typo, "spec.configurations[1].poolsize: unknown field");
}

#[test]
fn type_errors_name_the_field() {
    let bad = GOOD.replace("replicas: 2", "replicas: two");
    assert_error(&bad, "spec.configurations[1].replicas");
}

#[test]
fn duplicate_configuration_names_are_refused() {
    let dup = GOOD.replace("name: pool-x2", "name: single-x1");
    assert_error(
        &dup,
        "spec.configurations[1].name: duplicate name \"single-x1\" (also spec.configurations[0].name)",
    );
}

#[test]
fn streams_must_name_known_endpoints() {
    let bad = GOOD.replace("{endpoint: slow, rate: 4}", "{endpoint: slwo, rate: 4}");
    assert_error(
        &bad,
        "spec.workload.phases[1].load[1].endpoint: unknown endpoint",
    );
}

#[test]
fn connections_and_rate_are_exclusive() {
    let bad = GOOD.replace(
        "{endpoint: slow, rate: 4}",
        "{endpoint: slow, rate: 4, connections: 1}",
    );
    assert_error(&bad, "spec.workload.phases[1].load[1]");
}

#[test]
fn zero_and_negative_durations_are_refused() {
    assert_error(
        &GOOD.replace("duration: 5s", "duration: 0s"),
        "spec.workload.phases[0].duration: must be greater than 0",
    );
    assert_error(
        &GOOD.replace("duration: 5s", "duration: -5s"),
        "spec.workload.phases[0].duration",
    );
}

#[test]
fn cpu_must_be_positive_and_fractions_quoted() {
    assert_error(
        &GOOD.replace("cpu: 2", "cpu: \"0\""),
        "spec.configurations[0].cpu: must be at least 1m",
    );
    assert_error(&GOOD.replace("cpu: 2", "cpu: 0.5"), "must be quoted");
    assert_error(
        &GOOD.replace("cpu: 2", "cpu: lots"),
        "spec.configurations[0].cpu",
    );
}

#[test]
fn the_neighbour_cpu_limit_is_a_cpu_quantity_defaulting_to_250m() {
    let run = parse_benchmark_run(GOOD).unwrap();
    assert_eq!(run.spec.placement.neighbour_cpu_limit.cpu_cores(), Ok(0.25));
    let with = |limit: &str| format!("{GOOD}  placement:\n    neighbourCpuLimit: {limit}\n");
    let run = parse_benchmark_run(&with("\"1.5\"")).unwrap();
    assert_eq!(run.spec.placement.neighbour_cpu_limit.cpu_cores(), Ok(1.5));
    assert!(parse_benchmark_run(&with("100m")).is_ok());
    assert_error(
        &with("lots"),
        "spec.placement.neighbourCpuLimit: invalid quantity \"lots\"",
    );
    assert_error(
        &with("\"0\""),
        "spec.placement.neighbourCpuLimit: must be at least 1m",
    );
}

#[test]
fn wrong_kind_is_refused() {
    assert_error(
        &GOOD.replace("kind: BenchmarkRun", "kind: Job"),
        "kind: expected",
    );
}

#[test]
fn axes_names_must_not_collide_with_configurations() {
    let yaml = format!("{GOOD}  axes:\n    modes: [single]\n    replicas: [1]\n    totalCpu: 2\n");
    assert_error(&yaml, "generates cell \"single-x1\"");
}

#[test]
fn type_errors_print_the_field_path_once() {
    let bad = GOOD.replace("replicas: 2", "replicas: two");
    let errs = errors_of(&bad);
    let path = "spec.configurations[1].replicas";
    let line = errs
        .iter()
        .find(|e| e.contains(path))
        .unwrap_or_else(|| panic!("{errs:#?}"));
    assert_eq!(line.matches(path).count(), 1, "{line}");
    assert!(line.contains("invalid type"), "{line}");
}

#[test]
fn type_errors_carry_their_line_and_column() {
    // Line 14 of GOOD (it starts with a newline), column of the `two`.
    let errs = errors_of(&GOOD.replace("replicas: 2", "replicas: two"));
    assert_eq!(
        errs,
        [
            "spec.configurations[1].replicas: invalid type: string \"two\", expected u32 (line 14, column 17)"
        ]
    );
}

#[test]
fn several_unknown_fields_are_all_reported_and_a_status_is_not_one() {
    let yaml = GOOD
        .replace("      poolSize: auto", "      poolsize: auto")
        .replace("    warmup: 2s", "    warmup: 2s\n    warmpu: 1s")
        .replace(
            "metadata:",
            "status: {phase: Running, aFutureField: 1}\nmetadata:",
        );
    assert_eq!(
        errors_of(&yaml),
        [
            "spec.configurations[1].poolsize: unknown field; did you mean `poolSize`? (line 18, \
             column 7)",
            "spec.workload.warmpu: unknown field; did you mean `warmup`? (line 22, column 5)",
        ]
    );
}

#[test]
fn a_wrong_kind_and_a_type_error_are_reported_together() {
    let yaml = GOOD
        .replace("kind: BenchmarkRun", "kind: Job")
        .replace("replicas: 2", "replicas: two");
    let errs = errors_of(&yaml);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert_eq!(
        errs[0],
        "kind: expected \"BenchmarkRun\", got \"Job\" (line 3, column 1)"
    );
    assert!(
        errs[1].starts_with("spec.configurations[1].replicas: invalid type"),
        "{errs:#?}"
    );
}

#[test]
fn replicas_beyond_the_limit_are_refused() {
    assert_error(
        &GOOD.replace("replicas: 2", "replicas: 1000"),
        "spec.configurations[1].replicas: 1000 is more than the 64 replicas allowed",
    );
    let axes =
        format!("{GOOD}  axes:\n    modes: [single]\n    replicas: [1, 1000]\n    totalCpu: 2\n");
    assert_error(
        &axes,
        "spec.axes.replicas[1]: 1000 is more than the 64 replicas allowed",
    );
    assert!(errors_of(&GOOD.replace("replicas: 2", "replicas: 64")).is_empty());
}

#[test]
fn pool_size_beyond_what_the_target_accepts_is_refused() {
    assert_error(
        &GOOD.replace("poolSize: auto", "poolSize: 2000"),
        "spec.configurations[1].poolSize: 2000 is more than the 1024 workers the target accepts",
    );
    assert_error(
        &GOOD.replace("poolSize: auto", "poolSize: \"2000\""),
        "spec.configurations[1].poolSize",
    );
    let axes = format!(
        "{GOOD}  axes:\n    modes: [pool]\n    replicas: [1]\n    totalCpu: 2\n    poolSize: 1025\n"
    );
    assert_error(&axes, "spec.axes.poolSize: 1025 is more than the 1024");
    assert!(errors_of(&GOOD.replace("poolSize: auto", "poolSize: 1024")).is_empty());
}

#[test]
fn workload_values_beyond_the_limits_are_refused_with_the_limit() {
    assert_error(
        &GOOD.replace(
            "{endpoint: fast, connections: 2}]\n      - name: mixed",
            "{endpoint: fast, connections: 1000000000}]\n      - name: mixed",
        ),
        "spec.workload.phases[0].load[0].connections: 1000000000 is more than the 10000",
    );
    assert_error(
        &GOOD.replace("rate: 4", "rate: 1e12"),
        "spec.workload.phases[1].load[1].rate: 1000000000000 is above the 10000000",
    );
    assert_error(
            &GOOD.replace("duration: 5s\n        load: [{endpoint: fast, connections: 2}]\n      - name: mixed", "duration: 99999999999h\n        load: [{endpoint: fast, connections: 2}]\n      - name: mixed"),
            "spec.workload.phases[0].duration: invalid duration \"99999999999h\": longer than 8760h",
        );
    assert_error(
        &GOOD.replace("warmup: 2s", "warmup: 25h"),
        "spec.workload.warmup: 25h is longer than the 24h allowed",
    );
}

#[test]
fn run_level_values_beyond_the_limits_are_refused() {
    let with = |extra: &str| format!("{GOOD}{extra}");
    assert_error(
        &with("  timeouts:\n    ready: 25h\n"),
        "spec.timeouts.ready: 25h is longer than the 24h allowed",
    );
    assert_error(
        &with("  timeouts:\n    runSlack: 48h\n"),
        "spec.timeouts.runSlack: 48h is longer than the 24h allowed",
    );
    assert_error(
        &with("  ttlAfterFinished: 99999999999h\n"),
        "spec.ttlAfterFinished: invalid duration \"99999999999h\": longer than 8760h",
    );
    assert!(errors_of(&with("  ttlAfterFinished: 8760h\n")).is_empty());
    assert_error(
        &GOOD.replace(
            "  workload:\n",
            "  loadgen:\n    generators: 33\n    threads: 257\n  workload:\n",
        ),
        "spec.loadgen.generators: 33 is more than the 32 load generators allowed",
    );
    assert_error(
        &GOOD.replace(
            "  workload:\n",
            "  loadgen:\n    threads: 257\n  workload:\n",
        ),
        "spec.loadgen.threads: 257 is more than the 256 threads allowed",
    );
}

#[test]
fn the_pool_size_limit_is_the_targets() {
    use benchmatrix_loadgen::limits::MAX_POOL_SIZE;
    use benchmatrix_target::config::Count;
    assert_eq!(
        MAX_POOL_SIZE.to_string().parse::<Count>(),
        Ok(Count::Fixed(MAX_POOL_SIZE as usize))
    );
    assert!((MAX_POOL_SIZE + 1).to_string().parse::<Count>().is_err());
}

fn cluster_errors_of(yaml: &str) -> Vec<String> {
    let run = parse_benchmark_run(yaml).expect("valid for the local runner");
    match validate_for_cluster(&run) {
        Ok(()) => vec![],
        Err(e) => e.errors.iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn on_a_cluster_the_run_name_is_at_most_63_characters() {
    let named = |n: usize| GOOD.replace("name: quickstart", &format!("name: {}", "r".repeat(n)));
    assert!(cluster_errors_of(&named(63)).is_empty());
    assert_eq!(
        cluster_errors_of(&named(64)),
        ["metadata.name: at most 63 characters (it is used as a label value)"]
    );
}

#[test]
fn on_a_cluster_each_load_generator_gets_a_connection_of_every_closed_stream() {
    let with_parallelism = |n: u32| {
        GOOD.replace(
            "  workload:\n",
            &format!("  loadgen:\n    generators: {n}\n  workload:\n"),
        )
    };
    // Closed-loop streams have 2 connections each; the open-loop one has none to share.
    assert!(cluster_errors_of(&with_parallelism(2)).is_empty());
    let errs = cluster_errors_of(&with_parallelism(3));
    let share = "must be at least spec.loadgen.generators (3): each load generator gets a share";
    assert_eq!(
        errs,
        [
            format!("spec.workload.phases[0].load[0].connections: {share}"),
            format!("spec.workload.phases[1].load[0].connections: {share}"),
        ]
    );
}

#[test]
fn the_cluster_rules_come_after_the_spec_rules() {
    let mut run = parse_benchmark_run(GOOD).unwrap();
    run.metadata.name = Some("r".repeat(64));
    run.spec.configurations[1].replicas = 0;
    let errs = validate_for_cluster(&run).unwrap_err().errors;
    let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["spec.configurations[1].replicas", "metadata.name"]);
}

#[test]
fn every_problem_is_reported_at_once() {
    let bad = GOOD
        .replace("name: pool-x2", "name: single-x1")
        .replace("replicas: 2", "replicas: 0");
    assert!(errors_of(&bad).len() >= 2, "{:#?}", errors_of(&bad));
}

/// GOOD with its `fast` endpoint made a POST with headers and a body.
fn with_post(endpoint: &str) -> String {
    GOOD.replace(
        "    endpoints: [{name: fast, path: /fast}, {name: slow, path: /slow}]\n",
        &format!("    endpoints:\n{endpoint}      - {{name: slow, path: /slow}}\n"),
    )
}

const POST: &str = r#"      - name: fast
        path: /fast
        method: POST
        headers:
          - {name: Content-Type, value: application/json}
          - name: Authorization
            valueFrom: {secretKeyRef: {name: api-token, key: token}}
        body: '{"n": 1}'
        successCodes: ["2xx", 404]
"#;

#[test]
fn a_post_with_a_secret_header_is_a_valid_spec() {
    let run = parse_benchmark_run(&with_post(POST)).unwrap_or_else(|e| panic!("{e}"));
    let e = &run.spec.workload.endpoints[0];
    assert_eq!(e.method_or_default(), "POST");
    assert_eq!(e.headers.len(), 2);
}

#[test]
fn bad_request_fields_are_refused_with_their_spec_paths() {
    let at = "spec.workload.endpoints[0]";
    for (from, to, expected) in [
        (
            "{name: Content-Type, value: application/json}",
            "{name: Host, value: example.com}",
            format!("{at}.headers[0].name: Host is written by the load generator"),
        ),
        (
            "{name: Content-Type, value: application/json}",
            "{name: \"Content-Type\\r\\nX-Injected\", value: x}",
            format!("{at}.headers[0].name: must not contain a line break"),
        ),
        (
            "{name: Content-Type, value: application/json}",
            "{name: X-A, value: \"a\\nb\"}",
            format!("{at}.headers[0].value: must not contain a line break"),
        ),
        (
            "method: POST",
            "method: GET",
            format!("{at}.body: a GET request carries no body"),
        ),
        (
            "successCodes: [\"2xx\", 404]",
            "successCodes: [\"2xx\", 4040]",
            format!("{at}.successCodes[1]: 4040 is not an HTTP status code"),
        ),
        (
            "{secretKeyRef: {name: api-token, key: token}}",
            "{secretKeyRef: {name: API_token, key: token}}",
            format!("{at}.headers[1].valueFrom.secretKeyRef.name: must be a Secret name"),
        ),
        (
            "{secretKeyRef: {name: api-token, key: token}}",
            "{env: TOKEN}",
            format!(
                "{at}.headers[1].valueFrom.env: a BenchmarkRun takes header values from a Secret"
            ),
        ),
        (
            "{secretKeyRef: {name: api-token, key: token}}",
            "{secretKeyRef: {name: api-token, key: token, optional: true}}",
            format!("{at}.headers[1].valueFrom.secretKeyRef.optional: unknown field"),
        ),
    ] {
        let post = POST.replace(from, to);
        assert_ne!(post, POST, "{from} not found");
        assert_error(&with_post(&post), &expected);
    }
}

#[test]
fn bodies_that_would_overflow_a_clusters_plan_config_map_are_refused_there_only() {
    let big = format!("'{}'", "x".repeat(40_000));
    let yaml = with_post(&POST.replace("'{\"n\": 1}'", &big)).replace(
        "  workload:\n",
        "  loadgen: {generators: 32}\n  workload:\n",
    );
    let run = parse_benchmark_run(&yaml).unwrap_or_else(|e| panic!("{e}"));
    let err = validate_for_cluster(&run).unwrap_err().to_string();
    assert!(
            err.contains("spec.workload.endpoints: the bodies and headers (40041 bytes) times spec.loadgen.generators (32)"),
            "{err}"
        );
}

#[test]
fn parallelism_is_a_count_from_1_to_16_or_auto() {
    let with = |p: &str| {
        GOOD.replace(
            "  workload:\n",
            &format!("  parallelism: {p}\n  workload:\n"),
        )
    };
    assert_eq!(errors_of(&with("4")), Vec::<String>::new());
    assert_eq!(errors_of(&with("auto")), Vec::<String>::new());
    assert_error(&with("0"), "spec.parallelism: must be 1..16");
    assert_error(&with("17"), "spec.parallelism: must be 1..16");
    let errs = errors_of(&with("lots"));
    assert!(
        errs.iter()
            .any(|e| e.contains("parallelism") && e.contains("auto")),
        "{errs:?}"
    );
}

#[test]
fn repeat_is_a_count_or_min_max_precision_each_part_checked_by_name() {
    let with = |repeat: &str| {
        GOOD.replace(
            "  workload:\n",
            &format!("  repeat: {repeat}\n  workload:\n"),
        )
    };
    assert_eq!(errors_of(&with("5")), Vec::<String>::new());
    assert_eq!(
        errors_of(&with("{min: 3, max: 10, precision: 5}")),
        Vec::<String>::new()
    );
    assert_error(&with("0"), "spec.repeat: must be 1..20");
    assert_error(&with("21"), "spec.repeat: must be 1..20");
    assert_error(&with("-1"), "spec.repeat: must be 1..20");
    let errs = errors_of(&with("{min: 1, max: 30, precision: 0}"));
    for path in [
        "spec.repeat.min",
        "spec.repeat.max",
        "spec.repeat.precision",
    ] {
        assert!(errs.iter().any(|e| e.starts_with(path)), "{path}: {errs:?}");
    }
    assert_error(
        &with("{min: 6, max: 4, precision: 5}"),
        "spec.repeat.max: must be from min (6)",
    );
    assert_error(
        &with("{min: 3, max: 10, within: 5}"),
        "unknown field `within` in repeat",
    );
}

#[test]
fn variants_are_two_or_more_named_once_and_cross_into_cells_of_distinct_names() {
    use crate::resource::{BenchmarkRun, Configuration, Variant};
    let run = |variants: Vec<Variant>| {
        let mut run = BenchmarkRun::sample()
            .with_cell(Configuration::named("a"))
            .with_cell(Configuration::named("a-b"));
        run.spec.variants = variants;
        run
    };
    let errors = |r: &BenchmarkRun| -> Vec<String> {
        validate_spec(&r.spec)
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    };
    let fine = run(vec![
        Variant::named("base"),
        Variant::named("next").image("x:2"),
    ]);
    assert_eq!(errors(&fine), Vec::<String>::new());
    let cells: Vec<String> = matrix::cells(&fine.spec)
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(cells, ["a-base", "a-next", "a-b-base", "a-b-next"]);

    let one = errors(&run(vec![Variant::named("base")]));
    assert!(one[0].contains("give at least two variants"), "{one:?}");
    let twice = errors(&run(vec![Variant::named("v"), Variant::named("v")]));
    assert!(
        twice
            .iter()
            .any(|e| e.starts_with("spec.variants[1].name") && e.contains("duplicate name \"v\"")),
        "{twice:?}"
    );
    // a + "b-c" and a-b + "c" would both be cell a-b-c.
    let clash = errors(&run(vec![Variant::named("b-c"), Variant::named("c")]));
    assert!(
        clash
            .iter()
            .any(|e| e.contains("two cells would be named \"a-b-c\"")),
        "{clash:?}"
    );
    let empty = errors(&run(vec![
        Variant::named("base").image(" "),
        Variant::named("next").command(["node", ""]),
    ]));
    assert!(
        empty
            .iter()
            .any(|e| e.starts_with("spec.variants[0].image")),
        "{empty:?}"
    );
    assert!(
        empty
            .iter()
            .any(|e| e.starts_with("spec.variants[1].command")),
        "{empty:?}"
    );
}

#[test]
fn a_variants_pod_template_is_checked_at_its_own_path() {
    let yaml = r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: v}
spec:
  configurations: [{name: a, cpu: "1"}]
  variants:
    - name: base
    - name: next
      podTemplate:
        spec:
          containers: [{name: target, image: x:1, env: [{name: BENCH_MODE, value: single}]}]
  workload:
    endpoints: [{name: fast, path: /fast}]
    phases: [{name: p, duration: 1s, load: [{endpoint: fast, connections: 1}]}]
"#;
    let errs = errors_of(yaml);
    assert!(
        errs.iter()
            .any(|e| e.starts_with("spec.variants[1].podTemplate")),
        "{errs:#?}"
    );
}

#[test]
fn thresholds_name_known_variants_and_judge_one_against_another() {
    use crate::resource::{BenchmarkRun, Configuration, Variant};
    let run = |thresholds: &str, variants: Vec<Variant>| {
        let mut run = BenchmarkRun::sample().with_cell(Configuration::named("a"));
        run.spec.variants = variants;
        run.spec.thresholds = serde_yaml::from_str(thresholds).unwrap();
        run
    };
    let errors = |r: &BenchmarkRun| -> Vec<String> {
        check_thresholds(&r.spec)
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    };
    let two = || vec![Variant::named("base"), Variant::named("next")];
    let fine = run(
        "[{variant: next, p99: {atMost: 1.05, ofVariant: base}}, \
          {p50: {atMost: 1.1, ofVariant: base}}, {rps: {atLeast: 0.95, ofVariant: base}}]",
        two(),
    );
    assert_eq!(errors(&fine), Vec::<String>::new());
    let (metric, bound) = fine.spec.thresholds[0].limit().unwrap();
    assert_eq!(metric, crate::resource::Metric::P99);
    assert_eq!(bound.reference_variant(), Some("base"));
    assert_eq!(bound.reference(), None);

    let bad = errors(&run(
        "[{variant: nxt, p99: {below: 1s}}, {p99: {atMost: 1.05, ofVariant: bse}}, \
          {variant: base, p99: {atMost: 1.05, ofVariant: base}}, \
          {cell: a-base, p99: {atMost: 1.05, ofVariant: base}}, \
          {p99: {atMost: 1.05, of: a-base, ofVariant: base}}]",
        two(),
    ));
    assert_eq!(bad.len(), 5, "{bad:?}");
    assert!(
        bad.iter().any(|e| e.starts_with(
            "spec.thresholds[0].variant: no variant is named \"nxt\"; the variants are base, next"
        )),
        "{bad:?}"
    );
    assert!(bad.iter().any(|e| e.starts_with("spec.thresholds[1].p99.ofVariant: no variant is named \"bse\"")), "{bad:?}");
    assert!(
        bad.iter()
            .any(|e| e.starts_with("spec.thresholds[2].p99.ofVariant")
                && e.contains("against itself")),
        "{bad:?}"
    );
    assert!(
        bad.iter().any(|e| e
            .starts_with("spec.thresholds[3]: selects no cell of a variant other than \"base\"")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|e| e.starts_with("spec.thresholds[4].p99: set either below")),
        "{bad:?}"
    );

    let none = errors(&run("[{p99: {atMost: 1.05, ofVariant: base}}]", Vec::new()));
    assert!(none[0].contains("the run has no spec.variants"), "{none:?}");
}

/// `spec.loadgen.parallelism` was renamed `generators`: the old name still counts (with a
/// deprecation a run shows), the two disagreeing is refused, and the new name warns of nothing.
#[test]
fn the_old_name_of_loadgen_generators_still_counts_and_is_reported_deprecated() {
    let with = |loadgen: &str| {
        GOOD.replace(
            "  workload:\n",
            &format!("  loadgen: {loadgen}\n  workload:\n"),
        )
    };
    let old = parse_benchmark_run(&with("{parallelism: 2}")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(old.spec.loadgen.generators(), 2);
    let said = super::deprecations(&old.spec);
    assert_eq!(said.len(), 1);
    assert_eq!(said[0].path, "spec.loadgen.parallelism");
    assert!(
        said[0].message.contains("spec.loadgen.generators"),
        "{said:?}"
    );
    let new = parse_benchmark_run(&with("{generators: 2}")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(new.spec.loadgen.generators(), 2);
    assert!(super::deprecations(&new.spec).is_empty());
    assert!(parse_benchmark_run(&with("{generators: 2, parallelism: 2}")).is_ok());
    assert_error(
        &with("{generators: 2, parallelism: 3}"),
        "spec.loadgen.parallelism: is the deprecated name of spec.loadgen.generators, which says 2: set generators alone",
    );
    let default = parse_benchmark_run(GOOD).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(default.spec.loadgen.generators(), 1);
}

/// A search repeats as a cell does, and compares variants on its capacity; sizing confirms
/// its answer its own way, so it takes neither.
#[test]
fn capacity_takes_repeat_and_variants_and_sizing_takes_neither() {
    let capacity = include_str!("../../../../manifests/samples/capacity.yaml");
    let with = |extra: &str| capacity.replacen("spec:\n", &format!("spec:\n{extra}"), 1);
    let repeated = with("  repeat: {min: 3, max: 5, precision: 5}\n");
    assert_eq!(errors_of(&repeated), Vec::<String>::new());
    let variants = with(
        "  repeat: 5\n  variants: [{name: base}, {name: candidate, env: [{name: BENCH_FAST_MS, value: \"25\"}]}]\n",
    );
    assert_eq!(errors_of(&variants), Vec::<String>::new());
    // With variants a search's rounds are paired: a per-cell precision rule would stop them
    // apart, so a count is asked for.
    let adaptive_variants = with(
        "  repeat: {min: 3, max: 5, precision: 5}\n  variants: [{name: base}, {name: candidate}]\n",
    );
    assert_error(
        &adaptive_variants,
        "spec.repeat: with spec.capacity and spec.variants, give a count",
    );
    let sizing = include_str!("../../../../manifests/samples/sizing.yaml");
    let sized = |extra: &str| sizing.replacen("spec:\n", &format!("spec:\n{extra}"), 1);
    assert_error(
        &sized("  repeat: 3\n"),
        "spec.repeat: not supported with spec.sizing",
    );
    assert_error(
        &sized("  variants: [{name: base}, {name: candidate}]\n"),
        "spec.variants: not supported with spec.sizing",
    );
}

/// What each kind of mistake reads as: the input (GOOD, edited) -> the one line it must say,
/// with its place. Every error but the whole-file ones carries "line N".
#[test]
fn each_mistake_is_said_once_at_its_line() {
    let edit = |from: &str, to: &str| {
        assert!(GOOD.contains(from), "{from}");
        GOOD.replacen(from, to, 1)
    };
    let sizing = include_str!("../../../../manifests/samples/sizing.yaml");
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "(document): the file is empty"),
        ("# nothing yet\n".into(), "(document): the file is empty"),
        (
            format!("{GOOD}---\n{GOOD}"),
            "(document): one BenchmarkRun per file: this one holds 2 YAML documents (the second \
             begins at `---` on line 28)",
        ),
        (
            edit("      replicas: 2\n", "\t  replicas: 2\n"),
            "(document): YAML syntax error: a tab in the indentation of `replicas: 2`: YAML \
             indents with spaces only (line 14, column 1)",
        ),
        (
            edit("  workload:", "  repat: 3\n  workload:"),
            "spec.repat: unknown field; did you mean `repeat`? (line 18, column 3)",
        ),
        (
            edit("      replicas: 2\n", "      replica: 2\n"),
            "spec.configurations[1].replica: unknown field; did you mean `replicas`? (line 14, \
             column 7)",
        ),
        (
            edit("      replicas: 2\n", "      replicas: 200\n"),
            "spec.configurations[1].replicas: 200 is more than the 64 replicas allowed (line 14, \
             column 7)",
        ),
        (
            edit("      replicas: 2\n", "      replicas: two\n"),
            "spec.configurations[1].replicas: invalid type: string \"two\", expected u32 (line \
             14, column 17)",
        ),
        (
            edit("kind: BenchmarkRun", "kind: BenchmarkRunn"),
            "kind: expected \"BenchmarkRun\", got \"BenchmarkRunn\" (line 3, column 1)",
        ),
        (
            sizing.replacen("margin: 20%", "margin: 20", 1),
            "spec.sizing.margin: invalid percentage \"20\": expected a number followed by %, \
             e.g. \"5%\" (line 29, column 5)",
        ),
        (
            sizing.replacen("margin: 20%", "margin: 300%", 1),
            "spec.sizing.margin: 300% is outside 0% to 200% (line ",
        ),
    ];
    for (yaml, want) in &cases {
        let errs = errors_of(yaml);
        assert_eq!(errs.len(), 1, "{want}: {errs:#?}");
        assert!(
            errs[0].starts_with(want),
            "want {want:?}, got {:?}",
            errs[0]
        );
        if !want.starts_with("(document): the file is empty") {
            assert!(errs[0].contains("(line "), "{:?}", errs[0]);
        }
    }
}
