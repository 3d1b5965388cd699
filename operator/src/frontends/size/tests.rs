use super::*;
use crate::resource::EnvVar;
use crate::resource::sizing::{HpaTarget, SizedConfiguration, SizingOutcome};

fn chosen() -> ChosenConfiguration {
    ChosenConfiguration {
        configuration: "pool-x2-cpu500m-workers4".into(),
        mode: "pool".into(),
        replicas: 2,
        cpu: "500m".into(),
        memory: "256Mi".into(),
        env: vec![EnvVar::new("WORKERS", "4")],
        reserved_cpu: 1.0,
        held_rate: 52.0,
        headroom: 0.3,
        confirmed: "3 of 3 probes held 48 rps".into(),
        hpa: Some(HpaTarget {
            utilization_at_held: 0.8,
            target_utilization: 60,
            min_replicas: 2,
            max_replicas: 4,
        }),
    }
}

fn status(chosen: Option<ChosenConfiguration>) -> SizingStatus {
    SizingStatus {
        traffic: 40.0,
        target_rate: 48.0,
        outcome: if chosen.is_some() {
            SizingOutcome::Chosen
        } else {
            SizingOutcome::NothingHolds
        },
        message: "the answer".into(),
        chosen,
        configurations: vec![SizedConfiguration {
            name: "single-x1-cpu250m".into(),
            reserved_cpu: 0.25,
            state: SizedState::Pruned,
            bound: Some(20.0),
            why: Some("holds at most 20 rps".into()),
            ..SizedConfiguration::default()
        }],
        ..SizingStatus::default()
    }
}

#[test]
fn the_patch_sets_replicas_guaranteed_resources_and_the_env_the_answer_ran_with() {
    let patch: serde_yaml::Value =
        serde_yaml::from_str(&deployment_patch(&chosen(), "shop", "web")).unwrap();
    assert_eq!(patch["kind"], "Deployment");
    assert_eq!(patch["metadata"]["name"], "shop");
    assert_eq!(patch["spec"]["replicas"], 2);
    let container = &patch["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["name"], "web");
    for side in ["requests", "limits"] {
        assert_eq!(container["resources"][side]["cpu"], "500m");
        assert_eq!(container["resources"][side]["memory"], "256Mi");
    }
    let env: Vec<(String, String)> = container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // Only what the search varied: the built-in target's BENCH_MODE is not the user's knob.
    assert_eq!(env, [("WORKERS".to_owned(), "4".to_owned())]);

    // A search that varied no env leaves the container's env to the merge.
    let mut plain = chosen();
    plain.env.clear();
    let patch: serde_yaml::Value =
        serde_yaml::from_str(&deployment_patch(&plain, "shop", "web")).unwrap();
    let container = &patch["spec"]["template"]["spec"]["containers"][0];
    assert!(container.get("env").is_none(), "{container:?}");
}

#[test]
fn the_autoscaler_is_an_autoscaling_v2_object_at_the_measured_target() {
    let text = hpa(&chosen(), "shop").unwrap();
    let typed: k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler =
        serde_yaml::from_str(&text).unwrap();
    assert!(text.contains("apiVersion: autoscaling/v2"), "{text}");
    let spec = typed.spec;
    assert_eq!(spec.scale_target_ref.name, "shop");
    assert_eq!(spec.scale_target_ref.kind, "Deployment");
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(2), 4));
    let metric = &spec.metrics.unwrap()[0];
    let target = &metric.resource.as_ref().unwrap().target;
    assert_eq!(metric.resource.as_ref().unwrap().name, "cpu");
    assert_eq!(target.average_utilization, Some(60));
    let mut no_cpu = chosen();
    no_cpu.hpa = None;
    assert_eq!(hpa(&no_cpu, "shop"), None);
}

#[test]
fn manifests_are_written_only_for_a_chosen_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let args = ManifestArgs {
        manifests: None,
        deployment: "shop".into(),
        container: "web".into(),
    };
    let out = dir.path().join("sized");
    let paths = write_manifests(&status(Some(chosen())), &out, &args).unwrap();
    assert_eq!(
        paths,
        [out.join("deployment-patch.yaml"), out.join("hpa.yaml")]
    );
    assert!(
        std::fs::read_to_string(&paths[1])
            .unwrap()
            .contains("averageUtilization: 60")
    );
    let none = dir.path().join("none");
    let err = write_manifests(&status(None), &none, &args).unwrap_err();
    assert!(err.contains("no configuration was chosen"), "{err}");
    assert!(!none.exists());
}

#[test]
fn the_text_names_the_answer_its_settings_and_why_each_other_configuration_was_left() {
    let text = text(&status(Some(chosen())));
    assert!(
        text.contains("chosen: pool-x2-cpu500m-workers4: 2 replica(s) x 500m CPU"),
        "{text}"
    );
    assert!(text.contains("env WORKERS=4"), "{text}");
    assert!(text.contains("target 60% (replicas 2 to 4)"), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("single-x1-cpu250m"))
        .unwrap();
    assert!(
        row.contains("pruned") && row.contains("holds at most 20 rps"),
        "{row}"
    );
}
