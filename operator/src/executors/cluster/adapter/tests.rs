use super::*;
use crate::fixtures::{connections, phase};
use crate::resource::{CellPhase, CellStatus, Configuration};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::batch::v1::JobStatus;
use k8s_openapi::api::core::v1::Pod;

/// Run `r` in namespace `ns` (uid `u1`, generation 1): cells `a` and `b` of one CPU each, one
/// phase `p` of 5 s; its status `status`.
fn run_with(status: Option<BenchmarkRunStatus>) -> BenchmarkRun {
    let mut run = BenchmarkRun::sample()
        .named("r")
        .in_namespace("ns")
        .with_uid("u1")
        .with_generation(1)
        .with_cell(Configuration::named("a").cpu("1"))
        .with_cell(Configuration::named("b").cpu("1"))
        .with_phases([phase("p", "5s", [connections("fast", 1)])]);
    run.status = status;
    run
}

fn mid_run() -> BenchmarkRunStatus {
    BenchmarkRunStatus {
        phase: RunPhase::Running,
        observed_generation: Some(1),
        cells: vec![
            CellStatus {
                name: "a".into(),
                phase: CellPhase::Succeeded,
                ..CellStatus::default()
            },
            CellStatus {
                name: "b".into(),
                phase: CellPhase::Running,
                load_start_time: Some(conditions::time_from_secs(100)),
                ..CellStatus::default()
            },
        ],
        ..BenchmarkRunStatus::default()
    }
}

fn running_job() -> Job {
    Job {
        status: Some(JobStatus {
            active: Some(1),
            ..JobStatus::default()
        }),
        ..Job::default()
    }
}

#[test]
fn a_restart_mid_cell_with_the_job_running_changes_nothing() {
    let run = run_with(Some(mid_run()));
    let obs = Observation {
        job: Some(running_job()),
        ..Observation::default()
    };
    let d = turn(
        &run,
        &obs,
        &conditions::time_from_secs(110),
        &Settings::default(),
    );
    assert!(d.actions.is_empty(), "{:?}", d.actions);
    assert!(d.events.is_empty());
    let mut expected = mid_run();
    expected.progress = Some("1/2".into());
    assert_eq!(d.status, expected);
    assert!(
        d.requeue.is_some(),
        "a safety-net requeue for the run timeout"
    );
}

#[test]
fn a_pending_cell_gets_its_deployment_and_service_and_an_event() {
    let run = run_with(None);
    let d = turn(
        &run,
        &Observation::default(),
        &conditions::time_from_secs(1),
        &Settings::default(),
    );
    assert_eq!(d.status.phase, RunPhase::Running);
    assert_eq!(d.status.cells[0].phase, CellPhase::Deploying);
    assert!(matches!(d.actions[0], Action::Apply(Child::Deployment(_))));
    assert!(matches!(d.actions[1], Action::Apply(Child::Service(_))));
    assert_eq!(d.events[0].reason, "CellStarted");
}

#[test]
fn a_run_past_its_deadline_fails_the_cell_with_timeout() {
    let run = run_with(Some(mid_run()));
    let obs = Observation {
        job: Some(running_job()),
        ..Observation::default()
    };
    // The default 5 m for the load generator's check of the target, 5 s of phases and the
    // default 2 m slack: not yet at 100 + 424, failed at 100 + 426.
    let at = |secs| {
        turn(
            &run,
            &obs,
            &conditions::time_from_secs(secs),
            &Settings::default(),
        )
    };
    assert_eq!(at(100 + 424).status.cells[1].phase, CellPhase::Running);
    let d = at(100 + 426);
    assert_eq!(d.status.cells[1].phase, CellPhase::Failed);
    assert_eq!(
        d.status.cells[1].reason.as_deref(),
        Some(Cause::Timeout.as_str())
    );
    assert!(
        d.actions
            .iter()
            .any(|a| matches!(a, Action::Delete(ChildKind::Job, _)))
    );
}

#[test]
fn stop_on_failure_skips_the_rest_and_fails_the_run() {
    let mut run = run_with(None);
    run.spec.stop_on_failure = true;
    let mut status = mid_run();
    status.cells[0].phase = CellPhase::Running;
    status.cells[0].load_start_time = Some(conditions::time_from_secs(100));
    status.cells[1].phase = CellPhase::Pending;
    run.status = Some(status);
    let mut job = running_job();
    job.status = failed_job().status;
    let obs = Observation {
        job: Some(job),
        loadgen_failure: Some("boom".into()),
        ..Observation::default()
    };
    let now = conditions::time_from_secs(101);
    let d = turn(&run, &obs, &now, &Settings::default());
    assert_eq!(d.status.cells[1].phase, CellPhase::Skipped);
    run.status = Some(d.status);
    let d = turn(&run, &Observation::default(), &now, &Settings::default());
    assert_eq!(d.status.phase, RunPhase::Failed);
    assert!(
        d.status
            .message
            .unwrap()
            .contains("stopped at failed cell a")
    );
}

fn failed_job() -> Job {
    Job {
        status: Some(JobStatus {
            failed: Some(1),
            conditions: Some(vec![k8s_openapi::api::batch::v1::JobCondition {
                type_: "Failed".into(),
                status: "True".into(),
                reason: Some("BackoffLimitExceeded".into()),
                ..Default::default()
            }]),
            ..JobStatus::default()
        }),
        ..Job::default()
    }
}

