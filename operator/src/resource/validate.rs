//! The operator's own validation of a BenchmarkRun, with field paths, shared with the local
//! runner.
//!
//! The CRD schema and its CEL rules refuse most bad specs at apply time, but a run can still
//! reach the operator unchecked (an older CRD, a client that skips validation) and the local
//! runner has no API server at all. Every message names the field the way a user would find it
//! in their YAML: `spec.configurations[2].name: duplicate name "x"`.

use std::collections::HashMap;
use std::fmt;

use benchmatrix_loadgen::limits::{
    MAX_ANY_DURATION, MAX_DURATION, MAX_GENERATORS, MAX_POOL_SIZE, MAX_REPLICAS, MAX_THREADS,
};
use benchmatrix_loadgen::strict_yaml;

use crate::resource::repeat::MIN_ADAPTIVE_ROUNDS;
use crate::resource::{
    BenchmarkRun, BenchmarkRunSpec, Configuration, Duration, EnvVar, LoadgenSpec, PoolSize,
    Quantity, Repeat, RunPhase, TargetSpec, Workload,
};
use crate::resource::{matrix, thresholds};
use kube::ResourceExt;

/// The apiVersion a BenchmarkRun document must carry.
pub const API_VERSION: &str = "benchmatrix.dev/v1alpha1";
/// The kind a BenchmarkRun document must carry.
pub const KIND: &str = "BenchmarkRun";

/// Most repetitions of each cell (the CRD says the same).
pub const MAX_REPEAT: u32 = 20;

/// Most cells one run may have (a guard against an axes typo expanding to thousands).
pub const MAX_CELLS: usize = 64;

pub use benchmatrix_loadgen::strict_yaml::FieldError;

/// Everything wrong with a spec, one line per problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SpecError {
    /// The problems, in document order where known.
    pub errors: Vec<FieldError>,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// Parses and validates a BenchmarkRun YAML (or JSON) document.
///
/// Reports, in this order of precedence: YAML syntax errors with line and column; else a wrong
/// apiVersion or kind, then unknown fields with their path (a misspelt field would otherwise
/// silently fall back to its default), then a type error with the field path, line and column,
/// or else every semantic problem at once.
pub fn parse_benchmark_run(yaml: &str) -> Result<BenchmarkRun, SpecError> {
    let mut errors = type_meta_errors(yaml);
    match strict_yaml::parse_strict_checked(yaml, is_tolerated, |run: &BenchmarkRun| {
        validate_spec(&run.spec)
    }) {
        Ok(run) if errors.is_empty() => Ok(run),
        Ok(_) => Err(SpecError { errors }),
        Err(more) => {
            errors.extend(more);
            Err(SpecError { errors })
        }
    }
}

/// The derived type does not keep apiVersion and kind, so they are checked on the raw value
/// (nothing to say here about a document that is not YAML: the parser says that).
fn type_meta_errors(yaml: &str) -> Vec<FieldError> {
    let Ok(raw) = serde_yaml::from_str::<serde_yaml::Value>(yaml) else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    for (field, want) in [("apiVersion", API_VERSION), ("kind", KIND)] {
        let got = raw.get(field).and_then(|v| v.as_str());
        if got != Some(want) {
            errors.push(FieldError::new(
                field,
                format!(
                    "expected {want:?}, got {}",
                    got.map_or("nothing".to_owned(), |g| format!("{g:?}"))
                ),
            ));
        }
    }
    errors
}

/// Fields the BenchmarkRun type does not read that a document may still carry: apiVersion and
/// kind were checked above; the status is written by the operator, and a document copied from
/// `kubectl get -o yaml` carries it, which is fine.
fn is_tolerated(path: &str) -> bool {
    path == "apiVersion" || path == "kind" || path.starts_with("status")
}

/// Validates a run the operator received (already deserialized by the API client).
pub fn validate_run(run: &BenchmarkRun) -> Result<(), SpecError> {
    let errors = validate_spec(&run.spec);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(SpecError { errors })
    }
}

