//! Whether this operator may reconcile at all: the gate every reconcile passes first.
//!
//! It is closed while the installed BenchmarkRun CRD is not the one this build was made with
//! (its status writes would be refused or pruned: an operator older than the CRD once stalled
//! every run with 500s and said nothing; [`watch_crd`] reads it at start-up and every
//! [`CRD_CHECK_EVERY`]), and while another replica holds the leader Lease
//! (`process/leader.rs`). A closed gate makes every reconcile return at once, before any read or
//! write, and writes already under way check it again before they are sent (`reconcile.rs`), so
//! a replica that loses the Lease stops writing at once. The watches keep running behind a
//! closed gate, so a standby that takes over starts from warm caches; when the gate opens every
//! run is woken (`queue::Queue::wake_all`).
//!
//! A process that is frozen (SIGSTOP, a paused VM, a long GC-like stall of the node) past the
//! Lease's expiry wakes up believing it leads: its Lease task has not run yet, so the gate is
//! still open. Two things keep its writes out once another replica leads:
//! - every status write is conditional on the run's resourceVersion (`write.rs`), so a turn
//!   decided before the freeze is refused with 409 once the new leader has written;
//! - a turn decided after the thaw must first pass the [`LeaseFence`]: a status write, and any
//!   change to a run's children, needs a read of the Lease that showed this replica as its
//!   holder, with a renewal that holds beyond the read's window, no longer ago, by the
//!   monotonic clock, than a Lease call's timeout. Older than that, the Lease is read again
//!   first.
//!
//! What remains is a freeze between the fence's read and the request it lets through, shorter
//! than the fence's window but long enough for the Lease to pass: the Lease then still had more
//! than that window to run when it was read, so this needs a freeze longer than the window in a
//! span of microseconds, and the resourceVersion precondition still stops a status write if the
//! new leader has written by then.
//!
//! `/readyz` says why the gate is closed: not ready while the CRD differs (a rollout of a new
//! operator before its CRD stops there), ready but standby while another replica leads.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use crate::executors::cluster::telemetry::metrics::Metrics;
use crate::resource::crdgen::{self, SCHEMA_HASH_ANNOTATION};

/// The BenchmarkRun CRD's name.
pub const CRD_NAME: &str = "benchmarkruns.benchmatrix.dev";

/// How often the installed CRD is read again while the operator runs: a CRD changed under a
/// running operator (upgraded or rolled back) closes or opens the gate within this.
pub const CRD_CHECK_EVERY: Duration = Duration::from_secs(10);

/// See the module doc.
#[derive(Debug)]
pub struct Gate {
    leading: AtomicBool,
    /// Why the CRD keeps the gate closed, if it does.
    crd: Mutex<Option<String>>,
    /// With leader election, what a status write must pass besides the gate.
    fence: OnceLock<LeaseFence>,
}

impl Default for Gate {
    /// Open: a leader without election, with a CRD taken as matching (tests of the faked API).
    fn default() -> Self {
        Self {
            leading: AtomicBool::new(true),
            crd: Mutex::new(None),
            fence: OnceLock::new(),
        }
    }
}

/// A status write's proof of leadership: a recent read of the Lease naming this replica.
///
/// The Lease task (`process/leader.rs`) renews through `kube-lease-manager`, which says only
/// when leadership changes, not when it renewed, so the fence keeps its own evidence: the
/// monotonic instant at which a Lease read that named this replica was sent. A frozen process
/// cannot renew, and its monotonic clock runs on while it is frozen, so after a freeze longer
/// than `fresh_for` the evidence is stale and the Lease is read before anything is written.
#[derive(Debug)]
pub struct LeaseFence {
    api: kube::Api<Lease>,
    lease: String,
    identity: String,
    fresh_for: Duration,
    confirmed: Mutex<Option<tokio::time::Instant>>,
}

