//! Values a spec writes as text, read the same way wherever they appear: parsed from a string
//! (a duration, `"1m30s"`), or kept as the text of a string or a whole number (a CPU quantity,
//! `2` or `"500m"`; a status code, `404` or `"2xx"`), which is Kubernetes' int-or-string.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::Deserializer;
use serde::de::{Error, Visitor};

/// Reads a string and parses it with `T`'s `FromStr`; `expecting` says what it should look
/// like, for the error a wrong type gets.
pub fn parsed<'de, D, T>(d: D, expecting: &'static str) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: fmt::Display,
{
    struct Parsed<T>(&'static str, PhantomData<T>);
    impl<T: FromStr> Visitor<'_> for Parsed<T>
    where
        T::Err: fmt::Display,
    {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<T, E> {
            v.parse().map_err(E::custom)
        }
    }
    d.deserialize_str(Parsed(expecting, PhantomData))
}

/// Reads a string or a whole number as its text (int-or-string); a number with a fraction is
/// refused with `fraction`'s words for it.
pub fn text_or_whole_number<'de, D: Deserializer<'de>>(
    d: D,
    expecting: &'static str,
    fraction: fn(f64) -> String,
) -> Result<String, D::Error> {
    struct Text {
        expecting: &'static str,
        fraction: fn(f64) -> String,
    }
    impl Visitor<'_> for Text {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_owned())
        }
        fn visit_u64<E: Error>(self, v: u64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_i64<E: Error>(self, v: i64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_f64<E: Error>(self, v: f64) -> Result<String, E> {
            Err(E::custom((self.fraction)(v)))
        }
    }
    d.deserialize_any(Text {
        expecting,
        fraction,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Text(String);

    impl<'de> serde::Deserialize<'de> for Text {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            text_or_whole_number(d, "a word or a whole number", |v| {
                format!("{v} has a fraction")
            })
            .map(Text)
        }
    }

    #[test]
    fn text_and_whole_numbers_are_kept_as_written_and_a_fraction_is_refused_in_its_own_words() {
        let read = |yaml: &str| serde_yaml::from_str::<Text>(yaml).map_err(|e| e.to_string());
        assert_eq!(read("\"500m\""), Ok(Text("500m".into())));
        assert_eq!(read("2"), Ok(Text("2".into())));
        assert_eq!(read("-3"), Ok(Text("-3".into())));
        assert!(read("1.5").unwrap_err().contains("1.5 has a fraction"));
        assert!(
            read("[1]")
                .unwrap_err()
                .contains("a word or a whole number")
        );
    }
}
