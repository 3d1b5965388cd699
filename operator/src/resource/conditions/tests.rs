use super::*;

#[test]
fn transition_time_moves_only_when_the_status_changes() {
    let mut conds = Vec::new();
    let t1 = time_from_secs(100);
    let t2 = time_from_secs(200);
    let t3 = time_from_secs(300);
    set_condition(
        &mut conds,
        PROGRESSING,
        status::TRUE,
        Reason::CellRunning,
        "cell a",
        Some(1),
        &t1,
    );
    // New message, same status: the message changes, the time is kept.
    set_condition(
        &mut conds,
        PROGRESSING,
        status::TRUE,
        Reason::CellRunning,
        "cell b",
        Some(1),
        &t2,
    );
    assert_eq!(conds[0].last_transition_time, t1);
    assert_eq!(conds[0].message, "cell b");
    // Nothing new: the time is kept.
    set_condition(
        &mut conds,
        PROGRESSING,
        status::TRUE,
        Reason::CellRunning,
        "cell b",
        Some(1),
        &t3,
    );
    assert_eq!(conds[0].last_transition_time, t1);
    // Status flips: time moves.
    set_condition(
        &mut conds,
        PROGRESSING,
        status::FALSE,
        Reason::Finished,
        "done",
        Some(1),
        &t3,
    );
    assert_eq!(conds[0].last_transition_time, t3);
    assert_eq!(
        (conds[0].status.as_str(), conds[0].reason.as_str()),
        ("False", "Finished")
    );
    assert_eq!(conds.len(), 1);
}

#[test]
fn a_load_generator_error_is_target_unreachable_only_when_its_check_failed() {
    use benchmatrix_loadgen::load::RunError;
    // The words as the load generator prints them, read from its own error type.
    let words = |e: RunError| format!("error: {e}");
    let unreachable = RunError::Unreachable("http://10.0.0.1:8080 did not answer".into());
    assert_eq!(
        Cause::of_loadgen_failure(&words(unreachable)),
        Cause::TargetUnreachable
    );
    let other = RunError::Worker("a worker thread has stopped".into());
    assert_eq!(
        Cause::of_loadgen_failure(&words(other)),
        Cause::LoadgenFailed
    );
    assert_eq!(
        Cause::of_loadgen_failure("error: no request succeeded"),
        Cause::LoadgenFailed
    );
}
