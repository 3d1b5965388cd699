//! The image allow-list (`--allowed-images`) against the faked API server: a refused image
//! fails the run with reason ImageNotAllowed before anything is created, an image that is no
//! valid reference fails it with InvalidImageReference whatever the list, allowed images run as
//! before, and a running run whose image a restarted operator no longer allows is stopped.

use std::sync::Arc;

use kube::runtime::controller::Action as Requeue;
use serde_json::json;

use super::{Behaviour, Harness, healthy, sample, with_timeout};
use crate::executors::cluster::children::images::{
    IMAGE_NOT_ALLOWED, INVALID_IMAGE_REFERENCE, ImagePattern, ImagePolicy,
};
use crate::resource::{CellPhase, RunPhase, conditions};

/// Gives the harness's operator these default images and allow-list, as the flags would.
fn configure(h: &mut Harness, patterns: &[&str], target: &str, loadgen: &str) {
    let ctx = Arc::get_mut(&mut h.ctx).expect("no reconcile holds the context between steps");
    ctx.settings.target_image = target.into();
    ctx.settings.loadgen_image = loadgen.into();
    ctx.settings.allowed_images = ImagePolicy::new(
        patterns
            .iter()
            .map(|p| p.parse::<ImagePattern>().expect("a valid pattern"))
            .collect(),
    );
}

#[tokio::test]
async fn a_refused_target_image_fails_the_run_and_creates_no_deployment_or_job() {
    with_timeout(async {
        let mut h = Harness::new();
        configure(
            &mut h,
            &["ghcr.io/acme/**"],
            "ghcr.io/acme/target:1",
            "ghcr.io/acme/loadgen:1",
        );
        let mut run = sample("miner", &["a", "b"]);
        run["spec"]["target"] = json!({"image": "evil/miner:1"});
        h.fake.insert("benchmarkruns", run);

        let requeue = h.reconcile("miner").await.unwrap();
        assert_eq!(
            requeue,
            Requeue::await_change(),
            "no retry until the spec changes"
        );
        let status = h.run("miner").status.unwrap();
        assert_eq!(status.phase, RunPhase::Failed);
        let valid = conditions::find(&status.conditions, conditions::SPEC_VALID).unwrap();
        assert_eq!(valid.status, "False");
        assert_eq!(valid.reason, IMAGE_NOT_ALLOWED);
        for expected in [
            r#"spec.target.image "evil/miner:1" (in full "docker.io/evil/miner:1")"#,
            "ghcr.io/acme/**",
        ] {
            assert!(valid.message.contains(expected), "{}", valid.message);
        }
        assert_eq!(status.message.as_deref(), Some(valid.message.as_str()));
        let progressing = conditions::find(&status.conditions, conditions::PROGRESSING).unwrap();
        assert_eq!(progressing.reason, IMAGE_NOT_ALLOWED);

        // Nothing but the Event was created; a Warning names the reason.
        for kind in ["deployments", "services", "jobs", "configmaps"] {
            assert!(h.fake.list(kind).is_empty(), "{kind} created");
        }
        let created: Vec<_> = h
            .fake
            .creations()
            .into_iter()
            .filter(|(r, _)| r != "events")
            .collect();
        assert!(created.is_empty(), "{created:?}");
        let events = h.fake.list("events");
        assert!(
            events
                .iter()
                .any(|e| e["reason"] == IMAGE_NOT_ALLOWED.as_str() && e["type"] == "Warning"),
            "{events:#?}"
        );

        // Reconciling again (a restart, a resync) changes nothing and calls nothing.
        let before = h.fake.calls().len();
        h.reconcile("miner").await.unwrap();
        assert_eq!(h.fake.calls().len(), before);
    })
    .await;
}

