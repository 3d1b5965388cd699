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
    Quantity, Repeat, RunPhase, TargetSpec, Variant, Workload,
};
use crate::resource::{matrix, thresholds};
use kube::ResourceExt;

/// The apiVersion a BenchmarkRun document must carry.
pub const API_VERSION: &str = "benchmatrix.dev/v1alpha1";
/// The kind a BenchmarkRun document must carry.
pub const KIND: &str = "BenchmarkRun";

/// Most repetitions of each cell (the CRD says the same).
pub const MAX_REPEAT: u32 = 20;

pub use super::matrix::MAX_CELLS;

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
///
/// An empty file, or one of several documents, is said once in those words, and nothing else;
/// every other error carries its line and column, and an unknown field close to an allowed one
/// says "did you mean".
pub fn parse_benchmark_run(yaml: &str) -> Result<BenchmarkRun, SpecError> {
    if let Some(whole) = whole_file_error(yaml) {
        return Err(SpecError {
            errors: vec![whole],
        });
    }
    let mut errors: Vec<FieldError> = type_meta_errors(yaml)
        .into_iter()
        .map(|e| e.placed_in(yaml))
        .collect();
    match strict_yaml::parse_strict_checked(yaml, is_tolerated, |run: &BenchmarkRun| {
        validate_spec(&run.spec)
    }) {
        Ok(run) if errors.is_empty() => Ok(run),
        Ok(_) => Err(SpecError { errors }),
        Err(more) => {
            errors.extend(more.into_iter().map(suggest::with_suggestion));
            Err(SpecError { errors })
        }
    }
}

