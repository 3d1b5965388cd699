//! The gate against the faked API: a closed gate reads and writes nothing; the CRD check reads
//! the installed CRD and names what differs.

use std::sync::Arc;

use kube::runtime::controller::Action as Requeue;
use kube::runtime::reflector::store::Writer;

use super::{Harness, NS, sample, with_timeout};
use crate::executors::cluster::reconciler::gate::{self, CrdState, Gate};
use crate::resource::RunPhase;
use crate::resource::crdgen::{self, SCHEMA_HASH_ANNOTATION};

#[tokio::test]
async fn a_closed_gate_makes_a_reconcile_touch_nothing() {
    with_timeout(async {
        let mut h = Harness::new();
        let closed = Arc::new(Gate::closed(true));
        with_gate(&mut h, closed.clone());
        h.fake.insert("benchmarkruns", sample("held", &["a"]));
        let before = h.fake.calls().len();
        assert_eq!(h.reconcile("held").await.unwrap(), Requeue::await_change());
        assert_eq!(h.fake.calls().len(), before, "no read, no write");
        assert!(h.fake.get("benchmarkruns", NS, "held").unwrap()["status"].is_null());
        // The Lease and a matching CRD: the same reconcile goes on.
        closed.set_crd_problem(None);
        closed.set_leading(true);
        h.reconcile("held").await.unwrap();
        assert_eq!(h.phase("held"), RunPhase::Running);
    })
    .await;
}

#[tokio::test]
async fn the_crd_check_reads_the_installed_crd_and_names_what_differs() {
    with_timeout(async {
        let h = Harness::new();
        let client = h.fake.client();
        let CrdState::Differs(why) = gate::check_crd(&client).await else {
            panic!("no CRD installed must not pass");
        };
        assert!(why.contains("is not installed"), "{why}");
        h.fake
            .insert_cluster_scoped("customresourcedefinitions", crdgen::crd_value());
        assert_eq!(gate::check_crd(&client).await, CrdState::Matches);
        // An older CRD: without the status field this build writes.
        h.fake
            .edit("customresourcedefinitions", "", gate::CRD_NAME, |crd| {
                crd["metadata"]["annotations"][SCHEMA_HASH_ANNOTATION] = "1".into();
                crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
                    ["properties"]
                    .as_object_mut()
                    .unwrap()
                    .remove("progress");
            });
        let CrdState::Differs(why) = gate::check_crd(&client).await else {
            panic!("another schema must not pass");
        };
        assert!(
            why.contains("fields only in this operator's: status.progress"),
            "{why}"
        );
    })
    .await;
}

/// A gate that leads with a Lease fence for replica `pod-a`, whose reads count for `fresh_for`.
fn fenced(h: &mut Harness, fresh_for: std::time::Duration) {
    let gate = Arc::new(Gate::closed(true));
    gate.set_crd_problem(None);
    gate.set_leading(true);
    gate.fence_with(gate::LeaseFence::new(
        kube::Api::namespaced(h.fake.client(), "benchmatrix-system"),
        "benchmatrix",
        "pod-a",
        fresh_for,
    ));
    with_gate(h, gate);
}

/// The harness's reconciles pass `gate` from now on.
fn with_gate(h: &mut Harness, gate: Arc<Gate>) {
    let mut ctx = Harness::context(&h.fake, &h.now, 1, Writer::default());
    Arc::get_mut(&mut ctx).unwrap().gate = gate;
    h.ctx = ctx;
}

/// The Lease held by `holder`, renewed `ago` seconds before now, for 15 s.
fn lease_renewed(holder: &str, ago: i64) -> serde_json::Value {
    lease_lasting(holder, ago, 15)
}

/// The Lease held by `holder`, renewed `ago` seconds before now, for `secs`.
fn lease_lasting(holder: &str, ago: i64, secs: i64) -> serde_json::Value {
    let renewed = k8s_openapi::jiff::Timestamp::now()
        .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(ago))
        .unwrap();
    serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "benchmatrix", "namespace": "benchmatrix-system"},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": secs,
            "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        },
    })
}

fn lease(holder: &str) -> serde_json::Value {
    lease_renewed(holder, 1)
}