/// [`validate_run`] plus the rules only a cluster needs: the run's name becomes a label value,
/// each of the `spec.loadgen.parallelism` load generators takes a share of every closed-loop
/// stream's connections, and the object with its status must fit what etcd stores
/// ([`crate::resource::size`]).
pub fn validate_for_cluster(run: &BenchmarkRun) -> Result<(), SpecError> {
    let mut errors = validate_spec(&run.spec);
    if run.name_any().len() > 63 {
        errors.push(FieldError::new(
            "metadata.name",
            "at most 63 characters (it is used as a label value)",
        ));
    }
    let n = run.spec.loadgen.parallelism;
    check_plan_size(&run.spec.workload, n, &mut errors);
    if n > 1 {
        for (p, phase) in run.spec.workload.phases.iter().enumerate() {
            for (s, stream) in phase.load.iter().enumerate() {
                if stream.connections.is_some_and(|c| c < n) {
                    errors.push(FieldError::new(
                        format!("spec.workload.phases[{p}].load[{s}].connections"),
                        format!(
                            "must be at least spec.loadgen.parallelism ({n}): each load generator gets a share"
                        ),
                    ));
                }
            }
        }
    }
    // The size follows from a consistent spec only. It is a rule for admitting a run: one that
    // started under an operator that counted differently is left to finish.
    let started = run
        .status
        .as_ref()
        .is_some_and(|s| s.phase != RunPhase::Pending);
    if errors.is_empty()
        && !started
        && let Some(too_big) = crate::resource::size::refusal(run)
    {
        errors.push(too_big);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(SpecError { errors })
    }
}

/// Checks everything the types cannot express. Paths start with `spec.`.
pub fn validate_spec(spec: &BenchmarkRunSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    check_target(&spec.target, &mut errors);
    let configured = check_configurations(spec, &mut errors);
    check_axes(spec, &configured, &mut errors);
    check_workload(&spec.workload, &mut errors);
    check_loadgen(&spec.loadgen, &mut errors);
    check_timeouts(spec, &mut errors);
    errors.extend(check_thresholds(spec));
    check_repeat(spec.repeat, &mut errors);
    errors
}

/// `spec.target`: port, paths, image, pod template, command and env.
fn check_target(target: &TargetSpec, errors: &mut Vec<FieldError>) {
    if target.port == 0 {
        errors.push(FieldError::new("spec.target.port", "must be 1..65535"));
    }
    for (field, path) in [
        ("readinessPath", &target.readiness_path),
        ("statsPath", &target.stats_path),
    ] {
        if !path.starts_with('/') {
            errors.push(FieldError::new(
                format!("spec.target.{field}"),
                format!("must start with \"/\", got {path:?}"),
            ));
        }
    }
    if let Some(image) = &target.image
        && image.trim().is_empty()
    {
        errors.push(FieldError::new(
            "spec.target.image",
            "must not be empty (leave it out for the built-in target)",
        ));
    }
    if let Some(template) = &target.pod_template {
        match template.parse() {
            Ok(parsed) => errors.extend(crate::resource::pod_template::check(
                &parsed,
                target.image.as_deref(),
                target.port,
            )),
            Err(problems) => errors.extend(problems),
        }
    }
    if target.command.iter().any(|a| a.is_empty())
        || target.command.first().is_some_and(|p| p.trim().is_empty())
    {
        errors.push(FieldError::new(
            "spec.target.command",
            "the program and its arguments must not be empty strings",
        ));
    }
    check_env(&target.env, "spec.target.env", errors);
}

