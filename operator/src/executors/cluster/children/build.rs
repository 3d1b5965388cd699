//! Pure builders of a cell's child objects: Deployment, Service, ConfigMap (the load plan) and
//! the load generator Job.
//!
//! Every object carries the run as its controlling owner (deleting the run deletes everything),
//! the same labels (so the operator finds pods by selector), and a Pod Security "restricted"
//! security context.

use std::collections::BTreeMap;

use benchmatrix_loadgen::plan::{PlanFile, Stream, Workload};
use benchmatrix_loadgen::request::secrets::{secret_envs, to_env};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, ConfigMap, ConfigMapVolumeSource, Container, ContainerPort,
    EnvVar as K8sEnvVar, EnvVarSource, HTTPGetAction, Pod, PodAffinityTerm, PodAntiAffinity,
    PodSecurityContext, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, SeccompProfile,
    SecretKeySelector, SecurityContext, Service, ServicePort, ServiceSpec, Volume, VolumeMount,
    WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{Resource, ResourceExt};

use super::template::{self, OwnedPod};
use crate::engine::Load;
use crate::resource::ValidatedRun;
use crate::resource::labels::{
    CELL_LABEL, MANAGED_BY, MANAGED_BY_LABEL, REPETITION_LABEL, ROLE_LABEL, ROLE_LOADGEN,
    ROLE_TARGET, RUN_LABEL, RUN_UID_LABEL,
};
use crate::resource::matrix::{Cell, merge_env, repetition_child_name};
use crate::resource::{BenchmarkRun, BenchmarkRunSpec, EnvVar, Quantity, Variant, pod_template};

/// Name of the target container.
pub const TARGET_CONTAINER: &str = "target";
/// Name of the load generator container.
pub const LOADGEN_CONTAINER: &str = "loadgen";
/// Port on which the built-in target serves `/stats`, `/healthz` and `/metrics` from a thread
/// of its own (env BENCH_STATS_PORT), declared as container port `stats`. The load generator
/// reads each pod's `/stats` there at every phase boundary: on the main port the read would
/// queue behind a single-mode pod's busy event loop and be served by the loop under test.
pub const STATS_PORT: u16 = 9091;
/// The environment variable that turns the built-in target's statistics port on.
const STATS_PORT_ENV: &str = "BENCH_STATS_PORT";
/// Where the plan ConfigMap is mounted in the load generator.
const PLAN_DIR: &str = "/plan";
/// Unprivileged UID the pods run as (the distroless "nonroot" user).
const NON_ROOT_UID: i64 = 65532;

/// One repetition of one cell of a run: what a set of child objects is built for and found by.
#[derive(Debug, Clone, Copy)]
pub struct CellRun<'a> {
    /// The run.
    pub run: &'a BenchmarkRun,
    /// The cell's name.
    pub cell: &'a str,
    /// 1-based repetition.
    pub repetition: u32,
}

impl CellRun<'_> {
    /// The name the children share (kinds differ).
    pub fn child_name(&self) -> String {
        repetition_child_name(
            &self.run.name_any(),
            self.run.metadata.uid.as_deref(),
            self.cell,
            self.repetition,
        )
    }

    /// The run's UID: the value of [`RUN_UID_LABEL`] on everything made for it.
    fn run_uid(&self) -> &str {
        self.run.metadata.uid.as_deref().unwrap_or_default()
    }

    /// Labels of the objects with the given role: the run by name and UID, the cell, the
    /// repetition (the first too) and the role.
    pub fn labels(&self, role: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (RUN_LABEL.to_owned(), self.run.name_any()),
            (RUN_UID_LABEL.to_owned(), self.run_uid().to_owned()),
            (CELL_LABEL.to_owned(), self.cell.to_owned()),
            (REPETITION_LABEL.to_owned(), self.repetition.to_string()),
            (ROLE_LABEL.to_owned(), role.to_owned()),
            (MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned()),
        ])
    }

    /// The selector string for the pods of a role, for LIST calls: every label but
    /// managed-by, the run's UID among them.
    pub fn selector(&self, role: &str) -> String {
        let mut labels = self.labels(role);
        labels.remove(MANAGED_BY_LABEL);
        labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Whether an object with `labels` is one [`CellRun::selector`] selects: the same test,
    /// for the caches.
    pub fn selects(&self, role: &str, labels: &BTreeMap<String, String>) -> bool {
        let mut wanted = self.labels(role);
        wanted.remove(MANAGED_BY_LABEL);
        wanted
            .iter()
            .all(|(k, v)| labels.get(k).is_some_and(|have| have == v))
    }

    /// Whether `pod`, selected by its labels, was made for this repetition by its own
    /// controller: a target pod by a ReplicaSet of this repetition's Deployment (named
    /// `<deployment>-<pod-template-hash>`), a load generator pod by this repetition's Job
    /// (`job_uid`). Labels alone can be copied onto a pod made by hand; the owner cannot, and
    /// a pod nobody owns is never read as a replica or a result.
    pub fn owns(&self, role: &str, pod: &Pod, job_uid: Option<&str>) -> bool {
        let Some(owner) = controller_of(pod) else {
            return false;
        };
        if role == ROLE_LOADGEN {
            owner.kind == "Job" && job_uid.is_some_and(|uid| owner.uid == uid)
        } else {
            // The hash the Deployment controller appends has no '-' of its own.
            owner.kind == "ReplicaSet"
                && owner
                    .name
                    .strip_prefix(&self.child_name())
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|hash| !hash.is_empty() && !hash.contains('-'))
        }
    }

    fn meta(&self, role: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(self.child_name()),
            namespace: self.run.namespace(),
            labels: Some(self.labels(role)),
            owner_references: self.run.controller_owner_ref(&()).map(|o| vec![o]),
            ..ObjectMeta::default()
        }
    }
}

