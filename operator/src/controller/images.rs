//! The operator's image allow-list (`benchmatrix operator --allowed-images`).
//!
//! Whoever may create a BenchmarkRun may name any target and load generator image, and the
//! operator runs it with its own service account's rights in that namespace. An allow-list of
//! glob patterns limits the images to the ones an administrator trusts; a run whose effective
//! image (the one it names, or the operator's default when it names none) matches no pattern
//! fails validation, and nothing of it is created. An empty list allows every image.
//!
//! Images are matched in their full form, the one the kubelet pulls: `nginx:1.27` is
//! `docker.io/library/nginx:1.27`, and an image with neither tag nor digest gets `:latest`.
//! Matching the full form means a short name cannot slip past a pattern meant for one registry,
//! and a pattern says where the image really comes from. Patterns:
//!
//! - `*` matches any run of characters except `/`: one path segment, or part of one
//!   (`ghcr.io/acme/*` allows `ghcr.io/acme/app:1` but not `ghcr.io/acme/team/app:1`);
//! - `**` matches any run of characters, `/` included (`ghcr.io/acme/**` allows both);
//! - every other character matches itself (case-sensitive).
//!
//! A pattern must name a registry host in its first segment (something with a `.` or a `:`, or
//! `localhost`, or a wildcard), since a full reference always starts with one; a pattern like
//! `nginx:*` could never match and is refused at start-up with the full form to write instead.

use std::fmt;
use std::str::FromStr;

use crate::api::BenchmarkRun;

/// Reason of the SpecValid condition (and of the Warning Event) when a run's image is not on
/// the allow-list.
pub const IMAGE_NOT_ALLOWED: &str = "ImageNotAllowed";

/// The registry that image references without one are pulled from.
const DEFAULT_REGISTRY: &str = "docker.io";

/// One allowed-image pattern, e.g. `ghcr.io/acme/*` or `registry.local:5000/bench-*:*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePattern {
    text: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// One character, matched as is.
    Literal(char),
    /// `*`: any run of characters other than `/`.
    Segment,
    /// `**`: any run of characters.
    Any,
}

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("allowed image pattern {pattern:?}: {problem}")]
pub struct PatternError {
    pattern: String,
    problem: String,
}

impl FromStr for ImagePattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let refuse = |problem: String| PatternError {
            pattern: text.to_owned(),
            problem,
        };
        if text.is_empty() {
            return Err(refuse("is empty".into()));
        }
        if let Some(c) = text.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(refuse(format!(
                "contains {c:?}; image references have no spaces or control characters"
            )));
        }
        let first = text.split('/').next().unwrap_or_default();
        let names_registry = looks_like_registry(first) || first.contains('*');
        if !text.contains('/') && !text.contains("**") || !names_registry {
            return Err(refuse(format!(
                "names no registry, so it can never match: images are matched in full, as the \
                 kubelet pulls them (nginx:1.27 is {}); write e.g. {:?}",
                full_reference("nginx:1.27"),
                qualify(text, false)
            )));
        }
        let mut tokens = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            tokens.push(match c {
                '*' if chars.peek() == Some(&'*') => {
                    chars.next();
                    // `***` and longer are `**` too.
                    while chars.peek() == Some(&'*') {
                        chars.next();
                    }
                    Token::Any
                }
                '*' => Token::Segment,
                c => Token::Literal(c),
            });
        }
        Ok(Self {
            text: text.to_owned(),
            tokens,
        })
    }
}

impl fmt::Display for ImagePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl ImagePattern {
    /// Whether `reference`, taken as written (callers pass a full reference, see
    /// [`full_reference`]), matches the pattern.
    pub fn matches(&self, reference: &str) -> bool {
        // matched[i]: the pattern tokens so far match the first i characters of the reference.
        // Dynamic programming, so patterns with many stars cannot take exponential time.
        let chars: Vec<char> = reference.chars().collect();
        let mut matched = vec![false; chars.len() + 1];
        matched[0] = true;
        for token in &self.tokens {
            let mut next = vec![false; chars.len() + 1];
            match token {
                Token::Literal(want) => {
                    for i in 0..chars.len() {
                        next[i + 1] = matched[i] && chars[i] == *want;
                    }
                }
                Token::Segment | Token::Any => {
                    next[0] = matched[0];
                    for i in 0..chars.len() {
                        let may_extend = *token == Token::Any || chars[i] != '/';
                        next[i + 1] = matched[i + 1] || (next[i] && may_extend);
                    }
                }
            }
            matched = next;
        }
        matched[chars.len()]
    }
}

