//! `spec.parallelism`: how many measurements of a run may run at once, each on nodes no other
//! measurement uses at that moment. A number (default 1, today's one at a time) or `auto`: as many
//! as the Ready, schedulable nodes that match `spec.placement` can hold. The operator decides the
//! slots and their nodes (`executors/cluster/placement/slots.rs`); the engine fills them
//! (`engine::schedule::plan`). Locally one machine has no separate nodes, so a run measures one
//! cell at a time whatever this says.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The most measurements a run may ask to run at once (and the most node sets its status
/// records).
pub const MAX_PARALLELISM: u32 = 16;

/// How many measurements of a run may run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parallelism {
    /// At most this many (`parallelism: 3`); 1 is one at a time.
    Count(u32),
    /// As many as the usable nodes can hold (`parallelism: auto`).
    Auto,
}

impl Default for Parallelism {
    fn default() -> Self {
        Parallelism::Count(1)
    }
}

impl Parallelism {
    /// True when more than one measurement may run at once (or `auto`).
    pub fn is_parallel(self) -> bool {
        self != Parallelism::Count(1)
    }

    /// The most slots asked for: the count, or for `auto` [`MAX_PARALLELISM`].
    pub fn most(self) -> u32 {
        match self {
            Parallelism::Count(n) => n.clamp(1, MAX_PARALLELISM),
            Parallelism::Auto => MAX_PARALLELISM,
        }
    }
}

/// Whether `p` is the default, which the spec leaves out when written.
pub fn is_one(p: &Parallelism) -> bool {
    *p == Parallelism::Count(1)
}

impl fmt::Display for Parallelism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Parallelism::Count(n) => write!(f, "{n}"),
            Parallelism::Auto => f.write_str("auto"),
        }
    }
}

impl Serialize for Parallelism {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Parallelism::Count(n) => serializer.serialize_u32(n),
            Parallelism::Auto => serializer.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for Parallelism {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Visitor)
    }
}

struct Visitor;

impl serde::de::Visitor<'_> for Visitor {
    type Value = Parallelism;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a whole number of measurements at once, or \"auto\"")
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Parallelism, E> {
        // Out-of-range counts are the validation's to refuse, with the allowed range.
        Ok(Parallelism::Count(u32::try_from(v).unwrap_or(u32::MAX)))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Parallelism, E> {
        Ok(Parallelism::Count(u32::try_from(v).unwrap_or(0)))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Parallelism, E> {
        match v {
            "auto" => Ok(Parallelism::Auto),
            other => Err(E::custom(format!(
                "parallelism `{other}`: expected a whole number of measurements at once, or \
                 \"auto\""
            ))),
        }
    }
}

// An integer or the word auto: int-or-string is the structural schema for it; the operator
// checks the range and the word (condition SpecValid names the field).
written_schema!(Parallelism, {
    "x-kubernetes-int-or-string": true,
});

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Parallelism, String> {
        serde_yaml::from_str(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn a_number_or_auto_and_nothing_else() {
        assert_eq!(parse("3"), Ok(Parallelism::Count(3)));
        assert_eq!(parse("auto"), Ok(Parallelism::Auto));
        assert_eq!(parse("0"), Ok(Parallelism::Count(0)));
        let err = parse("many").unwrap_err();
        assert!(err.contains("expected a whole number"), "{err}");
        assert_eq!(serde_yaml::to_string(&Parallelism::Auto).unwrap(), "auto\n");
        assert_eq!(
            serde_yaml::to_string(&Parallelism::Count(2)).unwrap(),
            "2\n"
        );
        assert!(!Parallelism::Count(1).is_parallel() && Parallelism::Auto.is_parallel());
        assert_eq!(Parallelism::Count(99).most(), MAX_PARALLELISM);
    }
}