/// The controlling owner of `pod`, if it has one.
pub fn controller_of(pod: &Pod) -> Option<&OwnerReference> {
    pod.metadata
        .owner_references
        .as_deref()?
        .iter()
        .find(|o| o.controller == Some(true))
}

/// The objects of one repetition of `cell` of a validated run.
pub fn cell_run<'a>(v: &'a ValidatedRun, cell: &'a Cell, repetition: u32) -> CellRun<'a> {
    CellRun {
        run: v.run(),
        cell: &cell.name,
        repetition,
    }
}

fn k8s_quantity(q: &Quantity) -> K8sQuantity {
    K8sQuantity(q.as_str().to_owned())
}

/// requests == limits, so pods get the Guaranteed QoS class and a hard CPU quota.
fn resources(cpu: &Quantity, memory: &Quantity) -> ResourceRequirements {
    let both = BTreeMap::from([
        ("cpu".to_owned(), k8s_quantity(cpu)),
        ("memory".to_owned(), k8s_quantity(memory)),
    ]);
    ResourceRequirements {
        limits: Some(both.clone()),
        requests: Some(both),
        ..ResourceRequirements::default()
    }
}

fn pod_security() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(NON_ROOT_UID),
        run_as_group: Some(NON_ROOT_UID),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..SeccompProfile::default()
        }),
        ..PodSecurityContext::default()
    }
}

/// The container security context Pod Security "restricted" asks for.
pub fn container_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Capabilities::default()
        }),
        ..SecurityContext::default()
    }
}

fn env(name: &str, value: impl Into<String>) -> K8sEnvVar {
    K8sEnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..K8sEnvVar::default()
    }
}

/// The target Deployment of a cell, its pods on `pin_to_nodes` when given (a round's later
/// variants, on the nodes of its first).
pub fn deployment(
    v: &ValidatedRun,
    cell: &Cell,
    repetition: u32,
    default_image: &str,
    pin_to_nodes: Vec<String>,
) -> Deployment {
    let at = cell_run(v, cell, repetition);
    let spec = v.spec();
    let pod_labels = at.labels(ROLE_TARGET);
    // Validation parsed the template already; a run whose template does not parse never gets
    // this far.
    let template = template::merge(
        spec.target_of(cell.variant.as_ref()).parsed_template(),
        OwnedPod {
            labels: pod_labels.clone(),
            container: target_container(v.spec(), cell, default_image),
            security: pod_security(),
            node_selector: spec.placement.node_selector.clone(),
            tolerations: spec.placement.tolerations.clone(),
            pin_to_nodes,
        },
    );
    Deployment {
        metadata: at.meta(ROLE_TARGET),
        spec: DeploymentSpec {
            replicas: Some(cell.replicas as i32),
            selector: LabelSelector {
                match_labels: Some(pod_labels),
                ..LabelSelector::default()
            },
            // Replace rather than roll: a benchmark never wants two generations side by side.
            strategy: Some(DeploymentStrategy {
                type_: Some("Recreate".into()),
                ..DeploymentStrategy::default()
            }),
            template,
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}

/// The target container of a cell's pods, as the operator owns it: image, ports, the
/// environment that sets its mode, pool and port, its resources and readiness probe.
fn target_container(spec: &BenchmarkRunSpec, cell: &Cell, default_image: &str) -> Container {
    let port = i32::from(spec.target.port);
    // The cell's own env comes last and wins, as in the local runner: a Node target's cell may
    // set BENCH_MODE=cluster itself. Duplicate names would be refused by the API server.
    let mut built_in = vec![
        EnvVar::new("BENCH_MODE", cell.mode.as_str()),
        EnvVar::new("BENCH_POOL_SIZE", cell.pool_size.env_value()),
        EnvVar::new("PORT", spec.target.port.to_string()),
    ];
    let mut ports = vec![container_port("http", port)];
    if let Some(stats) = stats_port(spec, cell) {
        built_in.push(EnvVar::new(STATS_PORT_ENV, stats.to_string()));
        ports.push(container_port("stats", i32::from(stats)));
    }
    let env_vars: Vec<K8sEnvVar> = merge_env(&built_in, &cell.env)
        .into_iter()
        .map(|v| env(&v.name, v.value))
        .collect();
    Container {
        name: target_container_name(spec, cell.variant.as_ref()),
        image: Some(
            spec.target_of(cell.variant.as_ref())
                .image
                .unwrap_or(default_image)
                .to_owned(),
        ),
        ports: Some(ports),
        env: Some(env_vars),
        resources: Some(resources(&cell.cpu, &cell.memory)),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some(spec.target.readiness_path.clone()),
                port: IntOrString::Int(port),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(1),
            failure_threshold: Some(3),
            ..Probe::default()
        }),
        security_context: Some(container_security()),
        ..Container::default()
    }
}