impl LeaseFence {
    /// A fence on Lease `lease` read through `api` (a client with the Lease calls' timeouts),
    /// whose holder must be `identity`; a read counts for `fresh_for`.
    pub fn new(
        api: kube::Api<Lease>,
        lease: impl Into<String>,
        identity: impl Into<String>,
        fresh_for: Duration,
    ) -> Self {
        Self {
            api,
            lease: lease.into(),
            identity: identity.into(),
            fresh_for,
            confirmed: Mutex::new(None),
        }
    }

    fn is_fresh(&self, now: tokio::time::Instant) -> bool {
        self.confirmed
            .lock()
            .ok()
            .and_then(|c| *c)
            .is_some_and(|at| now.duration_since(at) < self.fresh_for)
    }

    fn confirm(&self, at: tokio::time::Instant) {
        if let Ok(mut c) = self.confirmed.lock() {
            *c = Some(c.map_or(at, |was| was.max(at)));
        }
    }

    fn forget(&self) {
        if let Ok(mut c) = self.confirmed.lock() {
            *c = None;
        }
    }

    /// Whether the Lease is this replica's now: from a read no older than `fresh_for`, else
    /// from a new read. The instant kept is the one at which the read was sent, before the API
    /// server answered, so the evidence never looks newer than it is. `Err` says why not.
    async fn holds(&self) -> Result<(), String> {
        let now = tokio::time::Instant::now();
        if self.is_fresh(now) {
            return Ok(());
        }
        let read = self.api.get_opt(&self.lease).await;
        let spec = match read {
            Ok(lease) => lease.and_then(|l| l.spec),
            Err(e) => {
                self.forget();
                return Err(format!("the leader Lease could not be read: {e}"));
            }
        };
        match self.judge(spec.as_ref(), k8s_openapi::jiff::Timestamp::now()) {
            Ok(()) => {
                self.confirm(now);
                Ok(())
            }
            Err(why) => {
                self.forget();
                Err(why)
            }
        }
    }

    /// Whether a Lease read at wall-clock time `now` counts as this replica's for the
    /// fence's window: it names this replica, and its last renewal plus its duration reaches
    /// beyond `now + fresh_for`. A Lease keeps naming its last holder after it expires, until
    /// a standby takes it over, so the name alone is not enough. The renewal time is the
    /// holder's own clock (`kube-lease-manager` writes it), which is this process's clock.
    fn judge(
        &self,
        spec: Option<&k8s_openapi::api::coordination::v1::LeaseSpec>,
        now: k8s_openapi::jiff::Timestamp,
    ) -> Result<(), String> {
        let holder = spec.and_then(|s| s.holder_identity.as_deref());
        if holder != Some(self.identity.as_str()) {
            return Err(format!(
                "the leader Lease is held by {}",
                holder.unwrap_or("nobody")
            ));
        }
        let expires = spec.and_then(|s| {
            let renewed = s.renew_time.as_ref()?.0;
            let lasts =
                k8s_openapi::jiff::SignedDuration::from_secs(i64::from(s.lease_duration_seconds?));
            renewed.checked_add(lasts).ok()
        });
        let needed = k8s_openapi::jiff::SignedDuration::try_from(self.fresh_for)
            .ok()
            .and_then(|d| now.checked_add(d).ok());
        match (expires, needed) {
            (Some(expires), Some(needed)) if expires > needed => Ok(()),
            (Some(expires), _) => Err(format!(
                "the leader Lease is this replica's but runs out at {expires}, within the \
                 fence's window"
            )),
            (None, _) => Err("the leader Lease has no renewal time or duration".into()),
        }
    }
}

impl Gate {
    /// A gate closed until the CRD has been checked, and, with leader election, until this
    /// replica leads.
    pub fn closed(leader_election: bool) -> Self {
        Self {
            leading: AtomicBool::new(!leader_election),
            crd: Mutex::new(Some("the installed CRD has not been checked yet".into())),
            fence: OnceLock::new(),
        }
    }

