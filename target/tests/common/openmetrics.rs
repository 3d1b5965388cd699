//! A strict reader of the OpenMetrics text format, enough to check what the target serves at
//! `/metrics`: the exposition ends with `# EOF`, every sample belongs to a family announced by a
//! `# TYPE` line before it (with a suffix its type allows), families are not interleaved or
//! repeated, values are numbers, and histograms are cumulative up to their `_count`.
//!
//! Timestamps and exemplars are rejected: the target emits neither, so meeting one is a bug.

#![allow(dead_code)] // each test binary uses a different subset

/// One metric family: its metadata and samples, in the order served.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Family name (for a counter, without `_total`).
    pub name: String,
    /// `counter`, `gauge`, `histogram`, `info`, ...
    pub kind: String,
    /// The `# HELP` text, if any.
    pub help: Option<String>,
    /// The `# UNIT`, if any.
    pub unit: Option<String>,
    /// Its samples.
    pub samples: Vec<Sample>,
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The full sample name, suffix included (`..._total`, `..._bucket`).
    pub name: String,
    /// Labels in the order served.
    pub labels: Labels,
    /// The value.
    pub value: f64,
}

/// A parsed exposition.
#[derive(Debug, Clone, PartialEq)]
pub struct Exposition {
    /// Families in the order served.
    pub families: Vec<Family>,
}

impl Exposition {
    /// The family called `name`.
    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }

    /// The value of the sample `name` without labels.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.samples()
            .find(|s| s.name == name && s.labels.is_empty())
            .map(|s| s.value)
    }

    /// The value of the sample `name` with exactly these labels (in any order).
    pub fn value_with(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples()
            .find(|s| {
                s.name == name
                    && s.labels.len() == labels.len()
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.iter().any(|(sk, sv)| sk == k && sv == v))
            })
            .map(|s| s.value)
    }

    /// Every sample of every family.
    pub fn samples(&self) -> impl Iterator<Item = &Sample> {
        self.families.iter().flat_map(|f| f.samples.iter())
    }
}

/// The suffixes a sample of a family of `kind` may add to the family name.
fn suffixes(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "counter" => &["_total", "_created"],
        "gauge" | "unknown" => &[""],
        "histogram" => &["_bucket", "_count", "_sum", "_created"],
        "gaugehistogram" => &["_bucket", "_gcount", "_gsum"],
        "summary" => &["", "_count", "_sum", "_created"],
        "info" => &["_info"],
        "stateset" => &[""],
        _ => return None,
    })
}

/// Parses `text`, or says what in it is not OpenMetrics.
pub fn parse(text: &str) -> Result<Exposition, String> {
    let body = text
        .strip_suffix("# EOF\n")
        .or_else(|| text.strip_suffix("# EOF"))
        .ok_or("the exposition does not end with `# EOF`")?;
    let mut families: Vec<Family> = Vec::new();
    // Whether the last family has had a sample (after which its metadata is closed).
    let mut sampled = false;
    for (i, line) in body.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}: {line:?}", i + 1);
        if let Some(meta) = line.strip_prefix("# ") {
            let (keyword, rest) = meta
                .split_once(' ')
                .ok_or_else(|| at("bad comment".into()))?;
            let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
            check_name(name).map_err(at)?;
            let same = families.last().is_some_and(|f| f.name == name) && !sampled;
            if !same {
                if families.iter().any(|f| f.name == name) {
                    return Err(at(format!("family {name} appears twice")));
                }
                families.push(Family {
                    name: name.to_string(),
                    kind: String::new(),
                    help: None,
                    unit: None,
                    samples: Vec::new(),
                });
                sampled = false;
            }
            let family = families.last_mut().expect("pushed above");
            match keyword {
                "TYPE" => {
                    if !family.kind.is_empty() {
                        return Err(at("a second TYPE".into()));
                    }
                    suffixes(value).ok_or_else(|| at(format!("unknown type {value}")))?;
                    family.kind = value.to_string();
                }
                "HELP" => family.help = Some(value.to_string()),
                "UNIT" => {
                    if !name.ends_with(&format!("_{value}")) {
                        return Err(at(format!("name does not end with its unit {value}")));
                    }
                    family.unit = Some(value.to_string());
                }
                _ => return Err(at(format!("unknown keyword {keyword}"))),
            }
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            return Err(at("not a sample, metadata or EOF line".into()));
        }
        let sample = parse_sample(line).map_err(at)?;
        let family = families
            .last_mut()
            .filter(|f| {
                sample
                    .name
                    .strip_prefix(f.name.as_str())
                    .is_some_and(|suffix| suffixes(&f.kind).unwrap_or(&[]).contains(&suffix))
            })
            .ok_or_else(|| {
                at("no TYPE line before it announces a family this sample belongs to".into())
            })?;
        if family.kind == "counter" && sample.value < 0.0 {
            return Err(at("a negative counter".into()));
        }
        family.samples.push(sample);
        sampled = true;
    }
    for family in &families {
        if family.kind.is_empty() {
            return Err(format!("family {} has no TYPE line", family.name));
        }
        if family.kind == "histogram" {
            check_histogram(family)?;
        }
    }
    Ok(Exposition { families })
}

