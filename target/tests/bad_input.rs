//! Out-of-range input gets a 400 with a JSON error at once and the server stays responsive;
//! bad flags and environment stop the process with exit code 2 and a message.

mod common;

use std::time::Duration;

use common::{Target, run_to_exit};

#[test]
fn bad_parameters_get_400_json_and_the_server_stays_responsive() {
    let t = Target::start(&["--mode", "single"]);
    for path in [
        "/fib?n=1000",
        "/fib?n=46",
        "/fib?n=x",
        "/cpu?ms=-1",
        "/cpu?ms=abc",
        "/cpu?ms=30001",
        "/cpu",
        "/io?ms=999999999",
        "/io?ms=1e3",
    ] {
        let r = t.get(path);
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert!(
            r.header("content-type")
                .unwrap_or("")
                .starts_with("application/json"),
            "{path}"
        );
        let body = r.json();
        assert_eq!(body["error"], "bad_request", "{path}");
        assert!(!body["message"].as_str().unwrap_or("").is_empty(), "{path}");
        assert!(
            r.elapsed < Duration::from_secs(2),
            "{path} took {:?}: nothing should run",
            r.elapsed
        );
    }
    let r = t.get("/nowhere");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"], "not_found");

    assert_eq!(t.get("/healthz").status, 200);
    let r = t.get("/fib?n=20");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["value"], 6765);
    // Nine refusals, the 404, /healthz and /fib were all served (this /stats is counted after).
    assert_eq!(t.stats()["requestsServed"], 12);
}

#[test]
fn unknown_mode_exits_2_with_a_clear_message() {
    let (code, stderr) = run_to_exit(&["--mode", "cluster", "--port", "0"], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("cluster") && stderr.contains("--mode"),
        "{stderr}"
    );
    assert!(
        stderr.contains("single") && stderr.contains("pool"),
        "lists the valid modes: {stderr}"
    );
}

#[test]
fn unknown_mode_from_the_environment_exits_2() {
    let (code, stderr) = run_to_exit(&["--port", "0"], &[("BENCH_MODE", "cluster")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cluster"), "{stderr}");
}

#[test]
fn bad_port_exits_2_with_a_clear_message() {
    for port in ["70000", "abc", "-1"] {
        let (code, stderr) = run_to_exit(&["--port", port], &[]);
        assert_eq!(code, Some(2), "--port {port}: {stderr}");
        assert!(stderr.contains("--port"), "--port {port}: {stderr}");
    }
    let (code, stderr) = run_to_exit(&[], &[("PORT", "http")]);
    assert_eq!(code, Some(2), "PORT=http: {stderr}");
}

#[test]
fn a_port_taken_by_another_program_exits_2() {
    // A socket without SO_REUSEPORT owns the port; the target must say so, not hang or panic.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (code, stderr) = run_to_exit(&["--host", "127.0.0.1", "--port", &port], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot listen on 127.0.0.1:"), "{stderr}");
}

#[test]
fn other_bad_flags_exit_2() {
    for args in [
        &["--threads", "0"][..],
        &["--pool-size", "many"],
        &["--queue-depth", "0"],
        &["--grace-period", "soon"],
        &["--offload", "some"],
        &["--no-such-flag"],
        &["--header-timeout", "0s"],
        &["--idle-timeout", "forever"],
        &["--max-connections", "0"],
        &["--stats-port", "on"],
        &["--stats-port", "70000"],
    ] {
        let (code, stderr) = run_to_exit(args, &[("PORT", "0")]);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(!stderr.trim().is_empty(), "{args:?} gave no message");
    }
}

#[test]
fn bad_connection_settings_from_the_environment_exit_2_naming_the_flag() {
    for (var, value, flag) in [
        ("BENCH_HEADER_TIMEOUT", "0", "--header-timeout"),
        ("BENCH_IDLE_TIMEOUT", "-5s", "--idle-timeout"),
        ("BENCH_MAX_CONNECTIONS", "lots", "--max-connections"),
        ("BENCH_STATS_PORT", "yes", "--stats-port"),
    ] {
        let (code, stderr) = run_to_exit(&["--port", "0"], &[(var, value)]);
        assert_eq!(code, Some(2), "{var}={value}: {stderr}");
        assert!(stderr.contains(flag), "{var}={value}: {stderr}");
    }
}

#[test]
fn a_stats_port_taken_by_another_program_exits_2() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (code, stderr) = run_to_exit(
        &["--host", "127.0.0.1", "--port", "0", "--stats-port", &port],
        &[],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("for statistics (--stats-port)"), "{stderr}");
}
