//! The operator's image allow-list (`benchmatrix operator --allowed-images`).
//!
//! Whoever may create a BenchmarkRun may name any target and load generator image, and the
//! operator runs it with its own service account's rights in that namespace. An allow-list of
//! glob patterns limits the images to the ones an administrator trusts; a run whose effective
//! image (the one it names, or the operator's default when it names none) matches no pattern
//! fails validation, and nothing of it is created. An empty list allows every image.
//!
//! Images are matched in their full form, the one the kubelet pulls, and only after they parse
//! as an image reference (`reference`): `nginx:1.27` is `docker.io/library/nginx:1.27`, and an
//! image with neither tag nor digest gets `:latest`. Matching the full form means a short name
//! cannot slip past a pattern meant for one registry, and a pattern says where the image really
//! comes from; parsing first means a string such as `ghcr.io/acme/../evil/x:1`, which the
//! kubelet would refuse, never matches `ghcr.io/acme/**`. A reference that does not parse is
//! refused even when the list is empty, so a run fails at once with the field and the broken
//! rule instead of in the kubelet's InvalidImageName. Patterns:
//!
//! - `*` matches any run of characters except `/`: one path segment, or part of one
//!   (`ghcr.io/acme/*` allows `ghcr.io/acme/app:1` but not `ghcr.io/acme/team/app:1`);
//! - `**` matches any run of characters, `/` included (`ghcr.io/acme/**` allows both);
//! - every other character matches itself (case-sensitive).
//!
//! A pattern must name a registry host in its first segment (something with a `.` or a `:`, or
//! `localhost`, or a wildcard), since a full reference always starts with one; a pattern like
//! `nginx:*` could never match and is refused at start-up with the full form to write instead.
//!
//! The images a run uses are listed as [`ImageUse`]s, each with the field that names it, so
//! that every image the operator will deploy is judged the same way.

mod reference;

use std::fmt;
use std::str::FromStr;

use crate::resource::{BenchmarkRunSpec, TargetOf};

pub use reference::{ImageReference, ReferenceError};

use crate::resource::conditions::Reason;

/// Reason of the SpecValid condition (and of the Warning Event) when a run's image is not on
/// the allow-list.
pub const IMAGE_NOT_ALLOWED: Reason = Reason::ImageNotAllowed;

