//! The check before the load, against servers whose readiness is known: one that starts
//! listening only after a set delay, addresses where nothing ever listens, and servers whose
//! answers do or do not count.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use benchmatrix_loadgen::load::{self, DEFAULT_OPEN_MAX_CONNECTIONS, RunConfig, RunError};
use benchmatrix_loadgen::plan::{self, Preflight, Spread};
use benchmatrix_loadgen::result::RunResult;
use common::{Behaviour, TestServer, closed, closed_port};

const OK: Behaviour = Behaviour::Ok {
    delay: Duration::from_millis(1),
};

/// One 1 s phase of 2 connections against `target`, checked first for at most `timeout` on
/// `/healthz` when `timeout` is given.
fn config(
    target: &str,
    replicas: &[String],
    spread: Spread,
    timeout: Option<Duration>,
) -> RunConfig {
    RunConfig {
        target: target.parse().unwrap(),
        workload: common::workload(1, vec![closed(2)], spread),
        threads: 1,
        replicas: replicas.to_vec(),
        stats_addresses: Vec::new(),
        stats_path: None,
        open_max_connections: DEFAULT_OPEN_MAX_CONNECTIONS,
        share: Default::default(),
        header_values: Default::default(),
        preflight: timeout.map(|t| Preflight {
            path: "/healthz".into(),
            timeout: plan::Duration(t),
        }),
    }
}

fn run(cfg: &RunConfig) -> (Result<RunResult, RunError>, Duration) {
    let started = Instant::now();
    let r = load::run(cfg, &mut |_| {});
    (r, started.elapsed())
}

fn unreachable(r: Result<RunResult, RunError>) -> String {
    match r {
        Err(e @ RunError::Unreachable(_)) => e.to_string(),
        other => panic!("expected the check to fail, got {other:?}"),
    }
}

#[test]
fn the_load_waits_for_a_target_that_listens_late_then_measures_without_errors() {
    let delay = Duration::from_millis(300);
    let late = TestServer::start_after(OK, delay);
    let (r, took) = run(&config(
        &late.url(""),
        &[],
        Spread::Service,
        Some(Duration::from_secs(5)),
    ));
    let r = r.unwrap();
    let waited = r.preflight_seconds.unwrap();
    // The server was started just before the run, so the check cannot end before its delay.
    assert!(waited >= 0.28, "the check ended after {waited} s");
    assert!(waited < 2.0, "the check took {waited} s for a 300 ms delay");
    let s = &r.phases[0].streams[0];
    assert!(s.requests > 50, "{s:?}");
    assert_eq!(
        s.errors, 0,
        "the load began before the target listened: {s:?}"
    );
    // The phase is measured as long as planned; the check came before it, not out of it.
    assert!((r.phases[0].duration_secs - 1.0).abs() < 0.05, "{r:?}");
    assert!(took.as_secs_f64() >= 1.0 + waited, "{took:?}");

    // Ground truth for the above: the same late server without the check gets connection
    // errors in the phase, as the real cluster's first cell did.
    let late = TestServer::start_after(OK, delay);
    let (r, _) = run(&config(&late.url(""), &[], Spread::Service, None));
    let r = r.unwrap();
    assert_eq!(r.preflight_seconds, None);
    let s = &r.phases[0].streams[0];
    assert!(s.errors_by_kind.connect > 0, "{s:?}");
}

#[test]
fn an_address_that_never_listens_fails_naming_it_within_the_bound() {
    let port = closed_port();
    let target = format!("http://127.0.0.1:{port}");
    let bound = Duration::from_millis(700);
    let (r, took) = run(&config(&target, &[], Spread::Service, Some(bound)));
    let message = unreachable(r);
    assert_eq!(
        message,
        format!(
            "target unreachable: {target} did not answer GET /healthz within 700ms: connection refused"
        )
    );
    assert!(took >= bound, "gave up after {took:?}");
    assert!(
        took < bound + Duration::from_millis(400),
        "gave up after {took:?}"
    );
}

#[test]
fn round_robin_with_one_dead_replica_fails_naming_that_replica_and_sends_no_load() {
    let live = TestServer::start(OK);
    let dead = format!("127.0.0.1:{}", closed_port());
    let replicas = [live.addr.to_string(), dead.clone()];
    let cfg = config(
        &live.url(""),
        &replicas,
        Spread::RoundRobin,
        Some(Duration::from_millis(500)),
    );
    let (r, _) = run(&cfg);
    let message = unreachable(r);
    assert!(
        message.contains(&format!("http://{dead} did not answer")),
        "{message}"
    );
    assert!(message.contains("connection refused"), "{message}");
    assert!(!message.contains(&live.addr.to_string()), "{message}");
    // The live replica answered the check once and got no load.
    assert_eq!(live.received.load(Ordering::SeqCst), 1);

    // Both alive: both are checked, then loaded.
    let other = TestServer::start(OK);
    let replicas = [live.addr.to_string(), other.addr.to_string()];
    let cfg = config(
        &live.url(""),
        &replicas,
        Spread::RoundRobin,
        Some(Duration::from_secs(2)),
    );
    let r = run(&cfg).0.unwrap();
    assert!(r.preflight_seconds.unwrap() < 1.0, "{r:?}");
    assert!(other.received.load(Ordering::SeqCst) > 1);
}