/// Metric and label names: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
        Ok(())
    } else {
        Err(format!("bad name {name:?}"))
    }
}

/// `name value` or `name{k="v",...} value`.
fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(['{', ' ']).ok_or("a sample without a value")?;
    let name = &line[..name_end];
    check_name(name)?;
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inner)?;
        labels = parsed;
        rest = after;
    }
    let value = rest
        .strip_prefix(' ')
        .ok_or("no single space before the value")?;
    if value.contains(' ') {
        return Err("timestamps and exemplars are not expected".into());
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value: parse_value(value)?,
    })
}

/// Label names and values, in the order served.
pub type Labels = Vec<(String, String)>;

/// Labels after the `{`; returns them and the text after the `}`.
fn parse_labels(mut s: &str) -> Result<(Labels, &str), String> {
    let mut labels = Vec::new();
    loop {
        if let Some(after) = s.strip_prefix('}') {
            return Ok((labels, after));
        }
        let (key, rest) = s.split_once("=\"").ok_or("a label without `=\"`")?;
        check_name(key)?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next().ok_or("an unterminated label value")? {
                (i, '"') => break i,
                (_, '\\') => match chars.next().ok_or("a dangling escape")?.1 {
                    'n' => value.push('\n'),
                    c @ ('\\' | '"') => value.push(c),
                    c => return Err(format!("bad escape \\{c}")),
                },
                (_, c) => value.push(c),
            }
        };
        labels.push((key.to_string(), value));
        s = &rest[end + 1..];
        s = s.strip_prefix(',').unwrap_or(s);
    }
}

fn parse_value(v: &str) -> Result<f64, String> {
    match v {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ if v
            .chars()
            .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E') =>
        {
            Err(format!("bad value {v:?}"))
        }
        _ => v.parse().map_err(|_| format!("bad value {v:?}")),
    }
}

/// Buckets ascend by `le`, counts are cumulative, the last is `+Inf` and equals `_count`.
fn check_histogram(f: &Family) -> Result<(), String> {
    let bucket_name = format!("{}_bucket", f.name);
    let mut last_le = f64::NEG_INFINITY;
    let mut last_count = 0.0;
    for b in f.samples.iter().filter(|s| s.name == bucket_name) {
        let le = b
            .labels
            .iter()
            .find(|(k, _)| k == "le")
            .ok_or_else(|| format!("{} has a bucket without `le`", f.name))?;
        let le = parse_value(&le.1)?;
        if le <= last_le || b.value < last_count {
            return Err(format!("{} buckets are not cumulative", f.name));
        }
        (last_le, last_count) = (le, b.value);
    }
    let count = f
        .samples
        .iter()
        .find(|s| s.name == format!("{}_count", f.name))
        .ok_or_else(|| format!("{} has no _count", f.name))?;
    if last_le != f64::INFINITY || last_count != count.value {
        return Err(format!(
            "{}: the +Inf bucket ({last_count}) is not the last or not _count ({})",
            f.name, count.value
        ));
    }
    Ok(())
}
