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
        let mut ctx = Harness::context(&h.fake, &h.now, 1, Writer::default());
        Arc::get_mut(&mut ctx).unwrap().gate = closed.clone();
        h.ctx = ctx;
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
