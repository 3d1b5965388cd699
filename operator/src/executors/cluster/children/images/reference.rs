//! Image references, parsed and normalized as the kubelet and containerd do.
//!
//! The allow-list must judge the image the kubelet will pull, not the string a run wrote: a
//! string pattern let `ghcr.io/acme/../evil/x:1` through `ghcr.io/acme/**`, and only the
//! kubelet refused it later. So a reference is parsed by the grammar of distribution/reference
//! (the one Docker, containerd and the kubelet use), and normalized as its
//! `ParseNormalizedNamed` followed by `TagNameOnly` does:
//!
//! ```text
//! reference  := [domain "/"] path [":" tag] ["@" digest]
//! domain     := host [":" port]          host := name ("." name)* | "[" IPv6 "]"
//! path       := component ("/" component)*
//! component  := [a-z0-9]+ (separator [a-z0-9]+)*     separator := "." | "_" | "__" | "-"+
//! tag        := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
//! digest     := algorithm ":" hex        (sha256: 64, sha384: 96, sha512: 128 lowercase hex)
//! ```
//!
//! The first component is a domain only if it has a `.` or a `:`, is `localhost`, or has an
//! uppercase letter; otherwise the image is Docker Hub's (`docker.io`, with `library/` before
//! a one-component path). `index.docker.io` is `docker.io`. A reference with neither tag nor
//! digest gets `:latest`. The name (domain and path) may have at most 255 characters, counted
//! after normalization, as Docker counts it.

use std::fmt;
use std::str::FromStr;

/// The registry of references that name none.
pub const DEFAULT_DOMAIN: &str = "docker.io";
/// Docker Hub's older name, normalized to [`DEFAULT_DOMAIN`].
const LEGACY_DEFAULT_DOMAIN: &str = "index.docker.io";
/// The path prefix of Docker Hub's official images (`nginx` is `library/nginx`).
const OFFICIAL_PREFIX: &str = "library/";
/// The tag of a reference that has neither tag nor digest.
const DEFAULT_TAG: &str = "latest";
/// The longest name (domain, `/`, path) Docker accepts.
pub const NAME_MAX: usize = 255;
/// The longest tag.
const TAG_MAX: usize = 128;
/// The digest algorithms the kubelet can verify, and the length of their hex digests.
const DIGESTS: [(&str, usize); 3] = [("sha256", 64), ("sha384", 96), ("sha512", 128)];
/// Texts quoted in messages are cut to this many characters, so that the rule that failed
/// still fits the status's sentence limit.
const QUOTE_MAX: usize = 100;

/// A parsed, normalized image reference; its [`Display`](fmt::Display) is the full form the
/// kubelet pulls, e.g. `docker.io/library/nginx:latest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageReference {
    domain: String,
    path: String,
    tag: Option<String>,
    digest: Option<String>,
}

impl ImageReference {
    /// The registry host, with its port if any (`docker.io`, `registry.local:5000`, `[::1]`).
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The repository path (`library/nginx`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The tag: the one written, or `latest` when the reference has neither tag nor digest.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest (`sha256:...`), if written.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }
}

impl fmt::Display for ImageReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.domain, self.path)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// Which rule of the grammar a reference breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    /// Nothing was written.
    #[error("is empty")]
    Empty,
    #[error("is a 64-character hexadecimal image ID, not an image name")]
    /// 64 hex characters: an image ID, which Docker refuses as a name.
    ImageId,
    #[error("domain {}: {problem}", quote(.domain))]
    /// The domain breaks the host or port rules.
    Domain {
        /// The domain as written.
        domain: String,
        /// Which rule, and the part that breaks it.
        problem: String,
    },
    #[error("names no repository after its domain")]
    /// Nothing follows the domain.
    NoPath,
    #[error("has an empty path component (a doubled \"/\", or one at an end)")]
    /// `a//b`, or a `/` at an end of the path.
    EmptyComponent,
    #[error(
        "path component {} has an uppercase letter; repository paths must be lowercase",
        quote(.0)
    )]
    /// A path component with an uppercase letter.
    Uppercase(String),
    #[error(
        "path component {} is not a valid name component: lowercase letters and digits, \
         separated by one \".\", \"_\" or \"__\", or by dashes",
        quote(.0)
    )]
    /// A path component that is not lowercase alphanumerics and separators (`..`, `-a`).
    Component(String),
    #[error(
        "tag {} is not valid: 1 to 128 letters, digits, \"_\", \".\" and \"-\", not starting \
         with \".\" or \"-\"",
        quote(.0)
    )]
    /// A tag breaking `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
    Tag(String),
    #[error("digest {}: {problem}", quote(.digest))]
    /// A digest that is not a known algorithm with its length of lowercase hex.
    Digest {
        /// The digest as written.
        digest: String,
        /// Which rule it breaks.
        problem: String,
    },
    #[error("name {} is {len} characters long (at most {NAME_MAX})", quote(.name))]
    /// The normalized name has more than `NAME_MAX` characters.
    TooLong {
        /// The normalized name.
        name: String,
        /// Its length.
        len: usize,
    },
}

