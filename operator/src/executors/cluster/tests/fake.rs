//! A small stateful fake of the Kubernetes API server, as a tower service behind a real
//! `kube::Client`.
//!
//! It stores objects per resource, namespace and name (cluster-scoped ones, such as nodes, under
//! the namespace ""), and answers what the operator calls: GET (one object, a list filtered by
//! label selector, a pod log honouring tailLines and then limitBytes as the kubelet does),
//! PATCH (server-side apply,
//! creating or merging; the status subresource; a merge patch for Events), POST (Events) and
//! DELETE. Every call is recorded, so tests count them and check that nothing unexpected
//! happened; every first apply of a name is recorded as a creation, so tests can assert that
//! nothing was created twice. Every call is also recorded as RBAC sees it (verb, group,
//! resource, subresource, namespaced): [`FakeApi::undeclared_calls`] lists those missing from
//! `process::calls::API_CALLS`, the list the Helm chart's ClusterRole is checked against, and every
//! test harness fails on one when it is dropped. Tests play the cluster's other controllers by editing objects
//! (Deployment availability, pods, Job completion, logs), and inject failures (409, 403).
//!
//! Why not kube-fake-client: its 0.3 release pins kube 4.2 while this crate is on kube 5, and a
//! canned-reply mock (`tower_test::mock`) would script the very call sequence under test. The
//! fake is deliberately simple: server-side apply merges top-level fields (no field-ownership
//! tracking), a watch is accepted but never sends an event (tests call `reconcile` as the
//! controller would after each event; a real Controller over the fake sees what its first list
//! returned) unless a test turns events on with [`FakeApi::serve_watch_events`] (then every
//! change to a stored object is an ADDED, MODIFIED or DELETED event to the watches it matches,
//! as `kubectl benchmatrix run` follows a run), and there is no admission or CEL; the CRD's
//! rules are checked in the tests crate.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{self as http, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use serde_json::{Value, json};

use crate::executors::cluster::process::calls::{self, ApiCall};

/// One request the fake answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// HTTP method.
    pub method: String,
    /// Resource plural, e.g. "deployments".
    pub resource: String,
    /// Object name, when the call addressed one.
    pub name: Option<String>,
    /// Subresource ("status", "log").
    pub sub: Option<String>,
    /// The namespace in the path; None for a call across all namespaces.
    pub namespace: Option<String>,
}

impl Call {
    /// e.g. "PATCH deployments/x", "GET pods" (a list), "PATCH benchmarkruns/x/status".
    pub fn short(&self) -> String {
        let mut s = format!("{} {}", self.method, self.resource);
        if let Some(n) = &self.name {
            s.push('/');
            s.push_str(n);
        }
        if let Some(sub) = &self.sub {
            s.push('/');
            s.push_str(sub);
        }
        s
    }
}

/// A call as RBAC sees it; owned strings, as the fake reads them off the request.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RecordedCall {
    /// RBAC verb.
    pub verb: String,
    /// API group ("" = core).
    pub group: String,
    /// Resource plural.
    pub resource: String,
    /// Subresource or "".
    pub subresource: String,
    /// Made within one namespace.
    pub namespaced: bool,
}

impl RecordedCall {
    /// Whether `process::calls::API_CALLS` lists this call, or, for the Lease (which the status
    /// writes' fence reads), `LEASE_CALLS`, whose Role the chart grants with leader election.
    pub fn is_declared(&self) -> bool {
        calls::API_CALLS
            .iter()
            .chain(calls::LEASE_CALLS)
            .any(|c| self.matches(c))
    }

    fn matches(&self, c: &ApiCall) -> bool {
        c.verb == self.verb
            && c.group == self.group
            && c.resource == self.resource
            && c.subresource == self.subresource
            && c.namespaced == self.namespaced
    }
}

impl std::fmt::Display for RecordedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} group={:?} {}{}{} namespaced={}",
            self.verb,
            self.group,
            self.resource,
            if self.subresource.is_empty() { "" } else { "/" },
            self.subresource,
            self.namespaced
        )
    }
}

/// The body of the fake's responses: a whole document, or a watch's stream of events.
type FakeBody = UnsyncBoxBody<Bytes, Infallible>;