fn container_port(name: &str, port: i32) -> ContainerPort {
    ContainerPort {
        name: Some(name.into()),
        container_port: port,
        ..ContainerPort::default()
    }
}

/// The name of a run's target container in its pods: the template's target container's (the
/// one named `target`, else its first), else [`TARGET_CONTAINER`].
pub fn target_container_name(spec: &BenchmarkRunSpec, variant: Option<&Variant>) -> String {
    let template = spec.target_of(variant).parsed_template();
    pod_template::target_container_name(template.as_ref(), TARGET_CONTAINER)
}

/// Whether a variant's cells (or, `None`, every cell of a run without variants) deploy the
/// built-in target: they name no image of their own, neither as an image nor on their
/// template's target container.
pub fn runs_built_in_target(spec: &BenchmarkRunSpec, variant: Option<&Variant>) -> bool {
    let target = spec.target_of(variant);
    if target.image.is_some() {
        return false;
    }
    let template = target.parsed_template();
    let own_image = template
        .as_ref()
        .and_then(|t| t.spec.as_ref())
        .and_then(|s| {
            pod_template::target_index(&s.containers).and_then(|i| s.containers[i].image.clone())
        });
    own_image.is_none()
}

/// The ClusterIP Service in front of a cell's replicas.
pub fn service(v: &ValidatedRun, cell: &Cell, repetition: u32) -> Service {
    let at = cell_run(v, cell, repetition);
    let port = i32::from(v.spec().target.port);
    let mut selector = at.labels(ROLE_TARGET);
    selector.remove(MANAGED_BY_LABEL);
    Service {
        metadata: at.meta(ROLE_TARGET),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            selector: Some(selector),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port,
                target_port: Some(IntOrString::Int(port)),
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// The port a cell's pods serve their statistics on apart from the workload: [`STATS_PORT`]
/// for the built-in target, unless the cell sets BENCH_STATS_PORT itself; `None` for a custom
/// image, which is read on its main port as before.
pub fn stats_port(spec: &BenchmarkRunSpec, cell: &Cell) -> Option<u16> {
    let built_in = runs_built_in_target(spec, cell.variant.as_ref());
    let own = cell.env.iter().any(|e| e.name == STATS_PORT_ENV);
    (built_in && !own && spec.target.port != STATS_PORT).then_some(STATS_PORT)
}

/// Each pod's statistics address for the plan: the pod address ("IP:PORT", as in `replicas`)
/// with the port replaced by `stats_port`; empty without one.
pub fn stats_addresses(replicas: &[String], stats_port: Option<u16>) -> Vec<String> {
    let Some(port) = stats_port else {
        return Vec::new();
    };
    replicas
        .iter()
        .filter_map(|r| r.rsplit_once(':').map(|(host, _)| format!("{host}:{port}")))
        .collect()
}

/// The plan file of load generator `index` of `parallelism` for `load`: its share of the
/// connections (a remainder goes to the lower indices) and of the rate.
pub fn plan_share(
    spec: &BenchmarkRunSpec,
    load: &Load,
    target: &str,
    replicas: &[String],
    index: u32,
    parallelism: u32,
) -> PlanFile {
    // Header values kept in Secrets are named by environment variable (see `loadgen_env`):
    // the plan, and so the ConfigMap, never holds one.
    let workload = share_workload(&to_env(&load.workload), index, parallelism);
    PlanFile {
        target: target.to_owned(),
        replicas: replicas.to_vec(),
        // Set by `plan_config_map`, which knows the cell (see `stats_port`).
        stats_addresses: Vec::new(),
        // With round-robin spread, generator i's k-th connection is connection i + k * n of
        // the whole, so the generators together deal the pods in turn.
        generator_index: index,
        generators: parallelism.max(1),
        stats_path: Some(spec.target.stats_path.clone()),
        threads: spec.loadgen.threads,
        workload,
        // Each generator checks, before its warm-up, that the Service (or every pod, with
        // round-robin spread) answers: a ready pod does not mean kube-proxy has programmed
        // the new Service yet.
        preflight: Some(crate::resource::preflight(spec)),
        no_success_is_a_result: load.no_success_is_a_result(),
    }
}

fn share_workload(workload: &Workload, index: u32, n: u32) -> Workload {
    let mut w = workload.clone();
    if n <= 1 {
        return w;
    }
    for phase in &mut w.phases {
        for s in &mut phase.load {
            *s = Stream {
                endpoint: s.endpoint.clone(),
                connections: s.connections.map(|c| c / n + u32::from(index < c % n)),
                rate: s.rate.map(|r| r / f64::from(n)),
            };
        }
    }
    w
}

/// The ConfigMap holding one plan file per load generator (`plan-<index>.yaml`) of `load`.
pub fn plan_config_map(
    v: &ValidatedRun,
    load: &Load,
    cell: &Cell,
    repetition: u32,
    target: &str,
    replicas: &[String],
) -> ConfigMap {
    let spec = v.spec();
    let n = spec.loadgen.generators();
    let data = (0..n)
        .map(|i| {
            let mut plan = plan_share(spec, load, target, replicas, i, n);
            plan.stats_addresses = stats_addresses(replicas, stats_port(spec, cell));
            (
                format!("plan-{i}.yaml"),
                serde_yaml::to_string(&plan).unwrap_or_default(),
            )
        })
        .collect();
    ConfigMap {
        metadata: cell_run(v, cell, repetition).meta(ROLE_LOADGEN),
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// The load generator's environment: one variable per header value kept in a Secret, filled
/// by the kubelet from the Secret (`valueFrom.secretKeyRef`), so the operator never reads it.
/// A missing Secret or key keeps the pod from starting (`CreateContainerConfigError`).
fn loadgen_env(v: &ValidatedRun) -> Option<Vec<K8sEnvVar>> {
    let env: Vec<K8sEnvVar> = secret_envs(&v.spec().workload)
        .into_iter()
        .map(|s| K8sEnvVar {
            name: s.env,
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: s.secret.name,
                    key: s.secret.key,
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            }),
            ..K8sEnvVar::default()
        })
        .collect();
    non_empty_vec(env)
}

/// The load generator Job of a cell.
///
/// `backoffLimit: 0`: a retried load generator would measure twice and hide the failure.
/// Indexed completions give each pod its own plan file through `$(JOB_COMPLETION_INDEX)`.
/// The result travels in the pod log's last line (see `reconciler::observe`), not in the
/// termination message, which is cut at 4 KiB; `FallbackToLogsOnError` still puts the last log
/// lines of a failed pod there, which is where the failure cause is read from.
pub fn job(v: &ValidatedRun, cell: &Cell, repetition: u32, default_image: &str) -> Job {
    let at = cell_run(v, cell, repetition);
    let spec = v.spec();
    let n = spec.loadgen.generators() as i32;
    let pod_labels = at.labels(ROLE_LOADGEN);
    // Whole seconds, rounded up, and at least one second beyond the planned load.
    let deadline = v
        .load_deadline()
        .max(v.planned_load() + std::time::Duration::from_secs(1))
        .as_secs_f64()
        .ceil() as i64;
    let affinity = spec
        .placement
        .separate_loadgen
        .then(|| away_from_target(&at));
    let name = at.child_name();
    Job {
        metadata: at.meta(ROLE_LOADGEN),
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            completions: Some(n),
            parallelism: Some(n),
            completion_mode: Some("Indexed".into()),
            active_deadline_seconds: Some(deadline),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    containers: vec![Container {
                        name: LOADGEN_CONTAINER.into(),
                        image: Some(
                            spec.loadgen
                                .image
                                .clone()
                                .unwrap_or_else(|| default_image.into()),
                        ),
                        args: Some(vec![
                            "--plan".into(),
                            format!("{PLAN_DIR}/plan-$(JOB_COMPLETION_INDEX).yaml"),
                            "--json".into(),
                        ]),
                        env: loadgen_env(v),
                        resources: Some(resources(&spec.loadgen.cpu, &spec.loadgen.memory)),
                        volume_mounts: Some(vec![VolumeMount {
                            name: "plan".into(),
                            mount_path: PLAN_DIR.into(),
                            read_only: Some(true),
                            ..VolumeMount::default()
                        }]),
                        termination_message_policy: Some("FallbackToLogsOnError".into()),
                        security_context: Some(container_security()),
                        ..Container::default()
                    }],
                    volumes: Some(vec![Volume {
                        name: "plan".into(),
                        config_map: Some(ConfigMapVolumeSource {
                            name: name.clone(),
                            ..ConfigMapVolumeSource::default()
                        }),
                        ..Volume::default()
                    }]),
                    security_context: Some(pod_security()),
                    automount_service_account_token: Some(false),
                    enable_service_links: Some(false),
                    affinity,
                    node_selector: non_empty(spec.placement.node_selector.clone()),
                    tolerations: non_empty_vec(spec.placement.tolerations.clone()),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    }
}

/// A preferred (not required) anti-affinity to the nodes of the cell's target pods, so the load
/// generator does not compete with them for CPU when the cluster has room elsewhere.
fn away_from_target(at: &CellRun) -> Affinity {
    let mut target = at.labels(ROLE_TARGET);
    target.remove(MANAGED_BY_LABEL);
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: PodAffinityTerm {
                        label_selector: Some(LabelSelector {
                            match_labels: Some(target),
                            ..LabelSelector::default()
                        }),
                        topology_key: "kubernetes.io/hostname".into(),
                        ..PodAffinityTerm::default()
                    },
                },
            ]),
            ..PodAntiAffinity::default()
        }),
        ..Affinity::default()
    }
}

