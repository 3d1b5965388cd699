//! The Prometheus text format as the kubelet writes it, and the readings of given containers.
//!
//! Lenient on purpose: a line that does not parse is skipped, never an error, so one odd series
//! (or a truncated body) costs that series and not the whole scrape.

use std::collections::BTreeMap;

/// One sample line: `name{labels} value [timestamp_ms]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    /// The metric name.
    pub name: &'a str,
    /// The labels in written order, values unescaped.
    pub labels: Vec<(&'a str, String)>,
    /// The value; may be NaN or infinite.
    pub value: f64,
    /// The timestamp in milliseconds since the epoch, when written.
    pub timestamp_ms: Option<i64>,
}

impl Sample<'_> {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The samples of a body, skipping comments, blank lines and lines that do not parse.
pub fn samples(text: &str) -> impl Iterator<Item = Sample<'_>> {
    text.lines().filter_map(parse_line)
}

/// One line; `None` for comments, blank lines and anything malformed.
pub fn parse_line(line: &str) -> Option<Sample<'_>> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() && is_name_byte(b[i], i == 0) {
        i += 1;
    }
    if i == 0 {
        return None;
    }
    // Only ASCII bytes are ever used as cut points, so every slice is on a char boundary.
    let name = &line[..i];
    skip_blanks(b, &mut i);
    let labels = if b.get(i) == Some(&b'{') {
        i += 1;
        parse_labels(line, &mut i)?
    } else {
        Vec::new()
    };
    let mut rest = line[i..].split_ascii_whitespace();
    let value = parse_value(rest.next()?)?;
    let timestamp_ms = match rest.next() {
        Some(t) => Some(t.parse::<i64>().ok()?),
        None => None,
    };
    if rest.next().is_some() {
        return None;
    }
    Some(Sample {
        name,
        labels,
        value,
        timestamp_ms,
    })
}

/// A byte of a metric or label name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
fn is_name_byte(c: u8, first: bool) -> bool {
    c == b'_' || c == b':' || c.is_ascii_alphabetic() || (!first && c.is_ascii_digit())
}

/// Moves `i` past spaces and tabs.
fn skip_blanks(b: &[u8], i: &mut usize) {
    while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
        *i += 1;
    }
}

/// The `key="value"` pairs from just after `{` up to and past the closing `}`, a trailing comma
/// allowed; `None` when malformed.
fn parse_labels<'a>(line: &'a str, i: &mut usize) -> Option<Vec<(&'a str, String)>> {
    let b = line.as_bytes();
    let mut labels = Vec::new();
    loop {
        skip_blanks(b, i);
        match b.get(*i)? {
            b'}' => break,
            b',' if !labels.is_empty() => {
                *i += 1;
                continue;
            }
            _ => {}
        }
        let start = *i;
        while *i < b.len() && is_name_byte(b[*i], *i == start) {
            *i += 1;
        }
        if *i == start {
            return None;
        }
        let key = &line[start..*i];
        skip_blanks(b, i);
        if b.get(*i) != Some(&b'=') {
            return None;
        }
        *i += 1;
        skip_blanks(b, i);
        if b.get(*i) != Some(&b'"') {
            return None;
        }
        *i += 1;
        labels.push((key, parse_label_value(b, i)?));
        skip_blanks(b, i);
        match b.get(*i)? {
            b',' => *i += 1,
            b'}' => {}
            _ => return None,
        }
    }
    *i += 1;
    Some(labels)
}

/// A label value from just after its opening quote to past its closing one, with `\n`, `\"` and
/// `\\` unescaped (any other escape kept as written); `None` when unterminated or not UTF-8.
fn parse_label_value(b: &[u8], i: &mut usize) -> Option<String> {
    let mut value = Vec::new();
    loop {
        match *b.get(*i)? {
            b'"' => break,
            b'\\' => {
                match *b.get(*i + 1)? {
                    b'n' => value.push(b'\n'),
                    c @ (b'"' | b'\\') => value.push(c),
                    c => value.extend_from_slice(&[b'\\', c]),
                }
                *i += 2;
            }
            c => {
                value.push(c);
                *i += 1;
            }
        }
    }
    *i += 1;
    String::from_utf8(value).ok()
}