/// `spec.configurations`: each one, and that no name repeats. Returns each name with the index
/// that first used it, which [`check_axes`] needs to refuse a generated cell of the same name.
fn check_configurations<'a>(
    spec: &'a BenchmarkRunSpec,
    errors: &mut Vec<FieldError>,
) -> HashMap<&'a str, usize> {
    if spec.configurations.is_empty() && spec.axes.is_none() {
        errors.push(FieldError::new(
            "spec.configurations",
            "give at least one configuration (or an axes block)",
        ));
    }
    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    for (i, c) in spec.configurations.iter().enumerate() {
        let at = format!("spec.configurations[{i}]");
        check_configuration(c, &at, errors);
        if let Some(first) = first_seen.get(c.name.as_str()) {
            errors.push(FieldError::new(
                format!("{at}.name"),
                format!(
                    "duplicate name {:?} (also spec.configurations[{first}].name)",
                    c.name
                ),
            ));
        } else {
            first_seen.insert(&c.name, i);
        }
    }
    first_seen
}

/// `spec.axes`, and the number of cells the matrix comes to (the configurations plus the cells
/// the axes generate) against [`MAX_CELLS`]. `configured` maps each configuration's name to its
/// index, so a generated cell of the same name is refused.
fn check_axes(
    spec: &BenchmarkRunSpec,
    configured: &HashMap<&str, usize>,
    errors: &mut Vec<FieldError>,
) {
    let Some(axes) = &spec.axes else {
        if spec.configurations.len() > MAX_CELLS {
            errors.push(FieldError::new(
                "spec.configurations",
                format!(
                    "{} configurations; at most {MAX_CELLS} are allowed",
                    spec.configurations.len()
                ),
            ));
        }
        return;
    };
    if axes.modes.is_empty() {
        errors.push(FieldError::new("spec.axes.modes", "list at least one mode"));
    }
    if axes.replicas.is_empty() {
        errors.push(FieldError::new(
            "spec.axes.replicas",
            "list at least one replica count",
        ));
    }
    for (i, r) in axes.replicas.iter().enumerate() {
        check_replicas(*r, &format!("spec.axes.replicas[{i}]"), errors);
    }
    check_pool_size(axes.pool_size, "spec.axes.poolSize", errors);
    match (axes.cpu.is_empty(), &axes.total_cpu) {
        (true, None) => errors.push(FieldError::new(
            "spec.axes.cpu",
            "list CPU values per replica, or set totalCpu",
        )),
        (false, Some(_)) => errors.push(FieldError::new(
            "spec.axes.totalCpu",
            "set either cpu (per replica) or totalCpu (shared budget), not both",
        )),
        _ => {}
    }
    for (i, q) in axes.cpu.iter().enumerate() {
        check_cpu(q, &format!("spec.axes.cpu[{i}]"), errors);
    }
    if let Some(total) = &axes.total_cpu {
        check_cpu(total, "spec.axes.totalCpu", errors);
    }
    check_memory(&axes.memory, "spec.axes.memory", errors);
    check_env(&axes.env, "spec.axes.env", errors);
    // Names the axes generate must not collide with each other or with configurations.
    let expanded = matrix::axes_cells(axes);
    if spec.configurations.len() + expanded.len() > MAX_CELLS {
        errors.push(FieldError::new(
            "spec.axes",
            format!(
                "the matrix would have {} cells; at most {MAX_CELLS} are allowed",
                spec.configurations.len() + expanded.len()
            ),
        ));
    } else {
        for c in &expanded {
            if let Some(first) = configured.get(c.name.as_str()) {
                errors.push(FieldError::new(
                    "spec.axes",
                    format!(
                        "generates cell {:?}, which spec.configurations[{first}] already names",
                        c.name
                    ),
                ));
            }
        }
    }
}

/// `spec.workload`: the load generator's own rules, prefixed with `spec.`, and where header
/// values may come from.
fn check_workload(workload: &Workload, errors: &mut Vec<FieldError>) {
    if let Err(errs) = workload.validate() {
        errors.extend(
            errs.into_iter()
                .map(|e| FieldError::new(format!("spec.{}", e.path), e.message)),
        );
    }
    check_header_sources(workload, errors);
}

