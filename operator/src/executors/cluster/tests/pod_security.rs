//! Pod Security (`--pod-security`, a namespace's enforce label) against the faked API server: a
//! run whose merged pods would not meet the level fails before anything is created, with the
//! field and the check named, and a namespace label makes the level stricter, never looser.

use std::sync::Arc;

use kube::runtime::controller::Action as Requeue;
use serde_json::json;

use super::{Harness, NS, healthy, sample, with_timeout};
use crate::resource::conditions::{self, Reason};
use crate::resource::{BenchmarkRun, RunPhase};
use benchmatrix_pod_security::Level;

fn at_level(h: &mut Harness, level: Level) {
    let ctx = Arc::get_mut(&mut h.ctx).expect("no reconcile holds the context between steps");
    ctx.settings.pod_security = level;
}

fn labelled_namespace(h: &Harness, level: &str) {
    h.fake.insert_cluster_scoped(
        "namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": NS, "labels": {"pod-security.kubernetes.io/enforce": level}}}),
    );
}

/// A run whose template adds a sidecar with no security context: fine at baseline, refused at
/// restricted (privilege escalation not disabled, capabilities not dropped).
fn run_with_sidecar(name: &str) -> serde_json::Value {
    let mut run = sample(name, &["a"]);
    run["spec"]["target"]["podTemplate"] = json!({"spec": {"containers": [
        {"name": "target"},
        {"name": "proxy", "image": "envoyproxy/envoy:v1.31.0"},
    ]}});
    run
}

fn refused_with(h: &Harness, name: &str) -> String {
    let run: BenchmarkRun = h.run(name);
    let status = run.status.unwrap();
    assert_eq!(status.phase, RunPhase::Failed);
    let valid = conditions::find(&status.conditions, conditions::SPEC_VALID).unwrap();
    assert_eq!(valid.status, "False");
    assert_eq!(valid.reason, Reason::InvalidSpec);
    for kind in ["deployments", "services", "jobs", "configmaps"] {
        assert!(h.fake.list(kind).is_empty(), "{kind} created");
    }
    valid.message.clone()
}

#[tokio::test]
async fn the_issues_escalating_run_fails_at_once_with_nothing_created() {
    with_timeout(async {
        let h = Harness::new();
        let mut run = sample("escalate", &["a", "b"]);
        run["spec"]["target"]["podTemplate"] = json!({"spec": {
            "securityContext": {"runAsUser": 0, "runAsNonRoot": false,
                                "seccompProfile": {"type": "Unconfined"}},
            "containers": [{"name": "target", "securityContext": {
                "runAsUser": 0, "runAsNonRoot": false, "allowPrivilegeEscalation": true,
                "readOnlyRootFilesystem": false,
                "capabilities": {"add": ["SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE"]}}}],
        }});
        h.fake.insert("benchmarkruns", run);
        let requeue = h.reconcile("escalate").await.unwrap();
        assert_eq!(
            requeue,
            Requeue::await_change(),
            "no retry until the spec changes"
        );
        let message = refused_with(&h, "escalate");
        for expected in [
            "spec.target.podTemplate.spec.containers[0].securityContext.allowPrivilegeEscalation: \
             violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false \
             (container \"target\" must set securityContext.allowPrivilegeEscalation=false)",
            "[check capabilities_restricted]",
            "[check runAsNonRoot]",
            // The condition's message is bounded: the later checks (runAsUser,
            // seccompProfile_restricted) may be cut, the first ones never are.
        ] {
            assert!(message.contains(expected), "{expected} not in {message}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_namespace_label_tightens_the_operators_level_and_never_loosens_it() {
    with_timeout(async {
        // At baseline, in a namespace enforcing restricted: refused as restricted refuses it.
        let mut h = Harness::new();
        at_level(&mut h, Level::Baseline);
        labelled_namespace(&h, "restricted");
        h.fake.insert("benchmarkruns", run_with_sidecar("tight"));
        h.reconcile("tight").await.unwrap();
        let message = refused_with(&h, "tight");
        assert!(
            message.contains(
                "spec.target.podTemplate.spec.containers[1].securityContext.allowPrivilegeEscalation: \
                 violates PodSecurity \"restricted:latest\""
            ),
            "{message}"
        );

        // At baseline in a namespace that asks for privileged: still baseline, and the run
        // (which baseline admits) runs.
        let mut h = Harness::new();
        at_level(&mut h, Level::Baseline);
        labelled_namespace(&h, "privileged");
        h.fake.insert("benchmarkruns", run_with_sidecar("loose"));
        h.drive("loose", &healthy).await;
        assert_eq!(h.run("loose").status.unwrap().phase, RunPhase::Succeeded);

        // At restricted, the label cannot make the sidecar acceptable.
        let h = Harness::new();
        labelled_namespace(&h, "privileged");
        h.fake.insert("benchmarkruns", run_with_sidecar("still"));
        h.reconcile("still").await.unwrap();
        assert!(refused_with(&h, "still").contains("[check allowPrivilegeEscalation]"));
    })
    .await;
}