/// Go's float formatting: `1.5`, `8.146944e+06`, `NaN`, `+Inf`, `-Inf`.
fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        // Rust would also take "infinity" or "nan" in any case; Prometheus does not write them.
        _ if s
            .bytes()
            .any(|c| c.is_ascii_alphabetic() && c != b'e' && c != b'E') =>
        {
            None
        }
        _ => s.parse().ok(),
    }
}

/// A container of the benchmark, as the pod's status names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerId {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The container's name in the pod spec.
    pub container: String,
    /// The runtime's id (hex), without the `containerd://` (or `docker://`, `cri-o://`) scheme.
    pub container_id: Option<String>,
}

impl ContainerId {
    /// From the pod status: `status_id` is `containerStatuses[].containerID`, scheme and all.
    pub fn new(namespace: &str, pod: &str, container: &str, status_id: Option<&str>) -> Self {
        let container_id = status_id
            .map(|id| id.rsplit_once("://").map_or(id, |(_, hex)| hex))
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
        ContainerId {
            namespace: namespace.into(),
            pod: pod.into(),
            container: container.into(),
            container_id,
        }
    }
}

/// Which endpoint a reading came from; they are kept apart (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `/metrics/resource`: CRI stats, fresh on every request.
    Resource,
    /// `/metrics/cadvisor`: refreshed by housekeeping every ~10-15 s.
    Cadvisor,
}

/// What one endpoint said about one container at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The endpoint.
    pub source: Source,
    /// When the kubelet took the stats (the sample's timestamp), ms since the epoch.
    pub at_ms: i64,
    /// `container_cpu_usage_seconds_total`.
    pub cpu_seconds: Option<f64>,
    /// `container_memory_working_set_bytes`.
    pub working_set_bytes: Option<u64>,
    /// `container_cpu_cfs_periods_total` (cadvisor only).
    pub cfs_periods: Option<u64>,
    /// `container_cpu_cfs_throttled_periods_total` (cadvisor only).
    pub throttled_periods: Option<u64>,
    /// `container_cpu_cfs_throttled_seconds_total` (cadvisor only).
    pub throttled_seconds: Option<f64>,
    /// `container_memory_max_usage_bytes` (cadvisor only): lifetime high-water mark, cache included.
    pub max_usage_bytes: Option<u64>,
    /// `container_spec_cpu_quota / container_spec_cpu_period` (cadvisor only; no quota: `None`).
    pub cpu_limit_cores: Option<f64>,
}

impl Reading {
    /// A reading with no figures yet.
    pub fn new(source: Source, at_ms: i64) -> Self {
        Reading {
            source,
            at_ms,
            cpu_seconds: None,
            working_set_bytes: None,
            cfs_periods: None,
            throttled_periods: None,
            throttled_seconds: None,
            max_usage_bytes: None,
            cpu_limit_cores: None,
        }
    }
}

/// The readings of `containers` in a `/metrics/resource` body, as (index into `containers`,
/// reading), ordered by index then time. Samples without a timestamp are taken at `now_ms`.
pub fn resource_readings(
    text: &str,
    containers: &[ContainerId],
    now_ms: i64,
) -> Vec<(usize, Reading)> {
    readings(text, containers, now_ms, Source::Resource)
}

/// As [`resource_readings`] for a `/metrics/cadvisor` body. Series whose `container` label is
/// empty (cgroupfs driver) are matched by the container id in their `id` label, so a
/// [`ContainerId`] without `container_id` finds nothing there.
pub fn cadvisor_readings(
    text: &str,
    containers: &[ContainerId],
    now_ms: i64,
) -> Vec<(usize, Reading)> {
    readings(text, containers, now_ms, Source::Cadvisor)
}

