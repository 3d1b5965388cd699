//! Kubernetes resource quantities (`"500m"`, `"0.5"`, `"2"`, `"256Mi"`) as the spec writes them.
//!
//! Pure parsing with no cluster types, so the local runner turns the same strings into cgroup
//! quotas that the operator turns into pod limits. Only the forms a CPU or memory limit uses are
//! accepted: a decimal number with an optional SI or binary suffix.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A resource quantity exactly as written in the spec (`"500m"`, `"1"`, `"256Mi"`).
///
/// The text is kept verbatim so the pod limit says what the user wrote; [`Quantity::cpu_cores`]
/// and [`Quantity::bytes`] give the numbers. In YAML an integer (`cpu: 2`) is accepted as well;
/// a fraction must be quoted (`cpu: "0.5"`), as the Kubernetes API server refuses a bare float in
/// an int-or-string field.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Quantity(pub String);

/// Why a quantity string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {input:?}: {reason}")]
pub struct QuantityError {
    input: String,
    reason: &'static str,
}

impl Quantity {
    /// A quantity from its text form (not checked; see [`Quantity::cpu_cores`]).
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value as a number of CPU cores: `"500m"` -> 0.5, `"2"` -> 2.0.
    pub fn cpu_cores(&self) -> Result<f64, QuantityError> {
        parse_quantity(&self.0)
    }

    /// CPU as whole millicores (what cgroup quotas and the API server round to).
    pub fn cpu_millis(&self) -> Result<u64, QuantityError> {
        let cores = self.cpu_cores()?;
        Ok((cores * 1000.0).round() as u64)
    }

    /// The value as bytes: `"256Mi"` -> 268435456, `"1G"` -> 1e9.
    pub fn bytes(&self) -> Result<u64, QuantityError> {
        let value = parse_quantity(&self.0)?;
        if value.fract() != 0.0 && value < 1.0 {
            return Err(self.error("a memory size must be at least one byte"));
        }
        Ok(value.round() as u64)
    }

    fn error(&self, reason: &'static str) -> QuantityError {
        QuantityError {
            input: self.0.clone(),
            reason,
        }
    }
}

/// Parses a Kubernetes quantity into a plain number (cores for CPU, bytes for memory).
pub fn parse_quantity(text: &str) -> Result<f64, QuantityError> {
    let fail = |reason| QuantityError {
        input: text.to_owned(),
        reason,
    };
    let text_trimmed = text.trim();
    if text_trimmed.is_empty() {
        return Err(fail("empty"));
    }
    let split = text_trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text_trimmed.len());
    let (number, suffix) = text_trimmed.split_at(split);
    if number.is_empty() {
        return Err(fail(
            "must start with a number (negative values are not allowed)",
        ));
    }
    if number.matches('.').count() > 1 || number == "." {
        return Err(fail("malformed number"));
    }
    let value: f64 = number.parse().map_err(|_| fail("malformed number"))?;
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(fail("unknown suffix (use m, k, M, G, T, Ki, Mi, Gi or Ti)")),
    };
    Ok(value * factor)
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Quantity {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        benchmatrix_loadgen::textual::text_or_whole_number(
            deserializer,
            "a quantity such as \"500m\", \"2\" or \"256Mi\"",
            |v| {
                format!(
                    "a fractional quantity must be quoted (write \"{v}\"), as the Kubernetes API \
                     server refuses a bare float here"
                )
            },
        )
        .map(Quantity)
    }
}

// int-or-string, as Kubernetes' own resource quantities: `cpu: 2` and `cpu: "500m"`. No `type`
// and no `anyOf`: that is the structural form the API server accepts, and the operator's own
// validation checks the text.
written_schema!(Quantity, {
    "x-kubernetes-int-or-string": true,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_forms_parse_to_cores() {
        assert_eq!(Quantity::from("500m").cpu_cores(), Ok(0.5));
        assert_eq!(Quantity::from("0.5").cpu_cores(), Ok(0.5));
        assert_eq!(Quantity::from("2").cpu_cores(), Ok(2.0));
        assert_eq!(Quantity::from("1500m").cpu_millis(), Ok(1500));
    }

    #[test]
    fn memory_forms_parse_to_bytes() {
        assert_eq!(Quantity::from("256Mi").bytes(), Ok(256 * 1024 * 1024));
        assert_eq!(Quantity::from("1G").bytes(), Ok(1_000_000_000));
        assert_eq!(Quantity::from("64Ki").bytes(), Ok(65536));
    }

    #[test]
    fn malformed_quantities_are_refused_with_a_reason() {
        for bad in ["", "-1", "abc", "1.2.3", "5x", "m"] {
            let err = parse_quantity(bad).expect_err(bad);
            assert!(err.to_string().contains("invalid quantity"), "{err}");
        }
    }

    #[test]
    fn integers_deserialize_and_bare_floats_are_refused() {
        let q: Quantity = serde_json::from_str("2").unwrap();
        assert_eq!(q.as_str(), "2");
        let err = serde_json::from_str::<Quantity>("0.5").unwrap_err();
        assert!(err.to_string().contains("must be quoted"), "{err}");
    }
}
