//! `spec.target.podTemplate`: a user's own pod for the target, merged with what the operator
//! owns.
//!
//! The field is kept as raw JSON in the resource and parsed into a Kubernetes
//! `PodTemplateSpec` by the operator's validation, not by the API client. A typed field would
//! make one run with a malformed template fail the whole list the operator's watch reads, and
//! its schema (the full PodSpec) would make the CRD several hundred kilobytes. The CRD marks it
//! `x-kubernetes-preserve-unknown-fields`; [`parse`] refuses unknown fields and wrong types
//! with their path, as the rest of the spec is refused.
//!
//! What a template may not do is refused by [`check`] with a field path; docs/book/src/kubernetes/running.md
//! lists what the operator sets and what it leaves alone.

use super::labels::MANAGED_BY_LABEL;

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use benchmatrix_loadgen::strict_yaml::FieldError;

/// Path of the field, as messages name it.
pub const FIELD: &str = "spec.target.podTemplate";

/// The name that makes a template's container the target (else the first container is).
pub const TARGET_CONTAINER_NAME: &str = "target";

/// Label and annotation key prefix the operator owns on its pods.
const OWNED_PREFIX: &str = "benchmatrix.dev/";

/// Environment variables the operator sets on the target container from the spec; a template
/// that set them would be silently overridden, so it is refused instead.
pub const OPERATOR_ENV: [&str; 4] = ["BENCH_MODE", "BENCH_POOL_SIZE", "PORT", "BENCH_STATS_PORT"];

/// A pod template as written in the resource: any JSON object, parsed by [`PodTemplate::parse`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(transparent)]
pub struct PodTemplate(pub serde_json::Value);

written_schema!(PodTemplate, {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": true,
    "description": "Cluster only: a pod template (PodTemplateSpec: metadata and spec) for the \
        target, for arguments, env from ConfigMaps or Secrets, volumes, a service account, \
        sidecars, labels and annotations. The container named `target`, else the first, is the \
        target: the operator sets its CPU and memory per cell (requests = limits), adds the \
        BENCH_* and cells' env and the http port, and a readiness probe unless it has one. See \
        docs/kubernetes.md.",
});

impl PodTemplate {
    /// The template as a Kubernetes type, or every unknown field and the first wrong type with
    /// its path under `spec.target.podTemplate`.
    pub fn parse(&self) -> Result<PodTemplateSpec, Vec<FieldError>> {
        parse(&self.0)
    }
}

/// See [`PodTemplate::parse`].
pub fn parse(value: &serde_json::Value) -> Result<PodTemplateSpec, Vec<FieldError>> {
    if !value.is_object() {
        return Err(vec![FieldError::new(
            FIELD,
            "must be an object (a PodTemplateSpec)",
        )]);
    }
    let mut errors = Vec::new();
    let mut on_unknown = |path: serde_ignored::Path<'_>| {
        errors.push(FieldError::new(
            under_field(&path.to_string()),
            "unknown field",
        ));
    };
    let ignoring = serde_ignored::Deserializer::new(value, &mut on_unknown);
    match serde_path_to_error::deserialize::<_, PodTemplateSpec>(ignoring) {
        Ok(template) if errors.is_empty() => Ok(template),
        Ok(_) => Err(errors),
        Err(err) => {
            let path = under_field(&err.path().to_string());
            let mut message = err.into_inner().to_string();
            if message.starts_with("invalid type: string \"0") && message.ends_with("i32") {
                // kubectl reads YAML 1.1, where 0755 is octal; the local runner reads YAML 1.2,
                // where it is a string.
                message.push_str(" (an octal mode such as 0755 is written 493 here)");
            }
            errors.push(FieldError::new(path, message));
            Err(errors)
        }
    }
}

/// `spec.containers[0].imagee` as `spec.target.podTemplate.spec.containers[0].imagee`.
fn under_field(path: &str) -> String {
    // serde_ignored writes list positions as `.0`; write them as the rest of the spec does.
    let mut out = String::from(FIELD);
    for part in path.split('.').filter(|p| !p.is_empty() && *p != "?") {
        if part.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{part}]"));
        } else if let Some((name, index)) = part.split_once('[') {
            out.push('.');
            out.push_str(name);
            out.push('[');
            out.push_str(index);
        } else {
            out.push('.');
            out.push_str(part);
        }
    }
    out
}

