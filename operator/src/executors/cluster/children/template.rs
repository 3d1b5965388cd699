//! Merging a user's `spec.target.podTemplate` with what the operator owns on a target pod.
//!
//! The operator owns, and always sets: its labels (it finds pods by them), the target
//! container's CPU and memory (requests = limits, per cell), the `BENCH_*`/`PORT` env and the
//! cells' env, the `http` port (and the built-in target's `stats` port), and the placement of
//! `spec.placement`. It gives a default for what the template leaves out: the readiness probe,
//! the Pod Security "restricted" security contexts, no service account token, no service links
//! and a 10 s grace period. Everything else in the template (arguments, volumes, env from
//! ConfigMaps or Secrets, sidecars, init containers, a service account, annotations) is left
//! as written. What a template may not do at all is refused earlier, with a field path, by
//! [`crate::resource::pod_template::check`].

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, NodeSelectorRequirement, NodeSelectorTerm,
    PodSecurityContext, PodSpec, PodTemplateSpec, ResourceRequirements, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::resource::pod_template::target_index;

/// What the operator puts on every target pod of a cell.
pub struct OwnedPod {
    /// The pod's labels (run, cell, role, repetition, managed-by).
    pub labels: BTreeMap<String, String>,
    /// The operator's target container: name, image, env, ports, resources, probe, security.
    pub container: Container,
    /// The pod security context used when the template gives none.
    pub security: PodSecurityContext,
    /// `spec.placement.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// `spec.placement.tolerations`.
    pub tolerations: Vec<Toleration>,
    /// Nodes the pods must run on (a round's later variants, on the nodes of its first); none:
    /// anywhere the scheduler likes.
    pub pin_to_nodes: Vec<String>,
}

/// The target pod template: the operator's own without a template, else the template with what
/// the operator owns merged in (see the module comment).
pub fn merge(template: Option<PodTemplateSpec>, owned: OwnedPod) -> PodTemplateSpec {
    let mut template = template.unwrap_or_default();
    let mut meta = template.metadata.take().unwrap_or_default();
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .extend(owned.labels);
    let mut spec = template.spec.take().unwrap_or_default();
    match target_index(&spec.containers) {
        Some(i) => merge_container(&mut spec.containers[i], owned.container),
        None => spec.containers.insert(0, owned.container),
    }
    spec.security_context.get_or_insert(owned.security);
    if spec.automount_service_account_token.is_none() && spec.service_account_name.is_none() {
        // A pod needs no API token unless the template asks for an account of its own.
        spec.automount_service_account_token = Some(false);
    }
    // Service links would add env vars for every Service in the namespace.
    spec.enable_service_links.get_or_insert(false);
    spec.termination_grace_period_seconds.get_or_insert(10);
    if !owned.node_selector.is_empty() {
        spec.node_selector
            .get_or_insert_with(BTreeMap::new)
            .extend(owned.node_selector);
    }
    if !owned.tolerations.is_empty() {
        spec.tolerations
            .get_or_insert_with(Vec::new)
            .extend(owned.tolerations);
    }
    if !owned.pin_to_nodes.is_empty() {
        pin(&mut spec, owned.pin_to_nodes);
    }
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: meta.labels,
            annotations: meta.annotations,
            ..ObjectMeta::default()
        }),
        spec: Some(spec),
    }
}

/// Requires the pods on `nodes` by name, in addition to what the template requires: the
/// hostname condition joins every node selector term the template has (terms are alternatives,
/// the expressions of one term all hold), or is the only term.
pub fn pin(spec: &mut PodSpec, nodes: Vec<String>) {
    let on_nodes = NodeSelectorRequirement {
        key: "kubernetes.io/hostname".into(),
        operator: "In".into(),
        values: Some(nodes),
    };
    let required = spec
        .affinity
        .get_or_insert_with(Default::default)
        .node_affinity
        .get_or_insert_with(Default::default)
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(Default::default);
    if required.node_selector_terms.is_empty() {
        required
            .node_selector_terms
            .push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        term.match_expressions
            .get_or_insert_with(Vec::new)
            .push(on_nodes.clone());
    }
}