    /// Makes every status write pass `fence` first (see the module doc). Set once, when the
    /// replica stands for leader; a second fence is ignored.
    pub fn fence_with(&self, fence: LeaseFence) {
        let _ = self.fence.set(fence);
    }

    /// Whether a status write (or a change to a run's children) may go out now: the gate is
    /// open and, with leader election, the fence holds (see [`LeaseFence`]). `false` when the
    /// Lease is another replica's, runs out within the fence's window, or could not be read:
    /// the Lease task steps down or renews on its next look, and the caller asks again later.
    pub async fn may_write(&self) -> bool {
        if !self.is_open() {
            return false;
        }
        let Some(fence) = self.fence.get() else {
            return true;
        };
        match fence.holds().await {
            Ok(()) => self.is_open(),
            Err(why) => {
                tracing::warn!(
                    identity = %fence.identity,
                    "{why}: status write withheld"
                );
                false
            }
        }
    }

    /// Whether reconciles may read and write.
    pub fn is_open(&self) -> bool {
        self.is_leading() && self.crd_problem().is_none()
    }

    /// Whether this replica leads (always, without leader election).
    pub fn is_leading(&self) -> bool {
        self.leading.load(Ordering::SeqCst)
    }

    /// Sets whether this replica leads; returns whether the gate opened with it.
    pub fn set_leading(&self, leading: bool) -> bool {
        let was = self.is_open();
        self.leading.store(leading, Ordering::SeqCst);
        !was && self.is_open()
    }

    /// What is wrong with the installed CRD, if anything.
    pub fn crd_problem(&self) -> Option<String> {
        self.crd.lock().map(|c| c.clone()).unwrap_or(None)
    }

    /// Sets what is wrong with the CRD (`None`: it matches); returns whether the gate opened.
    pub fn set_crd_problem(&self, problem: Option<String>) -> bool {
        let was = self.is_open();
        if let Ok(mut c) = self.crd.lock() {
            *c = problem;
        }
        !was && self.is_open()
    }
}

/// What a look at the installed CRD found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrdState {
    /// It carries this build's schema.
    Matches,
    /// It is missing or carries another schema: why, in words, with what differs.
    Differs(String),
    /// It could not be read (the API server is unreachable, or RBAC denies it): why.
    Unknown {
        /// The error.
        why: String,
        /// True when the API refused (403): retrying will not help until the chart's RBAC is
        /// upgraded, so the operator goes on without the check rather than stop every run.
        forbidden: bool,
    },
}

/// Reads the installed CRD and compares it with this build's.
pub async fn check_crd(client: &kube::Client) -> CrdState {
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    match api.get_opt(CRD_NAME).await {
        Ok(Some(crd)) => match serde_json::to_value(&crd) {
            Ok(installed) => compare(&installed, &crdgen::crd_value()),
            Err(e) => CrdState::Unknown {
                why: e.to_string(),
                forbidden: false,
            },
        },
        Ok(None) => CrdState::Differs(format!(
            "the CRD {CRD_NAME} is not installed: install it first (docs/kubernetes.md)"
        )),
        Err(kube::Error::Api(s)) if s.code == 403 => CrdState::Unknown {
            why: s.message.clone(),
            forbidden: true,
        },
        Err(e) => CrdState::Unknown {
            why: e.to_string(),
            forbidden: false,
        },
    }
}