/// One change to a stored object, as a watch reports it.
#[derive(Clone)]
struct Change {
    /// The resourceVersion the change made (for a deletion, the next one).
    version: u64,
    key: Key,
    /// ADDED, MODIFIED or DELETED.
    kind: &'static str,
    object: Value,
}

/// An open watch with events turned on: what it selects, and where its events go.
struct Watch {
    resource: String,
    /// None: every namespace.
    namespace: Option<String>,
    /// `metadata.name=` of a field selector.
    name: Option<String>,
    labels: String,
    events: futures::channel::mpsc::UnboundedSender<WatchFrame>,
}

/// One chunk of a watch's response body.
type WatchFrame = Result<hyper::body::Frame<Bytes>, Infallible>;

/// The response body of a watch with events.
type WatchStream = futures::channel::mpsc::UnboundedReceiver<WatchFrame>;

impl Watch {
    fn selects(&self, change: &Change) -> bool {
        let (resource, ns, name) = &change.key;
        *resource == self.resource
            && self.namespace.as_ref().is_none_or(|n| n == ns)
            && self.name.as_ref().is_none_or(|n| n == name)
            && matches_selector(&change.object, &self.labels)
    }

    /// Sends `change`; false once the client has gone.
    fn send(&self, change: &Change) -> bool {
        let line = format!(
            "{}\n",
            json!({"type": change.kind, "object": change.object})
        );
        self.events
            .unbounded_send(Ok(hyper::body::Frame::data(Bytes::from(line))))
            .is_ok()
    }
}

/// A status write the fake stored.
#[derive(Debug, Clone)]
pub struct StatusWrite {
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// `status.phase` as written ("" when the status has none).
    pub phase: String,
    /// `status.message` as written.
    pub message: String,
    /// When the fake stored it.
    pub at: std::time::Instant,
}

/// Key of a stored object: resource plural, namespace, name.
pub type Key = (String, String, String);

#[derive(Default)]
struct State {
    objects: BTreeMap<Key, Value>,
    logs: HashMap<(String, String), String>,
    calls: Vec<Call>,
    api_calls: Vec<RecordedCall>,
    user_calls: Vec<String>,
    creations: Vec<(String, String)>,
    /// Every create sent with dryRun=All, as (resource, name): answered, never stored.
    dry_runs: Vec<(String, String)>,
    status_writes: Vec<StatusWrite>,
    failures: Vec<(String, String, u16)>,
    log_bytes_served: Vec<usize>,
    namespace_failures: Vec<(String, String, String, u16)>,
    conflicts: usize,
    terminating_pods: bool,
    next: u64,
    /// Watches send events (see [`FakeApi::serve_watch_events`]).
    watch_events: bool,
    /// Every change since events were turned on, for a watch that starts from an older
    /// resourceVersion (a client lists, then watches from the list's version).
    history: Vec<Change>,
    watches: Vec<Watch>,
}

/// The fake API server; clone it freely (the state is shared).
#[derive(Clone, Default)]
pub struct FakeApi {
    state: Arc<Mutex<State>>,
}

impl FakeApi {
    /// A `kube::Client` whose requests this fake answers.
    pub fn client(&self) -> kube::Client {
        self.client_of(Caller::Operator)
    }

    /// A client of a user (`kubectl benchmatrix`): its calls are served alike, but recorded in
    /// [`FakeApi::user_calls`] instead of being held against the operator's RBAC list.
    pub fn user_client(&self) -> kube::Client {
        self.client_of(Caller::User)
    }

    /// The calls of [`FakeApi::user_client`]s so far, as `VERB RESOURCE[/NAME[/SUB]] in NS`
    /// (e.g. `watch benchmarkruns in bench`), in order.
    pub fn user_calls(&self) -> Vec<String> {
        self.state.lock().unwrap().user_calls.clone()
    }

    fn client_of(&self, caller: Caller) -> kube::Client {
        let state = self.state.clone();
        let service = tower::service_fn(move |req: Request<kube::client::Body>| {
            let state = state.clone();
            async move {
                let (parts, body) = req.into_parts();
                let body = body
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let response = handle(&state, caller, &parts.method, &parts.uri, &body);
                Ok::<_, Infallible>(response)
            }
        });
        kube::Client::new(service, "default")
    }

