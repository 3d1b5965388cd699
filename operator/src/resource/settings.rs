//! What a configuration sets on its target, shared by the spec's configurations and axes and
//! by sizing's search space: the mode (the target crate's own type), the pool size,
//! environment variables, and the memory a cell gets unless it says otherwise.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use benchmatrix_loadgen::limits::MAX_POOL_SIZE;
pub use benchmatrix_target::config::Mode;

use super::quantity::Quantity;

/// The memory of a cell that names none.
pub(crate) fn default_memory() -> Quantity {
    Quantity::from("256Mi")
}

/// One environment variable (a plain value; both the operator and the local runner pass it
/// through unchanged).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct EnvVar {
    /// Variable name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Variable value.
    #[serde(default)]
    pub value: String,
}

impl EnvVar {
    /// A variable from a name and a value.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// Size of the target's worker pool: `auto` (from the CPU quota) or a fixed count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PoolSize {
    /// Sized from the CPU quota the target detects.
    #[default]
    Auto,
    /// Exactly this many workers.
    Fixed(u32),
}

impl PoolSize {
    /// True for `auto` (the default, left out when serializing).
    pub fn is_auto(&self) -> bool {
        matches!(self, PoolSize::Auto)
    }

    /// The value of env BENCH_POOL_SIZE.
    pub fn env_value(&self) -> String {
        match self {
            PoolSize::Auto => "auto".into(),
            PoolSize::Fixed(n) => n.to_string(),
        }
    }
}

impl Serialize for PoolSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            PoolSize::Auto => serializer.serialize_str("auto"),
            PoolSize::Fixed(n) => serializer.serialize_u32(*n),
        }
    }
}

impl<'de> Deserialize<'de> for PoolSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = PoolSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"auto\" or a positive whole number")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<PoolSize, E> {
                if v == "auto" {
                    return Ok(PoolSize::Auto);
                }
                match v.parse::<u32>() {
                    Ok(n) => self.visit_u64(u64::from(n)),
                    Err(_) => Err(E::custom(format!(
                        "invalid pool size {v:?}: expected \"auto\" or a positive whole number"
                    ))),
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<PoolSize, E> {
                match u32::try_from(v) {
                    Ok(n) if n > 0 => Ok(PoolSize::Fixed(n)),
                    _ => Err(E::custom(format!(
                        "invalid pool size {v}: expected \"auto\" or 1..4294967295"
                    ))),
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<PoolSize, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom(format!(
                        "invalid pool size {v}: expected \"auto\" or a positive whole number"
                    ))),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

// `minimum` and `maximum` apply to the integer form only; the operator's validation checks a
// number written as a string.
written_schema!(PoolSize, {
    "x-kubernetes-int-or-string": true,
    "minimum": 1,
    "maximum": MAX_POOL_SIZE,
});
