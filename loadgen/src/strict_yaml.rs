//! The one strict YAML (and JSON) reader of the workspace, and the [`FieldError`] every input
//! check reports with.
//!
//! The load generator's plan file and the operator's `BenchmarkRun` are both read here, so a
//! misspelt field, a wrong type or broken YAML reads the same whichever tool refuses it:
//! `spec.configurations[1].replicas: invalid type: string "two", expected u32 (line 14, column 17)`.

use std::fmt;

use serde::de::DeserializeOwned;

pub mod locate;
pub use locate::locate;

/// Where [`FieldError::path`] points when the fault is the document as a whole (broken YAML, a
/// required top-level field missing).
pub const DOCUMENT: &str = "(document)";

/// One problem with an input, tied to the field that causes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the field as the user wrote it, e.g. `spec.configurations[2].name`.
    pub path: String,
    /// What is wrong and, where it helps, what would be right.
    pub message: String,
    /// 1-based line in the YAML document, where known.
    pub line: Option<usize>,
    /// 1-based column in the YAML document, where known.
    pub column: Option<usize>,
}

impl FieldError {
    /// An error at `path` with no known location.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
            line: None,
            column: None,
        }
    }

    /// The same error placed at its path in `text` when it has no place yet (an error found
    /// after the document was read knows its path only). See [`locate()`].
    pub fn placed_in(mut self, text: &str) -> Self {
        if self.line.is_none()
            && let Some((line, column)) = locate(text, &self.path)
        {
            self.line = Some(line);
            self.column = Some(column);
        }
        self
    }

    /// The same error, located where serde_yaml says it is (when it says).
    fn located(mut self, location: Option<serde_yaml::Location>) -> Self {
        if let Some(at) = location {
            self.line = Some(at.line());
            self.column = Some(at.column());
        }
        self
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)?;
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, " (line {line}, column {column})"),
            (Some(line), None) => write!(f, " (line {line})"),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for FieldError {}

/// Parses YAML or JSON (JSON is read as YAML, of which it is a subset) into `T`, refusing every
/// field `T` does not know: a misspelt field would otherwise silently fall back to its default.
///
/// See [`parse_strict_checked`] for what the errors hold.
pub fn parse_strict<T: DeserializeOwned>(text: &str) -> Result<T, Vec<FieldError>> {
    parse_strict_checked(text, |_| false, |_| Vec::new())
}

/// [`parse_strict`], letting through the unknown fields whose path `tolerated` accepts, and
/// running `check` on a value whose shape is right so that its problems come back together with
/// the unknown fields (every problem at once, not one per attempt).
///
/// Every error is placed at its line and column where the text has its path ([`locate()`]).
/// The errors, in this order:
/// - an empty text: "the file is empty", alone; more than one document: how many, and the
///   line of the second, alone;
/// - broken YAML: "YAML syntax error: ..." with line and column, at the field where the text
///   breaks when known, else at `(document)`; then any wrong type met before the break;
/// - unknown fields (as far as the parser got), each "unknown field" at its path, with list
///   positions in brackets: `workload.phases[0].load[0].conections`;
/// - a value of the wrong type or a missing field: its path (`(document)` for the top level),
///   serde_yaml's message, line and column;
/// - else whatever `check` found.
pub fn parse_strict_checked<T: DeserializeOwned>(
    text: &str,
    tolerated: impl Fn(&str) -> bool,
    check: impl FnOnce(&T) -> Vec<FieldError>,
) -> Result<T, Vec<FieldError>> {
    if is_empty(text) {
        return Err(vec![FieldError::new(DOCUMENT, "the file is empty")]);
    }
    let documents = document_count(text);
    if documents > 1 {
        let second = second_document_line(text);
        let message = format!(
            "the file holds {documents} YAML documents{}; it must hold one",
            second.map_or(String::new(), |l| format!(
                " (the second begins at `---` on line {l})"
            ))
        );
        let mut error = FieldError::new(DOCUMENT, message);
        error.line = second;
        return Err(vec![error]);
    }
    parse_located(text, tolerated, check)
}

/// [`parse_strict_checked`] of one document, with every error placed in `text`.
fn parse_located<T: DeserializeOwned>(
    text: &str,
    tolerated: impl Fn(&str) -> bool,
    check: impl FnOnce(&T) -> Vec<FieldError>,
) -> Result<T, Vec<FieldError>> {
    parse_one(text, tolerated, check)
        .map_err(|errors| errors.into_iter().map(|e| e.placed_in(text)).collect())
}

/// True for a text of nothing but blanks, comments and document markers.
pub fn is_empty(text: &str) -> bool {
    text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#') || l == "---" || l == "..."
    })
}

/// How many YAML documents `text` holds, as serde_yaml tells them apart (a `---` after the
/// last content begins an empty one); 1 for a text it reads as one. Counted from the `---`
/// lines: serde_yaml's own document iterator never ends on a broken text.
pub fn document_count(text: &str) -> usize {
    let several = serde_yaml::from_str::<serde::de::IgnoredAny>(text)
        .is_err_and(|e| e.to_string().contains("more than one document"));
    if !several {
        return 1;
    }
    let mut seen = false;
    let mut count = 1;
    for line in text.lines() {
        let bare = line.trim_end();
        if bare == "---" || bare.starts_with("--- ") {
            count += usize::from(seen);
            seen |= !bare[3..].trim().is_empty();
            continue;
        }
        let rest = bare.trim();
        seen |= !(rest.is_empty() || rest.starts_with('#') || rest.starts_with('%'));
    }
    count.max(2)
}