#[test]
fn a_5xx_or_a_reset_is_no_answer_and_a_4xx_is_one() {
    let bound = Some(Duration::from_millis(300));
    for (behaviour, why) in [
        (Behaviour::Status(500), "it answered HTTP 500"),
        (Behaviour::Reset, "connection"),
        (Behaviour::Hang, "no answer in time"),
    ] {
        let server = TestServer::start(behaviour);
        let message = unreachable(run(&config(&server.url(""), &[], Spread::Service, bound)).0);
        assert!(message.contains(why), "{behaviour:?}: {message}");
        assert!(message.contains(&server.url("")), "{message}");
    }
    // A 404 still proves the way to the server works: the load runs (and counts its 404s).
    let server = TestServer::start(Behaviour::Status(404));
    let r = run(&config(&server.url(""), &[], Spread::Service, bound))
        .0
        .unwrap();
    assert!(r.phases[0].streams[0].errors_by_kind.status4xx > 0);
}

/// A server that answers 503 to its first `unready` connections and 200 after, counting them.
fn ready_after(unready: u64) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicU64::new(0));
    let count = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let n = count.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(k) => head.extend_from_slice(&buf[..k]),
                    }
                    // Keep-alive load requests: answer each head as it comes.
                    while let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                        head.drain(..i + 4);
                        let reply: &[u8] = if n < unready {
                            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
                        } else {
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                        };
                        if conn.write_all(reply).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (url, seen)
}

#[test]
fn a_target_answering_503_is_tried_again_until_it_answers_200() {
    let (url, seen) = ready_after(3);
    let r = run(&config(
        &url,
        &[],
        Spread::Service,
        Some(Duration::from_secs(5)),
    ))
    .0
    .unwrap();
    // Three 503s, then the answer: at least three retry pauses.
    assert!(r.preflight_seconds.unwrap() >= 0.15, "{r:?}");
    // Each try was a fresh connection (then the load's two).
    assert_eq!(seen.load(Ordering::SeqCst), 4 + 2);
    assert_eq!(r.phases[0].streams[0].errors, 0);
}

#[test]
fn the_cli_exits_1_naming_the_address_and_leaves_no_result() {
    let port = closed_port();
    let plan = format!(
        "target: http://127.0.0.1:{port}
preflight: {{path: /ready, timeout: 300ms}}
workload:
  endpoints: [{{name: fast, path: /fast}}]
  phases: [{{name: one, duration: 1s, load: [{{endpoint: fast, connections: 1}}]}}]
"
    );
    let dir = tempfile::tempdir().unwrap();
    let (plan_path, out) = (dir.path().join("plan.yaml"), dir.path().join("result.json"));
    std::fs::write(&plan_path, plan).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_benchmatrix-loadgen"))
        .arg("--plan")
        .arg(&plan_path)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end().lines().last(),
        Some(
            format!(
                "error: target unreachable: http://127.0.0.1:{port} did not answer GET /ready \
                 within 300ms: connection refused"
            )
            .as_str()
        ),
        "{stderr}"
    );
    assert!(!out.exists());
}

#[test]
fn bad_preflight_fields_are_refused_naming_them() {
    let base = "target: http://127.0.0.1:1
workload:
  endpoints: [{name: fast, path: /fast}]
  phases: [{name: one, duration: 1s, load: [{endpoint: fast, connections: 1}]}]
";
    let paths = |extra: &str| -> Vec<String> {
        plan::parse_plan_file(&format!("{base}{extra}"))
            .unwrap_err()
            .into_iter()
            .map(|e| e.path)
            .collect()
    };
    assert_eq!(
        paths("preflight: {path: healthz, timeout: 1s}\n"),
        ["preflight.path"]
    );
    assert_eq!(
        paths("preflight: {path: /a b, timeout: 1s}\n"),
        ["preflight.path"]
    );
    assert_eq!(
        paths("preflight: {path: /, timeout: 0s}\n"),
        ["preflight.timeout"]
    );
    assert_eq!(
        paths("preflight: {path: /, timeout: 25h}\n"),
        ["preflight.timeout"]
    );
    assert_eq!(
        paths("preflight: {path: /, timeout: 1s, tries: 3}\n"),
        ["preflight.tries"]
    );
    let plan =
        plan::parse_plan_file(&format!("{base}preflight: {{path: /, timeout: 1m}}\n")).unwrap();
    assert_eq!(
        plan.preflight.unwrap().timeout,
        plan::Duration::from_secs(60)
    );
}