/// `text` quoted as Rust debug-quotes it (control characters escaped), cut to [`QUOTE_MAX`]
/// characters.
pub fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_MAX) {
        Some((end, _)) => format!("{:?}…", &text[..end]),
        None => format!("{text:?}"),
    }
}

impl FromStr for ImageReference {
    type Err = ReferenceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Err(ReferenceError::Empty);
        }
        if s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(ReferenceError::ImageId);
        }
        // Docker splits the domain off at the first "/" of the whole string.
        let (domain, rest) = match s.split_once('/') {
            Some((first, rest)) if names_domain(first) => (first, rest),
            _ => (DEFAULT_DOMAIN, s),
        };
        let domain = if domain == LEGACY_DEFAULT_DOMAIN {
            DEFAULT_DOMAIN
        } else {
            domain
        };
        check_domain(domain)?;
        let (name, digest) = match rest.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (rest, None),
        };
        // Path components have no ":", so the first one starts the tag.
        let (path, tag) = match name.split_once(':') {
            Some((path, tag)) => (path, Some(tag)),
            None => (name, None),
        };
        if path.is_empty() {
            return Err(ReferenceError::NoPath);
        }
        for component in path.split('/') {
            check_component(component)?;
        }
        if let Some(tag) = tag {
            check_tag(tag)?;
        }
        if let Some(digest) = digest {
            check_digest(digest)?;
        }
        let path = if domain == DEFAULT_DOMAIN && !path.contains('/') {
            format!("{OFFICIAL_PREFIX}{path}")
        } else {
            path.to_owned()
        };
        let len = domain.len() + 1 + path.len();
        if len > NAME_MAX {
            return Err(ReferenceError::TooLong {
                name: format!("{domain}/{path}"),
                len,
            });
        }
        let tag = match (tag, digest) {
            (None, None) => Some(DEFAULT_TAG.to_owned()),
            (tag, _) => tag.map(str::to_owned),
        };
        Ok(Self {
            domain: domain.to_owned(),
            path,
            tag,
            digest: digest.map(str::to_owned),
        })
    }
}

/// Whether the first component of a reference is its domain rather than the first component
/// of a Docker Hub path (Docker's `splitDockerDomain`). An uppercase letter makes it a domain
/// because a path may have none.
pub fn names_domain(first: &str) -> bool {
    first.contains(['.', ':']) || first == "localhost" || first.chars().any(char::is_uppercase)
}

fn check_domain(domain: &str) -> Result<(), ReferenceError> {
    let refuse = |problem: String| ReferenceError::Domain {
        domain: domain.to_owned(),
        problem,
    };
    let (host, port) = if let Some(inside) = domain.strip_prefix('[') {
        let Some((address, after)) = inside.split_once(']') else {
            return Err(refuse("an IPv6 address has no closing \"]\"".into()));
        };
        if address.is_empty() || !address.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return Err(refuse(format!(
                "IPv6 address {} is not hexadecimal digits and \":\"",
                quote(address)
            )));
        }
        match after {
            "" => (None, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (None, Some(port)),
                None => return Err(refuse("only a \":port\" may follow the \"]\"".into())),
            },
        }
    } else {
        match domain.split_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(domain), None),
        }
    };
    if let Some(host) = host {
        for label in host.split('.') {
            let inner_ok = label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            if label.is_empty() || !inner_ok || label.starts_with('-') || label.ends_with('-') {
                return Err(refuse(format!(
                    "host part {} is not valid: letters, digits and \"-\", not starting or \
                     ending with \"-\"",
                    quote(label)
                )));
            }
        }
    }
    if let Some(port) = port
        && (port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(refuse(format!("port {} is not a number", quote(port))));
    }
    Ok(())
}

fn check_component(component: &str) -> Result<(), ReferenceError> {
    if component.is_empty() {
        return Err(ReferenceError::EmptyComponent);
    }
    if component.chars().any(char::is_uppercase) {
        return Err(ReferenceError::Uppercase(component.to_owned()));
    }
    let refuse = || Err(ReferenceError::Component(component.to_owned()));
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !component.starts_with(alnum) || !component.ends_with(alnum) {
        return refuse();
    }
    // Between runs of letters and digits: one separator.
    for separator in component.split(alnum).filter(|s| !s.is_empty()) {
        let dashes = separator.bytes().all(|b| b == b'-');
        if !(matches!(separator, "." | "_" | "__") || dashes) {
            return refuse();
        }
    }
    Ok(())
}

