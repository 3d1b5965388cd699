//! What `decide` takes and returns: the observation of the cluster, and the decision (the next
//! status, the actions on child objects, the Events, when to look again).

use std::time::Duration;

use benchmatrix_loadgen::result::RunResult;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Service};

use crate::engine::machine::QueuePlace;
use crate::executors::cluster::children::images;
use crate::resource::BenchmarkRunStatus;

/// What the operator saw of the current cell's children.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// The cell's target Deployment, when it exists (read while deploying).
    pub deployment: Option<Deployment>,
    /// The cell's Service, when it exists (read while deploying).
    pub service: Option<Service>,
    /// The cell's load generator Job, when it exists (read while running).
    pub job: Option<Job>,
    /// The cell's target pods.
    pub target_pods: Vec<Pod>,
    /// The result document (merged over load generators) or why it could not be had; read once
    /// the Job has completed.
    pub result: Option<Result<RunResult, String>>,
    /// The last log line of a failed load generator pod.
    pub loadgen_failure: Option<String>,
    /// The admission queue, from the operator's cache of all runs.
    pub queue: QueuePlace,
    /// Every pod of this run, read before a cell or repetition after the first is deployed: the
    /// previous step's pods must have stopped first.
    pub run_pods: Vec<Pod>,
    /// The cluster's nodes, read before a cell is deployed; `None` when not read (or the
    /// operator may not list them), so no fit check is made.
    pub nodes: Option<Vec<Node>>,
    /// Per node, what pods other than benchmark runs' request there, read before a parallel run
    /// cuts its node sets; `None` when not read (or the operator may not list pods in every
    /// namespace), and then the sets are cut from allocatable alone.
    pub node_requests: Option<
        std::collections::BTreeMap<String, crate::executors::cluster::placement::fit::PodRequest>,
    >,
    /// The kubelets' figures of the target containers over the measured phases, read with the
    /// result; `None` when the operator does not read kubelets or sampled nothing.
    pub kubelet: Option<crate::executors::cluster::telemetry::kubelet::ContainerFigures>,
    /// What else used the CPU of the target pods' nodes over the measured phases (not yet
    /// flagged busy), read with the result.
    pub neighbours: Vec<crate::resource::status::Neighbours>,
    /// Why [`Observation::neighbours`] is empty once the result is read: the operator does not
    /// read kubelets, or sampled nothing.
    pub neighbours_missing: Option<String>,
    /// The `pod-security.kubernetes.io/enforce` label of the run's namespace, read while the
    /// run is pending (before anything of it is created): it can make `--pod-security` stricter
    /// there. None: no label, or the namespace could not be read.
    pub namespace_pod_security: Option<String>,
    /// The load generator's pods, read while the load runs (one that cannot start fails the
    /// cell at once).
    pub loadgen_pods: Vec<Pod>,
    /// In a parallel run, what was seen of each other step of the turn, by cell: the fields
    /// above are then the first step's (and the run's: queue, pods, nodes).
    pub others: std::collections::BTreeMap<usize, Observation>,
}

impl Observation {
    /// What was seen of the step of cell `cell`: its own observation in a parallel run, else
    /// this one.
    pub fn of_cell(&self, cell: usize) -> &Observation {
        self.others.get(&cell).unwrap_or(self)
    }
}

/// One change to the cluster.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Server-side apply of a child object.
    Apply(Child),
    /// Delete a child object of this kind and name (gone already is fine).
    Delete(ChildKind, String),
    /// Delete the BenchmarkRun itself (its TTL has passed).
    DeleteRun,
}

impl Action {
    /// The action in a few words for the log, e.g. "apply Deployment x", "delete Job x".
    pub fn describe(&self) -> String {
        match self {
            Action::Apply(child) => {
                let (kind, meta) = match child {
                    Child::Deployment(o) => ("Deployment", &o.metadata),
                    Child::Service(o) => ("Service", &o.metadata),
                    Child::ConfigMap(o) => ("ConfigMap", &o.metadata),
                    Child::Job(o) => ("Job", &o.metadata),
                };
                format!("apply {kind} {}", meta.name.as_deref().unwrap_or("?"))
            }
            Action::Delete(kind, name) => format!("delete {kind:?} {name}"),
            Action::DeleteRun => "delete the run (TTL)".into(),
        }
    }

    /// The child object the action changes, by kind and name (`None`: the run itself).
    pub fn child(&self) -> Option<(ChildKind, &str)> {
        let (kind, meta) = match self {
            Action::Apply(Child::Deployment(o)) => (ChildKind::Deployment, &o.metadata),
            Action::Apply(Child::Service(o)) => (ChildKind::Service, &o.metadata),
            Action::Apply(Child::ConfigMap(o)) => (ChildKind::ConfigMap, &o.metadata),
            Action::Apply(Child::Job(o)) => (ChildKind::Job, &o.metadata),
            Action::Delete(kind, name) => return Some((*kind, name)),
            Action::DeleteRun => return None,
        };
        Some((kind, meta.name.as_deref().unwrap_or("")))
    }
}

/// A child object to apply.
#[derive(Debug, Clone, PartialEq)]
pub enum Child {
    /// The target Deployment.
    Deployment(Box<Deployment>),
    /// The target Service.
    Service(Box<Service>),
    /// The load plan.
    ConfigMap(Box<ConfigMap>),
    /// The load generator Job.
    Job(Box<Job>),
}

/// Kinds of child objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChildKind {
    /// apps/v1 Deployment.
    Deployment,
    /// v1 Service.
    Service,
    /// v1 ConfigMap.
    ConfigMap,
    /// batch/v1 Job.
    Job,
}

/// What one turn came to on the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The status to write (written only when it differs from the current one).
    pub status: BenchmarkRunStatus,
    /// Changes to the cluster, in order.
    pub actions: Vec<Action>,
    /// Events to publish.
    pub events: Vec<crate::engine::Note>,
    /// When to look again even if nothing is watched to change (a safety net for timeouts).
    pub requeue: Option<Duration>,
    /// What the engine's machine commanded, which `actions` and `requeue` carry out (kept for
    /// the log and for tests that hold the executors to the same commands).
    pub commands: Vec<crate::engine::machine::Command>,
}

/// Operator-wide settings that shape the objects it builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Target image for runs that do not name one.
    pub target_image: String,
    /// Load generator image for runs that do not name one.
    pub loadgen_image: String,
    /// The images runs may use (`--allowed-images`); the default allows every image.
    pub allowed_images: images::ImagePolicy,
    /// The Pod Security level every pod the operator creates must meet (`--pod-security`),
    /// before a namespace's own label makes it stricter.
    pub pod_security: benchmatrix_pod_security::Level,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            target_image: crate::resource::spec::DEFAULT_TARGET_IMAGE.into(),
            loadgen_image: crate::resource::spec::DEFAULT_LOADGEN_IMAGE.into(),
            allowed_images: images::ImagePolicy::default(),
            pod_security: benchmatrix_pod_security::Level::default(),
        }
    }
}