fn non_empty(map: BTreeMap<String, String>) -> Option<BTreeMap<String, String>> {
    (!map.is_empty()).then_some(map)
}

fn non_empty_vec<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{connections, header, phase, post, secret_header};
    use crate::resource::Configuration;
    use crate::resource::Mode;
    use benchmatrix_loadgen::plan::Spread;

    /// The load of a step of a run at `spec`'s own workload.
    fn fixed_load(spec: &BenchmarkRunSpec) -> Load {
        Load {
            workload: spec.workload.clone(),
            probe: None,
        }
    }

    /// Every object of a repetition carries the run's UID and the repetition (the first
    /// too), and its selectors ask for both: nothing of an earlier run of the same name, nor of
    /// another repetition, matches.
    #[test]
    fn labels_and_selectors_name_the_run_by_uid_and_every_repetition() {
        let run = BenchmarkRun::sample()
            .named("r")
            .with_uid("uid-now")
            .with_cell(Configuration::named("a"));
        let first = CellRun {
            run: &run,
            cell: "a",
            repetition: 1,
        };
        let labels = first.labels(ROLE_LOADGEN);
        assert_eq!(labels[RUN_UID_LABEL], "uid-now");
        assert_eq!(labels[REPETITION_LABEL], "1");
        assert_eq!(
            first.selector(ROLE_LOADGEN),
            "benchmatrix.dev/cell=a,benchmatrix.dev/repetition=1,benchmatrix.dev/role=loadgen,\
             benchmatrix.dev/run=r,benchmatrix.dev/run-uid=uid-now"
        );
        assert!(first.selects(ROLE_LOADGEN, &labels));
        let mut earlier = labels.clone();
        earlier.insert(RUN_UID_LABEL.into(), "uid-before".into());
        assert!(!first.selects(ROLE_LOADGEN, &earlier));
        let mut before_uids = labels.clone();
        before_uids.remove(RUN_UID_LABEL);
        before_uids.remove(REPETITION_LABEL);
        assert!(!first.selects(ROLE_LOADGEN, &before_uids));
        let second = CellRun {
            repetition: 2,
            ..first
        };
        assert!(!second.selects(ROLE_LOADGEN, &labels));
        assert!(!first.selects(ROLE_TARGET, &labels));
    }

    /// A pod counts only when its own controller made it: a load generator pod by the
    /// repetition's Job (by UID), a target pod by a ReplicaSet of the repetition's Deployment.
    #[test]
    fn a_pod_is_the_repetitions_only_when_its_controller_is() {
        let run = BenchmarkRun::sample()
            .named("r")
            .with_uid("uid-now")
            .with_cell(Configuration::named("a"));
        let at = CellRun {
            run: &run,
            cell: "a",
            repetition: 1,
        };
        let owned_by = |kind: &str, name: &str, uid: &str, controller: bool| Pod {
            metadata: ObjectMeta {
                owner_references: Some(vec![OwnerReference {
                    kind: kind.into(),
                    name: name.into(),
                    uid: uid.into(),
                    controller: Some(controller),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        let job = owned_by("Job", &at.child_name(), "job-now", true);
        assert!(at.owns(ROLE_LOADGEN, &job, Some("job-now")));
        assert!(!at.owns(ROLE_LOADGEN, &job, Some("job-before")));
        assert!(!at.owns(ROLE_LOADGEN, &job, None));
        assert!(!at.owns(ROLE_LOADGEN, &Pod::default(), Some("job-now")));
        let not_controller = owned_by("Job", &at.child_name(), "job-now", false);
        assert!(!at.owns(ROLE_LOADGEN, &not_controller, Some("job-now")));

        let replica_set = format!("{}-7c9f6d8b5", at.child_name());
        assert!(at.owns(
            ROLE_TARGET,
            &owned_by("ReplicaSet", &replica_set, "rs", true),
            None
        ));
        let other = CellRun {
            repetition: 2,
            ..at
        };
        assert!(!other.owns(
            ROLE_TARGET,
            &owned_by("ReplicaSet", &replica_set, "rs", true),
            None
        ));
        for another in ["x-7c9f6d8b5", "-0badc0de-7c9f6d8b5", "-"] {
            let name = format!("{}{another}", at.child_name());
            assert!(!at.owns(
                ROLE_TARGET,
                &owned_by("ReplicaSet", &name, "rs", true),
                None
            ));
        }
        assert!(!at.owns(ROLE_TARGET, &Pod::default(), None));
    }

    #[test]
    fn round_robin_plans_carry_the_spread_and_every_pod_address_to_each_generator() {
        let run = two_replica_run();
        crate::resource::validate::validate_run(&run).expect("the spec is valid");
        let pods = ["10.1.0.1:8080".to_string(), "10.1.0.2:8080".to_string()];
        let load = fixed_load(&run.spec);
        for i in 0..2 {
            let plan = plan_share(&run.spec, &load, "http://10.96.0.10:8080", &pods, i, 2);
            // What the load generator will read back from the ConfigMap.
            let text = serde_yaml::to_string(&plan).unwrap();
            let back = benchmatrix_loadgen::plan::parse_plan_file(&text).unwrap();
            assert_eq!(
                back.workload.spread,
                benchmatrix_loadgen::plan::Spread::RoundRobin
            );
            assert_eq!(
                back.replicas, pods,
                "every pod, in one order for all generators"
            );
            assert_eq!(back.workload.phases[0].load[0].connections, Some(1));
            // Generator i deals connections i, i + 2, ... of the whole: with one connection
            // each, generator 0 reaches the first pod and generator 1 the second (the loadgen's
            // spread test checks that dealing against real servers).
            assert_eq!((back.generator_index, back.generators), (i, 2));
        }
    }

    /// Each variant's cells run its image and environment; a round's later variant is pinned
    /// to the nodes of its first.
    #[test]
    fn a_variants_cells_run_its_image_and_env_on_the_rounds_nodes() {
        use crate::resource::Variant;
        let run = BenchmarkRun::sample()
            .with_uid("0000-1111")
            .with_cell(Configuration::named("c"))
            .with_variant(Variant::named("base").image("app:main"))
            .with_variant(
                Variant::named("next")
                    .image("app:pr")
                    .env("BENCH_FAST_MS", "22"),
            );
        let v = ValidatedRun::for_cluster(run).expect("the spec is valid");
        let names: Vec<&str> = v.cells().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["c-base", "c-next"]);
        let container = |i: usize, pin: Vec<String>| {
            let dep = deployment(&v, &v.cells()[i], 1, "default-image", pin);
            let pod = dep.spec.template.spec.unwrap();
            (pod.containers[0].clone(), pod.affinity)
        };
        let (base, free) = container(0, Vec::new());
        assert_eq!(base.image.as_deref(), Some("app:main"));
        assert!(
            free.is_none(),
            "the round's first variant goes where it is scheduled"
        );
        let (next, pinned) = container(1, vec!["node-2".into()]);
        assert_eq!(next.image.as_deref(), Some("app:pr"));
        let env = next.env.unwrap_or_default();
        assert!(
            env.iter()
                .any(|e| e.name == "BENCH_FAST_MS" && e.value.as_deref() == Some("22")),
            "{env:?}"
        );
        let affinity = serde_json::to_string(&pinned.expect("pinned")).unwrap();
        assert!(
            affinity.contains("requiredDuringSchedulingIgnoredDuringExecution"),
            "{affinity}"
        );
        assert!(affinity.contains("node-2"), "{affinity}");
    }

    /// The plans of `run`'s first cell for two pods, read back as the load generator reads
    /// them, and the cell's target container.
    fn plans_and_container(run: BenchmarkRun) -> (Vec<PlanFile>, Container) {
        let v = ValidatedRun::for_cluster(run).expect("the spec is valid");
        let cell = &v.cells()[0];
        let pods = ["10.1.0.1:8080".to_string(), "10.1.0.2:8080".to_string()];
        let load = fixed_load(v.spec());
        let cm = plan_config_map(&v, &load, cell, 1, "http://10.96.0.10:8080", &pods);
        let plans = cm
            .data
            .unwrap()
            .values()
            .map(|t| benchmatrix_loadgen::plan::parse_plan_file(t).unwrap())
            .collect();
        let dep = deployment(&v, cell, 1, "default-image", Vec::new());
        let container = dep.spec.template.spec.unwrap().containers[0].clone();
        (plans, container)
    }

    /// One cell of two replicas, round-robin spread, two load generators.
    fn two_replica_run() -> BenchmarkRun {
        BenchmarkRun::sample()
            .with_uid("0000-1111")
            .with_cell(Configuration::named("x2").replicas(2))
            .with_load_generators(2)
            .with_spread(Spread::RoundRobin)
            .with_phases([phase("p", "1s", [connections("fast", 2)])])
    }

    #[test]
    fn every_plan_checks_the_target_on_its_readiness_path_for_the_ready_timeout() {
        let (plans, _) = plans_and_container(two_replica_run());
        for plan in &plans {
            let p = plan.preflight.as_ref().expect("a preflight check");
            assert_eq!(p.path, "/healthz");
            assert_eq!(
                p.timeout,
                benchmatrix_loadgen::plan::Duration::from_secs(300)
            );
        }
        let custom = two_replica_run()
            .with_readiness_path("/ready")
            .with_ready_timeout("40s");
        let (plans, _) = plans_and_container(custom.clone());
        let p = plans[1].preflight.as_ref().unwrap();
        assert_eq!(
            (p.path.as_str(), p.timeout.to_string()),
            ("/ready", "40s".into())
        );
        // The Job's deadline leaves room for the whole check before warm-up, phases and slack.
        let v = ValidatedRun::for_cluster(custom).unwrap();
        let j = job(&v, &v.cells()[0], 1, "img");
        assert_eq!(
            j.spec.unwrap().active_deadline_seconds,
            Some(40 + 1 + 120),
            "ready 40 s + 1 s phase + the default 2 m slack"
        );
    }

    #[test]
    fn the_built_in_target_is_read_on_its_statistics_port_and_a_custom_image_on_its_own() {
        let (plans, c) = plans_and_container(two_replica_run());
        assert_eq!(plans.len(), 2);
        for plan in &plans {
            assert_eq!(plan.stats_addresses, ["10.1.0.1:9091", "10.1.0.2:9091"]);
            assert_eq!(plan.replicas, ["10.1.0.1:8080", "10.1.0.2:8080"]);
        }
        let env = c.env.unwrap();
        let stats_env: Vec<_> = env
            .iter()
            .filter(|e| e.name == "BENCH_STATS_PORT")
            .collect();
        assert_eq!(stats_env.len(), 1, "{env:?}");
        assert_eq!(stats_env[0].value.as_deref(), Some("9091"));
        let ports = c.ports.unwrap();
        assert!(
            ports
                .iter()
                .any(|p| p.name.as_deref() == Some("stats") && p.container_port == 9091),
            "{ports:?}"
        );
        // Readiness stays on the workload's port.
        let probe = c.readiness_probe.unwrap().http_get.unwrap();
        assert_eq!(probe.port, IntOrString::Int(8080));

        let (plans, c) = plans_and_container(two_replica_run().with_target_image("example/node:1"));
        for plan in &plans {
            assert!(plan.stats_addresses.is_empty(), "{plan:?}");
        }
        assert!(!c.env.unwrap().iter().any(|e| e.name == "BENCH_STATS_PORT"));
        assert_eq!(c.ports.unwrap().len(), 1);
    }

    #[test]
    fn a_cells_own_env_replaces_a_built_in_variable_instead_of_repeating_it() {
        let run = BenchmarkRun::sample()
            .with_uid("0000-1111")
            .with_target_image("example/node-express:1")
            .with_cell(
                Configuration::named("cluster")
                    .mode(Mode::Threads)
                    .cpu("2")
                    .env("BENCH_MODE", "cluster")
                    .env("WEB_CONCURRENCY", "2"),
            );
        let v = ValidatedRun::for_cluster(run).expect("the spec is valid");
        let cell = &v.cells()[0];
        let dep = deployment(&v, cell, 1, "default-image", Vec::new());
        let env = dep.spec.template.spec.unwrap().containers[0]
            .env
            .clone()
            .unwrap();
        let modes: Vec<_> = env.iter().filter(|e| e.name == "BENCH_MODE").collect();
        assert_eq!(modes.len(), 1, "{env:?}");
        assert_eq!(modes[0].value.as_deref(), Some("cluster"));
        assert!(env.iter().any(|e| e.name == "WEB_CONCURRENCY"));
        assert!(env.iter().any(|e| e.name == "PORT"));
    }

    /// One cell, two load generators, a POST whose bearer token is kept in a Secret.
    fn secret_header_run() -> BenchmarkRun {
        BenchmarkRun::sample()
            .with_uid("0000-1111")
            .with_cell(Configuration::named("x1"))
            .with_load_generators(2)
            .with_endpoints([post(
                "order",
                "/orders",
                [
                    header("Content-Type", "application/json"),
                    secret_header("Authorization", "api-token", "token"),
                ],
                r#"{"item": 1}"#,
            )])
            .with_phases([phase("p", "1s", [connections("order", 2)])])
    }

    #[test]
    fn a_secret_header_reaches_the_job_as_secret_key_ref_env_and_the_plans_name_only_the_variable()
    {
        let v = ValidatedRun::for_cluster(secret_header_run()).expect("valid");
        let cell = &v.cells()[0];
        let job = job(&v, cell, 1, "loadgen-image");
        let container = &job.spec.unwrap().template.spec.unwrap().containers[0];
        let env = container.env.clone().expect("the load generator has env");
        assert_eq!(env.len(), 1, "{env:?}");
        assert_eq!(env[0].name, "BENCHMATRIX_HEADER_0_1");
        assert_eq!(env[0].value, None, "never a literal value");
        let key = env[0]
            .value_from
            .as_ref()
            .and_then(|f| f.secret_key_ref.as_ref())
            .expect("from a Secret");
        assert_eq!(
            (key.name.as_str(), key.key.as_str()),
            ("api-token", "token")
        );
        assert_eq!(key.optional, Some(false));

        let pods = ["10.1.0.1:8080".to_string()];
        let load = fixed_load(v.spec());
        let cm = plan_config_map(&v, &load, cell, 1, "http://10.96.0.10:8080", &pods);
        let data = cm.data.unwrap();
        assert_eq!(data.len(), 2);
        for text in data.values() {
            // The plan names the variable, and neither the Secret nor a value.
            assert!(
                !text.contains("api-token") && !text.contains("secretKeyRef"),
                "{text}"
            );
            let plan = benchmatrix_loadgen::plan::parse_plan_file(text).unwrap();
            let e = &plan.workload.endpoints[0];
            assert_eq!(
                e.headers[1].value_from.as_ref().unwrap().env.as_deref(),
                Some("BENCHMATRIX_HEADER_0_1")
            );
            assert_eq!(e.method_or_default(), "POST");
            assert_eq!(e.body.as_deref(), Some(r#"{"item": 1}"#));
            assert_eq!(plan.workload.phases[0].load[0].connections, Some(1));
            // What the load generator does with it: read the variable, build the request.
            let mut env = std::collections::HashMap::new();
            env.insert("BENCHMATRIX_HEADER_0_1", "Bearer t0k");
            let values = benchmatrix_loadgen::request::HeaderValues::read(&plan.workload, |n| {
                env.get(n).map(Into::into)
            })
            .unwrap();
            let built =
                benchmatrix_loadgen::request::build::build("h", "/orders", e, &values).unwrap();
            let wire = String::from_utf8(built.bytes).unwrap();
            assert!(wire.contains("\r\nAuthorization: Bearer t0k\r\n"), "{wire}");
        }
    }

    #[test]
    fn a_run_without_secret_headers_gives_the_load_generator_no_env() {
        let v = ValidatedRun::for_cluster(two_replica_run()).expect("valid");
        let job = job(&v, &v.cells()[0], 1, "loadgen-image");
        assert_eq!(
            job.spec.unwrap().template.spec.unwrap().containers[0].env,
            None
        );
    }
}