fn check_tag(tag: &str) -> Result<(), ReferenceError> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let valid = tag.len() <= TAG_MAX
        && tag.starts_with(word)
        && tag.chars().all(|c| word(c) || c == '.' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(ReferenceError::Tag(tag.to_owned()))
    }
}

fn check_digest(digest: &str) -> Result<(), ReferenceError> {
    let refuse = |problem: String| ReferenceError::Digest {
        digest: digest.to_owned(),
        problem,
    };
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return Err(refuse(
            "is not algorithm:hex, e.g. sha256 and 64 hexadecimal characters".into(),
        ));
    };
    let Some(&(_, want)) = DIGESTS.iter().find(|(name, _)| *name == algorithm) else {
        return Err(refuse(format!(
            "algorithm {} is not one the kubelet can verify (sha256, sha384, sha512)",
            quote(algorithm)
        )));
    };
    if hex.len() != want || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(refuse(format!(
            "a {algorithm} digest is {want} lowercase hexadecimal characters"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX64: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parse(s: &str) -> Result<String, ReferenceError> {
        s.parse::<ImageReference>().map(|r| r.to_string())
    }

    #[test]
    fn references_are_normalized_as_the_kubelet_pulls_them() {
        let digest = format!("sha256:{HEX64}");
        for (written, full) in [
            ("nginx", "docker.io/library/nginx:latest"),
            ("nginx:1.27", "docker.io/library/nginx:1.27"),
            ("acme/app:1", "docker.io/acme/app:1"),
            ("docker.io/nginx:1", "docker.io/library/nginx:1"),
            ("index.docker.io/nginx", "docker.io/library/nginx:latest"),
            ("index.docker.io/acme/app", "docker.io/acme/app:latest"),
            ("ghcr.io/acme/app", "ghcr.io/acme/app:latest"),
            ("ghcr.io/app", "ghcr.io/app:latest"),
            ("localhost/app:1", "localhost/app:1"),
            ("localhost:5000/a/b/c", "localhost:5000/a/b/c:latest"),
            ("registry.local:5000/app", "registry.local:5000/app:latest"),
            ("[::1]:5000/app:v1", "[::1]:5000/app:v1"),
            ("[fe80::1]/app", "[fe80::1]/app:latest"),
            ("10.0.0.1:5000/app", "10.0.0.1:5000/app:latest"),
            // No "/": the first component is the repository, even when it looks like a host.
            ("localhost:5000", "docker.io/library/localhost:5000"),
            // An uppercase first component is a domain, as Docker has it.
            ("Registry/app", "Registry/app:latest"),
            (
                "acme/a-b__c.d_e---f:Tag_1.x-y",
                "docker.io/acme/a-b__c.d_e---f:Tag_1.x-y",
            ),
        ] {
            assert_eq!(parse(written).as_deref(), Ok(full), "{written}");
        }
        // A digest keeps its tag, if any, and gets none added.
        assert_eq!(
            parse(&format!("ghcr.io/acme/app@{digest}")).unwrap(),
            format!("ghcr.io/acme/app@{digest}")
        );
        assert_eq!(
            parse(&format!("nginx:1@{digest}")).unwrap(),
            format!("docker.io/library/nginx:1@{digest}")
        );
        let sha512 = format!("sha512:{}", "ab".repeat(64));
        assert!(parse(&format!("nginx@{sha512}")).is_ok());
        let r: ImageReference = format!("ghcr.io/a/b:2@{digest}").parse().unwrap();
        assert_eq!(
            (r.domain(), r.path(), r.tag(), r.digest()),
            ("ghcr.io", "a/b", Some("2"), Some(digest.as_str()))
        );
    }

    #[test]
    fn invalid_references_name_the_rule_they_break() {
        use ReferenceError as E;
        let component = |c: &str| Err(E::Component(c.into()));
        let cases: Vec<(String, Result<String, ReferenceError>)> = vec![
            ("".into(), Err(E::Empty)),
            (HEX64.into(), Err(E::ImageId)),
            ("ghcr.io/benchmatrix/../evil/x:1".into(), component("..")),
            ("ghcr.io/./x".into(), component(".")),
            ("a/.b".into(), component(".b")),
            ("a/b.".into(), component("b.")),
            ("a/b..c".into(), component("b..c")),
            ("a/b___c".into(), component("b___c")),
            ("a/-b".into(), component("-b")),
            ("a/b c".into(), component("b c")),
            (" nginx".into(), component(" nginx")),
            ("a/b%2f".into(), component("b%2f")),
            ("ghcr.io/Acme/app".into(), Err(E::Uppercase("Acme".into()))),
            ("acme/App".into(), Err(E::Uppercase("App".into()))),
            ("a//b".into(), Err(E::EmptyComponent)),
            ("ghcr.io/a/".into(), Err(E::EmptyComponent)),
            ("ghcr.io/".into(), Err(E::NoPath)),
            (":1".into(), Err(E::NoPath)),
            ("nginx:".into(), Err(E::Tag("".into()))),
            ("nginx:-1".into(), Err(E::Tag("-1".into()))),
            ("nginx:.1".into(), Err(E::Tag(".1".into()))),
            ("nginx:a:b".into(), Err(E::Tag("a:b".into()))),
            ("nginx:a+b".into(), Err(E::Tag("a+b".into()))),
            (
                format!("nginx:{}", "t".repeat(129)),
                Err(E::Tag("t".repeat(129))),
            ),
        ];
        for (written, want) in cases {
            assert_eq!(parse(&written), want, "{written}");
        }
        assert!(parse(&format!("nginx:{}", "t".repeat(128))).is_ok());
        // A tag may have uppercase letters; a path may not.
        assert!(parse("nginx:V1").is_ok());
    }

    #[test]
    fn domains_and_digests_are_checked() {
        let domain_problem = |s: &str| match s.parse::<ImageReference>() {
            Err(ReferenceError::Domain { problem, .. }) => problem,
            other => panic!("{s}: {other:?}"),
        };
        assert!(domain_problem("host:/app").contains("port \"\" is not a number"));
        assert!(domain_problem("host:50a/app").contains("port \"50a\""));
        assert!(domain_problem("-bad.io/app").contains("host part \"-bad\""));
        assert!(domain_problem("a..io/app").contains("host part \"\""));
        assert!(domain_problem("ev_il.io/app").contains("host part \"ev_il\""));
        assert!(domain_problem("[::1/app").contains("no closing"));
        assert!(domain_problem("[::g]/app").contains("IPv6 address \"::g\""));
        assert!(domain_problem("[::1]x/app").contains("only a \":port\""));
        // An uppercase first component is taken as a domain, so its rules apply.
        assert!(domain_problem("Ev!l/app").contains("host part \"Ev!l\""));

        let digest_problem = |s: String| match s.parse::<ImageReference>() {
            Err(ReferenceError::Digest { problem, .. }) => problem,
            other => panic!("{s}: {other:?}"),
        };
        assert!(digest_problem("nginx@sha256".into()).contains("is not algorithm:hex"));
        assert!(digest_problem("nginx@md5:0123".into()).contains("\"md5\" is not one"));
        assert!(digest_problem("nginx@sha256:0123".into()).contains("64 lowercase"));
        assert!(
            digest_problem(format!("nginx@sha256:{}", HEX64.to_uppercase())).contains("lowercase")
        );
        assert!(digest_problem(format!("nginx@sha256:{HEX64}0")).contains("64"));
        assert!(digest_problem(format!("nginx@sha384:{HEX64}")).contains("96"));
        assert!(digest_problem(format!("nginx@sha256:{HEX64}@x")).contains("64"));
    }

    #[test]
    fn names_may_have_255_characters_counted_after_normalization() {
        // "ghcr.io/" is 8 characters.
        let at_limit = format!("ghcr.io/{}", "a".repeat(NAME_MAX - 8));
        assert!(parse(&format!("{at_limit}:1")).is_ok());
        let over = format!("ghcr.io/{}", "a".repeat(NAME_MAX - 7));
        assert_eq!(over.len(), 256);
        assert_eq!(
            parse(&over),
            Err(ReferenceError::TooLong {
                name: over.clone(),
                len: 256
            })
        );
        // The tag does not count, and "docker.io/library/" does.
        assert!(parse(&format!("{at_limit}:{}", "t".repeat(128))).is_ok());
        let short = "a".repeat(NAME_MAX - 17);
        assert!(parse(&short).is_err(), "docker.io/library/ + 238 = 256");
        assert!(parse(&short[1..]).is_ok());
        // Long texts are cut in messages, so the rule stays readable.
        let err = ReferenceError::TooLong {
            name: "a".repeat(1000),
            len: 1000,
        }
        .to_string();
        assert!(err.len() < 200 && err.ends_with("(at most 255)"), "{err}");
    }
}
