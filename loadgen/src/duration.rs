//! A duration written the way people write them in YAML: `"500ms"`, `"15s"`, `"2m"`, `"1m30s"`.
//!
//! Kubernetes users expect Go-style duration strings, and a plain number of seconds is
//! ambiguous in a spec (seconds? milliseconds?), so the wire form is always a string with units.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The regular expression the JSON schema publishes for a [`Duration`]; the parser accepts
/// this language (whole numbers followed by `h`, `m`, `s` or `ms`, largest unit first is
/// customary but not required), up to [`MAX_ANY_DURATION`].
pub const DURATION_PATTERN: &str = r"^([0-9]+(h|m|s|ms))+$";

/// Longest duration any field accepts (`ttlAfterFinished` may keep a run this long): 365 days,
/// written "8760h". The duration parser refuses anything longer, so no duration string can
/// overflow a clock or a date, whatever field it is given in.
///
/// [`crate::limits`] publishes it with the other bounds.
pub const MAX_ANY_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// A span of time serialized as a string such as `"500ms"`, `"15s"`, `"2m"` or `"1m30s"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    /// A duration of `secs` whole seconds.
    pub const fn from_secs(secs: u64) -> Self {
        Self(std::time::Duration::from_secs(secs))
    }

    /// A duration of `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Self(std::time::Duration::from_millis(ms))
    }

    /// The standard library value.
    pub const fn get(self) -> std::time::Duration {
        self.0
    }

    /// True for a zero-length span.
    pub const fn is_zero(self) -> bool {
        self.0.is_zero()
    }
}

impl From<std::time::Duration> for Duration {
    fn from(d: std::time::Duration) -> Self {
        Self(d)
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        d.0
    }
}

/// Why a duration string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {input:?}: {reason} (expected forms like \"500ms\", \"15s\", \"2m\", \"1m30s\")"
)]
pub struct ParseDurationError {
    input: String,
    reason: Cow<'static, str>,
}

impl FromStr for Duration {
    type Err = ParseDurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = |reason: &'static str| ParseDurationError {
            input: s.to_owned(),
            reason: reason.into(),
        };
        let too_long = || ParseDurationError {
            input: s.to_owned(),
            reason: format!(
                "longer than {MAX_ANY_DURATION} (365 days), the longest duration accepted"
            )
            .into(),
        };
        let ceiling_ms = MAX_ANY_DURATION.0.as_millis();
        if s.is_empty() {
            return Err(fail("empty string"));
        }
        let bytes = s.as_bytes();
        let mut total_ms: u128 = 0;
        let mut i = 0;
        while i < bytes.len() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return Err(fail("each part must start with a whole number"));
            }
            // A number too long for u128 is far beyond the ceiling anyway.
            let number: u128 = s[start..i].parse().map_err(|_| too_long())?;
            let unit_start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                i += 1;
            }
            let unit_ms: u128 = match &s[unit_start..i] {
                "h" => 3_600_000,
                "m" => 60_000,
                "s" => 1_000,
                "ms" => 1,
                "" => return Err(fail("missing unit (h, m, s or ms)")),
                _ => return Err(fail("unknown unit (use h, m, s or ms)")),
            };
            total_ms = number
                .checked_mul(unit_ms)
                .and_then(|v| v.checked_add(total_ms))
                .filter(|&ms| ms <= ceiling_ms)
                .ok_or_else(too_long)?;
        }
        let ms = u64::try_from(total_ms).map_err(|_| too_long())?;
        Ok(Self(std::time::Duration::from_millis(ms)))
    }
}

impl fmt::Display for Duration {
    /// The canonical form: largest units first, zero parts left out, `"0s"` for zero. Sub-millisecond
    /// remainders are dropped, since the string form cannot carry them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ms = self.0.as_millis();
        if ms == 0 {
            return f.write_str("0s");
        }
        for (unit, size) in [("h", 3_600_000u128), ("m", 60_000), ("s", 1_000), ("ms", 1)] {
            if ms >= size {
                write!(f, "{}{}", ms / size, unit)?;
                ms %= size;
            }
        }
        Ok(())
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::textual::parsed(
            deserializer,
            "a duration string such as \"500ms\", \"15s\", \"2m\" or \"1m30s\"",
        )
    }
}

impl JsonSchema for Duration {
    fn inline_schema() -> bool {
        // Inlined so a Kubernetes structural schema (no `$ref`) carries the pattern directly.
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": DURATION_PATTERN,
            "description": "A duration such as \"500ms\", \"15s\", \"2m\" or \"1m30s\" (units h, m, s, ms)."
        })
    }
}

#[cfg(test)]
mod tests;