fn readings(
    text: &str,
    containers: &[ContainerId],
    now_ms: i64,
    source: Source,
) -> Vec<(usize, Reading)> {
    // One reading per container and timestamp: a container's series share the instant its stats
    // were taken, and a series with another timestamp is another reading, not a blend.
    let mut by_time: BTreeMap<(usize, i64), Reading> = BTreeMap::new();
    let mut quota: BTreeMap<usize, (Option<f64>, Option<f64>)> = BTreeMap::new();
    for s in samples(text) {
        let relevant = matches!(
            s.name,
            "container_cpu_usage_seconds_total"
                | "container_memory_working_set_bytes"
                | "container_cpu_cfs_periods_total"
                | "container_cpu_cfs_throttled_periods_total"
                | "container_cpu_cfs_throttled_seconds_total"
                | "container_memory_max_usage_bytes"
                | "container_spec_cpu_quota"
                | "container_spec_cpu_period"
        );
        // cadvisor may also export per-CPU usage (`cpu="cpu00"`); only the total counts.
        if !relevant || s.label("cpu").is_some_and(|c| c != "total") {
            continue;
        }
        let Some(index) = containers.iter().position(|c| series_is(&s, c)) else {
            continue;
        };
        match s.name {
            "container_spec_cpu_quota" => quota.entry(index).or_default().0 = Some(s.value),
            "container_spec_cpu_period" => quota.entry(index).or_default().1 = Some(s.value),
            _ => {}
        }
        let at_ms = s.timestamp_ms.unwrap_or(now_ms);
        let r = by_time
            .entry((index, at_ms))
            .or_insert_with(|| Reading::new(source, at_ms));
        let (v, n) = (s.value, count(s.value));
        match s.name {
            "container_cpu_usage_seconds_total" if v.is_finite() => r.cpu_seconds = Some(v),
            "container_memory_working_set_bytes" => r.working_set_bytes = n,
            "container_cpu_cfs_periods_total" => r.cfs_periods = n,
            "container_cpu_cfs_throttled_periods_total" => r.throttled_periods = n,
            "container_cpu_cfs_throttled_seconds_total" if v.is_finite() => {
                r.throttled_seconds = Some(v)
            }
            "container_memory_max_usage_bytes" => r.max_usage_bytes = n,
            _ => {}
        }
    }
    // The spec series carry no timestamp; they describe the container, so every reading gets them.
    let mut out = Vec::new();
    for ((index, _), mut r) in by_time {
        if r == Reading::new(source, r.at_ms) {
            continue; // only spec series at this instant
        }
        if let Some((Some(q), Some(p))) = quota.get(&index) {
            r.cpu_limit_cores = (*q > 0.0 && *p > 0.0).then(|| q / p);
        }
        out.push((index, r));
    }
    out
}

/// A counter or byte count written as a float (`8.146944e+06`); `None` if negative or not finite.
fn count(v: f64) -> Option<u64> {
    (v.is_finite() && v >= 0.0).then(|| v.round() as u64)
}

/// Whether series `s` is container `c` itself (never its pod's cgroup, never another container).
fn series_is(s: &Sample<'_>, c: &ContainerId) -> bool {
    let cgroup_id = s.label("id").and_then(container_id_of_cgroup);
    match s.label("container").filter(|n| !n.is_empty()) {
        Some(name) => {
            name == c.container
                && s.label("pod") == Some(&c.pod)
                && s.label("namespace") == Some(&c.namespace)
                // A restarted container's dead cgroup keeps the same labels for a while; when both
                // ids are known they must agree, or the old counters would look like a reset.
                && match (cgroup_id, &c.container_id) {
                    (Some(seen), Some(want)) => seen == want,
                    _ => true,
                }
        }
        None => cgroup_id.is_some() && cgroup_id == c.container_id.as_deref(),
    }
}

/// The container id in a cgroup path's last segment: `<id>` (cgroupfs) or
/// `cri-containerd-<id>.scope`, `docker-<id>.scope`, `crio-<id>.scope` (systemd). A pod's cgroup
/// (`pod<uid>`, `…-pod<uid>.slice`) has none.
fn container_id_of_cgroup(id: &str) -> Option<&str> {
    let last = id.rsplit('/').next()?;
    let hex = match last.strip_suffix(".scope") {
        Some(scope) => ["cri-containerd-", "docker-", "crio-"]
            .iter()
            .find_map(|p| scope.strip_prefix(p))?,
        None => last,
    };
    (hex.len() >= 12 && hex.bytes().all(|c| c.is_ascii_hexdigit())).then_some(hex)
}

#[cfg(test)]
mod tests;
