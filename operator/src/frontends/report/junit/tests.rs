use super::*;
use crate::engine::verdict::outcome::Outcome;

fn finished() -> BenchmarkRunStatus {
    let text = include_str!("../../../../tests/fixtures/finished/ci-gate.yaml");
    crate::frontends::report::parse_status(text).unwrap()
}

/// The attribute `name` of the first element of `text` that starts with `open`.
fn attr<'a>(text: &'a str, open: &str, name: &str) -> &'a str {
    let at = text
        .find(open)
        .unwrap_or_else(|| panic!("no {open} in {text}"));
    let rest = &text[at..];
    let rest = &rest[rest.find(&format!(" {name}=\"")).unwrap() + name.len() + 3..];
    &rest[..rest.find('"').unwrap()]
}

#[test]
fn every_threshold_verdict_and_every_cell_is_a_case() {
    let xml = junit_xml("ci-gate", &finished(), None);
    // 3 verdicts and 3 cells; 1 threshold and 1 cell failed.
    assert_eq!(attr(&xml, "<testsuites", "tests"), "6", "{xml}");
    assert_eq!(attr(&xml, "<testsuites", "failures"), "2");
    assert_eq!(attr(&xml, "<testsuites", "time"), "100.000");
    assert_eq!(
        attr(&xml, "<testsuite name=\"thresholds\"", "failures"),
        "1"
    );
    assert_eq!(attr(&xml, "<testsuite name=\"cells\"", "tests"), "3");
    assert_eq!(
        attr(&xml, "<testsuite name=\"cells\"", "timestamp"),
        "2026-12-02T10:00:00"
    );
    assert!(xml.contains(
        "<testcase classname=\"ci-gate.thresholds\" name=\"mixed/fast p99 below 100ms [pool-x1]\" time=\"0.000\"/>"
    ), "{xml}");
    assert!(xml.contains(
        "<failure type=\"ThresholdFailed\" message=\"p99 803.3 ms is not below 100.0 ms\">mixed/fast p99 below 100ms on single-x1: measured 803.3, limit 100</failure>"
    ), "{xml}");
    assert!(xml.contains(
        "<testcase classname=\"ci-gate.cells\" name=\"pool-x2\" time=\"40.000\">\n      <failure type=\"NeverReady\" message=\"NeverReady: no replica became ready within 2m (0/2 available)\">"
    ), "{xml}");
    assert!(
        xml.contains("<testcase classname=\"ci-gate.cells\" name=\"pool-x1\" time=\"30.000\"/>")
    );
}

#[test]
fn a_skipped_cell_is_skipped_and_a_refused_run_is_one_failed_case() {
    let mut status = finished();
    status.thresholds.clear();
    status.cells[2].phase = CellPhase::Skipped;
    status.cells[2].message = None;
    let xml = junit_xml("ci-gate", &status, None);
    assert!(!xml.contains("thresholds"), "{xml}");
    assert_eq!(attr(&xml, "<testsuites", "skipped"), "1");
    assert!(xml.contains("<skipped message=\"not run: an earlier cell failed (stopOnFailure)\"/>"));

    let mut refused = BenchmarkRunStatus {
        phase: crate::resource::RunPhase::Failed,
        message: Some("spec.target.image: not allowed".into()),
        ..Default::default()
    };
    conditions::set_condition(
        &mut refused.conditions,
        conditions::SPEC_VALID,
        conditions::status::FALSE,
        conditions::Reason::ImageNotAllowed,
        "image ghcr.io/x/y:1 is not allowed",
        None,
        &conditions::now(),
    );
    let xml = junit_xml("r", &refused, None);
    assert_eq!(attr(&xml, "<testsuites", "tests"), "1", "{xml}");
    assert!(xml.contains("<testsuite name=\"run\""), "{xml}");
    assert!(
        xml.contains(
            "<failure type=\"ImageNotAllowed\" message=\"image ghcr.io/x/y:1 is not allowed\">"
        ),
        "{xml}"
    );
}

#[test]
fn text_is_escaped_and_characters_xml_cannot_hold_are_dropped() {
    assert_eq!(
        escape("a<b & \"c\" 'd'>\u{1}\u{7}e\tf\n"),
        "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;e\tf\n"
    );
    let mut status = finished();
    status.cells[2].message = Some("exit <1> & \u{1b}[31mred".into());
    let xml = junit_xml("a&b", &status, None);
    assert!(xml.contains("exit &lt;1&gt; &amp; [31mred"), "{xml}");
    assert!(xml.contains("classname=\"a&amp;b.cells\""), "{xml}");
}

/// The real paired run of the shared fixtures: base and candidate of configuration threads.
fn paired() -> BenchmarkRunStatus {
    let text = include_str!("../../../../tests/fixtures/finished/paired.yaml");
    crate::frontends::report::parse_status(text).unwrap()
}

#[test]
fn each_candidate_figure_is_a_case_failed_on_a_regression() {
    let xml = junit_xml("paired", &paired(), None);
    // p50 (+9.8%, every round slower) and rps (-8.3%) regressed; p99 was within noise.
    assert_eq!(
        attr(&xml, "<testsuite name=\"variants\"", "tests"),
        "3",
        "{xml}"
    );
    assert_eq!(attr(&xml, "<testsuite name=\"variants\"", "failures"), "2");
    assert!(
        xml.contains(
            "<testcase classname=\"paired.variants\" name=\"threads: candidate vs base steady/fast p99\" time=\"0.000\"/>"
        ),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<failure type=\"Regression\" message=\"candidate p50 of threads: +9.8%, 95% interval +9.6% to +10.0%, p=0.031\">"
        ),
        "{xml}"
    );
    // A run without variants has no such suite.
    assert!(!junit_xml("ci-gate", &finished(), None).contains("variants"));
}

/// With `--max-regression`, a case fails exactly where the exit code's gate does: at 9.5% the
/// p50 (+9.8%) still fails and the rps (-8.3%: 9.1% more time a request) passes; at 10%
/// neither does.
#[test]
fn with_max_regression_the_cases_fail_where_the_exit_code_does() {
    let status = paired();
    let xml = junit_xml("paired", &status, Some(9.5));
    assert_eq!(
        attr(&xml, "<testsuite name=\"variants\"", "failures"),
        "1",
        "{xml}"
    );
    assert!(
        xml.contains("p=0.031, beyond --max-regression 9.5%\">"),
        "{xml}"
    );
    let gated = |max| Outcome::gated(&status, Some(max)).0;
    assert_eq!(gated(9.5), Outcome::Regressed);

    let xml = junit_xml("paired", &status, Some(10.0));
    assert_eq!(
        attr(&xml, "<testsuite name=\"variants\"", "failures"),
        "0",
        "{xml}"
    );
    assert_eq!(gated(10.0), Outcome::AllSucceeded);
}
