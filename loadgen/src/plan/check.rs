//! The checks on an endpoint's method, headers, body and success codes, each problem at its
//! field path (`workload.endpoints[0].headers[1].name: ...`).
//!
//! Everything here is about the spec as written; a value taken from the environment or a
//! Secret file is checked with [`check_value`] when it is read.

use super::http::{Header, OWNED_HEADERS, body_refused};
use super::workload::Endpoint;
use crate::limits::{MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_HEADERS};
use crate::strict_yaml::FieldError;

/// Whether `b` may appear in an HTTP token (RFC 9110 §5.6.2: method and field names).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Why `s` is not a token, or `None` when it is one.
fn token_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("must not be empty".into());
    }
    // No character outside the token alphabet: no problem.
    let bad = s.chars().find(|c| !c.is_ascii() || !is_tchar(*c as u8))?;
    Some(match bad {
        '\r' | '\n' => "must not contain a line break (CR or LF)".into(),
        ' ' | '\t' => "must not contain spaces".into(),
        c => format!(
            "must be an HTTP token (letters, digits and !#$%&'*+-.^_`|~); {c:?} is not allowed"
        ),
    })
}

/// Why a header value is unusable, or `Ok` with it. Line breaks and other control characters
/// (tab excepted) would end the header early or be refused by the server (RFC 9110 §5.5).
pub fn check_value(value: &str) -> Result<(), &'static str> {
    match value
        .bytes()
        .find(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
    {
        Some(b'\r' | b'\n') => Err("must not contain a line break (CR or LF)"),
        Some(_) => Err("must not contain control characters (other than tab)"),
        None => Ok(()),
    }
}

/// A Kubernetes object name (DNS subdomain, RFC 1123): what a Secret may be called.
fn secret_name_problem(name: &str) -> Option<&'static str> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    (!ok).then_some(
        "must be a Secret name: lower case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters",
    )
}

/// A key of a Secret's data, as Kubernetes allows it (and so a plain file name locally).
fn secret_key_problem(key: &str) -> Option<&'static str> {
    let ok = !key.is_empty()
        && key.len() <= 253
        && key != "."
        && key != ".."
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    (!ok).then_some("must be a Secret key: letters, digits, '-', '_' and '.', not \".\" or \"..\"")
}

/// Whether `name` can name an environment variable the load generator reads.
pub fn env_name_ok(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The bytes a header line takes on the wire: `Name: value\r\n`.
pub fn header_line_len(name: &str, value: &str) -> usize {
    name.len() + 2 + value.len() + 2
}

/// Checks `e`'s method, headers, body and success codes; `at` is the endpoint's path.
pub fn check_endpoint(e: &Endpoint, at: &str, errors: &mut Vec<FieldError>) {
    let method = e.method_or_default();
    if let Some(m) = &e.method {
        if let Some(why) = token_problem(m) {
            errors.push(FieldError::new(format!("{at}.method"), why));
        } else if m.bytes().any(|b| b.is_ascii_lowercase()) {
            errors.push(FieldError::new(
                format!("{at}.method"),
                format!(
                    "methods are case-sensitive and upper case: write {:?}",
                    m.to_ascii_uppercase()
                ),
            ));
        } else if m == "CONNECT" {
            errors.push(FieldError::new(
                format!("{at}.method"),
                "CONNECT opens a tunnel, not a request the load generator can measure",
            ));
        }
    }
    if e.headers.len() > MAX_HEADERS {
        errors.push(FieldError::new(
            format!("{at}.headers"),
            format!(
                "{} headers; an endpoint may have at most {MAX_HEADERS}",
                e.headers.len()
            ),
        ));
    }
    let mut literal_bytes = 0;
    for (i, h) in e.headers.iter().enumerate() {
        literal_bytes += check_header(h, &format!("{at}.headers[{i}]"), errors);
    }
    if literal_bytes > MAX_HEADER_BYTES {
        errors.push(FieldError::new(
            format!("{at}.headers"),
            format!(
                "the headers take {literal_bytes} bytes; at most {MAX_HEADER_BYTES} are allowed (servers commonly refuse larger heads)"
            ),
        ));
    }
    if let Some(body) = &e.body {
        if body_refused(method) {
            errors.push(FieldError::new(
                format!("{at}.body"),
                format!(
                    "a {method} request carries no body here; set method (e.g. POST) or leave body out"
                ),
            ));
        }
        if body.len() > MAX_BODY_BYTES {
            errors.push(FieldError::new(
                format!("{at}.body"),
                format!(
                    "{} bytes; a body may have at most {MAX_BODY_BYTES}",
                    body.len()
                ),
            ));
        }
    }
    if let Some(codes) = &e.success_codes {
        if codes.is_empty() {
            errors.push(FieldError::new(
                format!("{at}.successCodes"),
                "list at least one code (leave successCodes out for 2xx)",
            ));
        }
        for (i, c) in codes.iter().enumerate() {
            if let Err(why) = c.range() {
                errors.push(FieldError::new(format!("{at}.successCodes[{i}]"), why));
            }
        }
    }
}

/// Checks one header; returns the bytes it takes on the wire when its value is written in the
/// spec (a value from elsewhere is counted when it is read).
fn check_header(h: &Header, at: &str, errors: &mut Vec<FieldError>) -> usize {
    if let Some(why) = token_problem(&h.name) {
        errors.push(FieldError::new(format!("{at}.name"), why));
    } else if OWNED_HEADERS.contains(&h.name.to_ascii_lowercase().as_str()) {
        errors.push(FieldError::new(
            format!("{at}.name"),
            format!(
                "{} is written by the load generator (Host from the target, Content-Length from body, keep-alive framing); leave it out",
                h.name
            ),
        ));
    }
    match (&h.value, &h.value_from) {
        (Some(_), Some(_)) => errors.push(FieldError::new(
            at,
            "set either value or valueFrom, not both",
        )),
        (None, None) => errors.push(FieldError::new(at, "set value or valueFrom")),
        (Some(v), None) => {
            if let Err(why) = check_value(v) {
                errors.push(FieldError::new(format!("{at}.value"), why));
            }
            return header_line_len(&h.name, v);
        }
        (None, Some(from)) => {
            let at = format!("{at}.valueFrom");
            match (&from.secret_key_ref, &from.env) {
                (Some(_), Some(_)) => errors.push(FieldError::new(
                    &at,
                    "set either secretKeyRef or env, not both",
                )),
                (None, None) => errors.push(FieldError::new(&at, "set secretKeyRef")),
                (Some(r), None) => {
                    if let Some(why) = secret_name_problem(&r.name) {
                        errors.push(FieldError::new(format!("{at}.secretKeyRef.name"), why));
                    }
                    if let Some(why) = secret_key_problem(&r.key) {
                        errors.push(FieldError::new(format!("{at}.secretKeyRef.key"), why));
                    }
                }
                (None, Some(env)) => {
                    if !env_name_ok(env) {
                        errors.push(FieldError::new(
                            format!("{at}.env"),
                            format!(
                                "{env:?} is not an environment variable name (letters, digits and '_', not starting with a digit)"
                            ),
                        ));
                    }
                }
            }
        }
    }
    0
}