#[test]
fn a_load_generator_whose_target_never_answered_fails_the_cell_as_target_unreachable() {
    let run = run_with(Some(mid_run()));
    let line = "error: target unreachable: http://10.96.0.12:8080 did not answer GET /healthz \
                within 5m: connection refused";
    let obs = Observation {
        job: Some(failed_job()),
        loadgen_failure: Some(line.into()),
        ..Observation::default()
    };
    let d = turn(
        &run,
        &obs,
        &conditions::time_from_secs(400),
        &Settings::default(),
    );
    let c = &d.status.cells[1];
    assert_eq!(c.phase, CellPhase::Failed);
    assert_eq!(c.reason.as_deref(), Some(Cause::TargetUnreachable.as_str()));
    let message = c.message.as_deref().unwrap();
    assert!(
        message.contains("http://10.96.0.12:8080 did not answer"),
        "{message}"
    );
    assert!(message.contains("connection refused"), "{message}");
    // Any other error is still LoadgenFailed.
    let obs = Observation {
        loadgen_failure: Some("error: load-generator worker failed: x".into()),
        ..obs
    };
    let d = turn(
        &run,
        &obs,
        &conditions::time_from_secs(400),
        &Settings::default(),
    );
    assert_eq!(
        d.status.cells[1].reason.as_deref(),
        Some(Cause::LoadgenFailed.as_str())
    );
}

fn target_pod(uid: &str, restarts: i32) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "r-b-pod0", "uid": uid},
        "status": {"phase": "Running", "podIP": "10.1.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "target", "ready": true, "restartCount": restarts,
                "image": "x", "imageID": "",
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]},
    }))
    .unwrap()
}

#[test]
fn a_running_cell_without_a_record_records_its_pods_and_then_holds_them_to_it() {
    // A cell started by an operator that kept no record (mid_run has none).
    let run = run_with(Some(mid_run()));
    let obs = Observation {
        job: Some(running_job()),
        target_pods: vec![target_pod("u1", 0)],
        ..Observation::default()
    };
    let now = conditions::time_from_secs(110);
    let d = turn(&run, &obs, &now, &Settings::default());
    let record = &d.status.cells[1].target_pods;
    assert_eq!(record.len(), 1, "{record:?}");
    assert_eq!((record[0].uid.as_str(), record[0].restarts), ("u1", 0));
    // The same pod, restarted: the cell fails.
    let run = run_with(Some(d.status));
    let obs = Observation {
        target_pods: vec![target_pod("u1", 1)],
        ..obs
    };
    let d = turn(&run, &obs, &now, &Settings::default());
    assert_eq!(d.status.cells[1].phase, CellPhase::Failed);
    assert_eq!(
        d.status.cells[1].reason.as_deref(),
        Some(Cause::ReplicaExited.as_str())
    );
    // Killed for memory instead: named OOMKilled, as while the target starts.
    let mut oom = target_pod("u1", 1);
    oom.status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()[0]
        .last_state
        .as_mut()
        .unwrap()
        .terminated
        .as_mut()
        .unwrap()
        .reason = Some("OOMKilled".into());
    let oom_obs = Observation {
        target_pods: vec![oom],
        ..Observation::default()
    };
    let e = turn(&run, &oom_obs, &now, &Settings::default());
    assert_eq!(
        e.status.cells[1].reason.as_deref(),
        Some(Cause::OomKilled.as_str())
    );
    assert!(
        e.status.cells[1]
            .message
            .as_deref()
            .unwrap()
            .contains("exit code 1; raise the cell's memory"),
        "{:?}",
        e.status.cells[1].message
    );
    assert!(
        d.actions
            .iter()
            .any(|a| matches!(a, Action::Delete(ChildKind::Job, _))),
        "the failed cell is cleaned up"
    );
}

#[test]
fn a_run_whose_every_cell_failed_ends_failed_not_succeeded() {
    let mut status = mid_run();
    for (cell, why) in status
        .cells
        .iter_mut()
        .zip(["Unschedulable", "ReplicaExited"])
    {
        cell.phase = CellPhase::Failed;
        cell.reason = Some(why.into());
    }
    let run = run_with(Some(status));
    let d = turn(
        &run,
        &Observation::default(),
        &conditions::time_from_secs(200),
        &Settings::default(),
    );
    assert_eq!(d.status.phase, RunPhase::Failed);
    let complete = conditions::find(&d.status.conditions, conditions::COMPLETE).unwrap();
    assert_eq!(complete.reason, Reason::NoCellMeasured);
    assert!(
        d.events
            .iter()
            .any(|e| e.reason == "RunFailed" && e.warning)
    );
}

#[test]
fn a_spec_change_while_running_fails_the_run_instead_of_mixing_results() {
    // `cleanup: Never` keeps what finished steps leave, not a step abandoned mid-load: its
    // objects are deleted all the same.
    for cleanup in [
        crate::resource::CleanupPolicy::Always,
        crate::resource::CleanupPolicy::Never,
    ] {
        let mut run = run_with(Some(mid_run()));
        run.spec.cleanup = cleanup;
        run.metadata.generation = Some(2);
        let d = turn(
            &run,
            &Observation::default(),
            &conditions::time_from_secs(110),
            &Settings::default(),
        );
        assert_eq!(d.status.phase, RunPhase::Failed);
        assert!(d.status.message.unwrap().contains("generation 1 -> 2"));
        for kind in [ChildKind::Deployment, ChildKind::Service, ChildKind::Job] {
            assert!(
                d.actions
                    .iter()
                    .any(|a| matches!(a, Action::Delete(k, _) if k == &kind)),
                "{cleanup:?}: {kind:?} deleted: {:?}",
                d.actions
            );
        }
    }
}