/// Every container of a pod with the list it is in (`containers` or `initContainers`) and its
/// position there, as field paths name them.
pub fn all_containers(spec: &PodSpec) -> impl Iterator<Item = (&'static str, usize, &Container)> {
    let main = spec
        .containers
        .iter()
        .enumerate()
        .map(|(i, c)| ("containers", i, c));
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| ("initContainers", i, c));
    main.chain(init)
}

/// Index of the target container in `containers`: the one named [`TARGET_CONTAINER_NAME`],
/// else the first; None when there is none (the operator then adds its own).
pub fn target_index(containers: &[Container]) -> Option<usize> {
    containers
        .iter()
        .position(|c| c.name == TARGET_CONTAINER_NAME)
        .or(if containers.is_empty() { None } else { Some(0) })
}

/// The name of the target container a template gives, or `default` (the operator's own).
pub fn target_container_name(template: Option<&PodTemplateSpec>, default: &str) -> String {
    template
        .and_then(|t| t.spec.as_ref())
        .and_then(|s| target_index(&s.containers).map(|i| s.containers[i].name.clone()))
        .unwrap_or_else(|| default.to_owned())
}

/// What a parsed template may not do, each at its path. `image` is `spec.target.image`, `port`
/// `spec.target.port`.
pub fn check(template: &PodTemplateSpec, image: Option<&str>, port: u16) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let at = |rest: &str| format!("{FIELD}.{rest}");
    if let Some(meta) = &template.metadata {
        check_metadata(meta, &mut errors);
    }
    let Some(spec) = &template.spec else {
        return errors;
    };
    if let Some(policy) = spec.restart_policy.as_deref()
        && policy != "Always"
    {
        errors.push(FieldError::new(
            at("spec.restartPolicy"),
            format!("must be Always (the target runs in a Deployment), got {policy:?}"),
        ));
    }
    check_host_access(spec, &mut errors);
    let target = target_index(&spec.containers);
    for (list, i, c) in all_containers(spec) {
        let here = |rest: &str| at(&format!("spec.{list}[{i}].{rest}"));
        if c.name.is_empty() {
            errors.push(FieldError::new(here("name"), "must not be empty"));
        }
        if c.security_context.as_ref().and_then(|s| s.privileged) == Some(true) {
            errors.push(FieldError::new(
                here("securityContext.privileged"),
                format!(
                    "is refused at every --pod-security level, privileged included {}",
                    held_always("privileged")
                ),
            ));
        }
        let is_target = list == "containers" && Some(i) == target;
        if is_target {
            check_target(c, image, port, &here, &mut errors);
        } else if c.image.as_deref().is_none_or(|i| i.trim().is_empty()) {
            errors.push(FieldError::new(here("image"), "is required"));
        }
    }
    errors
}

/// Pushes onto `errors` what a template's metadata `meta` may not set: the labels and
/// annotations the operator owns (it selects the run's pods by them), and a name or namespace.
/// Apart from [`check`] to keep that function a list of the template's parts.
fn check_metadata(meta: &ObjectMeta, errors: &mut Vec<FieldError>) {
    let at = |rest: &str| format!("{FIELD}.{rest}");
    for (what, map) in [("labels", &meta.labels), ("annotations", &meta.annotations)] {
        for key in map.iter().flat_map(|m| m.keys()) {
            if key.starts_with(OWNED_PREFIX) || key == MANAGED_BY_LABEL {
                errors.push(FieldError::new(
                    at(&format!("metadata.{what}.{key}")),
                    format!(
                        "is set by the operator (it selects the run's pods by its \
                         {OWNED_PREFIX}* and {MANAGED_BY_LABEL} labels); remove it"
                    ),
                ));
            }
        }
    }
    if meta.name.is_some() || meta.namespace.is_some() {
        errors.push(FieldError::new(
            at("metadata"),
            "name and namespace are the operator's: each cell's pods are named after it \
             and live in the run's namespace",
        ));
    }
}

