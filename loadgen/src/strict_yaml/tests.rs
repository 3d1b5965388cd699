use super::*;
use serde::Deserialize;

#[derive(Debug, Deserialize, PartialEq)]
struct Doc {
    name: String,
    #[serde(default)]
    items: Vec<Item>,
    #[serde(default)]
    inner: Option<Inner>,
}

#[derive(Debug, Deserialize, PartialEq)]
struct Item {
    id: u32,
}

#[derive(Debug, Deserialize, PartialEq)]
struct Inner {
    #[serde(default)]
    depth: u32,
}

fn paths(errors: &[FieldError]) -> Vec<&str> {
    errors.iter().map(|e| e.path.as_str()).collect()
}

#[test]
fn a_well_formed_document_parses() {
    let doc: Doc =
        parse_strict("name: a\nitems: [{id: 1}, {id: 2}]\ninner: {depth: 3}\n").expect("valid");
    assert_eq!(doc.items[1], Item { id: 2 });
    assert_eq!(doc.inner, Some(Inner { depth: 3 }));
}

#[test]
fn json_is_read_as_yaml() {
    let doc: Doc = parse_strict(r#"{"name": "a", "items": [{"id": 7}]}"#).expect("valid");
    assert_eq!(doc.items, [Item { id: 7 }]);
}

#[test]
fn every_unknown_field_is_an_error_with_its_bracketed_path() {
    let text =
        "name: a\nnme: b\nitems:\n  - id: 1\n  - id: 2\n    idd: 3\ninner: {depth: 1, deep: 2}\n";
    let errors = parse_strict::<Doc>(text).unwrap_err();
    assert_eq!(paths(&errors), ["nme", "items[1].idd", "inner.deep"]);
    assert!(
        errors.iter().all(|e| e.message == "unknown field"),
        "{errors:?}"
    );
    assert_eq!(
        errors[1].to_string(),
        "items[1].idd: unknown field (line 6, column 5)"
    );
}

#[test]
fn numeric_and_dotted_keys_stay_keys_in_paths() {
    // A key that looks like an index or holds a dot is still a key, not a list position.
    let errors = parse_strict::<Doc>("name: a\ninner: {\"0\": 1, \"a.b\": 2}\n").unwrap_err();
    assert_eq!(paths(&errors), ["inner.0", "inner.a.b"]);
}

#[test]
fn a_type_error_names_the_path_line_and_column_once() {
    let text = "name: a\nitems:\n  - id: 1\n  - id: two\n";
    let errors = parse_strict::<Doc>(text).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    assert_eq!(e.path, "items[1].id");
    assert_eq!((e.line, e.column), (Some(4), Some(9)), "{e}");
    assert!(e.message.starts_with("invalid type: string \"two\""), "{e}");
    assert!(
        !e.message.contains("line"),
        "the location is not repeated: {e}"
    );
    let line = e.to_string();
    assert_eq!(line.matches("items[1].id").count(), 1, "{line}");
    assert!(line.ends_with(" (line 4, column 9)"), "{line}");
}

#[test]
fn unknown_fields_seen_before_a_failure_are_reported_first() {
    // The misspelt field is why the required one is missing: say both.
    let errors = parse_strict::<Doc>("nam: a\n").unwrap_err();
    assert_eq!(paths(&errors), ["nam", "(document)"], "{errors:?}");
    assert!(
        errors[1].message.contains("missing field `name`"),
        "{errors:?}"
    );
}

#[test]
fn broken_yaml_is_a_syntax_error_with_its_location() {
    let errors = parse_strict::<Doc>("{ not yaml").unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    assert_eq!(e.path, "(document)");
    // The unclosed mapping is noticed where the text ends; the location has its own fields.
    assert_eq!(
        e.message, "YAML syntax error: did not find expected ',' or '}'",
        "{e}"
    );
    assert_eq!((e.line, e.column), (Some(2), Some(1)), "{e}");
}

#[test]
fn a_syntax_error_inside_a_field_names_the_field() {
    let errors = parse_strict::<Doc>("name: a\nitems: [{id: 1}\n").unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].path, "items", "{errors:?}");
    assert!(
        errors[0].message.starts_with("YAML syntax error: "),
        "{errors:?}"
    );
    assert_eq!(errors[0].line, Some(3), "{errors:?}");
}

