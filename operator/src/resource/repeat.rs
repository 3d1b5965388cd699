//! `spec.repeat`: how many times every cell is measured. Either a fixed count (`repeat: 5`), or
//! rounds until the cell's figures are precise enough (`repeat: {min: 3, max: 10, precision:
//! 5}`): after `min` rounds a cell is measured again only while the 95% confidence interval of
//! one of its ranked figures is wider than `precision` percent of that figure, and never more
//! than `max` times. The engine decides it (`crate::engine`), for both executors alike.

use std::fmt;

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The fewest rounds `repeat: {min}` may ask for: the confidence interval a cell stops on
/// needs two values (and is wide from a few: see `crate::engine::results::precision`).
pub const MIN_ADAPTIVE_ROUNDS: u32 = 2;

/// `repeat: {min}` when the object leaves it out.
pub const DEFAULT_MIN_ROUNDS: u32 = 3;

/// How many times every cell is measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Repeat {
    /// Exactly this many times (`repeat: 5`).
    Times(u32),
    /// At least `min` times, then again while some ranked figure's 95% confidence interval is
    /// wider than `precision` percent of the figure, at most `max` times.
    UntilPrecise {
        /// Rounds every cell runs before its precision is judged.
        min: u32,
        /// Rounds no cell goes beyond, precise or not.
        max: u32,
        /// The widest confidence interval accepted, in percent of the figure (5 = 5%).
        precision: f64,
    },
}

impl Default for Repeat {
    fn default() -> Self {
        Repeat::Times(1)
    }
}

impl From<u32> for Repeat {
    fn from(n: u32) -> Self {
        Repeat::Times(n)
    }
}

impl Repeat {
    /// The most rounds a cell can take: what the run plans for and the status is sized for.
    pub fn max_rounds(self) -> u32 {
        match self {
            Repeat::Times(n) => n.max(1),
            Repeat::UntilPrecise { max, .. } => max.max(1),
        }
    }

    /// Rounds every cell runs in any case.
    pub fn min_rounds(self) -> u32 {
        match self {
            Repeat::Times(n) => n.max(1),
            Repeat::UntilPrecise { min, max, .. } => min.clamp(1, max.max(1)),
        }
    }

    /// True when a cell may be measured more than once: its figures are then medians over
    /// repetitions, each kept in `status.cells[].repetitions`.
    pub fn is_repeated(self) -> bool {
        self.max_rounds() > 1
    }

    /// True when the number of rounds depends on the figures.
    pub fn is_adaptive(self) -> bool {
        matches!(self, Repeat::UntilPrecise { .. })
    }

    /// The precision asked for, in percent, when the number of rounds depends on it.
    pub fn precision(self) -> Option<f64> {
        match self {
            Repeat::Times(_) => None,
            Repeat::UntilPrecise { precision, .. } => Some(precision),
        }
    }

    /// Which round `n` is, as messages say it: "2/5", or "4 of 3-10".
    pub fn round(self, n: u32) -> String {
        match self {
            Repeat::Times(total) => format!("{n}/{total}"),
            Repeat::UntilPrecise { min, max, .. } => format!("{n} of {min}-{max}"),
        }
    }

    fn is_once(&self) -> bool {
        *self == Repeat::Times(1)
    }
}

/// For `#[serde(skip_serializing_if)]`: a run measured once writes no `repeat`.
pub fn is_once(r: &Repeat) -> bool {
    r.is_once()
}

impl fmt::Display for Repeat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repeat::Times(n) => write!(f, "{n}"),
            Repeat::UntilPrecise {
                min,
                max,
                precision,
            } => write!(f, "{{min: {min}, max: {max}, precision: {precision}}}"),
        }
    }
}

impl Serialize for Repeat {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Repeat::Times(n) => serializer.serialize_u32(n),
            Repeat::UntilPrecise {
                min,
                max,
                precision,
            } => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("min", &min)?;
                map.serialize_entry("max", &max)?;
                map.serialize_entry("precision", &precision)?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Repeat {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RepeatVisitor)
    }
}