/// Checks the installed CRD at once and then every [`CRD_CHECK_EVERY`], keeping the gate
/// closed while it differs from this build's (logged once per installed version, with what
/// differs) and waking every run when it opens.
pub async fn watch_crd(
    client: kube::Client,
    gate: Arc<Gate>,
    metrics: Arc<Metrics>,
    wake_all: impl Fn(),
) {
    let mut said = None::<String>;
    loop {
        match check_crd(&client).await {
            CrdState::Matches => {
                metrics.robustness.set_crd_schema_matches(true);
                if gate.crd_problem().is_some() {
                    tracing::info!(
                        crd = CRD_NAME,
                        "the installed CRD carries this operator's schema"
                    );
                }
                said = None;
                if gate.set_crd_problem(None) {
                    wake_all();
                }
            }
            CrdState::Differs(why) => {
                metrics.robustness.set_crd_schema_matches(false);
                if said.as_deref() != Some(why.as_str()) {
                    tracing::error!(crd = CRD_NAME, "{why}");
                    said = Some(why.clone());
                }
                gate.set_crd_problem(Some(why));
            }
            CrdState::Unknown {
                why,
                forbidden: true,
            } => {
                // An older chart's RBAC: going on unchecked beats stopping every run.
                if said.as_deref() != Some(why.as_str()) {
                    tracing::warn!(error = %why, "may not read the BenchmarkRun CRD (the chart's ClusterRole needs get on customresourcedefinitions); reconciling without checking its schema");
                    said = Some(why);
                }
                if gate.set_crd_problem(None) {
                    wake_all();
                }
            }
            CrdState::Unknown { why, .. } => {
                // Unreachable for now: the last verdict stands (at start-up, closed).
                tracing::debug!(error = %why, "could not read the BenchmarkRun CRD; checking again");
            }
        }
        tokio::time::sleep(CRD_CHECK_EVERY).await;
    }
}

/// `installed` (a CRD as the API server returns it) against `ours` ([`crdgen::crd_value`]):
/// equal schema hashes match; otherwise the paths that differ, in words.
pub fn compare(installed: &Value, ours: &Value) -> CrdState {
    let hash_of = |crd: &Value| {
        crd["metadata"]["annotations"][SCHEMA_HASH_ANNOTATION]
            .as_str()
            .map(str::to_owned)
    };
    let (theirs, mine) = (hash_of(installed), hash_of(ours));
    if theirs.is_some() && theirs == mine {
        return CrdState::Matches;
    }
    let differences = schema_differences(installed, ours);
    CrdState::Differs(format!(
        "the installed CRD {CRD_NAME} does not carry this operator's schema (its {SCHEMA_HASH_ANNOTATION} \
         is {}, this operator's {}): {}. Upgrade the CRD to this operator's version first, then the \
         operator (docs/kubernetes.md, \"4. Upgrade\"); until then nothing is reconciled",
        theirs.as_deref().unwrap_or("absent"),
        mine.as_deref().unwrap_or("absent"),
        if differences.is_empty() {
            "the fields are the same; descriptions, defaults or validation rules differ".to_owned()
        } else {
            differences.join("; ")
        }
    ))
}

/// The most paths named in each list of differences.
const MAX_NAMED: usize = 8;

/// Field paths only in the installed schema, only in ours, and of another type, per version.
pub fn schema_differences(installed: &Value, ours: &Value) -> Vec<String> {
    let versions = |crd: &Value| -> BTreeMap<String, BTreeMap<String, String>> {
        crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| {
                let mut fields = BTreeMap::new();
                fields_of(&v["schema"]["openAPIV3Schema"], String::new(), &mut fields);
                Some((v["name"].as_str()?.to_owned(), fields))
            })
            .collect()
    };
    let (theirs, mine) = (versions(installed), versions(ours));
    let mut out = Vec::new();
    for (version, fields) in &mine {
        let Some(installed) = theirs.get(version) else {
            out.push(format!(
                "version {version} is not served by the installed CRD"
            ));
            continue;
        };
        let only_installed: Vec<&str> = installed
            .keys()
            .filter(|k| !fields.contains_key(*k))
            .map(String::as_str)
            .collect();
        let only_ours: Vec<&str> = fields
            .keys()
            .filter(|k| !installed.contains_key(*k))
            .map(String::as_str)
            .collect();
        let retyped: Vec<String> = fields
            .iter()
            .filter_map(|(k, t)| {
                let other = installed.get(k)?;
                (other != t).then(|| format!("{k} ({other} there, {t} here)"))
            })
            .collect();
        for (what, list) in [
            ("only in the installed CRD", only_installed),
            ("only in this operator's", only_ours),
            (
                "of another type",
                retyped.iter().map(String::as_str).collect(),
            ),
        ] {
            if !list.is_empty() {
                out.push(format!("{version} fields {what}: {}", named(&list)));
            }
        }
    }
    out
}

