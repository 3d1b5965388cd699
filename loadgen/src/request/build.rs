//! An endpoint's request, built into bytes once per run: the connection loops write the same
//! buffer for every request, so headers and a body cost no more per request than a path does.

use std::collections::BTreeMap;
use std::fmt;

use crate::limits::MAX_HEADER_BYTES;
use crate::plan::check::{check_value, header_line_len};
use crate::plan::{Endpoint, Workload};
use crate::plan::{SuccessSet, answer_has_no_body, content_anticipated};
use crate::strict_yaml::FieldError;

/// Header values that are not written in the plan, by the environment variable that names them
/// (`valueFrom.env`). Its `Debug` shows the names only, so a value never reaches a log through
/// a `{:?}` of the run's configuration.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HeaderValues(BTreeMap<String, String>);

impl fmt::Debug for HeaderValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl HeaderValues {
    /// The value of environment variable `env`, if known.
    pub fn get(&self, env: &str) -> Option<&str> {
        self.0.get(env).map(String::as_str)
    }

    /// Adds (or replaces) a value.
    pub fn insert(&mut self, env: impl Into<String>, value: impl Into<String>) {
        self.0.insert(env.into(), value.into());
    }

    /// The variables and their values, for handing to a child process.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Reads every `valueFrom.env` of `workload` through `lookup` (the process environment,
    /// in the load generator), cleaned by [`clean_value`]; every problem at its field path.
    /// A `secretKeyRef` left in a plan is refused: the load generator reads no Secrets.
    pub fn read(
        workload: &Workload,
        lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<HeaderValues, Vec<FieldError>> {
        let mut values = HeaderValues::default();
        let mut errors = Vec::new();
        for (i, e) in workload.endpoints.iter().enumerate() {
            let mut head_bytes = 0;
            for (j, h) in e.headers.iter().enumerate() {
                let at = format!("workload.endpoints[{i}].headers[{j}].valueFrom");
                let Some(from) = &h.value_from else {
                    head_bytes += h
                        .value
                        .as_deref()
                        .map_or(0, |v| header_line_len(&h.name, v));
                    continue;
                };
                if from.secret_key_ref.is_some() {
                    errors.push(FieldError::new(
                        format!("{at}.secretKeyRef"),
                        "the load generator reads no Secrets: put the value in an environment variable and name it in valueFrom.env (the operator and `benchmatrix run` do this for you)",
                    ));
                    continue;
                }
                let Some(env) = &from.env else { continue };
                let at = format!("{at}.env");
                let raw = match lookup(env) {
                    None => {
                        errors.push(FieldError::new(
                            at,
                            format!("environment variable {env} is not set"),
                        ));
                        continue;
                    }
                    Some(raw) => raw,
                };
                let Some(raw) = raw.to_str() else {
                    errors.push(FieldError::new(
                        at,
                        format!("environment variable {env} is not valid UTF-8"),
                    ));
                    continue;
                };
                match clean_value(raw) {
                    Ok(v) => {
                        head_bytes += header_line_len(&h.name, v);
                        values.insert(env.clone(), v);
                    }
                    Err(why) => errors.push(FieldError::new(
                        at,
                        format!("the value of environment variable {env} {why}"),
                    )),
                }
            }
            if head_bytes > MAX_HEADER_BYTES {
                errors.push(FieldError::new(
                    format!("workload.endpoints[{i}].headers"),
                    format!(
                        "the headers take {head_bytes} bytes with their values read; at most {MAX_HEADER_BYTES} are allowed"
                    ),
                ));
            }
        }
        if errors.is_empty() {
            Ok(values)
        } else {
            Err(errors)
        }
    }
}

/// A header value read from a file or the environment, ready to send: line breaks at its end
/// are dropped (a file written by an editor or `echo` ends with one, and no header value can
/// carry one), anything else a header value cannot hold is refused.
pub fn clean_value(raw: &str) -> Result<&str, &'static str> {
    let v = raw.trim_end_matches(['\r', '\n']);
    check_value(v).map(|()| v)
}

/// What a connection needs to send one endpoint's requests and judge the answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The complete request, head and body.
    pub bytes: Vec<u8>,
    /// The answer has no body whatever its headers say (a HEAD request).
    pub bodiless_answer: bool,
    /// The statuses that count as success.
    pub success: SuccessSet,
}

/// Builds `e`'s request to `path_and_query` on `host_header`, taking values that are not in the
/// plan from `values`. Fails only for a `valueFrom` that `values` lacks (which
/// [`HeaderValues::read`] reports first, with its field path).
pub fn build(
    host_header: &str,
    path_and_query: &str,
    e: &Endpoint,
    values: &HeaderValues,
) -> Result<Prepared, String> {
    let method = e.method_or_default();
    let mut head = format!("{method} {path_and_query} HTTP/1.1\r\nHost: {host_header}\r\n");
    let has = |name: &str| e.headers.iter().any(|h| h.name.eq_ignore_ascii_case(name));
    // The defaults a user's own header replaces.
    if !has("user-agent") {
        head.push_str("User-Agent: benchmatrix-loadgen\r\n");
    }
    if !has("accept") {
        head.push_str("Accept: */*\r\n");
    }
    for h in &e.headers {
        let value = match (&h.value, &h.value_from) {
            (Some(v), _) => v.as_str(),
            (None, Some(from)) => {
                let env = from.env.as_deref().ok_or_else(|| {
                    format!(
                        "header {} of endpoint {:?} names no environment variable",
                        h.name, e.name
                    )
                })?;
                values.get(env).ok_or_else(|| {
                    format!(
                        "header {} of endpoint {:?}: environment variable {env} was not read",
                        h.name, e.name
                    )
                })?
            }
            (None, None) => {
                return Err(format!(
                    "header {} of endpoint {:?} has no value",
                    h.name, e.name
                ));
            }
        };
        head.push_str(&h.name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    // A body is framed by Content-Length (RFC 9112 §6.3); a method that anticipates content
    // sends "Content-Length: 0" without one (RFC 9110 §8.6), as curl does: servers such as
    // nginx answer 411 otherwise.
    let body = e.body.as_deref().unwrap_or("");
    if e.body.is_some() || content_anticipated(method) {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    Ok(Prepared {
        bytes,
        bodiless_answer: answer_has_no_body(method),
        success: SuccessSet::of(e.success_codes.as_deref()),
    })
}

#[cfg(test)]
mod tests;
