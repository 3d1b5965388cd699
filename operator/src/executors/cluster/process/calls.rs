//! Every kind of Kubernetes API call the operator makes, as RBAC sees it.
//!
//! This is the source of truth for the Helm chart's ClusterRole: tests/tests/chart.rs checks that
//! the rendered rules allow each of these calls and grant nothing else. The list cannot fall behind
//! the code: the reconciler's tests record every request their faked API server answers
//! (operator/src/executors/cluster/tests/fake.rs) and fail when one is not listed here; and one of
//! them (`every_listed_reconciler_call_is_made_by_a_run_with_a_ttl`) fails when a listed reconciler
//! call is never made, so the list, and the ClusterRole, hold nothing stale.

/// One kind of API call, by what an RBAC authorizer checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiCall {
    /// The RBAC verb: get, list, watch, create, patch, update, delete.
    pub verb: &'static str,
    /// API group; "" is the core group.
    pub group: &'static str,
    /// Resource plural, e.g. "deployments".
    pub resource: &'static str,
    /// Subresource ("status", "log"), or "" for the object itself.
    pub subresource: &'static str,
    /// Whether the call is made within one namespace (false: across all namespaces, or on a
    /// cluster-scoped resource such as nodes). A ClusterRole grants both; a namespaced Role
    /// could grant only the former.
    pub namespaced: bool,
}

impl ApiCall {
    /// The resource as written in an RBAC rule: "pods/log", "benchmarkruns/status", "jobs".
    pub fn rbac_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.to_owned()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

impl std::fmt::Display for ApiCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            self.group
        };
        let scope = if self.namespaced {
            "namespaced"
        } else {
            "cluster-wide"
        };
        write!(
            f,
            "{} {group}/{} ({scope})",
            self.verb,
            self.rbac_resource()
        )
    }
}

const fn call(
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
    namespaced: bool,
) -> ApiCall {
    ApiCall {
        verb,
        group,
        resource,
        subresource,
        namespaced,
    }
}

/// The BenchmarkRun's API group (a test checks it against the CRD's).
const GROUP: &str = "benchmatrix.dev";
const RUNS: &str = "benchmarkruns";

/// Every API call the operator makes, with why.
///
/// The reconciler's calls are the ones its faked-API tests record. The Controller's watches are
/// made by kube's runtime (`Controller::new(...).owns(...).watches(...)` in process/wiring.rs), not
/// by `reconcile`: a list, then a watch from its resourceVersion, for BenchmarkRuns and for the
/// Deployments, Services, Jobs and pods the operator labels (the Deployments, Services and pods are
/// cached for the reconciles, `children/child_caches.rs`); across all namespaces by default, within
/// each namespace given with `--namespace` otherwise (a test runs the Controllers over the faked
/// API in that mode and records them).
pub const API_CALLS: &[ApiCall] = &[
    // kube's Controller: the watches that feed it (all namespaces).
    call("list", GROUP, RUNS, "", false),
    call("watch", GROUP, RUNS, "", false),
    call("list", "apps", "deployments", "", false),
    call("watch", "apps", "deployments", "", false),
    call("list", "batch", "jobs", "", false),
    call("watch", "batch", "jobs", "", false),
    call("list", "", "services", "", false),
    call("watch", "", "services", "", false),
    // (The list of pods in every namespace is also reconciler/observe.rs's: what other pods request
    // on each node, as a parallel run cuts its node sets; a namespaced install may not, and cuts
    // them from allocatable.)
    call("list", "", "pods", "", false),
    call("watch", "", "pods", "", false),
    // The same watches with `--namespace`, one namespace each (the namespaced list of pods is
    // reconciler/observe.rs's too, below).
    call("list", GROUP, RUNS, "", true),
    call("watch", GROUP, RUNS, "", true),
    call("list", "apps", "deployments", "", true),
    call("watch", "apps", "deployments", "", true),
    call("list", "batch", "jobs", "", true),
    call("watch", "batch", "jobs", "", true),
    call("list", "", "services", "", true),
    call("watch", "", "services", "", true),
    call("watch", "", "pods", "", true),
    // reconciler/observe.rs: the current cell's children, read by name.
    call("get", "apps", "deployments", "", true),
    call("get", "", "services", "", true),
    call("get", "batch", "jobs", "", true),
    // reconciler/observe.rs: the cell's pods by label (replica addresses for /stats, failure
    // causes, terminating pods of the previous cell), and the load generator's log, whose last line
    // is its result document (it can exceed the 4 KiB termination-message limit).
    call("list", "", "pods", "", true),
    call("get", "", "pods", "log", true),
    // reconciler/observe.rs: the nodes, before a cell is deployed, so a cell whose pods can never
    // fit the nodes spec.placement lets them use fails at once (placement/fit.rs). Nodes are
    // cluster-scoped: only a ClusterRole can grant this. They are kept by a watch
    // (placement/node_cache.rs, NODE_WATCH_CALLS) and listed by the reconcile only while that watch
    // does not follow them.
    call("list", "", "nodes", "", false),
    call("watch", "", "nodes", "", false),
    // reconciler/observe.rs: the run's namespace, while the run is pending, for its
    // pod-security.kubernetes.io/enforce label, which can make the operator's Pod Security
    // level stricter there (children/pod_security/). Namespaces are cluster-scoped.
    call("get", "", "namespaces", "", false),
    // kubelet/reader.rs: each target pod's kubelet, read directly (never through the API
    // server's nodes/proxy): the kubelet asks the API server whether the operator may get
    // nodes/metrics (for /metrics/resource and /metrics/cadvisor). Not an API server call, so
    // the faked API never sees it: see KUBELET_CALLS.
    call("get", "", "nodes", "metrics", false),
    // reconciler/write.rs: children by server-side apply (a PATCH; the API server checks create as
    // well when the apply makes a new object), and deleted per the cleanup policy.
    call("patch", "apps", "deployments", "", true),
    call("create", "apps", "deployments", "", true),
    call("delete", "apps", "deployments", "", true),
    call("patch", "", "services", "", true),
    call("create", "", "services", "", true),
    call("delete", "", "services", "", true),
    call("patch", "", "configmaps", "", true),
    call("create", "", "configmaps", "", true),
    call("delete", "", "configmaps", "", true),
    call("patch", "batch", "jobs", "", true),
    call("create", "batch", "jobs", "", true),
    call("delete", "batch", "jobs", "", true),
    // reconciler/reconcile.rs: the run itself, read again when the Controller's cached copy is not
    // the version of the operator's last status write (the cache can lag behind that write).
    call("get", GROUP, RUNS, "", true),
    // reconciler/write.rs: the status (server-side apply; a merge patch for an object that does not
    // decode), and the TTL's delete of a finished run.
    call("patch", GROUP, RUNS, "status", true),
    call("delete", GROUP, RUNS, "", true),
    // kube's event Recorder: creates events.k8s.io Events, and patches one that repeats into a
    // series (kube-runtime's events.rs; no test repeats an event within its cache window).
    call("create", "events.k8s.io", "events", "", true),
    call("patch", "events.k8s.io", "events", "", true),
    // reconciler/gate.rs: the installed BenchmarkRun CRD, read at start-up and every few seconds,
    // so an operator whose schema is not the CRD's reconciles nothing (see GATE_CALLS).
    call(
        "get",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "",
        false,
    ),
];