/// `spec.loadgen`: resources, how many load generators and their threads.
fn check_loadgen(loadgen: &LoadgenSpec, errors: &mut Vec<FieldError>) {
    check_cpu(&loadgen.cpu, "spec.loadgen.cpu", errors);
    check_memory(&loadgen.memory, "spec.loadgen.memory", errors);
    if loadgen.parallelism == 0 {
        errors.push(FieldError::new(
            "spec.loadgen.parallelism",
            "must be at least 1",
        ));
    } else if loadgen.parallelism > MAX_GENERATORS {
        errors.push(FieldError::new(
            "spec.loadgen.parallelism",
            format!(
                "{} is more than the {MAX_GENERATORS} load generators allowed",
                loadgen.parallelism
            ),
        ));
    }
    match loadgen.threads {
        Some(0) => errors.push(FieldError::new(
            "spec.loadgen.threads",
            "must be at least 1",
        )),
        Some(t) if t > MAX_THREADS => errors.push(FieldError::new(
            "spec.loadgen.threads",
            format!("{t} is more than the {MAX_THREADS} threads allowed"),
        )),
        _ => {}
    }
}

/// `spec.timeouts` and `spec.ttlAfterFinished`: every wait positive and within its bound.
fn check_timeouts(spec: &BenchmarkRunSpec, errors: &mut Vec<FieldError>) {
    if spec.timeouts.ready.is_zero() {
        errors.push(FieldError::new(
            "spec.timeouts.ready",
            "must be greater than 0",
        ));
    }
    check_duration(
        spec.timeouts.ready,
        MAX_DURATION,
        "spec.timeouts.ready",
        errors,
    );
    check_duration(
        spec.timeouts.run_slack,
        MAX_DURATION,
        "spec.timeouts.runSlack",
        errors,
    );
    if let Some(ttl) = spec.ttl_after_finished {
        if ttl.is_zero() {
            errors.push(FieldError::new(
                "spec.ttlAfterFinished",
                "must be greater than 0 (leave it out to keep the run)",
            ));
        }
        check_duration(ttl, MAX_ANY_DURATION, "spec.ttlAfterFinished", errors);
    }
}

/// `spec.repeat`: a count of 1..MAX_REPEAT, or `{min, max, precision}` with
/// MIN_ADAPTIVE_ROUNDS <= min <= max <= MAX_REPEAT and a precision in (0, 100] percent.
fn check_repeat(repeat: Repeat, errors: &mut Vec<FieldError>) {
    match repeat {
        Repeat::Times(n) => {
            if !(1..=MAX_REPEAT).contains(&n) {
                errors.push(FieldError::new(
                    "spec.repeat",
                    format!(
                        "must be 1..{MAX_REPEAT} (how many times every cell is measured), or \
                         {{min, max, precision}}"
                    ),
                ));
            }
        }
        Repeat::UntilPrecise {
            min,
            max,
            precision,
        } => {
            if !(MIN_ADAPTIVE_ROUNDS..=MAX_REPEAT).contains(&min) {
                errors.push(FieldError::new(
                    "spec.repeat.min",
                    format!(
                        "must be {MIN_ADAPTIVE_ROUNDS}..{MAX_REPEAT} (a confidence interval needs \
                         at least {MIN_ADAPTIVE_ROUNDS} repetitions)"
                    ),
                ));
            }
            if !(1..=MAX_REPEAT).contains(&max) || max < min {
                errors.push(FieldError::new(
                    "spec.repeat.max",
                    format!("must be from min ({min}) to {MAX_REPEAT}"),
                ));
            }
            if !(precision.is_finite() && precision > 0.0 && precision <= 100.0) {
                errors.push(FieldError::new(
                    "spec.repeat.precision",
                    "must be a percentage above 0 and at most 100 (e.g. 5: every ranked \
                     figure's 95% confidence interval within 5% of the figure)",
                ));
            }
        }
    }
}