/// The line of the first `---` after some content: where a second document begins (a `---`
/// before the first content begins the first).
pub fn second_document_line(text: &str) -> Option<usize> {
    let mut seen = false;
    for (i, line) in text.lines().enumerate() {
        let bare = line.trim_end();
        if bare == "---" || bare.starts_with("--- ") {
            if seen {
                return Some(i + 1);
            }
            continue;
        }
        let rest = bare.trim();
        seen |= !(rest.is_empty() || rest.starts_with('#') || rest.starts_with('%'));
    }
    None
}

fn parse_one<T: DeserializeOwned>(
    text: &str,
    tolerated: impl Fn(&str) -> bool,
    check: impl FnOnce(&T) -> Vec<FieldError>,
) -> Result<T, Vec<FieldError>> {
    // Syntax first, so a broken document is called broken rather than a type error.
    if let Err(syntax) = serde_yaml::from_str::<serde_yaml::Value>(text) {
        return Err(syntax_errors::<T>(text, &syntax));
    }
    let mut errors = Vec::new();
    let mut on_unknown = |path: serde_ignored::Path<'_>| {
        let path = bracketed_path(&path);
        if !tolerated(&path) {
            errors.push(FieldError::new(path, "unknown field"));
        }
    };
    let ignoring =
        serde_ignored::Deserializer::new(serde_yaml::Deserializer::from_str(text), &mut on_unknown);
    match serde_path_to_error::deserialize::<_, T>(ignoring) {
        Ok(value) => {
            errors.extend(check(&value));
            if errors.is_empty() {
                Ok(value)
            } else {
                Err(errors)
            }
        }
        Err(err) => {
            errors.push(type_error(err));
            Err(errors)
        }
    }
}

/// A wrong type or a missing field, at its path.
fn type_error(err: serde_path_to_error::Error<serde_yaml::Error>) -> FieldError {
    let path = document_or(err.path().to_string());
    let inner = err.into_inner();
    let full = without_location(&inner.to_string());
    let message = without_path_prefix(&full, &path);
    // A message that began with a parent's path is a field's own error that serde_yaml placed
    // at the parent (its first key): left unplaced here, it is placed at the field's path.
    let at_parent = message != full && !full.starts_with(&format!("{path}: "));
    let location = if at_parent { None } else { inner.location() };
    FieldError::new(path, message).located(location)
}

/// serde_path_to_error writes the root as "." and an unknown position as "?": both are the
/// document.
fn document_or(path: String) -> String {
    if path == "." || path == "?" {
        DOCUMENT.to_owned()
    } else {
        path
    }
}

/// Broken YAML, said where it breaks: at the field `T` was reading there (serde_yaml hands the
/// events it could parse to the type before it reports the break), e.g. `workload.phases` for
/// an unclosed list. A fault `T` meets before the break is reported too, after it: it is real
/// whatever the rest of the text holds, and the break is then at no known field.
fn syntax_errors<T: DeserializeOwned>(text: &str, syntax: &serde_yaml::Error) -> Vec<FieldError> {
    let mut path = DOCUMENT.to_owned();
    let mut before_the_break = None;
    if let Err(err) =
        serde_path_to_error::deserialize::<_, T>(serde_yaml::Deserializer::from_str(text))
    {
        let at_the_break = match (err.inner().location(), syntax.location()) {
            (Some(a), Some(b)) => a.index() == b.index(),
            _ => false,
        };
        if at_the_break {
            path = document_or(err.path().to_string());
        } else {
            before_the_break = Some(type_error(err));
        }
    }
    if let Some(tab) = tab_error(text, syntax) {
        // The scanner meets the tab while reading the field before it: that field is not
        // the place; the tab's own line is.
        return vec![tab];
    }
    let message = format!(
        "YAML syntax error: {}",
        without_location(&syntax.to_string())
    );
    let broken = FieldError::new(path, message).located(syntax.location());
    std::iter::once(broken).chain(before_the_break).collect()
}

/// A tab in indentation, said at its own line with the line's text.
fn tab_error(text: &str, syntax: &serde_yaml::Error) -> Option<FieldError> {
    if !syntax.to_string().contains("found a tab character") {
        return None;
    }
    let at = syntax.location()?;
    let line = text.lines().nth(at.line() - 1)?;
    let message = format!(
        "YAML syntax error: a tab in the indentation of `{}`: YAML indents with spaces only",
        line.trim()
    );
    Some(FieldError::new(DOCUMENT, message).located(Some(at)))
}

/// Renders a serde_ignored path the way serde_path_to_error does, `spec.configurations[0].nme`:
/// from the path's parts, so a key such as "0" or "a.b" stays a key.
fn bracketed_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", bracketed_path(parent)),
        Path::Map { parent, key } => {
            let parent = bracketed_path(parent);
            if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => bracketed_path(parent),
    }
}

/// serde_yaml starts a type error's message with the field's path (`a.b: invalid type: ...`),
/// which the error already carries in its own field: drop the copy so the path prints once.
/// The copy may be of a parent's path (`spec.sizing: invalid percentage` for
/// `spec.sizing.margin`, as serde_yaml writes a custom error of a field): dropped as well.
fn without_path_prefix(message: &str, path: &str) -> String {
    let Some((head, rest)) = message.split_once(": ") else {
        return message.to_owned();
    };
    let parent_of_path = path == head
        || path
            .strip_prefix(head)
            .is_some_and(|tail| tail.starts_with('.') || tail.starts_with('['));
    if parent_of_path && !head.contains(' ') {
        rest.to_owned()
    } else {
        message.to_owned()
    }
}

/// serde_yaml ends its messages with " at line L column C"; the location has its own fields.
fn without_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(idx) => message[..idx].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests;
