//! Start and stop: the one stdout line, replicas sharing a port, and graceful shutdown.

mod common;

use std::process::Command;
use std::thread::sleep;
use std::time::Duration;

use common::{BIN, Target, get_in_background};

#[test]
fn graceful_shutdown_finishes_in_flight_requests_and_exits_zero() {
    let mut t = Target::start(&["--mode", "single", "--slow-ms", "600"]);
    let slow = get_in_background(t.addr, "/slow");
    sleep(Duration::from_millis(150));
    let status = t.terminate(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{status:?}");
    let slow = slow
        .join()
        .unwrap()
        .expect("the in-flight request is answered");
    assert_eq!(slow.status, 200);
    assert!(
        std::net::TcpStream::connect(t.addr).is_err(),
        "still accepting after exit"
    );
    assert!(
        t.extra_stdout.lock().unwrap().is_empty(),
        "stdout carries only the listening line"
    );
}

#[test]
fn the_grace_period_bounds_the_drain() {
    let mut t = Target::start(&["--mode", "pool", "--grace-period", "300ms"]);
    let io = get_in_background(t.addr, "/io?ms=20000");
    sleep(Duration::from_millis(150));
    let start = std::time::Instant::now();
    let status = t.terminate(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "waited {:?} for a 20 s request",
        start.elapsed()
    );
    // The cut-off request gets no answer.
    assert!(io.join().unwrap().is_err());
}

#[test]
fn sigint_also_stops_gracefully() {
    let mut t = Target::start(&["--mode", "threads", "--threads", "2"]);
    assert_eq!(t.get("/healthz").status, 200);
    // SAFETY: kill with a pid we own.
    unsafe { libc::kill(t.child.id() as i32, libc::SIGINT) };
    assert_eq!(t.wait(Duration::from_secs(10)).code(), Some(0));
}

#[test]
fn replicas_share_one_port() {
    // Two processes, told apart by their mode, bound to the same port with SO_REUSEPORT.
    let a = Target::start(&["--mode", "single"]);
    let port = a.addr.port().to_string();
    let mut cmd = Command::new(BIN);
    cmd.args([
        "--host",
        "127.0.0.1",
        "--port",
        &port,
        "--mode",
        "threads",
        "--threads",
        "1",
    ]);
    let b = Target::spawn(cmd);
    assert_eq!(a.addr, b.addr);
    // The kernel spreads new connections over both sockets by a hash of the client's address
    // and port: over 64 connections both must answer (chance of one alone: 2^-63).
    let mut modes = std::collections::BTreeSet::new();
    for _ in 0..64 {
        let r = a.get("/stats");
        assert_eq!(r.status, 200);
        modes.insert(r.json()["mode"].as_str().unwrap().to_string());
    }
    assert_eq!(modes.into_iter().collect::<Vec<_>>(), ["single", "threads"]);
}