/// Whether the first segment of a reference is a registry host rather than a path segment of a
/// Docker Hub image (the rule Docker and containerd apply).
fn looks_like_registry(segment: &str) -> bool {
    segment.contains('.') || segment.contains(':') || segment == "localhost"
}

/// `image` in the form the kubelet pulls it: with its registry (`docker.io` when it names
/// none, with `library/` for official images) and with a tag (`:latest` when it has neither
/// tag nor digest). Nothing else is changed; a malformed reference stays malformed (and is
/// refused by the kubelet, if a pattern lets it through).
pub fn full_reference(image: &str) -> String {
    qualify(image, true)
}

/// `image` with its registry made explicit, and with `:latest` when `add_tag` is set and it
/// has neither tag nor digest.
fn qualify(image: &str, add_tag: bool) -> String {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let (registry, path) = match name.split_once('/') {
        Some((first, rest)) if looks_like_registry(first) => (first, rest.to_owned()),
        _ => (DEFAULT_REGISTRY, name.to_owned()),
    };
    let registry = if registry == "index.docker.io" {
        DEFAULT_REGISTRY
    } else {
        registry
    };
    let path = if registry == DEFAULT_REGISTRY && !path.contains('/') {
        format!("library/{path}")
    } else {
        path
    };
    let last_segment = path.rsplit('/').next().unwrap_or_default();
    let tag = if add_tag && digest.is_none() && !last_segment.contains(':') {
        ":latest"
    } else {
        ""
    };
    match digest {
        Some(digest) => format!("{registry}/{path}{tag}@{digest}"),
        None => format!("{registry}/{path}{tag}"),
    }
}

/// The operator's allow-list; the default, empty, allows every image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImagePolicy {
    patterns: Vec<ImagePattern>,
}

impl ImagePolicy {
    /// A policy allowing the images that match at least one of `patterns` (every image, when
    /// there is none).
    pub fn new(patterns: Vec<ImagePattern>) -> Self {
        Self { patterns }
    }

