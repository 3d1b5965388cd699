//! Where a field path is in a YAML text: `spec.configurations[1].cpu` -> line 14, column 7.
//!
//! Errors found after a document has been read (a value out of range, an unknown field) know
//! their path but not their place. serde_yaml's values carry no positions, but its errors do:
//! so the text is read once more, walking the path, and the walk fails on purpose at the
//! field's key (or list item), where serde_yaml stamps the error with the line and column.
//! That is the real parser's idea of the place (flow style, quoting, anchors and all), with no
//! second YAML crate and no guessing from indentation.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step of a path: a key, or a position in a list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The marker of the walk's deliberate failure, told apart from a real error of the text.
const FOUND: &str = "\u{0}benchmatrix: found the field";

/// The 1-based line and column of `path` (as [`super::FieldError::path`] writes it, e.g.
/// `spec.configurations[1].cpu`) in `text`, or of the nearest of its parents that is there;
/// None when not even the first step is.
pub fn locate(text: &str, path: &str) -> Option<(usize, usize)> {
    let steps = steps(path)?;
    (1..=steps.len())
        .rev()
        .find_map(|n| exact(text, &steps[..n]))
}

/// The place of exactly `steps`, if the text has it.
fn exact(text: &str, steps: &[Step]) -> Option<(usize, usize)> {
    let err = Walk { rest: steps }
        .deserialize(serde_yaml::Deserializer::from_str(text))
        .err()?;
    if !err.to_string().contains(FOUND) {
        return None;
    }
    err.location().map(|at| (at.line(), at.column()))
}

/// `a.b[2].c` as steps; None for a path that is not one (`(document)`).
fn steps(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if key.is_empty() || key.contains(['(', ')', ' ']) {
            return None;
        }
        steps.push(Step::Key(key.to_owned()));
        while let Some(inner) = rest.strip_prefix('[') {
            let end = inner.find(']')?;
            steps.push(Step::Index(inner[..end].parse().ok()?));
            rest = &inner[end + 1..];
        }
    }
    Some(steps)
}

/// Walks a document along `rest`, failing with [`FOUND`] at its last step.
struct Walk<'a> {
    rest: &'a [Step],
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((Step::Key(want), rest)) = self.rest.split_first() else {
            return Ok(());
        };
        let key = Key {
            want,
            last: rest.is_empty(),
        };
        while let Some(found) = map.next_key_seed(key.clone())? {
            if found {
                return map.next_value_seed(Walk { rest });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((Step::Index(want), rest)) = self.rest.split_first() else {
            return Ok(());
        };
        for _ in 0..*want {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        if rest.is_empty() {
            // Fails on the item's first event: its place.
            seq.next_element_seed(Fail)?;
        } else {
            seq.next_element_seed(Walk { rest })?;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A tagged value (`!tag x`): its place is the tag's.
        let _ = data.variant::<IgnoredAny>()?;
        Ok(())
    }
}

/// A map key: true when it is the one wanted; when it is also the path's last step, the walk
/// fails on it, so the error carries the key's own line and column.
#[derive(Clone)]
struct Key<'a> {
    want: &'a str,
    last: bool,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        match (key == self.want, self.last) {
            (true, true) => Err(E::custom(FOUND)),
            (found, _) => Ok(found),
        }
    }
    fn visit_i64<E: de::Error>(self, key: i64) -> Result<bool, E> {
        self.visit_str(&key.to_string())
    }
    fn visit_u64<E: de::Error>(self, key: u64) -> Result<bool, E> {
        self.visit_str(&key.to_string())
    }
    fn visit_bool<E: de::Error>(self, key: bool) -> Result<bool, E> {
        self.visit_str(&key.to_string())
    }
    fn visit_f64<E: de::Error>(self, key: f64) -> Result<bool, E> {
        self.visit_str(&key.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// Fails on whatever value comes first, inside serde_yaml's reading of it (so the error gets
/// its place): no `visit_*` is accepted, and the "invalid type" error says it expected
/// [`FOUND`].
struct Fail;

impl<'de> DeserializeSeed<'de> for Fail {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Fail {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(FOUND)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
spec:
  target: {port: 8080, image: x}
  configurations:
    - name: one
      cpu: 500m
    - name: two
      cpu: \"1\"
  workload:
    endpoints: [{name: e, path: /}, {name: f, path: /f}]
";

    #[test]
    fn a_path_is_found_at_its_key_block_or_flow() {
        assert_eq!(locate(TEXT, "spec"), Some((1, 1)));
        assert_eq!(locate(TEXT, "spec.configurations[1].cpu"), Some((7, 7)));
        assert_eq!(locate(TEXT, "spec.configurations[1]"), Some((6, 7)));
        assert_eq!(locate(TEXT, "spec.target.image"), Some((2, 24)));
        assert_eq!(
            locate(TEXT, "spec.workload.endpoints[1].path"),
            Some((9, 47))
        );
    }

    #[test]
    fn a_path_not_in_the_text_is_placed_at_its_nearest_parent() {
        // A default the user did not write: its parent is where to add it.
        assert_eq!(locate(TEXT, "spec.configurations[0].memory"), Some((4, 7)));
        assert_eq!(locate(TEXT, "spec.configurations[5].cpu"), Some((3, 3)));
        assert_eq!(locate(TEXT, "status"), None);
        assert_eq!(locate(TEXT, "(document)"), None);
        // The key before a break in the text is still found.
        assert_eq!(locate("a: [\n", "a"), Some((1, 1)));
        assert_eq!(locate("a: [\n", "b"), None);
    }
}
