//! Input bounds: the open loop ends by its deadline at any accepted rate, and the command line
//! refuses values beyond the limits (exit 2 naming the flag or field) before any load is sent.

mod common;

use std::time::{Duration, Instant};

use benchmatrix_loadgen::limits::MAX_RATE_PER_STREAM;
use benchmatrix_loadgen::load::{self, RunConfig};
use benchmatrix_loadgen::plan::{self, Endpoint, Phase, Spread, Stream, Workload};
use common::{Behaviour, TestServer};

/// Four open-loop streams at the highest accepted rate share one worker thread for a 1 s
/// phase: the scheduler must keep to the deadline however far behind the sends fall.
#[test]
fn timing_open_loop_at_the_maximum_rate_ends_by_its_deadline() {
    let server = TestServer::start(Behaviour::Ok {
        delay: Duration::ZERO,
    });
    let streams = 4;
    let endpoints: Vec<Endpoint> = (0..streams)
        .map(|i| Endpoint {
            name: format!("e{i}"),
            path: format!("/e{i}"),
            ..Default::default()
        })
        .collect();
    let load = endpoints
        .iter()
        .map(|e| Stream {
            endpoint: e.name.clone(),
            connections: None,
            rate: Some(MAX_RATE_PER_STREAM),
        })
        .collect();
    let workload = Workload {
        endpoints,
        warmup: plan::Duration::default(),
        phases: vec![Phase {
            name: "p".into(),
            duration: plan::Duration::from_secs(1),
            load,
        }],
        timeout: Some(plan::Duration::from_secs(5)),
        spread: Spread::Service,
    };
    workload
        .validate()
        .expect("the workload is within the limits");
    let cfg = RunConfig {
        target: server.url("").parse().unwrap(),
        workload,
        threads: 1,
        replicas: Vec::new(),
        stats_addresses: Vec::new(),
        stats_path: None,
        // A few connections per stream: the server is thread-per-connection.
        open_max_connections: 4,
        share: Default::default(),
        preflight: None,
        header_values: Default::default(),
    };
    let started = Instant::now();
    let r = load::run(&cfg, &mut |_| {}).unwrap();
    let took = started.elapsed();
    // 1 s phase after a 20 ms start lead; 300 ms of grace for a busy 2-core machine.
    assert!(
        took <= Duration::from_millis(1300),
        "a 1 s phase of {streams} open-loop streams at {MAX_RATE_PER_STREAM} req/s took {took:?}"
    );
    let scheduled = MAX_RATE_PER_STREAM as u64;
    for s in &r.phases[0].streams {
        assert!(s.requests > 0, "the connections got to send: {s:?}");
        // Every scheduled send is accounted for: finished, failed, or cut at the end.
        let accounted = s.requests + s.in_flight_at_end;
        assert!(
            accounted.abs_diff(scheduled) <= scheduled / 1000,
            "{}: {accounted} sends accounted for, {scheduled} scheduled",
            s.endpoint
        );
    }
}

fn loadgen(args: &[&str]) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_benchmatrix-loadgen"))
        .args(args)
        .output()
        .expect("the load generator runs");
    (out, started.elapsed())
}

/// Runs the load generator against a server that counts what reaches it and asserts exit 2,
/// a message naming `needle`, and that no connection was made.
fn refused_before_any_load(args: &[&str], needle: &str) {
    let server = TestServer::start(Behaviour::Ok {
        delay: Duration::ZERO,
    });
    let url = server.url("/");
    let mut all = args.to_vec();
    all.push(&url);
    let (out, took) = loadgen(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: {needle} not in {stderr}"
    );
    assert!(took < Duration::from_secs(1), "{args:?} took {took:?}");
    // Let a connection that was made reach the server's accept loop before counting.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        server.connections.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "{args:?}: load was sent before the input was refused"
    );
}

#[test]
fn out_file_in_a_missing_directory_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("result.json");
    refused_before_any_load(&["-d", "2", "--out", missing.to_str().unwrap()], "--out");
    // A directory is not a file that can be written either.
    refused_before_any_load(&["-d", "2", "--out", dir.path().to_str().unwrap()], "--out");
}

#[test]
fn flags_beyond_the_limits_exit_2_before_any_load() {
    refused_before_any_load(&["-c", "1000000000", "-d", "1"], "--connections");
    refused_before_any_load(&["-R", "1e12", "-d", "1"], "--rate");
    refused_before_any_load(&["-R", "1e8", "-d", "1"], "--rate");
    refused_before_any_load(&["-d", "99999999999h"], "--duration");
    refused_before_any_load(&["-t", "100000", "-d", "1"], "--threads");
}

#[test]
fn plans_beyond_the_limits_exit_2_naming_the_field() {
    let plan = |load: &str, duration: &str| {
        format!(
            "target: http://127.0.0.1:1\nworkload:\n  endpoints: [{{name: e, path: /e}}]\n  phases:\n    - name: p\n      duration: {duration}\n      load: [{load}]\n"
        )
    };
    for (text, field) in [
        (
            plan("{endpoint: e, connections: 1000000000}", "1s"),
            "workload.phases[0].load[0].connections",
        ),
        (
            plan("{endpoint: e, rate: 1e12}", "1s"),
            "workload.phases[0].load[0].rate",
        ),
        (
            plan("{endpoint: e, connections: 1}", "99999999999h"),
            "workload.phases[0].duration",
        ),
    ] {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        let (out, _) = loadgen(&["--plan", f.path().to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        assert!(stderr.contains(field), "{field} not in {stderr}");
        assert_eq!(
            stderr.matches(field).count(),
            1,
            "the path is printed once: {stderr}"
        );
    }
}