/// `valueFrom.env` is how a plan file names a value the operator or the local runner put in
/// the load generator's environment; a spec cannot know that environment, so it names the
/// Secret instead (the same YAML then runs on a cluster and with `benchmatrix run --secrets`).
fn check_header_sources(workload: &Workload, errors: &mut Vec<FieldError>) {
    for (i, e) in workload.endpoints.iter().enumerate() {
        for (j, h) in e.headers.iter().enumerate() {
            if h.value_from.as_ref().is_some_and(|f| f.env.is_some()) {
                errors.push(FieldError::new(
                    format!("spec.workload.endpoints[{i}].headers[{j}].valueFrom.env"),
                    "a BenchmarkRun takes header values from a Secret (valueFrom.secretKeyRef: {name, key}); env is for the load generator's plan files",
                ));
            }
        }
    }
}

/// Budget for the bodies and headers in one cell's plan ConfigMap, which holds a plan per load
/// generator and may not exceed 1 MiB: what is left after the rest of the plans, generously
/// counted.
const PLAN_REQUEST_BUDGET: usize = 768 * 1024;

/// Every load generator's plan carries every endpoint's body and headers, and the plans share
/// one ConfigMap.
fn check_plan_size(workload: &Workload, parallelism: u32, errors: &mut Vec<FieldError>) {
    let per_plan: usize = workload
        .endpoints
        .iter()
        .map(|e| {
            let headers: usize = e
                .headers
                .iter()
                .map(|h| h.name.len() + h.value.as_ref().map_or(0, String::len))
                .sum();
            headers + e.body.as_ref().map_or(0, String::len)
        })
        .sum();
    let total = per_plan.saturating_mul(parallelism.max(1) as usize);
    if total > PLAN_REQUEST_BUDGET {
        errors.push(FieldError::new(
            "spec.workload.endpoints",
            format!(
                "the bodies and headers ({per_plan} bytes) times spec.loadgen.parallelism ({parallelism}) come to {total} bytes; one cell's plans share a ConfigMap of at most 1 MiB, so at most {PLAN_REQUEST_BUDGET} bytes: shorten them or use fewer load generators"
            ),
        ));
    }
}

fn check_configuration(c: &Configuration, at: &str, errors: &mut Vec<FieldError>) {
    if let Err(why) = matrix::check_cell_name(&c.name) {
        errors.push(FieldError::new(format!("{at}.name"), why));
    }
    check_replicas(c.replicas, &format!("{at}.replicas"), errors);
    check_pool_size(c.pool_size, &format!("{at}.poolSize"), errors);
    check_cpu(&c.cpu, &format!("{at}.cpu"), errors);
    check_memory(&c.memory, &format!("{at}.memory"), errors);
    check_env(&c.env, &format!("{at}.env"), errors);
}

fn check_replicas(replicas: u32, at: &str, errors: &mut Vec<FieldError>) {
    if replicas == 0 {
        errors.push(FieldError::new(at, "must be at least 1"));
    } else if replicas > MAX_REPLICAS {
        errors.push(FieldError::new(
            at,
            format!("{replicas} is more than the {MAX_REPLICAS} replicas allowed"),
        ));
    }
}

/// The built-in target refuses a larger pool at start-up; say so before anything is deployed.
fn check_pool_size(pool: PoolSize, at: &str, errors: &mut Vec<FieldError>) {
    if let PoolSize::Fixed(n) = pool
        && n > MAX_POOL_SIZE
    {
        errors.push(FieldError::new(
            at,
            format!("{n} is more than the {MAX_POOL_SIZE} workers the target accepts"),
        ));
    }
}

/// Durations the parser accepts can still be beyond what a field allows.
fn check_duration(d: Duration, max: Duration, at: &str, errors: &mut Vec<FieldError>) {
    if d > max {
        errors.push(FieldError::new(
            at,
            format!("{d} is longer than the {max} allowed"),
        ));
    }
}