fn lease_reads(h: &Harness) -> usize {
    h.fake
        .calls()
        .iter()
        .filter(|c| c.method == "GET" && c.resource == "leases")
        .count()
}

/// A former leader thawed after a freeze past its Lease still has an open gate (its Lease task
/// has not looked yet): the fence reads the Lease, sees another holder and writes nothing.
#[tokio::test]
async fn a_thawed_former_leader_writes_no_status_while_another_holds_the_lease() {
    with_timeout(async {
        let mut h = Harness::new();
        fenced(&mut h, std::time::Duration::ZERO);
        h.fake.insert("leases", lease("pod-b"));
        h.fake.insert("benchmarkruns", sample("held", &["a"]));
        let requeue = h.reconcile("held").await.unwrap();
        assert_ne!(
            requeue,
            Requeue::await_change(),
            "asked again, not left waiting"
        );
        assert!(h.fake.get("benchmarkruns", NS, "held").unwrap()["status"].is_null());
        assert!(
            !h.fake.calls().iter().any(|c| c.method == "PATCH"),
            "no status write, no child: {:?}",
            h.fake.calls()
        );
        assert_eq!(lease_reads(&h), 1);
        // The Lease names this replica again: the same reconcile writes.
        h.fake
            .edit("leases", "benchmatrix-system", "benchmatrix", |l| {
                l["spec"]["holderIdentity"] = "pod-a".into();
            });
        h.reconcile("held").await.unwrap();
        assert_eq!(h.phase("held"), RunPhase::Running);
    })
    .await;
}

/// A Lease read counts for the fence's window: writes inside it read the Lease once, and
/// with no window every write reads it first.
#[tokio::test]
async fn the_fence_reads_the_lease_again_only_once_its_last_read_is_stale() {
    with_timeout(async {
        for (fresh_for, reads_at_least, reads_at_most) in [
            (std::time::Duration::from_secs(600), 1, 1),
            (std::time::Duration::ZERO, 2, usize::MAX),
        ] {
            let mut h = Harness::new();
            fenced(&mut h, fresh_for);
            // A Lease that lasts beyond the longest window, so only the window decides.
            h.fake.insert("leases", lease_lasting("pod-a", 1, 3600));
            for run in ["one", "two"] {
                h.fake.insert("benchmarkruns", sample(run, &["a"]));
                h.reconcile(run).await.unwrap();
                assert_eq!(h.phase(run), RunPhase::Running);
            }
            let writes = h
                .fake
                .calls()
                .iter()
                .filter(|c| c.sub.as_deref() == Some("status") && c.method == "PATCH")
                .count();
            assert!(writes >= 2, "two status writes, got {writes}");
            let reads = lease_reads(&h);
            assert!(
                (reads_at_least..=reads_at_most).contains(&reads),
                "window {fresh_for:?}: {reads} Lease reads for {writes} writes"
            );
        }
    })
    .await;
}

/// A Lease keeps naming its last holder after it runs out, until a standby takes it: a former
/// leader that reads its own name on an expired Lease (or one that runs out within the fence's
/// window) writes nothing, and writes once the Lease is renewed.
#[tokio::test]
async fn a_lease_that_names_this_replica_but_runs_out_fences_the_write() {
    with_timeout(async {
        let mut h = Harness::new();
        fenced(&mut h, std::time::Duration::from_secs(2));
        // Renewed 20 s ago for 15 s: expired. Then 14 s ago: 1 s left, inside the 2 s window.
        for ago in [20, 14] {
            h.fake.insert("leases", lease_renewed("pod-a", ago));
            h.fake.insert("benchmarkruns", sample("held", &["a"]));
            let requeue = h.reconcile("held").await.unwrap();
            assert_ne!(requeue, Requeue::await_change());
            assert!(
                h.fake.get("benchmarkruns", NS, "held").unwrap()["status"].is_null(),
                "renewed {ago} s ago"
            );
        }
        h.fake.insert("leases", lease("pod-a"));
        h.reconcile("held").await.unwrap();
        assert_eq!(h.phase("held"), RunPhase::Running);
    })
    .await;
}