const EXPECTED: &str = "a whole number of rounds, or {min, max, precision}";

struct RepeatVisitor;

impl<'de> serde::de::Visitor<'de> for RepeatVisitor {
    type Value = Repeat;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(EXPECTED)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Repeat, E> {
        // Out-of-range counts are the validation's to refuse, with the allowed range.
        Ok(Repeat::Times(u32::try_from(v).unwrap_or(u32::MAX)))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Repeat, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Ok(Repeat::Times(0)),
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Repeat, A::Error> {
        use serde::de::Error;
        let (mut min, mut max, mut precision) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "min" => min = Some(map.next_value::<u32>()?),
                "max" => max = Some(map.next_value::<u32>()?),
                "precision" => precision = Some(map.next_value::<f64>()?),
                other => {
                    return Err(A::Error::custom(format!(
                        "unknown field `{other}` in repeat: expected `min`, `max` and `precision`"
                    )));
                }
            }
        }
        let max = max.ok_or_else(|| {
            A::Error::custom("repeat needs `max`: the most times a cell is measured")
        })?;
        let precision = precision.ok_or_else(|| {
            A::Error::custom(
                "repeat needs `precision`: the widest 95% confidence interval accepted, in \
                 percent of the figure",
            )
        })?;
        Ok(Repeat::UntilPrecise {
            min: min.unwrap_or(DEFAULT_MIN_ROUNDS),
            max,
            precision,
        })
    }
}

// A structural schema cannot say "an integer or an object", and CEL cannot see an untyped
// field, so the API server keeps the value as written and the operator checks it (condition
// SpecValid names the field); `kubectl benchmatrix run` checks it before it creates the run.
written_schema!(Repeat, {
    "x-kubernetes-preserve-unknown-fields": true,
});

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Repeat, String> {
        serde_yaml::from_str(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn a_number_is_a_fixed_count_and_an_object_the_adaptive_rule() {
        assert_eq!(parse("5"), Ok(Repeat::Times(5)));
        assert_eq!(
            parse("{min: 3, max: 10, precision: 5}"),
            Ok(Repeat::UntilPrecise {
                min: 3,
                max: 10,
                precision: 5.0
            })
        );
        assert_eq!(
            parse("{max: 8, precision: 2.5}"),
            Ok(Repeat::UntilPrecise {
                min: DEFAULT_MIN_ROUNDS,
                max: 8,
                precision: 2.5
            })
        );
    }

    #[test]
    fn a_misspelt_or_missing_field_is_refused_by_name() {
        let err = parse("{min: 3, max: 10, precission: 5}").unwrap_err();
        assert!(err.contains("unknown field `precission`"), "{err}");
        let err = parse("{min: 3, precision: 5}").unwrap_err();
        assert!(err.contains("needs `max`"), "{err}");
        let err = parse("{min: 3, max: 5}").unwrap_err();
        assert!(err.contains("needs `precision`"), "{err}");
        let err = parse("three").unwrap_err();
        assert!(err.contains(EXPECTED), "{err}");
    }

    #[test]
    fn it_writes_back_as_it_was_written() {
        for text in ["5", "{min: 3, max: 10, precision: 5}"] {
            let r = parse(text).unwrap();
            assert_eq!(parse(&serde_yaml::to_string(&r).unwrap()), Ok(r));
        }
        assert_eq!(serde_yaml::to_string(&Repeat::Times(4)).unwrap(), "4\n");
    }

    #[test]
    fn rounds_as_messages_say_them() {
        assert_eq!(Repeat::Times(5).round(2), "2/5");
        let adaptive = Repeat::UntilPrecise {
            min: 3,
            max: 10,
            precision: 5.0,
        };
        assert_eq!(adaptive.round(4), "4 of 3-10");
        assert_eq!((adaptive.min_rounds(), adaptive.max_rounds()), (3, 10));
        assert!(adaptive.is_repeated() && !Repeat::Times(1).is_repeated());
    }
}
