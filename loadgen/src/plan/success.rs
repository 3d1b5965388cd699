//! Which status codes count as success: `successCodes: ["2xx", 404]`.
//!
//! The shape follows what load-testing users already write: k6's `expectedStatuses(200,
//! {min, max})` and Gatling's `status.in(...)` take single codes and ranges; "2xx" is how every
//! tool's documentation names a class. An entry is a code (`404` or `"404"`), a class
//! (`"2xx"`), or an inclusive range (`"200-299"`). The text is kept as written, so a plan file
//! says what the spec said, and checked with its field path by [`SuccessCode::range`].

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Lowest and highest status an entry may name: HTTP defines 1xx to 5xx.
const LOWEST: u16 = 100;
const HIGHEST: u16 = 599;

/// One entry of `successCodes`, as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SuccessCode(pub String);

impl SuccessCode {
    /// An entry from its text form (checked by [`SuccessCode::range`]).
    pub fn new(text: impl Into<String>) -> Self {
        SuccessCode(text.into())
    }

    /// The inclusive range of codes the entry names, or why it names none.
    pub fn range(&self) -> Result<(u16, u16), String> {
        let t = self.0.trim();
        let code = |s: &str| -> Result<u16, String> {
            let n: u16 = s
                .parse()
                .ok()
                .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| {
                    format!(
                        "{:?} is not a status code, a class such as \"2xx\" or a range such as \"200-299\"",
                        self.0
                    )
                })?;
            if (LOWEST..=HIGHEST).contains(&n) {
                Ok(n)
            } else {
                Err(format!(
                    "{n} is not an HTTP status code ({LOWEST} to {HIGHEST})"
                ))
            }
        };
        if let [d @ b'1'..=b'5', x, y] = t.as_bytes()
            && x.eq_ignore_ascii_case(&b'x')
            && y.eq_ignore_ascii_case(&b'x')
        {
            let lo = u16::from(d - b'0') * 100;
            return Ok((lo, lo + 99));
        }
        if let Some((a, b)) = t.split_once('-') {
            let (lo, hi) = (code(a.trim())?, code(b.trim())?);
            if lo > hi {
                return Err(format!("the range {:?} runs backwards", self.0));
            }
            return Ok((lo, hi));
        }
        code(t).map(|n| (n, n))
    }
}

impl fmt::Display for SuccessCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for SuccessCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // A bare code goes back out as the integer it was written as.
        match self.0.parse::<u16>() {
            Ok(n) if n.to_string() == self.0 => s.serialize_u16(n),
            _ => s.serialize_str(&self.0),
        }
    }
}

impl<'de> Deserialize<'de> for SuccessCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::textual::text_or_whole_number(
            d,
            "a status code (404), a class (\"2xx\") or a range (\"200-299\")",
            |v| format!("{v} is no status code: write a whole number (404) or a class (\"2xx\")"),
        )
        .map(SuccessCode)
    }
}

impl JsonSchema for SuccessCode {
    fn schema_name() -> Cow<'static, str> {
        "SuccessCode".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // int-or-string: `404` and `"2xx"` in one list. No `type` and no `anyOf`, which is the
        // structural form the API server accepts; validation checks the text.
        json_schema!({
            "description": "A status code (404), a class (\"2xx\") or an inclusive range (\"200-299\").",
            "x-kubernetes-int-or-string": true,
        })
    }
}

/// The statuses that count as success, as a bitmap: one lookup per answer on the request path.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SuccessSet([u64; 10]);

impl SuccessSet {
    /// 200 to 299, what counts when an endpoint lists nothing.
    pub const DEFAULT: SuccessSet = {
        let mut bits = [0u64; 10];
        let mut s = 200;
        while s < 300 {
            bits[s / 64] |= 1 << (s % 64);
            s += 1;
        }
        SuccessSet(bits)
    };

    /// The set an endpoint's `successCodes` name; [`SuccessSet::DEFAULT`] for `None`. Entries
    /// that do not parse (which validation refuses) add nothing.
    pub fn of(codes: Option<&[SuccessCode]>) -> SuccessSet {
        let Some(codes) = codes else {
            return SuccessSet::DEFAULT;
        };
        let mut bits = [0u64; 10];
        for (lo, hi) in codes.iter().filter_map(|c| c.range().ok()) {
            for s in usize::from(lo)..=usize::from(hi) {
                bits[s / 64] |= 1 << (s % 64);
            }
        }
        SuccessSet(bits)
    }

    /// Whether an answer with `status` is a success.
    #[inline]
    pub fn contains(&self, status: u16) -> bool {
        let s = usize::from(status);
        s < 640 && (self.0[s / 64] >> (s % 64)) & 1 == 1
    }
}

impl Default for SuccessSet {
    fn default() -> Self {
        SuccessSet::DEFAULT
    }
}

impl fmt::Debug for SuccessSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let codes: Vec<u16> = (0..640).filter(|&s| self.contains(s)).collect();
        write!(f, "SuccessSet({codes:?})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_classes_and_ranges_parse() {
        let r = |t: &str| SuccessCode::new(t).range();
        assert_eq!(r("404"), Ok((404, 404)));
        assert_eq!(r("2xx"), Ok((200, 299)));
        assert_eq!(r("4XX"), Ok((400, 499)));
        assert_eq!(r("200-204"), Ok((200, 204)));
        assert_eq!(r(" 301 - 302 "), Ok((301, 302)));
        for bad in ["6xx", "0", "700", "2x", "abc", "204-200", "-1", "+200", ""] {
            assert!(r(bad).is_err(), "{bad}");
        }
        assert!(r("700").unwrap_err().contains("100 to 599"));
        assert!(r("204-200").unwrap_err().contains("backwards"));
    }

    #[test]
    fn integers_and_strings_both_read_and_round_trip() {
        let codes: Vec<SuccessCode> = serde_yaml::from_str("[\"2xx\", 404, \"301-302\"]").unwrap();
        assert_eq!(
            codes,
            [
                SuccessCode::new("2xx"),
                SuccessCode::new("404"),
                SuccessCode::new("301-302")
            ]
        );
        assert_eq!(
            serde_json::to_string(&codes).unwrap(),
            r#"["2xx",404,"301-302"]"#
        );
    }

    #[test]
    fn the_set_holds_what_the_list_names_and_2xx_by_default() {
        let d = SuccessSet::of(None);
        assert!(d.contains(200) && d.contains(299));
        assert!(!d.contains(199) && !d.contains(300) && !d.contains(404));
        let listed = [SuccessCode::new("2xx"), SuccessCode::new("404")];
        let s = SuccessSet::of(Some(&listed));
        assert!(s.contains(201) && s.contains(404));
        assert!(!s.contains(403) && !s.contains(500));
        let only = SuccessSet::of(Some(&[SuccessCode::new("201")]));
        assert!(only.contains(201) && !only.contains(200));
        // Statuses a server can send but no entry can name are never a success.
        assert!(!d.contains(0) && !d.contains(999));
    }
}