/// Pushes onto `errors` the ways a template's pod `spec` would reach its node that are
/// refused at every --pod-security level: the host's network, PID or IPC namespace, and
/// hostPath volumes. Apart from [`check`] to keep that function a list of the template's
/// parts.
fn check_host_access(spec: &PodSpec, errors: &mut Vec<FieldError>) {
    let at = |rest: &str| format!("{FIELD}.{rest}");
    // Pods on the host's network would share ports between replicas and bypass the per-pod
    // addresses the load generator spreads its load over; the rest would let whoever may
    // create a run reach the node through the operator's rights.
    for (field, set) in [
        ("hostNetwork", spec.host_network),
        ("hostPID", spec.host_pid),
        ("hostIPC", spec.host_ipc),
    ] {
        if set == Some(true) {
            errors.push(FieldError::new(
                at(&format!("spec.{field}")),
                format!(
                    "is refused at every --pod-security level, privileged included: a benchmark \
                 target runs in its own pod namespaces {}",
                    held_always("hostNamespaces")
                ),
            ));
        }
    }
    for (i, volume) in spec.volumes.iter().flatten().enumerate() {
        if volume.host_path.is_some() {
            errors.push(FieldError::new(
                at(&format!("spec.volumes[{i}].hostPath")),
                format!(
                    "is refused at every --pod-security level, privileged included: use a \
                 ConfigMap, Secret, emptyDir or projected volume {}",
                    held_always("hostPathVolumes")
                ),
            ));
        }
    }
}

/// The Pod Security check a template rule shares its id with. These rules hold even at the
/// `privileged` level, so the id is tagged with that: a reader who looks the id up finds
/// Pod Security admission's wording, and learns why no install setting lifts it.
fn held_always(check: &str) -> String {
    format!("[check {check}, held at every level]")
}

