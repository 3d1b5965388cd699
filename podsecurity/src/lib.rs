//! The Kubernetes Pod Security Standards, checked on a pod before the operator creates it.
//!
//! Whoever may create a BenchmarkRun may describe the target's pod (`spec.target.podTemplate`),
//! and the operator creates it with its own service account's rights. Pod Security admission
//! stops an escalating pod only in namespaces that enforce a level, and most namespaces enforce
//! none; so the operator applies the same checks itself, on the merged pod (the template plus
//! what the operator sets), at the level the install chose (`--pod-security`, the chart's
//! `operator.podSecurity`), tightened by the namespace's own
//! `pod-security.kubernetes.io/enforce` label.
//!
//! The checks are those of `k8s.io/pod-security-admission` at its latest version (v1.35): the
//! same check ids, the same rules, and the same reason and detail texts, so a refusal reads as
//! the API server would word it. Each refusal also names the field to change. The levels nest:
//! restricted is every baseline check, some of them replaced by a stricter one (see
//! `restricted::CHECKS`).
//!
//! Pure: a pod spec in, the violations out. The callers decide what a violation means: the
//! operator refuses a run whose pods fail (`executors/cluster/children/pod_security`), and
//! `benchmatrix run` refuses a file a cluster would refuse. A crate of its own, beside `quota/`,
//! as neither executor owns it and nothing else in the resource needs it.

mod baseline;
pub mod corpus;
mod pod;
mod restricted;

#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use pod::Pod;

/// The namespace label through which an administrator has Pod Security admission enforce a
/// level; the operator reads it to tighten its own level there, never to loosen it.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

/// A Pod Security Standards level, from the loosest to the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Level {
    /// No checks: whatever the pod asks for.
    Privileged,
    /// Prevents known privilege escalations: no host namespaces, host paths or ports, no
    /// privileged containers, only the default capabilities.
    Baseline,
    /// Baseline, and the pod hardening best practices: non-root, no privilege escalation, every
    /// capability dropped, a seccomp profile, only the volume types a pod owns.
    #[default]
    Restricted,
}

impl Level {
    /// Every level, loosest first.
    pub const ALL: [Level; 3] = [Level::Privileged, Level::Baseline, Level::Restricted];

    /// The level's name as Pod Security admission and its namespace labels spell it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// The level that applies in a namespace: `self` (the install's), made stricter by the
    /// namespace's [`ENFORCE_LABEL`] value when it names a stricter level. A value that names no
    /// level is read as restricted, as Pod Security admission reads it: a typo in a label must
    /// not open a namespace up.
    pub fn in_namespace(self, label: Option<&str>) -> Level {
        match label {
            None => self,
            Some(value) => self.max(value.parse().unwrap_or(Level::Restricted)),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A level name that is none of `privileged`, `baseline`, `restricted`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown Pod Security level {0:?}: expected one of privileged, baseline, restricted")]
pub struct UnknownLevel(pub String);

impl FromStr for Level {
    type Err = UnknownLevel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Level::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| UnknownLevel(s.to_owned()))
    }
}

/// One check a pod failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The check's id in `k8s.io/pod-security-admission` (e.g. `allowPrivilegeEscalation`,
    /// `capabilities_restricted`).
    pub check: &'static str,
    /// What is wrong, as Pod Security admission words it (e.g. `allowPrivilegeEscalation !=
    /// false`).
    pub reason: String,
    /// Who does it and what it must be, as Pod Security admission words it (e.g. `container
    /// "target" must set securityContext.allowPrivilegeEscalation=false`).
    pub detail: String,
    /// The first field to change, from the pod's root: `spec.containers[0].securityContext.
    /// allowPrivilegeEscalation`, `spec.volumes[1].hostPath`, `metadata.annotations.KEY`.
    pub path: String,
}

impl Violation {
    /// `reason (detail)`, the form Pod Security admission lists each failed check in.
    pub fn message(&self) -> String {
        format!("{} ({})", self.reason, self.detail)
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [check {}]", self.message(), self.check)
    }
}

/// A check: its id and the function that judges a pod (None: the pod passes).
pub(crate) type Check = (&'static str, fn(&Pod) -> Option<Violation>);

/// The checks a pod fails at `level`, in Pod Security admission's order (baseline checks,
/// then restricted ones, each by id). `meta` is the pod's metadata, where the AppArmor
/// annotations are read.
pub fn check(level: Level, meta: Option<&ObjectMeta>, spec: &PodSpec) -> Vec<Violation> {
    let checks: &[Check] = match level {
        Level::Privileged => &[],
        Level::Baseline => &baseline::CHECKS,
        Level::Restricted => &restricted::CHECKS,
    };
    let pod = Pod::new(meta, spec);
    checks.iter().filter_map(|(_, judge)| judge(&pod)).collect()
}

/// The ids of every check at `level`, in the order [`check`] runs them.
pub fn check_ids(level: Level) -> Vec<&'static str> {
    match level {
        Level::Privileged => Vec::new(),
        Level::Baseline => baseline::CHECKS.iter().map(|(id, _)| *id).collect(),
        Level::Restricted => restricted::CHECKS.iter().map(|(id, _)| *id).collect(),
    }
}