/// The template's target container with the operator's parts: image when it names none, env
/// (the operator's names replace the template's), ports, CPU and memory, and the probe and
/// security context when it gives none.
fn merge_container(c: &mut Container, owned: Container) {
    if c.image.is_none() {
        c.image = owned.image;
    }
    let ours = owned.env.unwrap_or_default();
    let mut env: Vec<EnvVar> = c
        .env
        .take()
        .unwrap_or_default()
        .into_iter()
        .filter(|v| !ours.iter().any(|o| o.name == v.name))
        .collect();
    env.extend(ours);
    c.env = Some(env);
    let mut ports: Vec<ContainerPort> = c.ports.take().unwrap_or_default();
    for port in owned.ports.unwrap_or_default() {
        let declared = ports.iter().any(|p| {
            p.container_port == port.container_port
                && p.protocol.as_deref().unwrap_or("TCP") == "TCP"
        });
        if !declared {
            ports.push(port);
        }
    }
    c.ports = Some(ports);
    c.resources = Some(with_cpu_and_memory(c.resources.take(), owned.resources));
    if c.readiness_probe.is_none() {
        c.readiness_probe = owned.readiness_probe;
    }
    if c.security_context.is_none() {
        c.security_context = owned.security_context;
    }
}

/// The template's resources (e.g. ephemeral storage) with the cell's CPU and memory.
fn with_cpu_and_memory(
    given: Option<ResourceRequirements>,
    cell: Option<ResourceRequirements>,
) -> ResourceRequirements {
    let mut out = given.unwrap_or_default();
    let cell = cell.unwrap_or_default();
    for (mine, theirs) in [
        (&mut out.limits, cell.limits),
        (&mut out.requests, cell.requests),
    ] {
        mine.get_or_insert_with(BTreeMap::new)
            .extend(theirs.unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::executors::cluster::children::build::{deployment, target_container_name};
    use crate::resource::ValidatedRun;

    const RUN: &str = r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: own, namespace: default, uid: "0000-1111"}
spec:
  target:
    image: busybox:1.36
    readinessPath: /cgi-bin/work
    podTemplate:
      metadata:
        labels: {team: payments}
        annotations: {sidecar.istio.io/inject: "false"}
      spec:
        serviceAccountName: reader
        securityContext: {runAsUser: 1000, runAsNonRoot: true}
        initContainers:
          - {name: prepare, image: busybox:1.36, command: [sh, -c, "true"]}
        containers:
          - name: proxy
            image: envoyproxy/envoy:v1.31.0
          - name: target
            args: [httpd, -f, -p, "8080", -h, /www]
            env:
              - name: TOKEN
                valueFrom: {secretKeyRef: {name: api-token, key: token}}
              - {name: WORKERS, value: "1"}
            resources: {limits: {ephemeral-storage: 1Gi}}
            volumeMounts: [{name: www, mountPath: /www}]
        volumes:
          - name: www
            configMap: {name: site, defaultMode: 493}
  placement:
    nodeSelector: {pool: bench}
  configurations:
    - {name: x2, cpu: "500m", memory: 64Mi, replicas: 2, env: [{name: WORKERS, value: "4"}]}
  workload:
    endpoints: [{name: work, path: /cgi-bin/work}]
    phases: [{name: p, duration: 1s, load: [{endpoint: work, connections: 1}]}]
"#;

    #[test]
    fn a_template_keeps_what_the_user_wrote_and_gets_what_the_operator_owns() {
        let run = crate::resource::validate::parse_benchmark_run(RUN).expect("valid");
        assert_eq!(target_container_name(&run.spec, None), "target");
        let v = ValidatedRun::for_cluster(run).expect("valid");
        let dep = deployment(&v, &v.cells()[0], 1, "default-image", Vec::new());
        let spec = dep.spec;
        let selector = spec.selector.match_labels.unwrap();
        let meta = spec.template.metadata.unwrap();
        let labels = meta.labels.unwrap();
        assert_eq!(labels["team"], "payments", "the template's label is kept");
        for (k, v) in &selector {
            assert_eq!(labels.get(k), Some(v), "the selector's {k} is on the pods");
        }
        assert!(
            !selector.contains_key("team"),
            "the selector is the operator's"
        );
        assert_eq!(
            meta.annotations.unwrap()["sidecar.istio.io/inject"],
            "false"
        );

        let pod = spec.template.spec.unwrap();
        assert_eq!(pod.service_account_name.as_deref(), Some("reader"));
        assert_eq!(
            pod.automount_service_account_token, None,
            "an account of its own keeps the cluster's token default"
        );
        assert_eq!(pod.security_context.unwrap().run_as_user, Some(1000));
        assert_eq!(pod.node_selector.unwrap()["pool"], "bench");
        assert_eq!(pod.init_containers.unwrap()[0].name, "prepare");
        assert_eq!(pod.volumes.unwrap()[0].name, "www");
        let [proxy, target] = &pod.containers[..] else {
            panic!("two containers: {:?}", pod.containers);
        };
        assert_eq!(proxy.image.as_deref(), Some("envoyproxy/envoy:v1.31.0"));
        assert!(
            proxy.resources.is_none() && proxy.env.is_none(),
            "a sidecar is left alone"
        );

        assert_eq!(target.image.as_deref(), Some("busybox:1.36"));
        assert_eq!(target.args.as_ref().unwrap()[0], "httpd");
        let r = target.resources.as_ref().unwrap();
        for want in [r.limits.as_ref().unwrap(), r.requests.as_ref().unwrap()] {
            assert_eq!(want["cpu"].0, "500m");
            assert_eq!(want["memory"].0, "64Mi");
        }
        assert_eq!(r.limits.as_ref().unwrap()["ephemeral-storage"].0, "1Gi");
        let env = target.env.as_ref().unwrap();
        let value = |name: &str| {
            let found: Vec<_> = env.iter().filter(|e| e.name == name).collect();
            assert_eq!(found.len(), 1, "{name} once: {env:?}");
            found[0].clone()
        };
        assert!(
            value("TOKEN").value_from.is_some(),
            "a Secret's env stays a reference"
        );
        assert_eq!(
            value("WORKERS").value.as_deref(),
            Some("4"),
            "the cell's env wins"
        );
        assert_eq!(value("PORT").value.as_deref(), Some("8080"));
        assert!(value("BENCH_MODE").value.is_some());
        let http = target.ports.as_ref().unwrap();
        assert!(
            http.iter()
                .any(|p| p.container_port == 8080 && p.name.as_deref() == Some("http"))
        );
        assert_eq!(
            target
                .readiness_probe
                .as_ref()
                .and_then(|p| p.http_get.as_ref())
                .and_then(|g| g.path.as_deref()),
            Some("/cgi-bin/work"),
            "the operator's probe, as the template gives none"
        );
        assert_eq!(
            target
                .security_context
                .as_ref()
                .and_then(|s| s.read_only_root_filesystem),
            Some(true),
            "the restricted container context by default"
        );
    }

    #[test]
    fn a_template_probe_and_first_container_are_used_as_given() {
        let yaml = RUN.replace("- name: target\n", "- name: app\n").replace(
            "            volumeMounts:",
            "            readinessProbe: {tcpSocket: {port: 8080}}\n            volumeMounts:",
        );
        // Without one named target, the first container (the proxy) would be the target,
        // and its image clashes with spec.target.image while the app's is missing.
        let err = crate::resource::validate::parse_benchmark_run(&yaml).unwrap_err();
        let paths: Vec<_> = err.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.target.podTemplate.spec.containers[0].image",
                "spec.target.podTemplate.spec.containers[1].image"
            ],
            "{err}"
        );
        let yaml = yaml.replace(
            "          - name: proxy\n            image: envoyproxy/envoy:v1.31.0\n",
            "",
        );
        let run = crate::resource::validate::parse_benchmark_run(&yaml).expect("valid");
        assert_eq!(target_container_name(&run.spec, None), "app");
        let v = ValidatedRun::for_cluster(run).expect("valid");
        let dep = deployment(&v, &v.cells()[0], 1, "default-image", Vec::new());
        let pod = dep.spec.template.spec.unwrap();
        let probe = pod.containers[0].readiness_probe.clone().unwrap();
        assert!(
            probe.tcp_socket.is_some() && probe.http_get.is_none(),
            "{probe:?}"
        );
    }

    #[test]
    fn a_pinned_pod_must_run_on_those_nodes_and_on_what_its_template_requires() {
        use super::{OwnedPod, merge};
        use k8s_openapi::api::core::v1::PodTemplateSpec;
        let owned = |pin: Vec<String>| OwnedPod {
            labels: Default::default(),
            container: Default::default(),
            security: Default::default(),
            node_selector: Default::default(),
            tolerations: Vec::new(),
            pin_to_nodes: pin,
        };
        let terms = |t: &PodTemplateSpec| {
            serde_json::to_value(t).unwrap()["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                .clone()
        };
        let on_n1 = serde_json::json!(
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]});
        // No template: one term, the nodes.
        let plain = merge(None, owned(vec!["n1".into()]));
        assert_eq!(
            terms(&plain),
            serde_json::json!([{"matchExpressions": [on_n1]}])
        );
        // A template requiring one zone or another: each alternative gains the nodes.
        let zoned: PodTemplateSpec = serde_json::from_value(serde_json::json!({"spec": {
        "containers": [],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
            ]}}}}}))
        .unwrap();
        let pinned = merge(Some(zoned), owned(vec!["n1".into()]));
        let t = terms(&pinned);
        for term in t.as_array().unwrap() {
            let exprs = term["matchExpressions"].as_array().unwrap();
            assert_eq!(exprs.len(), 2, "{t}");
            assert_eq!(exprs[1], on_n1);
        }
        // Not pinned: no affinity is added.
        assert!(
            merge(None, owned(Vec::new()))
                .spec
                .unwrap()
                .affinity
                .is_none()
        );
    }
}