/// A file with no BenchmarkRun in it, or more than one document: the one thing to say.
fn whole_file_error(yaml: &str) -> Option<FieldError> {
    if strict_yaml::is_empty(yaml) {
        return Some(FieldError::new(
            strict_yaml::DOCUMENT,
            "the file is empty: expected a BenchmarkRun (apiVersion, kind, metadata and spec)",
        ));
    }
    let documents = strict_yaml::document_count(yaml);
    if documents < 2 {
        return None;
    }
    let second = strict_yaml::second_document_line(yaml);
    let mut error = FieldError::new(
        strict_yaml::DOCUMENT,
        format!(
            "one BenchmarkRun per file: this one holds {documents} YAML documents{}; put each \
             run in a file of its own",
            second.map_or(String::new(), |l| format!(
                " (the second begins at `---` on line {l})"
            ))
        ),
    );
    error.line = second;
    Some(error)
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

/// [`validate_run`] plus the rules only a cluster needs: the schema's bounds on the number of
/// items of each list (checked first, alone), the run's name becomes a label value,
/// each of the `spec.loadgen.generators` load generators takes a share of every closed-loop
/// stream's connections, and the object with its status must fit what etcd stores
/// ([`crate::resource::size`]).
pub fn validate_for_cluster(run: &BenchmarkRun) -> Result<(), SpecError> {
    // First the schema's bounds on lists and maps: the rules below take time with their
    // lengths, which an object the schema never checked may hold any of (`bounds`).
    let beyond = bounds::beyond_schema(&run.spec);
    if !beyond.is_empty() {
        return Err(SpecError { errors: beyond });
    }
    let mut errors = validate_spec(&run.spec);
    if run.name_any().len() > 63 {
        errors.push(FieldError::new(
            "metadata.name",
            "at most 63 characters (it is used as a label value)",
        ));
    }
    let n = run.spec.loadgen.generators();
    check_plan_size(&run.spec.workload, n, &mut errors);
    if n > 1 {
        for (p, phase) in run.spec.workload.phases.iter().enumerate() {
            for (s, stream) in phase.load.iter().enumerate() {
                if stream.connections.is_some_and(|c| c < n) {
                    errors.push(FieldError::new(
                        format!("spec.workload.phases[{p}].load[{s}].connections"),
                        format!(
                            "must be at least spec.loadgen.generators ({n}): each load generator gets a share"
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
    check_variants(spec, &mut errors);
    match &spec.capacity {
        Some(capacity) => check_capacity(spec, capacity, &mut errors),
        None => check_workload(&spec.workload, &mut errors),
    }
    if let Some(sizing) = &spec.sizing {
        check_sizing(spec, sizing, &mut errors);
    }
    check_loadgen(&spec.loadgen, &mut errors);
    check_timeouts(spec, &mut errors);
    errors.extend(check_thresholds(spec));
    check_repeat(spec.repeat, &mut errors);
    check_parallelism(spec.parallelism, &mut errors);
    check_cpu(
        &spec.placement.neighbour_cpu_limit,
        "spec.placement.neighbourCpuLimit",
        &mut errors,
    );
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
    if spec.configurations.is_empty() && spec.axes.is_none() && spec.sizing.is_none() {
        errors.push(FieldError::new(
            "spec.configurations",
            "give at least one configuration (or an axes block, or a sizing search)",
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

/// The most variants a run compares.
pub const MAX_VARIANTS: usize = 8;

/// `spec.variants`: none, or from two (a base and a candidate) to [`MAX_VARIANTS`], each
/// named once, with what it changes well formed; and the matrix they cross (every
/// configuration once per variant) within [`MAX_CELLS`] cells of distinct names.
fn check_variants(spec: &BenchmarkRunSpec, errors: &mut Vec<FieldError>) {
    let variants = &spec.variants;
    match variants.len() {
        0 => return,
        1 => errors.push(FieldError::new(
            "spec.variants",
            "give at least two variants (the base first, then what it is compared with), or none",
        )),
        n if n > MAX_VARIANTS => errors.push(FieldError::new(
            "spec.variants",
            format!("{n} variants; at most {MAX_VARIANTS} are allowed"),
        )),
        _ => {}
    }
    for (i, v) in variants.iter().enumerate() {
        let at = format!("spec.variants[{i}]");
        if let Some(first) = variants[..i].iter().position(|w| w.name == v.name) {
            errors.push(FieldError::new(
                format!("{at}.name"),
                format!(
                    "duplicate name {:?} (also spec.variants[{first}].name)",
                    v.name
                ),
            ));
        }
        check_variant(spec, v, &at, errors);
    }
    let configurations = matrix::cells(&BenchmarkRunSpec {
        variants: Vec::new(),
        ..spec.clone()
    })
    .len();
    if configurations * variants.len() > MAX_CELLS {
        errors.push(FieldError::new(
            "spec.variants",
            format!(
                "{configurations} configurations x {} variants make {} cells; at most \
                 {MAX_CELLS} are allowed",
                variants.len(),
                configurations * variants.len()
            ),
        ));
        return;
    }
    let mut seen: HashMap<String, ()> = HashMap::new();
    for cell in matrix::cells(spec) {
        if seen.insert(cell.name.clone(), ()).is_some() {
            errors.push(FieldError::new(
                "spec.variants",
                format!(
                    "two cells would be named {:?} (a configuration's name, '-', a variant's); \
                     rename one",
                    cell.name
                ),
            ));
        }
    }
}

/// One variant: an image that is not empty, a command of non-empty words, its env, and its pod
/// template as `spec.target.podTemplate` is checked.
fn check_variant(spec: &BenchmarkRunSpec, v: &Variant, at: &str, errors: &mut Vec<FieldError>) {
    if v.image.as_ref().is_some_and(|i| i.trim().is_empty()) {
        errors.push(FieldError::new(
            format!("{at}.image"),
            "must not be empty (leave it out for the target's image)",
        ));
    }
    if v.command.iter().any(|a| a.trim().is_empty()) {
        errors.push(FieldError::new(
            format!("{at}.command"),
            "the program and its arguments must not be empty strings",
        ));
    }
    check_env(&v.env, &format!("{at}.env"), errors);
    if let Some(template) = &v.pod_template {
        match template.parse() {
            Ok(parsed) => errors.extend(
                crate::resource::pod_template::check(
                    &parsed,
                    v.image.as_deref().or(spec.target.image.as_deref()),
                    spec.target.port,
                )
                .into_iter()
                .map(|e| at_variant(e, at)),
            ),
            Err(problems) => errors.extend(problems.into_iter().map(|e| at_variant(e, at))),
        }
    }
}

/// A pod template's error, said of the variant's template at `at` (the checks name the
/// target's).
fn at_variant(mut e: FieldError, at: &str) -> FieldError {
    let field = crate::resource::pod_template::FIELD;
    if let Some(rest) = e.path.strip_prefix(field) {
        e.path = format!("{at}.podTemplate{rest}");
    }
    e
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

/// `spec.capacity` and what it asks of the rest: no phases (the probes are each measurement's
/// load), no thresholds (its `slo` is the service level), and a probe at the start rate that
/// the load generator's own rules accept. With `repeat` each round is a whole search
/// (`engine::capacity::rounds`).
fn check_capacity(
    spec: &BenchmarkRunSpec,
    capacity: &crate::resource::capacity::CapacitySpec,
    errors: &mut Vec<FieldError>,
) {
    let w = &spec.workload;
    let before = errors.len();
    errors.extend(capacity.check(&w.endpoint_names()));
    if !w.phases.is_empty() {
        errors.push(FieldError::new(
            "spec.workload.phases",
            "with spec.capacity, leave out the phases: each cell's measurement is the search's \
             probes",
        ));
    }
    if !spec.thresholds.is_empty() {
        errors.push(FieldError::new(
            "spec.thresholds",
            "with spec.capacity, leave out thresholds: the service level is spec.capacity.slo",
        ));
    }
    if spec.repeat.is_adaptive() && !spec.variants.is_empty() {
        errors.push(FieldError::new(
            "spec.repeat",
            "with spec.capacity and spec.variants, give a count (repeat: 5): each variant's \
             rounds are paired with the other's, and a precision rule would stop them apart",
        ));
    }
    if errors.len() == before {
        // The probe's own rules (rates, endpoints, headers), checked on the first probe.
        check_workload(&capacity.probe_workload(w, capacity.start_rate), errors);
    }
}

/// `spec.sizing` and what it asks of the rest: a capacity (its service level and mix are the
/// search's), and no configurations or axes (the space replaces them).
fn check_sizing(
    spec: &BenchmarkRunSpec,
    sizing: &crate::resource::sizing::SizingSpec,
    errors: &mut Vec<FieldError>,
) {
    errors.extend(sizing.check());
    if spec.repeat.is_repeated() {
        errors.push(FieldError::new(
            "spec.repeat",
            "not supported with spec.sizing: the answer is confirmed by \
             spec.sizing.confirmations probes instead; leave repeat out",
        ));
    }
    if !spec.variants.is_empty() {
        errors.push(FieldError::new(
            "spec.variants",
            "not supported with spec.sizing: size one build at a time, then compare the \
             chosen configuration's variants in a run with spec.capacity",
        ));
    }
    if sizing.configuration_count() <= crate::resource::matrix::MAX_CELLS {
        let too_long = crate::resource::matrix::sizing_cells(sizing)
            .into_iter()
            .find(|c| c.name.len() > crate::resource::matrix::MAX_CELL_NAME);
        if let Some(c) = too_long {
            errors.push(FieldError::new(
                "spec.sizing.search",
                format!(
                    "configuration name {:?} is longer than {} characters: use shorter env \
                     names or values",
                    c.name,
                    crate::resource::matrix::MAX_CELL_NAME
                ),
            ));
        }
    }
    if spec.capacity.is_none() {
        errors.push(FieldError::new(
            "spec.capacity",
            "spec.sizing needs spec.capacity: its slo says what holding the traffic means, its \
             mix the traffic's shape",
        ));
    }
    for (field, set) in [
        ("configurations", !spec.configurations.is_empty()),
        ("axes", spec.axes.is_some()),
    ] {
        if set {
            errors.push(FieldError::new(
                format!("spec.{field}"),
                "with spec.sizing, leave this out: the configurations are spec.sizing.search's",
            ));
        }
    }
    let s = &sizing.search;
    for (i, r) in s.replicas.iter().enumerate() {
        check_replicas(*r, &format!("spec.sizing.search.replicas[{i}]"), errors);
    }
    for (i, q) in s.cpu.iter().enumerate() {
        check_cpu(q, &format!("spec.sizing.search.cpu[{i}]"), errors);
    }
    check_memory(&s.memory, "spec.sizing.search.memory", errors);
    check_pool_size(s.pool_size, "spec.sizing.search.poolSize", errors);
    let names: Vec<crate::resource::EnvVar> = s
        .env
        .keys()
        .map(|k| crate::resource::EnvVar::new(k.clone(), ""))
        .collect();
    check_env(&names, "spec.sizing.search.env", errors);
}

/// Fields that still work under an old name, each at its path with what to write instead.
/// Nothing here stops a run: a local run prints them, the operator puts them in the SpecValid
/// condition's message and a Warning Event.
pub fn deprecations(spec: &crate::resource::BenchmarkRunSpec) -> Vec<FieldError> {
    let mut found = Vec::new();
    if spec.loadgen.parallelism.is_some() {
        found.push(FieldError::new(
            "spec.loadgen.parallelism",
            "is deprecated: write spec.loadgen.generators (the same count of load generator \
             pods; spec.parallelism is how many measurements run at once)",
        ));
    }
    found
}

/// `spec.loadgen`: resources, how many load generators and their threads.
fn check_loadgen(loadgen: &LoadgenSpec, errors: &mut Vec<FieldError>) {
    check_cpu(&loadgen.cpu, "spec.loadgen.cpu", errors);
    check_memory(&loadgen.memory, "spec.loadgen.memory", errors);
    for (field, count) in [
        ("generators", loadgen.generators),
        ("parallelism", loadgen.parallelism),
    ] {
        let path = format!("spec.loadgen.{field}");
        match count {
            Some(0) => errors.push(FieldError::new(path, "must be at least 1")),
            Some(n) if n > MAX_GENERATORS => errors.push(FieldError::new(
                path,
                format!("{n} is more than the {MAX_GENERATORS} load generators allowed"),
            )),
            _ => {}
        }
    }
    if let (Some(new), Some(old)) = (loadgen.generators, loadgen.parallelism)
        && new != old
    {
        errors.push(FieldError::new(
            "spec.loadgen.parallelism",
            format!(
                "is the deprecated name of spec.loadgen.generators, which says {new}: set \
                 generators alone"
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

/// `spec.parallelism`: 1..MAX_PARALLELISM, or `auto`.
fn check_parallelism(
    parallelism: crate::resource::parallelism::Parallelism,
    errors: &mut Vec<FieldError>,
) {
    use crate::resource::parallelism::{MAX_PARALLELISM, Parallelism};
    if let Parallelism::Count(n) = parallelism
        && !(1..=MAX_PARALLELISM).contains(&n)
    {
        errors.push(FieldError::new(
            "spec.parallelism",
            format!(
                "must be 1..{MAX_PARALLELISM} (how many measurements run at once, each on nodes \
                 of its own), or auto"
            ),
        ));
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
                "the bodies and headers ({per_plan} bytes) times spec.loadgen.generators ({parallelism}) come to {total} bytes; one cell's plans share a ConfigMap of at most 1 MiB, so at most {PLAN_REQUEST_BUDGET} bytes: shorten them or use fewer load generators"
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

/// [`thresholds::check`] and [`thresholds::check_variants`] for a whole spec: its thresholds
/// against the cells of its matrix (`configurations` and `axes`, crossed with `variants`) and
/// the phases and endpoints of its workload.
pub fn check_thresholds(spec: &BenchmarkRunSpec) -> Vec<FieldError> {
    let matrix = matrix::cells(spec);
    let cells: Vec<&str> = matrix.iter().map(|c| c.name.as_str()).collect();
    let w = &spec.workload;
    let mut errors = thresholds::check(
        &spec.thresholds,
        &cells,
        &w.phase_names(),
        &w.endpoint_names(),
    );
    let of_variants: Vec<thresholds::CellOfVariant<'_>> = matrix
        .iter()
        .map(|c| thresholds::CellOfVariant {
            name: &c.name,
            variant: c.variant.as_ref().map(|v| v.name.as_str()),
        })
        .collect();
    let variants: Vec<&str> = spec.variants.iter().map(|v| v.name.as_str()).collect();
    errors.extend(thresholds::check_variants(
        &spec.thresholds,
        &of_variants,
        &variants,
    ));
    errors
}

mod bounds;
mod suggest;

#[cfg(test)]
mod tests;