    /// Stores an object (as a user's `kubectl apply` would), filling server-side metadata.
    pub fn insert(&self, resource: &str, object: Value) {
        let mut st = self.state.lock().unwrap();
        let ns = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_owned();
        let name = object["metadata"]["name"].as_str().unwrap().to_owned();
        let object = st.stamp_new(object);
        let key = (resource.into(), ns, name);
        st.changed("ADDED", &key, &object);
        st.objects.insert(key, object);
    }

    /// From now on, a watch sends an event for every change to the objects it selects (by
    /// namespace, `metadata.name` field selector and label selector), starting after the
    /// resourceVersion it asks for, as the API server does. Without this, watches stay silent.
    pub fn serve_watch_events(&self) {
        self.state.lock().unwrap().watch_events = true;
    }

    /// Watches open with events turned on, counting only those whose client is still there.
    pub fn open_watches(&self) -> usize {
        let mut st = self.state.lock().unwrap();
        st.watches.retain(|w| !w.events.is_closed());
        st.watches.len()
    }

    /// The stored object, if any.
    pub fn get(&self, resource: &str, ns: &str, name: &str) -> Option<Value> {
        self.state
            .lock()
            .unwrap()
            .objects
            .get(&(resource.into(), ns.into(), name.into()))
            .cloned()
    }

    /// All stored objects of a resource.
    pub fn list(&self, resource: &str) -> Vec<Value> {
        self.state
            .lock()
            .unwrap()
            .objects
            .iter()
            .filter(|((r, _, _), _)| r == resource)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Stores a cluster-scoped object (a node), filling server-side metadata.
    pub fn insert_cluster_scoped(&self, resource: &str, object: Value) {
        let mut st = self.state.lock().unwrap();
        let name = object["metadata"]["name"].as_str().unwrap().to_owned();
        let mut object = st.stamp_new(object);
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("namespace");
        }
        let key = (resource.into(), String::new(), name);
        st.changed("ADDED", &key, &object);
        st.objects.insert(key, object);
    }

    /// The size in bytes of each pod log body served so far.
    pub fn log_bytes_served(&self) -> Vec<usize> {
        self.state.lock().unwrap().log_bytes_served.clone()
    }

    /// Changes a stored object in place (playing another controller or the kubelet).
    pub fn edit(&self, resource: &str, ns: &str, name: &str, f: impl FnOnce(&mut Value)) {
        let mut st = self.state.lock().unwrap();
        let key = (resource.into(), ns.into(), name.into());
        let Some(mut obj) = st.objects.get(&key).cloned() else {
            return;
        };
        let before = obj.clone();
        f(&mut obj);
        // With events on, a change is a new version, as on the API server; without, versions
        // stay as the tests that check write preconditions expect them. An edit that changes
        // nothing is no change (the API server does not write an unchanged object), so a test
        // may play the cluster's controllers in a loop without waking the operator each time.
        if st.watch_events && obj != before {
            st.bump(&mut obj);
            st.changed("MODIFIED", &key, &obj);
        }
        st.objects.insert(key, obj);
    }

    /// Removes an object behind the operator's back.
    pub fn remove(&self, resource: &str, ns: &str, name: &str) {
        let mut st = self.state.lock().unwrap();
        let key = (resource.into(), ns.into(), name.into());
        if let Some(obj) = st.objects.remove(&key) {
            st.deleted(&key, obj);
        }
    }

    /// Sets a pod's log.
    pub fn set_log(&self, ns: &str, pod: &str, log: &str) {
        self.state
            .lock()
            .unwrap()
            .logs
            .insert((ns.into(), pod.into()), log.into());
    }

    /// Makes the next `method` call on `resource` fail with this HTTP status (409 conflict,
    /// 403 RBAC denial, 500...), once. `method` "WATCH" fails the next watch only (a GET
    /// fails the next list or watch).
    pub fn fail_next(&self, method: &str, resource: &str, code: u16) {
        self.state
            .lock()
            .unwrap()
            .failures
            .push((method.into(), resource.into(), code));
    }