    /// Whether the policy allows every image (no pattern was given).
    pub fn allows_all(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether `image` (as a run or the operator names it) is allowed.
    pub fn allows(&self, image: &str) -> bool {
        if self.allows_all() {
            return true;
        }
        let full = full_reference(image);
        self.patterns.iter().any(|p| p.matches(&full))
    }

    /// The patterns, comma-separated, as they appear in messages.
    pub fn describe(&self) -> String {
        self.patterns
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Why `run` may not run, naming each image that matches no pattern and the patterns; None
    /// when its target and load generator images are both allowed. `default_target` and
    /// `default_loadgen` are the operator's images for runs that name none.
    pub fn refusal(
        &self,
        run: &BenchmarkRun,
        default_target: &str,
        default_loadgen: &str,
    ) -> Option<String> {
        let images = [
            (
                "spec.target.image",
                run.spec.target.image.as_deref(),
                default_target,
                "--target-image",
            ),
            (
                "spec.loadgen.image",
                run.spec.loadgen.image.as_deref(),
                default_loadgen,
                "--loadgen-image",
            ),
        ];
        let refused: Vec<String> = images
            .into_iter()
            .filter_map(|(field, named, default, flag)| {
                let image = named.unwrap_or(default);
                if self.allows(image) {
                    return None;
                }
                let full = full_reference(image);
                let shown = if full == image {
                    format!("{image:?}")
                } else {
                    format!("{image:?} (in full {full:?})")
                };
                Some(match named {
                    Some(_) => format!("{field} {shown}"),
                    None => format!(
                        "the default image for {field} {shown} (the operator's {flag}; set \
                         {field} to an allowed image)"
                    ),
                })
            })
            .collect();
        if refused.is_empty() {
            return None;
        }
        Some(format!(
            "image not allowed: {} matches none of the images this operator may run \
             (--allowed-images): {}",
            refused.join("; "),
            self.describe()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> ImagePattern {
        text.parse()
            .unwrap_or_else(|e| panic!("{text} should parse: {e}"))
    }

    fn policy(patterns: &[&str]) -> ImagePolicy {
        ImagePolicy::new(patterns.iter().map(|p| pattern(p)).collect())
    }

    #[test]
    fn a_star_matches_within_one_path_segment_and_a_double_star_across_them() {
        let one = pattern("ghcr.io/acme/*");
        assert!(one.matches("ghcr.io/acme/app:1"));
        assert!(one.matches("ghcr.io/acme/app@sha256:0123"));
        assert!(!one.matches("ghcr.io/acme/team/app:1"), "* stops at /");
        assert!(!one.matches("ghcr.io/acmeevil/app:1"));
        assert!(!one.matches("ghcr.io/other/app:1"));
        let deep = pattern("ghcr.io/acme/**");
        assert!(deep.matches("ghcr.io/acme/team/app:1"));
        assert!(deep.matches("ghcr.io/acme/app:1"));
        assert!(!deep.matches("ghcr.io/acm/app:1"));
    }

    #[test]
    fn stars_inside_a_segment_and_in_the_tag() {
        let p = pattern("registry.local:5000/bench-*:*");
        assert!(p.matches("registry.local:5000/bench-target:0.1.0"));
        assert!(p.matches("registry.local:5000/bench-:x"), "* may be empty");
        assert!(
            !p.matches("registry.local:5000/bench-target"),
            "a tag is required"
        );
        assert!(!p.matches("registry.local:5000/other:1"));
        assert!(!p.matches("registry.local:5000/bench-a/b:1"));
        assert!(!p.matches("registry.local:5001/bench-target:1"));
        // A host wildcard cannot reach into the path: evil.io/x.acme.com/... is not *.acme.com.
        let host = pattern("*.acme.com/**");
        assert!(host.matches("registry.acme.com/team/app:1"));
        assert!(!host.matches("evil.io/x.acme.com/app:1"));
    }

    #[test]
    fn everything_but_stars_is_literal() {
        let p = pattern("ghcr.io/acme/app:1.2");
        assert!(p.matches("ghcr.io/acme/app:1.2"));
        assert!(!p.matches("ghcr.io/acme/app:1x2"), ". is not a wildcard");
        assert!(
            !p.matches("ghcr.io/acme/app:1.2.3"),
            "the whole reference must match"
        );
        assert!(!p.matches("xghcr.io/acme/app:1.2"));
    }

    #[test]
    fn many_stars_match_quickly() {
        let p = pattern(&format!("ghcr.io/{}b", "*a".repeat(40)));
        let long = format!("ghcr.io/{}", "a".repeat(4000));
        let started = std::time::Instant::now();
        assert!(!p.matches(&long));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn references_are_matched_in_the_form_the_kubelet_pulls() {
        for (written, full) in [
            ("nginx", "docker.io/library/nginx:latest"),
            ("nginx:1.27", "docker.io/library/nginx:1.27"),
            ("acme/app:1", "docker.io/acme/app:1"),
            ("docker.io/nginx:1", "docker.io/library/nginx:1"),
            ("index.docker.io/acme/app", "docker.io/acme/app:latest"),
            ("ghcr.io/acme/app", "ghcr.io/acme/app:latest"),
            ("localhost/app:1", "localhost/app:1"),
            ("registry.local:5000/app", "registry.local:5000/app:latest"),
            ("ghcr.io/acme/app@sha256:ab", "ghcr.io/acme/app@sha256:ab"),
            (
                "ghcr.io/acme/app:1@sha256:ab",
                "ghcr.io/acme/app:1@sha256:ab",
            ),
        ] {
            assert_eq!(full_reference(written), full, "{written}");
        }
        let hub = policy(&["docker.io/library/nginx:*"]);
        assert!(hub.allows("nginx:1.27"));
        assert!(!hub.allows("acme/nginx:1.27"));
        // A short name is a Docker Hub image, whatever a pattern for another registry says.
        let ghcr = policy(&["ghcr.io/acme/*"]);
        assert!(!ghcr.allows("acme/app:1"));
        assert!(
            ghcr.allows("ghcr.io/acme/app"),
            "as ghcr.io/acme/app:latest"
        );
    }

    #[test]
    fn patterns_that_cannot_match_are_refused_with_the_form_to_write() {
        let err = "nginx:*".parse::<ImagePattern>().unwrap_err().to_string();
        assert!(err.contains("names no registry"), "{err}");
        assert!(err.contains("docker.io/library/nginx:*"), "{err}");
        let err = "acme/*".parse::<ImagePattern>().unwrap_err().to_string();
        assert!(err.contains(r#"write e.g. "docker.io/acme/*""#), "{err}");
        assert!("".parse::<ImagePattern>().is_err());
        assert!("ghcr.io/a b".parse::<ImagePattern>().is_err());
        for fine in [
            "**",
            "*/acme/*",
            "localhost/*",
            "registry:5000/x",
            "ghcr.io/**",
        ] {
            assert!(fine.parse::<ImagePattern>().is_ok(), "{fine}");
        }
        assert!(pattern("**").matches("docker.io/library/nginx:latest"));
    }

    #[test]
    fn an_empty_policy_allows_every_image() {
        let open = ImagePolicy::default();
        assert!(open.allows_all());
        assert!(open.allows("anything/at:all"));
        assert!(open.allows(""));
    }

    fn run(target: Option<&str>, loadgen: Option<&str>) -> BenchmarkRun {
        let mut run = crate::validate::parse_benchmark_run(
            r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: r, namespace: ns}
spec:
  configurations: [{name: a, cpu: "1"}]
  workload:
    endpoints: [{name: fast, path: /fast}]
    phases: [{name: p, duration: 5s, load: [{endpoint: fast, connections: 1}]}]
"#,
        )
        .unwrap();
        run.spec.target.image = target.map(Into::into);
        run.spec.loadgen.image = loadgen.map(Into::into);
        run
    }

    #[test]
    fn the_refusal_names_each_refused_image_and_the_patterns() {
        let p = policy(&["ghcr.io/acme/*", "registry.local:5000/bench-*:*"]);
        let defaults = ("ghcr.io/benchmatrix/t:1", "ghcr.io/acme/loadgen:1");
        assert_eq!(
            p.refusal(
                &run(Some("ghcr.io/acme/app:2"), None),
                defaults.0,
                defaults.1
            ),
            None
        );
        let msg = p
            .refusal(&run(Some("evil/miner"), None), defaults.0, defaults.1)
            .expect("refused");
        assert!(
            msg.contains(
                r#"spec.target.image "evil/miner" (in full "docker.io/evil/miner:latest")"#
            ),
            "{msg}"
        );
        assert!(
            msg.contains("ghcr.io/acme/*, registry.local:5000/bench-*:*"),
            "{msg}"
        );
        assert!(
            !msg.contains("loadgen"),
            "the load generator image is allowed: {msg}"
        );
        // The operator's defaults are checked too, and the message says where they come from.
        let msg = p
            .refusal(
                &run(Some("ghcr.io/acme/app:2"), Some("nope.io/lg:1")),
                "x",
                "y",
            )
            .expect("refused");
        assert!(
            msg.contains(r#"spec.loadgen.image "nope.io/lg:1""#),
            "{msg}"
        );
        let msg = p
            .refusal(&run(None, None), defaults.0, defaults.1)
            .expect("refused");
        assert!(
            msg.contains(r#"the default image for spec.target.image "ghcr.io/benchmatrix/t:1""#)
                && msg.contains("--target-image"),
            "{msg}"
        );
        assert_eq!(
            ImagePolicy::default().refusal(&run(Some("evil/miner"), None), "a", "b"),
            None
        );
    }
}