/// Reason of the SpecValid condition (and of the Warning Event) when a run's image is not a
/// valid image reference, whatever the allow-list.
pub const INVALID_IMAGE_REFERENCE: Reason = Reason::InvalidImageReference;

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
        let names_registry = reference::names_domain(first) || first.contains('*');
        if !text.contains('/') && !text.contains("**") || !names_registry {
            // Docker Hub's form of the pattern: `acme/*` is `docker.io/acme/*`, and a name
            // of one component is an official image's (`docker.io/library/nginx:*`).
            let hub = if text.contains('/') {
                format!("{}/{text}", reference::DEFAULT_DOMAIN)
            } else {
                format!("{}/library/{text}", reference::DEFAULT_DOMAIN)
            };
            return Err(refuse(format!(
                "names no registry, so it can never match: images are matched in full, as the \
                 kubelet pulls them (nginx:1.27 is docker.io/library/nginx:1.27); write e.g. \
                 {hub:?}"
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
    /// Whether `reference`, taken as written (callers pass the full form, an
    /// [`ImageReference`]'s Display), matches the pattern.
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

    /// Whether `image`, in its full form, matches a pattern (or there is none).
    pub fn allows(&self, image: &ImageReference) -> bool {
        if self.allows_all() {
            return true;
        }
        let full = image.to_string();
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

    /// Why a run using `uses` may not run, or None when every image parses and is allowed.
    /// An image that does not parse is refused whatever the patterns, with reason
    /// [`INVALID_IMAGE_REFERENCE`]; otherwise images matching no pattern are refused with
    /// [`IMAGE_NOT_ALLOWED`]. The message names each refused image by its field.
    pub fn refusal(&self, uses: &[ImageUse]) -> Option<Refusal> {
        let mut invalid = Vec::new();
        let mut refused = Vec::new();
        for image_use in uses {
            match image_use.image.parse::<ImageReference>() {
                Err(err) => invalid.push(format!("{}: {err}", image_use.describe(None))),
                Ok(parsed) if !self.allows(&parsed) => {
                    refused.push(image_use.describe(Some(&parsed)));
                }
                Ok(_) => {}
            }
        }
        let not_allowed = (!refused.is_empty()).then(|| {
            format!(
                "image not allowed: {} matches none of the images this operator may run \
                 (--allowed-images): {}",
                refused.join("; "),
                self.describe()
            )
        });
        if !invalid.is_empty() {
            // The images that parse but are not allowed are named too, so one fix does it.
            let mut message = format!("invalid image reference: {}", invalid.join("; "));
            if let Some(not_allowed) = not_allowed {
                message = format!("{message}; and {not_allowed}");
            }
            return Some(Refusal {
                reason: INVALID_IMAGE_REFERENCE,
                message,
            });
        }
        not_allowed.map(|message| Refusal {
            reason: IMAGE_NOT_ALLOWED,
            message,
        })
    }
}

/// Why a run's images may not run: a SpecValid reason and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// [`INVALID_IMAGE_REFERENCE`] or [`IMAGE_NOT_ALLOWED`].
    pub reason: Reason,
    /// Names each refused image by its field, and why.
    pub message: String,
}

/// One image a run makes the operator deploy, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUse {
    /// The field that names it, e.g. `spec.target.image`.
    pub field: String,
    /// The image as written (or the operator's default, see `default_flag`).
    pub image: String,
    /// The operator flag whose image this is when the run leaves `field` out.
    pub default_flag: Option<&'static str>,
}

impl ImageUse {
    /// The image at `field`: `named` when the run sets it, else `default`, from `flag`.
    pub fn named_or_default(
        field: impl Into<String>,
        named: Option<&str>,
        default: &str,
        flag: &'static str,
    ) -> Self {
        Self {
            field: field.into(),
            image: named.unwrap_or(default).to_owned(),
            default_flag: named.is_none().then_some(flag),
        }
    }

    /// The image and its field as a message names them, with its full form when that differs.
    fn describe(&self, full: Option<&ImageReference>) -> String {
        let image = reference::quote(&self.image);
        let shown = match full.map(ToString::to_string) {
            Some(full) if full != self.image => format!("{image} (in full {full:?})"),
            _ => image,
        };
        let field = &self.field;
        match (self.default_flag, full) {
            (None, _) => format!("{field} {shown}"),
            (Some(flag), None) => {
                format!("the default image for {field} {shown} (the operator's {flag})")
            }
            (Some(flag), Some(_)) => format!(
                "the default image for {field} {shown} (the operator's {flag}; set {field} to \
                 an allowed image)"
            ),
        }
    }
}

/// The images `run` makes the operator deploy: its target's and its load generator's, each
/// its own or the operator's default (`default_target`, `default_loadgen`) when it names none.
pub fn image_uses(
    spec: &BenchmarkRunSpec,
    default_target: &str,
    default_loadgen: &str,
) -> Vec<ImageUse> {
    let mut uses = Vec::new();
    for target in spec.targets() {
        for image in target_images(&target, default_target) {
            // Variants that leave a field to the target name the same image twice.
            if !uses.contains(&image) {
                uses.push(image);
            }
        }
    }
    uses.push(ImageUse::named_or_default(
        "spec.loadgen.image",
        spec.loadgen.image.as_deref(),
        default_loadgen,
        "--loadgen-image",
    ));
    uses
}

/// The images one variant's target (or the run's one target) names: every container and init
/// container of its pod template names its image itself, the target's included; a target
/// container without one gets the target's image or the default.
fn target_images(target: &TargetOf, default_target: &str) -> Vec<ImageUse> {
    let mut uses = Vec::new();
    let template = target.parsed_template();
    let pod = template.as_ref().and_then(|t| t.spec.as_ref());
    let mut target_named_in_template = false;
    if let Some(pod) = pod {
        let target_index = crate::resource::pod_template::target_index(&pod.containers);
        for (list, i, c) in crate::resource::pod_template::all_containers(pod) {
            let Some(image) = &c.image else { continue };
            if list == "containers" && Some(i) == target_index {
                target_named_in_template = true;
            }
            uses.push(ImageUse {
                field: format!("{}.spec.{list}[{i}].image", target.template_field),
                image: image.clone(),
                default_flag: None,
            });
        }
    }
    if !target_named_in_template {
        uses.insert(
            0,
            ImageUse::named_or_default(
                target.image_field.clone(),
                target.image,
                default_target,
                "--target-image",
            ),
        );
    }
    uses
}

#[cfg(test)]
mod tests;