fn check_cpu(q: &Quantity, at: &str, errors: &mut Vec<FieldError>) {
    match q.cpu_cores() {
        Err(e) => errors.push(FieldError::new(at, e.to_string())),
        Ok(cores) if cores < 0.001 => errors.push(FieldError::new(
            at,
            format!(
                "must be at least 1m (one millicore), got {q:?}",
                q = q.as_str()
            ),
        )),
        Ok(_) => {}
    }
}

fn check_memory(q: &Quantity, at: &str, errors: &mut Vec<FieldError>) {
    // Below a few MiB no target or load generator starts; say so now rather than OOMKilled later.
    const MIN: u64 = 4 * 1024 * 1024;
    match q.bytes() {
        Err(e) => errors.push(FieldError::new(at, e.to_string())),
        Ok(b) if b < MIN => errors.push(FieldError::new(
            at,
            format!("must be at least 4Mi, got {:?}", q.as_str()),
        )),
        Ok(_) => {}
    }
}

fn check_env(env: &[EnvVar], at: &str, errors: &mut Vec<FieldError>) {
    for (i, var) in env.iter().enumerate() {
        let valid = !var.name.is_empty()
            && !var.name.starts_with(|c: char| c.is_ascii_digit())
            && var
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
        if !valid {
            errors.push(FieldError::new(
                format!("{at}[{i}].name"),
                format!(
                    "invalid environment variable name {:?} (letters, digits, '_', '-', '.'; not starting with a digit)",
                    var.name
                ),
            ));
        }
    }
}

/// [`thresholds::check`] for a whole spec: its thresholds against the cells of its matrix
/// (`configurations` and `axes`) and the phases and endpoints of its workload.
pub fn check_thresholds(spec: &BenchmarkRunSpec) -> Vec<FieldError> {
    let cells: Vec<String> = matrix::cells(spec).into_iter().map(|c| c.name).collect();
    let phases: Vec<&str> = spec
        .workload
        .phases
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    let endpoints: Vec<&str> = spec
        .workload
        .endpoints
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    thresholds::check(&spec.thresholds, &cells, &phases, &endpoints)
}

#[cfg(test)]
mod tests {
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
        assert_eq!(run.spec.loadgen.parallelism, 1);
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
    fn wrong_kind_is_refused() {
        assert_error(
            &GOOD.replace("kind: BenchmarkRun", "kind: Job"),
            "kind: expected",
        );
    }

    #[test]
    fn axes_names_must_not_collide_with_configurations() {
        let yaml =
            format!("{GOOD}  axes:\n    modes: [single]\n    replicas: [1]\n    totalCpu: 2\n");
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
                "spec.configurations[1].poolsize: unknown field",
                "spec.workload.warmpu: unknown field",
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
        assert_eq!(errs[0], "kind: expected \"BenchmarkRun\", got \"Job\"");
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
        let axes = format!(
            "{GOOD}  axes:\n    modes: [single]\n    replicas: [1, 1000]\n    totalCpu: 2\n"
        );
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
                "  loadgen:\n    parallelism: 33\n    threads: 257\n  workload:\n",
            ),
            "spec.loadgen.parallelism: 33 is more than the 32 load generators allowed",
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
        let named =
            |n: usize| GOOD.replace("name: quickstart", &format!("name: {}", "r".repeat(n)));
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
                &format!("  loadgen:\n    parallelism: {n}\n  workload:\n"),
            )
        };
        // Closed-loop streams have 2 connections each; the open-loop one has none to share.
        assert!(cluster_errors_of(&with_parallelism(2)).is_empty());
        let errs = cluster_errors_of(&with_parallelism(3));
        let share =
            "must be at least spec.loadgen.parallelism (3): each load generator gets a share";
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
            "  loadgen: {parallelism: 32}\n  workload:\n",
        );
        let run = parse_benchmark_run(&yaml).unwrap_or_else(|e| panic!("{e}"));
        let err = validate_for_cluster(&run).unwrap_err().to_string();
        assert!(
            err.contains("spec.workload.endpoints: the bodies and headers (40041 bytes) times spec.loadgen.parallelism (32)"),
            "{err}"
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
}
