//! A small OpenAPI v3 schema checker for the keywords the generated CRD uses: type, properties,
//! required, items, additionalProperties, enum, pattern, min/max, lengths, nullable,
//! x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields. Unknown fields are errors,
//! since the API server would silently drop them.

use serde_json::Value;

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Checks `value` against an OpenAPI v3 `schema` (the keywords the generated CRD uses), pushing
/// one message per violation, each naming the path.
pub fn check(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    let at = if path.is_empty() { "(root)" } else { path };
    if value.is_null() {
        if schema["nullable"] != Value::Bool(true) {
            errors.push(format!("{at}: null is not allowed"));
        }
        return;
    }
    if let Some(options) = schema["enum"].as_array()
        && !options.contains(value)
    {
        errors.push(format!("{at}: {value} is not one of {options:?}"));
    }
    if schema["x-kubernetes-int-or-string"] == Value::Bool(true) {
        if !(value.is_string() || value.is_i64() || value.is_u64()) {
            errors.push(format!("{at}: expected an integer or string, got {value}"));
        }
        return;
    }
    match schema["type"].as_str() {
        Some("object") => {
            let Some(obj) = value.as_object() else {
                errors.push(format!("{at}: expected object, got {value}"));
                return;
            };
            for req in schema["required"].as_array().into_iter().flatten() {
                let req = req.as_str().unwrap_or_default();
                if !obj.contains_key(req) {
                    errors.push(format!("{}: required", join(path, req)));
                }
            }
            let props = schema["properties"].as_object();
            let extra = &schema["additionalProperties"];
            let preserve = schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true);
            for (key, v) in obj {
                let here = join(path, key);
                match props.and_then(|p| p.get(key)) {
                    Some(sub) => check(sub, v, &here, errors),
                    None if extra.is_object() => check(extra, v, &here, errors),
                    None if preserve => {}
                    None => errors.push(format!(
                        "{here}: unknown field (the API server would drop it)"
                    )),
                }
            }
        }
        Some("array") => {
            let Some(items) = value.as_array() else {
                errors.push(format!("{at}: expected array, got {value}"));
                return;
            };
            if let Some(min) = schema["minItems"].as_u64()
                && (items.len() as u64) < min
            {
                errors.push(format!("{at}: fewer than {min} items"));
            }
            if let Some(max) = schema["maxItems"].as_u64()
                && (items.len() as u64) > max
            {
                errors.push(format!("{at}: more than {max} items"));
            }
            for (i, item) in items.iter().enumerate() {
                check(&schema["items"], item, &format!("{path}[{i}]"), errors);
            }
        }
        Some("string") => {
            let Some(s) = value.as_str() else {
                errors.push(format!("{at}: expected string, got {value}"));
                return;
            };
            if let Some(pattern) = schema["pattern"].as_str() {
                let re = regex::Regex::new(pattern).expect("schema patterns compile");
                if !re.is_match(s) {
                    errors.push(format!("{at}: {s:?} does not match {pattern}"));
                }
            }
            let len = s.chars().count() as u64;
            if schema["minLength"].as_u64().is_some_and(|m| len < m) {
                errors.push(format!("{at}: shorter than minLength"));
            }
            if schema["maxLength"].as_u64().is_some_and(|m| len > m) {
                errors.push(format!("{at}: longer than maxLength"));
            }
        }
        Some("integer") => {
            if !(value.is_i64() || value.is_u64()) {
                errors.push(format!("{at}: expected integer, got {value}"));
                return;
            }
            check_range(schema, value, at, errors);
        }
        Some("number") => {
            if !value.is_number() {
                errors.push(format!("{at}: expected number, got {value}"));
                return;
            }
            check_range(schema, value, at, errors);
        }
        Some("boolean") if !value.is_boolean() => {
            errors.push(format!("{at}: expected boolean, got {value}"));
        }
        Some("boolean") => {}
        Some(other) => errors.push(format!("{at}: schema has unknown type {other}")),
        None => {}
    }
}

fn check_range(schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let v = value.as_f64().unwrap_or_default();
    if schema["minimum"].as_f64().is_some_and(|m| v < m) {
        errors.push(format!(
            "{at}: {v} is below the minimum {}",
            schema["minimum"]
        ));
    }
    if schema["maximum"].as_f64().is_some_and(|m| v > m) {
        errors.push(format!(
            "{at}: {v} is above the maximum {}",
            schema["maximum"]
        ));
    }
}