fn check_target(
    c: &Container,
    image: Option<&str>,
    port: u16,
    here: &dyn Fn(&str) -> String,
    errors: &mut Vec<FieldError>,
) {
    match (c.image.as_deref(), image) {
        (Some(own), Some(spec)) if own != spec => errors.push(FieldError::new(
            here("image"),
            format!(
                "{own:?} differs from spec.target.image {spec:?}: give the target's image in \
                 one place"
            ),
        )),
        (Some(own), _) if own.trim().is_empty() => {
            errors.push(FieldError::new(here("image"), "must not be empty"));
        }
        _ => {}
    }
    if let Some(resources) = &c.resources {
        for (what, map) in [
            ("limits", &resources.limits),
            ("requests", &resources.requests),
        ] {
            for key in ["cpu", "memory"] {
                if map.as_ref().is_some_and(|m| m.contains_key(key)) {
                    errors.push(FieldError::new(
                        here(&format!("resources.{what}.{key}")),
                        format!(
                            "is set per cell by spec.configurations[].{key} (requests = \
                             limits); remove it"
                        ),
                    ));
                }
            }
        }
    }
    for (i, var) in c.env.iter().flatten().enumerate() {
        if OPERATOR_ENV.contains(&var.name.as_str()) {
            errors.push(FieldError::new(
                here(&format!("env[{i}].name")),
                format!(
                    "{} is set by the operator (from spec.target and each configuration); \
                     remove it, or set it in spec.configurations[].env",
                    var.name
                ),
            ));
        }
    }
    for (i, p) in c.ports.iter().flatten().enumerate() {
        if p.name.as_deref() == Some("http") && p.container_port != i32::from(port) {
            errors.push(FieldError::new(
                here(&format!("ports[{i}].containerPort")),
                format!(
                    "the port named http must be spec.target.port ({port}), got {}",
                    p.container_port
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(yaml: &str) -> serde_json::Value {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn paths(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| e.path.clone()).collect()
    }

    #[test]
    fn a_template_parses_into_a_pod_template_and_unknown_fields_are_refused_at_their_path() {
        let ok = parse(&template(
            "metadata: {labels: {sidecar.istio.io/inject: 'true'}}\n\
             spec:\n  containers:\n  - name: target\n    image: busybox:1.36\n    \
             args: [httpd, -f]\n    volumeMounts: [{name: www, mountPath: /www}]\n  \
             volumes: [{name: www, configMap: {name: site}}]\n",
        ))
        .unwrap();
        let spec = ok.spec.unwrap();
        assert_eq!(spec.containers[0].args.as_ref().unwrap()[0], "httpd");
        assert_eq!(spec.volumes.unwrap()[0].name, "www");

        let errors = parse(&template(
            "spec:\n  containers:\n  - name: target\n    imagee: busybox\n",
        ))
        .unwrap_err();
        assert_eq!(
            paths(&errors),
            ["spec.target.podTemplate.spec.containers[0].imagee"]
        );
        assert_eq!(errors[0].message, "unknown field");

        let errors = parse(&template("spec: {containers: [{name: t, ports: 8080}]}")).unwrap_err();
        assert_eq!(
            paths(&errors),
            ["spec.target.podTemplate.spec.containers[0].ports"]
        );
        assert!(errors[0].message.contains("invalid type"), "{errors:?}");
        assert!(parse(&serde_json::json!("a string")).is_err());
    }

    fn checked(yaml: &str, image: Option<&str>) -> Vec<FieldError> {
        check(&parse(&template(yaml)).unwrap(), image, 8080)
    }

    #[test]
    fn the_target_container_is_the_one_named_target_else_the_first() {
        let t = parse(&template(
            "spec: {containers: [{name: proxy, image: envoy}, {name: target, image: app}]}",
        ))
        .unwrap();
        assert_eq!(target_container_name(Some(&t), "x"), "target");
        let t = parse(&template(
            "spec: {containers: [{name: httpd, image: busybox}]}",
        ))
        .unwrap();
        assert_eq!(target_container_name(Some(&t), "x"), "httpd");
        let t = parse(&template("metadata: {labels: {a: b}}")).unwrap();
        assert_eq!(target_container_name(Some(&t), "target"), "target");
        assert_eq!(target_container_name(None, "target"), "target");
    }

    #[test]
    fn what_the_operator_owns_is_refused_with_its_path() {
        let errors = checked(
            "metadata:\n  name: x\n  labels: {benchmatrix.dev/cell: a, app.kubernetes.io/managed-by: me, team: t}\n\
             spec:\n  restartPolicy: Never\n  hostNetwork: true\n  \
             volumes: [{name: h, hostPath: {path: /}}]\n  containers:\n  - name: target\n    \
             image: other\n    resources: {limits: {cpu: '2', ephemeral-storage: 1Gi}}\n    \
             env: [{name: PORT, value: '1'}, {name: MINE, value: '2'}]\n    \
             ports: [{name: http, containerPort: 9000}]\n  \
             - name: sidecar\n    securityContext: {privileged: true}\n",
            Some("app:1"),
        );
        let p = paths(&errors);
        for want in [
            "spec.target.podTemplate.metadata.labels.benchmatrix.dev/cell",
            "spec.target.podTemplate.metadata.labels.app.kubernetes.io/managed-by",
            "spec.target.podTemplate.metadata",
            "spec.target.podTemplate.spec.restartPolicy",
            "spec.target.podTemplate.spec.hostNetwork",
            "spec.target.podTemplate.spec.volumes[0].hostPath",
            "spec.target.podTemplate.spec.containers[0].image",
            "spec.target.podTemplate.spec.containers[0].resources.limits.cpu",
            "spec.target.podTemplate.spec.containers[0].env[0].name",
            "spec.target.podTemplate.spec.containers[0].ports[0].containerPort",
            "spec.target.podTemplate.spec.containers[1].securityContext.privileged",
            "spec.target.podTemplate.spec.containers[1].image",
        ] {
            assert!(p.iter().any(|x| x == want), "{want} missing from {p:#?}");
        }
        assert_eq!(p.len(), 12, "{p:#?}");
        // The rules Pod Security shares carry its check id, so the refusal reads the same as
        // the operator's level checks and can be looked up.
        for (path, id) in [
            ("spec.hostNetwork", "hostNamespaces"),
            ("spec.volumes[0].hostPath", "hostPathVolumes"),
            (
                "spec.containers[1].securityContext.privileged",
                "privileged",
            ),
        ] {
            let e = errors
                .iter()
                .find(|e| e.path == format!("spec.target.podTemplate.{path}"))
                .unwrap();
            assert!(
                e.message
                    .ends_with(&format!("[check {id}, held at every level]")),
                "{e:?}"
            );
        }
        assert!(!p.iter().any(|x| x.contains("team")), "own labels are fine");
        assert!(
            !p.iter().any(|x| x.contains("ephemeral")),
            "other resources are fine"
        );
    }

    #[test]
    fn a_plain_template_passes() {
        let errors = checked(
            "metadata: {labels: {team: t}, annotations: {a: b}}\n\
             spec:\n  serviceAccountName: reader\n  containers:\n  - name: httpd\n    \
             args: [httpd, -f, -p, '8080']\n    env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n",
            Some("busybox:1.36"),
        );
        assert!(errors.is_empty(), "{errors:?}");
    }
}