#[test]
fn a_type_error_before_a_syntax_error_is_reported_too() {
    // The type fails at `name` first; the break further down is then at no known field.
    let errors = parse_strict::<Doc>("name: [1]\nitems: [{id: 1}\n").unwrap_err();
    assert_eq!(paths(&errors), ["(document)", "name"], "{errors:?}");
    assert!(
        errors[1].message.starts_with("invalid type: sequence"),
        "{errors:?}"
    );
    assert_eq!(
        (errors[1].line, errors[1].column),
        (Some(1), Some(7)),
        "{errors:?}"
    );
    assert!(
        errors[0].message.starts_with("YAML syntax error: "),
        "{errors:?}"
    );
}

#[test]
fn tolerated_fields_pass_and_the_check_runs_with_the_unknown_ones() {
    let text = "name: a\nstatus: {x: 1}\nextra: 2\n";
    let errors = parse_strict_checked::<Doc>(
        text,
        |path| path.starts_with("status"),
        |doc| {
            vec![FieldError::new(
                "name",
                format!("{:?} is too short", doc.name),
            )]
        },
    )
    .unwrap_err();
    assert_eq!(
        errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "extra: unknown field (line 3, column 1)",
            "name: \"a\" is too short (line 1, column 1)"
        ]
    );
    let doc = parse_strict_checked::<Doc>(text, |p| p != "name", |_| Vec::new()).unwrap();
    assert_eq!(doc.name, "a");
}

#[test]
fn the_location_prints_as_far_as_it_is_known() {
    let mut e = FieldError::new("a.b", "wrong");
    assert_eq!(e.to_string(), "a.b: wrong");
    e.line = Some(3);
    assert_eq!(e.to_string(), "a.b: wrong (line 3)");
    e.column = Some(7);
    assert_eq!(e.to_string(), "a.b: wrong (line 3, column 7)");
}

/// Each message says what is wrong once, at its line: input -> (path, message fragment, line).
#[test]
fn messages_are_placed_and_said_once() {
    let cases: &[(&str, &str, &str, Option<usize>)] = &[
        ("", DOCUMENT, "the file is empty", None),
        (
            "# only a comment\n---\n",
            DOCUMENT,
            "the file is empty",
            None,
        ),
        (
            "name: a\n---\nname: b\n",
            DOCUMENT,
            "holds 2 YAML documents (the second begins at `---` on line 2)",
            Some(2),
        ),
        (
            "name: a\nitems:\n  - id: 1\n\t- id: 2\n",
            DOCUMENT,
            "a tab in the indentation of `- id: 2`",
            Some(4),
        ),
        (
            "name: a\nitems: []\nnme: x\n",
            "nme",
            "unknown field",
            Some(3),
        ),
        (
            "name: a\nitems:\n  - id: 1\n  - id: x\n",
            "items[1].id",
            "invalid type: string \"x\"",
            Some(4),
        ),
    ];
    for (text, path, fragment, line) in cases {
        let errors = parse_strict::<Doc>(text).unwrap_err();
        assert_eq!(errors.len(), 1, "{text:?}: {errors:?}");
        let e = &errors[0];
        assert_eq!(e.path, *path, "{text:?}: {e}");
        assert!(e.message.contains(fragment), "{text:?}: {e}");
        assert_eq!(e.line, *line, "{text:?}: {e}");
        if e.path != DOCUMENT {
            assert!(!e.message.contains(&e.path), "path said twice: {e}");
        }
    }
    // A leading `---` begins the first document; a trailing one a second, empty one.
    assert!(parse_strict::<Doc>("---\nname: a\n").is_ok());
    let errors = parse_strict::<Doc>("---\nname: a\n---\n").unwrap_err();
    assert_eq!(errors[0].line, Some(3), "{errors:?}");
}

/// A check's errors (found after reading) get the line of their path.
#[test]
fn a_check_s_errors_are_placed_at_their_path() {
    let errors = parse_strict_checked::<Doc>(
        "name: a\nitems:\n  - id: 1\n  - id: 2\n",
        |_| false,
        |_| vec![FieldError::new("items[1]", "too big")],
    )
    .unwrap_err();
    assert_eq!(
        errors[0].to_string(),
        "items[1]: too big (line 4, column 5)"
    );
}

/// serde_yaml prefixes a custom error with the parent's path: it is dropped, not doubled.
#[test]
fn a_parent_path_before_the_message_is_dropped() {
    assert_eq!(
        without_path_prefix("spec.sizing: invalid percentage", "spec.sizing.margin"),
        "invalid percentage"
    );
    assert_eq!(without_path_prefix("a.b: x", "a.b"), "x");
    assert_eq!(
        without_path_prefix("invalid type: x", "a.b"),
        "invalid type: x"
    );
    assert_eq!(
        without_path_prefix("spec.other: x", "spec.sizing"),
        "spec.other: x"
    );
}