/// The calls of [`API_CALLS`] made by the node cache's watch (`placement/node_cache.rs`), not by a
/// reconcile (which lists nodes only when that watch does not follow them).
pub const NODE_WATCH_CALLS: &[ApiCall] = &[
    call("list", "", "nodes", "", false),
    call("watch", "", "nodes", "", false),
];

/// The calls of [`API_CALLS`] made by the gate (`reconciler/gate.rs`), not by a reconcile: the
/// faked API's reconciles never make them.
pub const GATE_CALLS: &[ApiCall] = &[call(
    "get",
    "apiextensions.k8s.io",
    "customresourcedefinitions",
    "",
    false,
)];

/// The calls of leader election (`leader.rs`, through kube-lease-manager, and the `get` of the
/// status writes' fence, `reconciler/gate.rs`), made on one Lease in
/// the operator's own namespace only when it runs with `--leader-elect`: the chart grants them
/// by a Role in its release namespace when `replicas` is above 1, never cluster-wide (a
/// ClusterRole could patch every node's heartbeat Lease). Not in [`API_CALLS`], whose rules go
/// to every watched namespace.
pub const LEASE_CALLS: &[ApiCall] = &[
    call("get", "coordination.k8s.io", "leases", "", true),
    call("create", "coordination.k8s.io", "leases", "", true),
    call("patch", "coordination.k8s.io", "leases", "", true),
];

/// The calls of [`API_CALLS`] that the kubelets authorize (with a SubjectAccessReview), not the
/// API server: the kubelet reader's test (kubelet/reader.rs) shows them made, since the faked
/// API server cannot.
pub const KUBELET_CALLS: &[ApiCall] = &[call("get", "", "nodes", "metrics", false)];

/// Whether `call` is one a Controller's watch streams make (a list or watch of BenchmarkRuns, or
/// of the Deployments, Services, Jobs and pods it watches), in either scope.
pub fn is_controller_watch(call: &ApiCall) -> bool {
    matches!(call.verb, "list" | "watch")
        && call.subresource.is_empty()
        && [
            (GROUP, RUNS),
            ("apps", "deployments"),
            ("batch", "jobs"),
            ("", "services"),
            ("", "pods"),
        ]
        .contains(&(call.group, call.resource))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;

    #[test]
    fn the_run_group_and_plural_are_the_crds() {
        use crate::resource::BenchmarkRun;
        assert_eq!(GROUP, BenchmarkRun::group(&()));
        assert_eq!(RUNS, BenchmarkRun::plural(&()));
    }

    #[test]
    fn the_list_has_no_duplicates_and_formats_for_rbac() {
        let mut seen = std::collections::BTreeSet::new();
        for c in API_CALLS {
            assert!(seen.insert(*c), "listed twice: {c}");
        }
        let log = call("get", "", "pods", "log", true);
        assert!(API_CALLS.contains(&log));
        assert_eq!(log.rbac_resource(), "pods/log");
        assert_eq!(log.to_string(), "get core/pods/log (namespaced)");
        assert!(!API_CALLS.contains(&call("get", "", "secrets", "", true)));
    }
}