    /// Like [`FakeApi::fail_next`], for a call within `namespace` only (a list of one
    /// namespace's runs failing while another's succeeds).
    pub fn fail_next_in(&self, method: &str, resource: &str, namespace: &str, code: u16) {
        self.state.lock().unwrap().namespace_failures.push((
            method.into(),
            resource.into(),
            namespace.into(),
            code,
        ));
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }

    /// Every call so far as RBAC sees it, in order.
    pub fn api_calls(&self) -> Vec<RecordedCall> {
        self.state.lock().unwrap().api_calls.clone()
    }

    /// How many calls RBAC would see as `verb` on `resource` ("list" nodes, "watch" pods).
    pub fn api_calls_of(&self, verb: &str, resource: &str) -> usize {
        let st = self.state.lock().unwrap();
        st.api_calls
            .iter()
            .filter(|c| c.verb == verb && c.resource == resource)
            .count()
    }

    /// The recorded calls that `process::calls::API_CALLS` does not list (distinct, sorted).
    pub fn undeclared_calls(&self) -> Vec<RecordedCall> {
        let mut out: Vec<RecordedCall> = self
            .api_calls()
            .into_iter()
            .filter(|c| !c.is_declared())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Fails the test when a recorded call is not in `process::calls::API_CALLS`. With
    /// `BENCHMATRIX_RECORD_CALLS=FILE` set, also appends the distinct recorded calls to FILE,
    /// one a line, so the union over a test run can be compared with the list by hand.
    pub fn check_calls_are_declared(&self) {
        if let Ok(path) = std::env::var("BENCHMATRIX_RECORD_CALLS") {
            let mut all = self.api_calls();
            all.sort();
            all.dedup();
            let lines: String = all.iter().map(|c| format!("{c}\n")).collect();
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
            {
                let _ = f.write_all(lines.as_bytes());
            }
        }
        let undeclared = self.undeclared_calls();
        assert!(
            undeclared.is_empty(),
            "the reconciler made calls that process::calls::API_CALLS (and so the chart's \
             ClusterRole) does not list: {undeclared:#?}"
        );
    }

    /// From now on, the pods of a deleted Deployment or Job are not removed at once but marked
    /// as being deleted with their containers still running, as on a real cluster until the
    /// kubelet has stopped them (see [`FakeApi::stop_terminating_pods`]).
    pub fn pods_terminate(&self) {
        self.state.lock().unwrap().terminating_pods = true;
    }

    /// Plays the kubelet: every container of every pod being deleted has stopped (the pod
    /// objects stay). Returns how many pods it stopped.
    pub fn stop_terminating_pods(&self) -> usize {
        let mut st = self.state.lock().unwrap();
        let mut stopped = 0;
        for ((r, _, _), pod) in st.objects.iter_mut() {
            if r != "pods" || pod["metadata"]["deletionTimestamp"].is_null() {
                continue;
            }
            let mut changed = false;
            for c in pod["status"]["containerStatuses"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                if !c["state"]["running"].is_null() {
                    c["state"] = json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
                    c["ready"] = json!(false);
                    changed = true;
                }
            }
            stopped += usize::from(changed);
        }
        stopped
    }

    /// Plays the kubelet removing the pod objects being deleted whose containers have stopped.
    pub fn remove_stopped_pods(&self) {
        let mut st = self.state.lock().unwrap();
        st.objects.retain(|(r, _, _), pod| {
            r != "pods"
                || pod["metadata"]["deletionTimestamp"].is_null()
                || pod["status"]["containerStatuses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| !c["state"]["running"].is_null())
        });
    }

    /// How many status writes were refused because their resourceVersion precondition no
    /// longer held.
    pub fn status_conflicts(&self) -> usize {
        self.state.lock().unwrap().conflicts
    }

    /// Every status write stored so far (a refused one is not), in order.
    pub fn status_writes(&self) -> Vec<StatusWrite> {
        self.state.lock().unwrap().status_writes.clone()
    }

    /// Every creation (first apply or POST of a name) so far, as (resource, name).
    pub fn creations(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().creations.clone()
    }

    /// Every create sent as a server-side dry run so far, as (resource, name).
    pub fn dry_runs(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().dry_runs.clone()
    }
}

impl State {
    fn stamp_new(&mut self, mut object: Value) -> Value {
        self.next += 1;
        let n = self.next;
        let meta = object["metadata"].as_object_mut().expect("metadata");
        meta.entry("uid").or_insert(json!(format!("uid-{n}")));
        meta.entry("creationTimestamp")
            .or_insert(json!(format!("2026-01-01T00:00:{:02}Z", n % 60)));
        meta.entry("generation").or_insert(json!(1));
        meta.insert("resourceVersion".into(), json!(n.to_string()));
        meta.entry("namespace").or_insert(json!("default"));
        object
    }

    /// Plays the garbage collector for a deleted Deployment or Job: its pods (those carrying
    /// every label of its pod template) are removed, or, with [`FakeApi::pods_terminate`], get a
    /// deletionTimestamp and stay, their containers still running, until a test plays the
    /// kubelet stopping them.
    fn collect_pods(&mut self, ns: &str, owner: &Value) {
        let Some(labels) = owner["spec"]["template"]["metadata"]["labels"].as_object() else {
            return;
        };
        let owned: Vec<Key> = self
            .objects
            .iter()
            .filter(|((r, o_ns, _), pod)| {
                r == "pods"
                    && o_ns == ns
                    && labels
                        .iter()
                        .all(|(k, v)| pod["metadata"]["labels"][k] == *v)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in owned {
            if self.terminating_pods {
                self.next += 1;
                let version = self.next.to_string();
                if let Some(pod) = self.objects.get_mut(&k) {
                    pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
                    pod["metadata"]["resourceVersion"] = json!(version);
                }
            } else {
                self.objects.remove(&k);
            }
        }
    }

    fn bump(&mut self, object: &mut Value) {
        self.next += 1;
        object["metadata"]["resourceVersion"] = json!(self.next.to_string());
    }

    /// Reports a change (`object` as it is now stored) to the watches that select it, and keeps
    /// it for watches still to start. Nothing without [`FakeApi::serve_watch_events`].
    fn changed(&mut self, kind: &'static str, key: &Key, object: &Value) {
        if !self.watch_events {
            return;
        }
        let version = object["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .unwrap_or(self.next);
        let change = Change {
            version,
            key: key.clone(),
            kind,
            object: object.clone(),
        };
        self.watches
            .retain(|w| !w.selects(&change) || w.send(&change));
        self.history.push(change);
    }

    /// A removed object: a DELETED event carrying it at a new resourceVersion.
    fn deleted(&mut self, key: &Key, mut object: Value) {
        if self.watch_events {
            self.bump(&mut object);
            self.changed("DELETED", key, &object);
        }
    }

    /// Opens a watch with events, answered with `stream`, the other end of `watch.events`:
    /// first every kept change after `since`, then each as it happens.
    fn watch(&mut self, watch: Watch, since: u64, stream: WatchStream) -> Response<FakeBody> {
        for change in self.history.iter().filter(|c| c.version > since) {
            if watch.selects(change) {
                watch.send(change);
            }
        }
        self.watches.push(watch);
        Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(StreamBody::new(stream).boxed_unsync())
            .unwrap()
    }
}

/// Whose client made a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    /// The operator: its calls must be in `process::calls::API_CALLS`.
    Operator,
    /// A user's tool.
    User,
}

fn handle(
    state: &Mutex<State>,
    caller: Caller,
    method: &http::Method,
    uri: &http::Uri,
    body: &Bytes,
) -> Response<FakeBody> {
    let segments: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    // /api/v1/namespaces/{ns}/{resource}[/{name}[/{sub}]]
    // /apis/{group}/{version}/namespaces/{ns}/{resource}[/{name}[/{sub}]]
    let (group, rest) = match segments.as_slice() {
        ["api", _, rest @ ..] => ("", rest),
        ["apis", group, _, rest @ ..] => (*group, rest),
        _ => return status(StatusCode::NOT_FOUND, "unknown path"),
    };
    let mut st = state.lock().unwrap();
    // Recorded before anything can refuse the call: an unfaked path is still a call made.
    let recorded = rbac_view(method, uri, group, rest);
    let verb = recorded
        .as_ref()
        .map(|r| r.verb.clone())
        .unwrap_or_default();
    if let Some(recorded) = recorded
        && caller == Caller::Operator
    {
        st.api_calls.push(recorded);
    }
    // `ns` is None for a collection across all namespaces (a Controller's list and watch).
    let (ns, resource, name, sub) = match rest {
        [resource] if method == http::Method::GET => (None, *resource, None, None),
        // A cluster-scoped object by name (nodes, a namespace), stored under the namespace "".
        [
            resource @ ("nodes" | "customresourcedefinitions" | "namespaces"),
            name,
        ] => (Some(""), *resource, Some(*name), None),
        ["namespaces", ns, resource] => (Some(*ns), *resource, None, None),
        ["namespaces", ns, resource, name] => (Some(*ns), *resource, Some(*name), None),
        ["namespaces", ns, resource, name, sub] => (Some(*ns), *resource, Some(*name), Some(*sub)),
        _ => return status(StatusCode::NOT_FOUND, "this path is not faked"),
    };
    let call = Call {
        method: method.to_string(),
        resource: resource.into(),
        name: name.map(str::to_owned),
        sub: sub.map(str::to_owned),
        namespace: ns.map(str::to_owned),
    };
    if caller == Caller::User {
        let short = call.short();
        let path = short.split_once(' ').map_or("", |(_, p)| p);
        st.user_calls.push(format!(
            "{verb} {path} in {}",
            ns.unwrap_or("every namespace")
        ));
    }
    st.calls.push(call);
    let watching = method == http::Method::GET && query(uri, "watch").as_deref() == Some("true");
    if let Some(i) = st
        .failures
        .iter()
        .position(|(m, r, _)| (m == method.as_str() || (m == "WATCH" && watching)) && r == resource)
    {
        let (_, _, code) = st.failures.remove(i);
        return status(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "injected failure",
        );
    }
    if let Some(i) = st
        .namespace_failures
        .iter()
        .position(|(m, r, n, _)| m == method.as_str() && r == resource && Some(n.as_str()) == ns)
    {
        let (_, _, _, code) = st.namespace_failures.remove(i);
        return status(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "injected failure",
        );
    }
    if method == http::Method::GET
        && name.is_none()
        && query(uri, "watch").as_deref() == Some("true")
    {
        if !st.watch_events {
            return watch_without_events();
        }
        let since = query(uri, "resourceVersion")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let (events, stream) = futures::channel::mpsc::unbounded();
        let watch = Watch {
            resource: resource.into(),
            namespace: ns.map(str::to_owned),
            name: field_name(uri),
            labels: query(uri, "labelSelector").unwrap_or_default(),
            events,
        };
        return st.watch(watch, since, stream);
    }
    let key = |n: &str| {
        (
            resource.to_owned(),
            ns.unwrap_or_default().to_owned(),
            n.to_owned(),
        )
    };
    let payload: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match (method.as_str(), name, sub) {
        ("GET", Some(n), Some("log")) => match st.logs.get(&(key(n).1, n.to_owned())) {
            Some(log) => {
                // The kubelet takes the last tailLines lines, then at most limitBytes of them.
                let tail = query(uri, "tailLines").and_then(|t| t.parse::<usize>().ok());
                let lines: Vec<&str> = log.lines().collect();
                let from = tail.map_or(0, |t| lines.len().saturating_sub(t));
                let mut body = lines[from..].join("\n").into_bytes();
                if let Some(limit) = query(uri, "limitBytes").and_then(|b| b.parse::<usize>().ok())
                {
                    body.truncate(limit);
                }
                st.log_bytes_served.push(body.len());
                bytes_body(body)
            }
            None => status(StatusCode::NOT_FOUND, "no log"),
        },
        ("GET", Some(n), None) => match st.objects.get(&key(n)) {
            Some(obj) => ok(obj.clone()),
            None => status(StatusCode::NOT_FOUND, "not found"),
        },
        ("GET", None, None) => {
            let selector = query(uri, "labelSelector").unwrap_or_default();
            let only = field_name(uri);
            let items: Vec<Value> = st
                .objects
                .iter()
                .filter(|((r, o_ns, o_name), obj)| {
                    r == resource
                        && ns.is_none_or(|ns| o_ns == ns)
                        && only.as_ref().is_none_or(|n| n == o_name)
                        && matches_selector(obj, &selector)
                })
                .map(|(_, v)| v.clone())
                .collect();
            ok(json!({
                "apiVersion": "v1",
                "kind": "List",
                "metadata": {"resourceVersion": st.next.to_string()},
                "items": items,
            }))
        }
        ("PATCH", Some(n), Some("status")) => {
            let Some(mut obj) = st.objects.get(&key(n)).cloned() else {
                return status(StatusCode::NOT_FOUND, "not found");
            };
            // A resourceVersion in the body is a precondition, as the API server takes it.
            if let Some(want) = payload["metadata"]["resourceVersion"].as_str()
                && obj["metadata"]["resourceVersion"].as_str() != Some(want)
            {
                st.conflicts += 1;
                return status(
                    StatusCode::CONFLICT,
                    "the object has been modified; please apply your changes to the latest \
                     version and try again",
                );
            }
            obj["status"] = payload["status"].clone();
            let written = StatusWrite {
                namespace: ns.unwrap_or_default().to_owned(),
                name: n.to_owned(),
                phase: obj["status"]["phase"].as_str().unwrap_or("").to_owned(),
                message: obj["status"]["message"].as_str().unwrap_or("").to_owned(),
                at: std::time::Instant::now(),
            };
            st.status_writes.push(written);
            st.bump(&mut obj);
            st.changed("MODIFIED", &key(n), &obj);
            st.objects.insert(key(n), obj.clone());
            ok(obj)
        }
        ("PATCH", Some(n), None) => {
            let existing = st.objects.get(&key(n)).cloned();
            let obj = match existing {
                Some(mut obj) => {
                    for (k, v) in payload.as_object().into_iter().flatten() {
                        if k == "metadata" {
                            for (mk, mv) in v.as_object().into_iter().flatten() {
                                obj["metadata"][mk] = mv.clone();
                            }
                        } else if k != "status" {
                            obj[k] = v.clone();
                        }
                    }
                    st.bump(&mut obj);
                    st.changed("MODIFIED", &key(n), &obj);
                    obj
                }
                None => {
                    let is_apply = payload.get("apiVersion").is_some();
                    if !is_apply {
                        return status(StatusCode::NOT_FOUND, "not found");
                    }
                    // An apply that makes a new object is authorized as a create too.
                    if caller == Caller::Operator
                        && let Some(mut created) = st.api_calls.last().cloned()
                    {
                        created.verb = "create".into();
                        st.api_calls.push(created);
                    }
                    st.creations.push((resource.into(), n.into()));
                    let mut obj = payload.clone();
                    if let Some(s) = obj.as_object_mut() {
                        s.remove("status");
                    }
                    // The API server gives a Service its ClusterIP as it creates it.
                    if resource == "services" && obj["spec"]["clusterIP"].is_null() {
                        obj["spec"]["clusterIP"] = json!("10.96.0.10");
                    }
                    let obj = st.stamp_new(obj);
                    st.changed("ADDED", &key(n), &obj);
                    obj
                }
            };
            st.objects.insert(key(n), obj.clone());
            ok(obj)
        }
        ("POST", None, None) => {
            let mut obj = payload.clone();
            let n = obj["metadata"]["name"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| {
                    format!(
                        "{}{}",
                        obj["metadata"]["generateName"].as_str().unwrap_or("obj-"),
                        st.next
                    )
                });
            if st.objects.contains_key(&key(&n)) {
                return status(
                    StatusCode::CONFLICT,
                    &format!("{resource} \"{n}\" already exists"),
                );
            }
            obj["metadata"]["name"] = json!(n);
            if query(uri, "dryRun").as_deref() == Some("All") {
                // A server-side dry run: checked and answered, never stored.
                st.dry_runs.push((resource.into(), n.clone()));
                return ok(obj);
            }
            // The API server keeps no status from a create: the status subresource owns it.
            if resource == "benchmarkruns"
                && let Some(o) = obj.as_object_mut()
            {
                o.remove("status");
            }
            st.creations.push((resource.into(), n.clone()));
            let obj = st.stamp_new(obj);
            st.changed("ADDED", &key(&n), &obj);
            st.objects.insert(key(&n), obj.clone());
            ok(obj)
        }
        ("DELETE", Some(n), None) => match st.objects.remove(&key(n)) {
            Some(obj) => {
                if matches!(resource, "deployments" | "jobs") {
                    st.collect_pods(ns.unwrap_or_default(), &obj);
                }
                st.deleted(&key(n), obj.clone());
                ok(obj)
            }
            None => status(StatusCode::NOT_FOUND, "not found"),
        },
        _ => status(StatusCode::METHOD_NOT_ALLOWED, "not faked"),
    }
}

/// The call as an RBAC authorizer sees it: the verb from the method (a GET on a collection is a
/// list, or a watch with `watch=true`; a DELETE on one is a deletecollection), and the
/// resource, subresource and scope from the path after `/api/v1` or `/apis/GROUP/VERSION`.
fn rbac_view(
    method: &http::Method,
    uri: &http::Uri,
    group: &str,
    rest: &[&str],
) -> Option<RecordedCall> {
    let (namespaced, path) = match rest {
        ["namespaces", _, path @ ..] if !path.is_empty() => (true, path),
        path => (false, path),
    };
    let (resource, has_name, subresource) = match path {
        [resource] => (*resource, false, ""),
        [resource, _] => (*resource, true, ""),
        [resource, _, sub] => (*resource, true, *sub),
        _ => return None,
    };
    let verb = match (method.as_str(), has_name) {
        ("GET", true) => "get",
        ("GET", false) if query(uri, "watch").as_deref() == Some("true") => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        (other, _) => other,
    };
    Some(RecordedCall {
        verb: verb.to_ascii_lowercase(),
        group: group.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespaced,
    })
}

fn query(uri: &http::Uri, name: &str) -> Option<String> {
    uri.query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A label selector of `key=value` terms and `!key` (the label is absent), all of which must
/// hold.
fn matches_selector(obj: &Value, selector: &str) -> bool {
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        if let Some(absent) = term.strip_prefix('!') {
            return obj["metadata"]["labels"][absent].is_null();
        }
        let (k, v) = term.split_once('=').unwrap_or((term, ""));
        obj["metadata"]["labels"][k].as_str() == Some(v)
    })
}

/// The name a `fieldSelector=metadata.name=NAME` asks for (the only field selector the fake
/// serves, as a single-object watch sends it).
fn field_name(uri: &http::Uri) -> Option<String> {
    query(uri, "fieldSelector")?
        .strip_prefix("metadata.name=")
        .map(str::to_owned)
}

fn whole(bytes: impl Into<Bytes>) -> FakeBody {
    Full::new(bytes.into()).boxed_unsync()
}

/// A watch that stays open and never sends an event (until the client drops it).
fn watch_without_events() -> Response<FakeBody> {
    let events = futures::stream::pending::<Result<hyper::body::Frame<Bytes>, Infallible>>();
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(StreamBody::new(events).boxed_unsync())
        .unwrap()
}

fn ok(value: Value) -> Response<FakeBody> {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(whole(value.to_string()))
        .unwrap()
}

fn bytes_body(body: Vec<u8>) -> Response<FakeBody> {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/plain")
        .body(whole(body))
        .unwrap()
}

fn status(code: StatusCode, message: &str) -> Response<FakeBody> {
    let reason = match code {
        StatusCode::NOT_FOUND => "NotFound",
        StatusCode::CONFLICT => "Conflict",
        StatusCode::FORBIDDEN => "Forbidden",
        StatusCode::METHOD_NOT_ALLOWED => "MethodNotAllowed",
        _ => "InternalError",
    };
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(whole(body.to_string()))
        .unwrap()
}