/// The first [`MAX_NAMED`] of `list`, and how many more.
fn named(list: &[&str]) -> String {
    let mut text = list
        .iter()
        .take(MAX_NAMED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if list.len() > MAX_NAMED {
        text.push_str(&format!(" and {} more", list.len() - MAX_NAMED));
    }
    text
}

/// Every property path under `schema` with its type: `spec.workload.phases[].name` -> string.
fn fields_of(schema: &Value, at: String, out: &mut BTreeMap<String, String>) {
    if let Some(properties) = schema["properties"].as_object() {
        for (name, sub) in properties {
            let path = if at.is_empty() {
                name.clone()
            } else {
                format!("{at}.{name}")
            };
            let kind = sub["type"].as_str().unwrap_or("any").to_owned();
            out.insert(path.clone(), kind);
            fields_of(sub, path, out);
        }
    }
    if schema["items"].is_object() {
        fields_of(&schema["items"], format!("{at}[]"), out);
    }
    if schema["additionalProperties"].is_object() {
        fields_of(&schema["additionalProperties"], format!("{at}.*"), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours() -> Value {
        crdgen::crd_value()
    }

    #[test]
    fn the_crd_of_this_build_matches_and_one_without_the_hash_does_not() {
        assert_eq!(compare(&ours(), &ours()), CrdState::Matches);
        let mut unannotated = ours();
        unannotated["metadata"]["annotations"] = Value::Null;
        let CrdState::Differs(why) = compare(&unannotated, &ours()) else {
            panic!("an unannotated CRD must not match");
        };
        assert!(why.contains("is absent"), "{why}");
        assert!(
            why.contains("descriptions, defaults or validation"),
            "{why}"
        );
    }

    #[test]
    fn a_crd_of_another_schema_is_named_field_by_field() {
        let mut older = ours();
        older["metadata"]["annotations"][SCHEMA_HASH_ANNOTATION] = "0000000000000000".into();
        let schema = &mut older["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let status = &mut schema["properties"]["status"]["properties"];
        status
            .as_object_mut()
            .unwrap()
            .remove("progress")
            .expect("the status has a progress field");
        status["legacy"] = serde_json::json!({"type": "string"});
        status["phase"]["type"] = "integer".into();
        let CrdState::Differs(why) = compare(&older, &ours()) else {
            panic!("another schema must not match");
        };
        assert!(why.contains("is 0000000000000000"), "{why}");
        assert!(
            why.contains("only in the installed CRD: status.legacy"),
            "{why}"
        );
        assert!(
            why.contains("only in this operator's: status.progress"),
            "{why}"
        );
        assert!(
            why.contains("status.phase (integer there, string here)"),
            "{why}"
        );
        assert!(why.contains("Upgrade the CRD"), "{why}");
    }

    #[test]
    fn the_gate_opens_only_with_a_matching_crd_and_the_lease() {
        let gate = Gate::closed(true);
        assert!(!gate.is_open());
        assert!(!gate.set_crd_problem(None), "still not leading");
        assert!(gate.set_leading(true), "opens with the lease");
        assert!(gate.is_open());
        assert!(!gate.set_crd_problem(Some("skew".into())));
        assert!(!gate.is_open());
        assert!(gate.set_crd_problem(None));
        let single = Gate::closed(false);
        assert!(single.set_crd_problem(None), "no election: the CRD alone");
    }
}
