//! "did you mean `repeat`?" for an unknown field: the names the BenchmarkRun schema allows at
//! the field's level (from the CRD's own schema, so it cannot drift from the types), the
//! closest within a couple of edits.

use serde_json::Value;

/// Most edits (insertions, deletions, substitutions) between a misspelt field and the name
/// suggested for it: a typo or two, not another word.
const MAX_EDITS: usize = 2;

/// `error` with "did you mean `x`?" added when it is an unknown field and a field its level
/// allows is close to it.
pub fn with_suggestion(
    mut error: crate::resource::validate::FieldError,
) -> crate::resource::validate::FieldError {
    if error.message != "unknown field" {
        return error;
    }
    let (parent, name) = match error.path.rsplit_once('.') {
        Some((parent, name)) => (parent, name),
        None => ("", error.path.as_str()),
    };
    if let Some(near) = closest(name, &allowed(parent)) {
        error.message = format!("unknown field; did you mean `{near}`?");
    }
    error
}

/// The field names the schema allows under `parent` (`spec.configurations[0]`), none when the
/// schema does not go there.
fn allowed(parent: &str) -> Vec<String> {
    let crd = crate::resource::crdgen::crd_value();
    let mut node = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    for part in parent.split('.').filter(|p| !p.is_empty()) {
        let (key, indices) = part.split_once('[').unwrap_or((part, ""));
        node = &node["properties"][key];
        for _ in indices.matches(']') {
            node = &node["items"];
        }
    }
    let mut names: Vec<String> = match &node["properties"] {
        Value::Object(fields) => fields.keys().cloned().collect(),
        _ => Vec::new(),
    };
    if parent.is_empty() {
        // The object's own fields, which the schema leaves to the API server.
        names.extend(["apiVersion", "kind", "metadata"].map(String::from));
    }
    names
}

/// The name of `names` fewest edits from `word`, if within [`MAX_EDITS`] (and fewer than the
/// word's length, so that `a` does not suggest `b`).
fn closest<'a>(word: &str, names: &'a [String]) -> Option<&'a str> {
    names
        .iter()
        .map(|n| (edits(&word.to_lowercase(), &n.to_lowercase()), n))
        .filter(|(d, _)| *d <= MAX_EDITS && *d < word.chars().count())
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.as_str())
}

/// Levenshtein distance, by characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::validate::FieldError;

    fn said(path: &str) -> String {
        with_suggestion(FieldError::new(path, "unknown field")).message
    }

    #[test]
    fn a_close_name_at_the_same_level_is_suggested() {
        assert_eq!(said("spec.repat"), "unknown field; did you mean `repeat`?");
        assert_eq!(
            said("spec.configurations[1].replica"),
            "unknown field; did you mean `replicas`?"
        );
        assert_eq!(
            said("spec.workload.phases[0].load[0].conections"),
            "unknown field; did you mean `connections`?"
        );
        assert_eq!(
            said("spec.target.readinesspath"),
            "unknown field; did you mean `readinessPath`?"
        );
        assert_eq!(said("metdata"), "unknown field; did you mean `metadata`?");
        // Nothing close, or a name of another level: no guess.
        assert_eq!(said("spec.configurations[1].margin"), "unknown field");
        assert_eq!(said("spec.nothinglikeit"), "unknown field");
    }

    #[test]
    fn edits_count_insertions_deletions_and_substitutions() {
        assert_eq!(edits("repat", "repeat"), 1);
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("", "ab"), 2);
    }
}