#[tokio::test]
async fn an_image_that_is_no_valid_reference_fails_the_run_even_when_its_string_matches() {
    with_timeout(async {
        let mut h = Harness::new();
        configure(
            &mut h,
            &["ghcr.io/benchmatrix/**"],
            "ghcr.io/benchmatrix/target:1",
            "ghcr.io/benchmatrix/loadgen:1",
        );
        let mut run = sample("escape", &["a"]);
        run["spec"]["target"] = json!({"image": "ghcr.io/benchmatrix/../evil/x:1"});
        h.fake.insert("benchmarkruns", run);

        let requeue = h.reconcile("escape").await.unwrap();
        assert_eq!(requeue, Requeue::await_change());
        let status = h.run("escape").status.unwrap();
        assert_eq!(status.phase, RunPhase::Failed);
        let valid = conditions::find(&status.conditions, conditions::SPEC_VALID).unwrap();
        assert_eq!(valid.status, "False");
        assert_eq!(valid.reason, INVALID_IMAGE_REFERENCE);
        assert!(
            valid.message.starts_with(
                r#"invalid image reference: spec.target.image "ghcr.io/benchmatrix/../evil/x:1": path component ".." is not a valid name component"#
            ),
            "{}",
            valid.message
        );
        let created: Vec<_> = h
            .fake
            .creations()
            .into_iter()
            .filter(|(r, _)| r != "events")
            .collect();
        assert!(created.is_empty(), "{created:?}");
        let events = h.fake.list("events");
        assert!(
            events
                .iter()
                .any(|e| e["reason"] == INVALID_IMAGE_REFERENCE.as_str() && e["type"] == "Warning"),
            "{events:#?}"
        );

        // An operator with no allow-list refuses it too: the kubelet would.
        h.restart();
        configure(
            &mut h,
            &[],
            "ghcr.io/benchmatrix/target:1",
            "ghcr.io/benchmatrix/loadgen:1",
        );
        let mut run = sample("upper", &["a"]);
        run["spec"]["loadgen"] = json!({"image": "ghcr.io/Acme/lg:1"});
        h.fake.insert("benchmarkruns", run);
        h.reconcile("upper").await.unwrap();
        let status = h.run("upper").status.unwrap();
        assert_eq!(status.phase, RunPhase::Failed);
        let valid = conditions::find(&status.conditions, conditions::SPEC_VALID).unwrap();
        assert_eq!(valid.reason, INVALID_IMAGE_REFERENCE);
        assert!(
            valid
                .message
                .contains(r#"spec.loadgen.image "ghcr.io/Acme/lg:1": path component "Acme""#),
            "{}",
            valid.message
        );
        for kind in ["deployments", "services", "jobs", "configmaps"] {
            assert!(h.fake.list(kind).is_empty(), "{kind} created");
        }
    })
    .await;
}

#[tokio::test]
async fn a_refused_default_load_generator_image_is_named_with_its_flag() {
    with_timeout(async {
        let mut h = Harness::new();
        configure(
            &mut h,
            &["ghcr.io/acme/*"],
            "ghcr.io/acme/target:1",
            "ghcr.io/benchmatrix/benchmatrix-loadgen:0.1.0",
        );
        h.fake.insert("benchmarkruns", sample("lg", &["a"]));
        h.reconcile("lg").await.unwrap();
        let status = h.run("lg").status.unwrap();
        assert_eq!(status.phase, RunPhase::Failed);
        let message = status.message.unwrap();
        assert!(
            message.contains(
                r#"the default image for spec.loadgen.image "ghcr.io/benchmatrix/benchmatrix-loadgen:0.1.0""#
            ) && message.contains("--loadgen-image"),
            "{message}"
        );
        assert!(!message.contains("spec.target.image"), "{message}");
        assert!(h.fake.list("deployments").is_empty());
    })
    .await;
}

#[tokio::test]
async fn allowed_images_run_as_before_and_are_the_ones_deployed() {
    with_timeout(async {
        let mut h = Harness::new();
        configure(
            &mut h,
            &["ghcr.io/acme/*", "registry.local:5000/bench-*:*"],
            "ghcr.io/acme/target:1",
            "registry.local:5000/bench-loadgen:2",
        );
        let mut run = sample("fine", &["a"]);
        run["spec"]["target"] = json!({"image": "ghcr.io/acme/app:3"});
        h.fake.insert("benchmarkruns", run);
        h.reconcile("fine").await.unwrap();
        let deployments = h.fake.list("deployments");
        assert_eq!(
            deployments[0]["spec"]["template"]["spec"]["containers"][0]["image"],
            "ghcr.io/acme/app:3"
        );
        h.simulate(&healthy);
        h.reconcile("fine").await.unwrap();
        let jobs = h.fake.list("jobs");
        assert_eq!(
            jobs[0]["spec"]["template"]["spec"]["containers"][0]["image"],
            "registry.local:5000/bench-loadgen:2"
        );
        let phases = h.drive("fine", &healthy).await;
        assert_eq!(phases.last(), Some(&RunPhase::Succeeded));
    })
    .await;
}

#[tokio::test]
async fn a_running_run_is_stopped_when_a_restarted_operator_refuses_its_image() {
    with_timeout(async {
        let mut h = Harness::new();
        let mut run = sample("before", &["a", "b"]);
        run["spec"]["target"] = json!({"image": "evil/miner:1"});
        h.fake.insert("benchmarkruns", run);
        // Allowed by the first operator (no allow-list): cell a is deployed.
        h.reconcile("before").await.unwrap();
        h.simulate(&|_| Behaviour::Busy);
        assert_eq!(h.fake.list("deployments").len(), 1);
        assert_eq!(h.phase("before"), RunPhase::Running);

        // The operator restarts with an allow-list that does not include the image.
        h.restart();
        configure(
            &mut h,
            &["ghcr.io/acme/**"],
            "ghcr.io/acme/target:1",
            "ghcr.io/acme/loadgen:1",
        );
        h.reconcile("before").await.unwrap();
        let status = h.run("before").status.unwrap();
        assert_eq!(status.phase, RunPhase::Failed);
        let valid = conditions::find(&status.conditions, conditions::SPEC_VALID).unwrap();
        assert_eq!(valid.reason, IMAGE_NOT_ALLOWED);
        assert!(
            h.fake.list("deployments").is_empty() && h.fake.list("services").is_empty(),
            "the refused image's Deployment and Service are deleted"
        );
        assert_ne!(status.cells[1].phase, CellPhase::Deploying, "no next cell");
        assert!(h.fake.list("jobs").is_empty());
    })
    .await;
}
