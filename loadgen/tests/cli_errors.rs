//! The command line against failing targets and bad input: errors counted by kind, runs that
//! end on time whatever the target does, and exit codes (0 some success, 1 none, 2 bad input).

mod common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use benchmatrix_loadgen::result::{RunResult, StreamResult};
use common::{Behaviour, TestServer};

fn loadgen(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_benchmatrix-loadgen"))
        .args(args)
        .output()
        .expect("the load generator runs");
    (out, started.elapsed())
}

/// Runs a one-off JSON run of `secs` seconds against `url`; returns the exit code and stream.
fn run_json(url: &str, secs: u64, extra: &[&str]) -> (i32, StreamResult) {
    let d = format!("{secs}s");
    let mut args = vec![
        "-c",
        "4",
        "-t",
        "1",
        "-d",
        &d,
        "--timeout",
        "500ms",
        "--json",
    ];
    args.extend_from_slice(extra);
    args.push(url);
    let (out, took) = loadgen(&args);
    assert!(
        took < Duration::from_secs(secs) + Duration::from_millis(1500),
        "a {secs} s run took {took:?}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let doc: RunResult = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("last stdout line is not a result ({e}): {stdout}"));
    (out.status.code().unwrap(), doc.phases[0].streams[0].clone())
}

#[test]
fn timing_errors_status_500_counted_as_5xx_and_exit_1() {
    let server = TestServer::start(Behaviour::Status(500));
    let (code, s) = run_json(&server.url("/"), 1, &[]);
    assert_eq!(code, 1, "no request succeeded");
    assert!(s.errors > 10, "{s:?}");
    assert_eq!(s.errors_by_kind.status5xx, s.errors);
    assert_eq!(s.requests, s.errors);
    assert_eq!(s.rps, 0.0);
}

#[test]
fn timing_errors_status_404_counted_as_4xx() {
    let server = TestServer::start(Behaviour::Status(404));
    let (code, s) = run_json(&server.url("/"), 1, &[]);
    assert_eq!(code, 1);
    assert_eq!(s.errors_by_kind.status4xx, s.errors);
    assert!(s.errors > 10);
}

#[test]
fn timing_errors_resets_counted_as_reset() {
    let server = TestServer::start(Behaviour::Reset);
    let (code, s) = run_json(&server.url("/"), 1, &[]);
    assert_eq!(code, 1);
    assert!(s.errors_by_kind.reset > 10, "{:?}", s.errors_by_kind);
    assert_eq!(s.errors_by_kind.reset, s.errors);
    // Each reset costs a connection.
    assert!(s.connections_opened >= s.errors_by_kind.reset);
}

#[test]
fn timing_errors_silent_server_cut_at_the_timeout() {
    let server = TestServer::start(Behaviour::Hang);
    // 500 ms timeout in a 2 s run: each of the 4 connections times out about 3 times (the
    // fourth request is cut by the end of the run instead).
    let (code, s) = run_json(&server.url("/"), 2, &[]);
    assert_eq!(code, 1);
    assert_eq!(s.errors_by_kind.timeout, s.errors);
    assert!((8..=16).contains(&s.errors_by_kind.timeout), "{s:?}");
    assert!(s.in_flight_at_end <= 4);
}

#[test]
fn timing_errors_closed_port_counted_as_connect() {
    let port = common::closed_port();
    let (code, s) = run_json(&format!("http://127.0.0.1:{port}/"), 1, &[]);
    assert_eq!(code, 1);
    assert!(s.errors_by_kind.connect > 10, "{s:?}");
    assert_eq!(s.errors_by_kind.connect, s.errors);
}

#[test]
fn timing_errors_open_loop_against_a_silent_server_ends_on_time() {
    let server = TestServer::start(Behaviour::Hang);
    // With -R, -c caps the connections: 4 connections, each stuck for the 500 ms timeout.
    let (code, s) = run_json(&server.url("/"), 2, &["-R", "20"]);
    assert_eq!(code, 1);
    // 40 sends scheduled: 4 connections time out at 0.5, 1.0 and 1.5 s (12 timeouts); the
    // rest were in flight or still waiting for a connection at the end.
    assert_eq!(s.errors_by_kind.timeout + s.in_flight_at_end, 40, "{s:?}");
    assert!((8..=12).contains(&s.errors_by_kind.timeout), "{s:?}");
    // Sends after the first round waited for a connection that was stuck.
    assert!(s.late_sends.unwrap() >= 8, "{s:?}");
}

#[test]
fn timing_success_exits_0_with_summary_progress_lines_and_out_file() {
    let server = TestServer::start(Behaviour::Ok {
        delay: Duration::from_millis(1),
    });
    let file = tempfile::NamedTempFile::new().unwrap();
    let path = file.path().to_str().unwrap();
    let (out, _) = loadgen(&[
        "-c",
        "2",
        "-d",
        "2",
        "-t",
        "1",
        "--progress-json",
        "--out",
        path,
        &server.url("/x"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for word in ["requests", "p50", "p99.9", "max"] {
        assert!(text.contains(word), "{word} missing in {text}");
    }
    // One progress line per second on stderr, then one as the phase ends.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert_eq!(lines[1]["elapsedSecs"], 2);
    assert_eq!(lines[1]["ended"], false);
    assert_eq!(lines[1]["streams"][0]["endpoint"], "/x");
    assert!(lines[1]["streams"][0]["requests"].as_u64().unwrap() > 100);
    // --out holds the same document the JSON mode prints.
    let doc: RunResult = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(doc.phases[0].streams[0].endpoint, "/x");
    assert!(doc.successful_requests() > 100);
    // The last line carries the phase's own figures, the same as its result.
    let (end, s) = (&lines[2], &doc.phases[0].streams[0]);
    assert_eq!(end["ended"], true);
    assert_eq!(end["elapsedSecs"], 2);
    assert_eq!(end["streams"][0]["requests"], s.requests);
    assert_eq!(end["streams"][0]["rps"], s.rps);
    let latency = s.latency_ms.unwrap();
    assert_eq!(end["streams"][0]["p50Ms"], latency.p50);
    assert_eq!(end["streams"][0]["p99Ms"], latency.p99);
}

fn expect_exit_2(args: &[&str], field: &str) {
    let (out, _) = loadgen(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(field),
        "{args:?}: message should name {field}: {stderr}"
    );
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    expect_exit_2(&["http//127.0.0.1:1/"], "URL");
    expect_exit_2(&["https://127.0.0.1:1/"], "URL");
    expect_exit_2(&["-c", "0", "http://127.0.0.1:1/"], "--connections");
    expect_exit_2(&["-R", "0", "http://127.0.0.1:1/"], "--rate");
    expect_exit_2(&["-d", "1x", "http://127.0.0.1:1/"], "--duration");
    expect_exit_2(&["-c", "many", "http://127.0.0.1:1/"], "--connections");
    expect_exit_2(&[], "URL");
}

fn plan_file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    f
}

const PLAN: &str = "target: http://127.0.0.1:1
workload:
  endpoints: [{name: fast, path: /fast}]
  phases:
    - name: one
      duration: 1s
      load: [{endpoint: fast, connections: 2}]
";

#[test]
fn bad_plans_exit_2_naming_the_field() {
    let cases = [
        (
            PLAN.replace("endpoint: fast,", "endpoint: slow,"),
            "workload.phases[0].load[0].endpoint",
        ),
        (
            PLAN.replace("connections: 2", "connections: 0"),
            "workload.phases[0].load[0].connections",
        ),
        (
            PLAN.replace("connections: 2", "rate: 0"),
            "workload.phases[0].load[0].rate",
        ),
        (
            PLAN.replace("duration: 1s", "duration: soon"),
            "workload.phases[0].duration",
        ),
        (PLAN.replace("http://127.0.0.1:1", "127.0.0.1:1"), "target"),
        (PLAN.replace("phases:", "phasez:"), "phasez"),
        (PLAN.replace("load: [", "load: [[["), "workload.phases"),
        ("{ not yaml".to_owned(), "(document)"),
    ];
    for (text, field) in cases {
        let f = plan_file(&text);
        expect_exit_2(&["--plan", f.path().to_str().unwrap()], field);
    }
    expect_exit_2(&["--plan", "/nonexistent/plan.yaml"], "--plan");
}

/// A plan that says no success is a result (a capacity probe at a rate the target cannot
/// answer) writes its result and exits 0; the same plan without it exits 1, as before.
#[test]
fn timing_a_plan_whose_no_success_is_a_result_exits_0_with_its_result() {
    let server = TestServer::start(Behaviour::Status(503));
    let plan = PLAN.replace("http://127.0.0.1:1", &server.url(""));
    for (extra, want) in [("noSuccessIsAResult: true\n", 0), ("", 1)] {
        let f = plan_file(&format!("{plan}{extra}"));
        let out_file = tempfile::NamedTempFile::new().unwrap();
        let (out, _) = loadgen(&[
            "--plan",
            f.path().to_str().unwrap(),
            "--out",
            out_file.path().to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(want), "{extra:?}: {stderr}");
        let doc: RunResult =
            serde_json::from_str(&std::fs::read_to_string(out_file.path()).unwrap())
                .unwrap_or_else(|e| panic!("{extra:?}: no result written ({e}): {stderr}"));
        let s = &doc.phases[0].streams[0];
        assert_eq!(doc.successful_requests(), 0);
        assert!(s.errors > 0 && s.latency_ms.is_none(), "{s:?}");
    }
}
