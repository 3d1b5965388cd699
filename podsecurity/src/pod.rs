//! A pod as the checks see it: its metadata, its spec, and every container (init, regular and
//! ephemeral, in Pod Security admission's order) with the field path that names it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ContainerPort, Lifecycle, PodSecurityContext, PodSpec, Probe, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The pod under check.
pub(crate) struct Pod<'a> {
    /// The pod's annotations (none when it has no metadata).
    pub annotations: Option<&'a BTreeMap<String, String>>,
    /// The pod's spec.
    pub spec: &'a PodSpec,
    /// Every container, init containers first, then the regular ones, then ephemeral ones.
    pub containers: Vec<Ctr<'a>>,
}

/// One container's fields that the checks read. Ephemeral containers have the same fields in
/// another type, so both are seen through this.
pub(crate) struct Ctr<'a> {
    /// The container's name, as messages quote it.
    pub name: &'a str,
    /// `spec.containers[0]`, `spec.initContainers[1]`, `spec.ephemeralContainers[0]`.
    pub path: String,
    /// Its security context, if it has one.
    pub security: Option<&'a SecurityContext>,
    /// Its ports.
    pub ports: &'a [ContainerPort],
    /// Its liveness, readiness and startup probes, with their field names.
    pub probes: [(&'static str, Option<&'a Probe>); 3],
    /// Its lifecycle hooks.
    pub lifecycle: Option<&'a Lifecycle>,
}

/// The [`Ctr`] view of container `$c` at field path `$path`. `Container` and
/// `EphemeralContainer` carry these fields in two unrelated types, so this is a macro: a
/// function would need a trait implemented twice over the same fields.
macro_rules! ctr {
    ($c:expr, $path:expr) => {{
        let c = $c;
        Ctr {
            name: &c.name,
            path: $path,
            security: c.security_context.as_ref(),
            ports: c.ports.as_deref().unwrap_or_default(),
            probes: [
                ("livenessProbe", c.liveness_probe.as_ref()),
                ("readinessProbe", c.readiness_probe.as_ref()),
                ("startupProbe", c.startup_probe.as_ref()),
            ],
            lifecycle: c.lifecycle.as_ref(),
        }
    }};
}

impl<'a> Pod<'a> {
    pub fn new(meta: Option<&'a ObjectMeta>, spec: &'a PodSpec) -> Self {
        let mut containers = Vec::new();
        for (i, c) in spec.init_containers.iter().flatten().enumerate() {
            containers.push(ctr!(c, format!("spec.initContainers[{i}]")));
        }
        for (i, c) in spec.containers.iter().enumerate() {
            containers.push(ctr!(c, format!("spec.containers[{i}]")));
        }
        for (i, c) in spec.ephemeral_containers.iter().flatten().enumerate() {
            containers.push(ctr!(c, format!("spec.ephemeralContainers[{i}]")));
        }
        Pod {
            annotations: meta.and_then(|m| m.annotations.as_ref()),
            spec,
            containers,
        }
    }

    /// The pod-level security context, if any.
    pub fn security(&self) -> Option<&'a PodSecurityContext> {
        self.spec.security_context.as_ref()
    }

    /// `spec.os.name: windows`: the restricted checks of Linux-only fields do not apply.
    pub fn is_windows(&self) -> bool {
        self.spec.os.as_ref().is_some_and(|os| os.name == "windows")
    }

    /// `spec.hostUsers: false`: the pod runs in its own user namespace, where root and an
    /// unmasked /proc are not the host's; Pod Security relaxes those checks (v1.35).
    pub fn in_user_namespace(&self) -> bool {
        self.spec.host_users == Some(false)
    }
}

/// `"a", "b"`: names quoted and joined as Pod Security admission does (quotes around each, no
/// escaping).
pub(crate) fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(|s| format!("\"{}\"", s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `singular` for one, else `plural`.
pub(crate) fn pluralize(singular: &'static str, plural: &'static str, n: usize) -> &'static str {
    if n == 1 { singular } else { plural }
}

/// `container "a"` / `containers "a", "b"`.
pub(crate) fn containers_phrase(names: &[&str]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

/// Who set something, the pod and/or containers, joined with " and " as admission does:
/// `pod and containers "a", "b"`.
pub(crate) fn setters(pod: bool, containers: &[&str]) -> String {
    let mut parts = Vec::new();
    if pod {
        parts.push("pod".to_owned());
    }
    if !containers.is_empty() {
        parts.push(containers_phrase(containers));
    }
    parts.join(" and ")
}
