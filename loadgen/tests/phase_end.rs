//! A phase ends on time whatever the target does: requests still in flight at the end are cut
//! and counted as such, and the next phase starts within a short grace.
//!
//! Ground truth: a TCP server that accepts connections, reads, and never answers, recording
//! when each connection arrived.

use std::io::Read;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use benchmatrix_loadgen::load::{self, RunConfig};
use benchmatrix_loadgen::plan::{self, Endpoint, Phase, Spread, Stream, Workload};

/// Accepts connections and never answers; returns the address and the accept times.
fn silent_server() -> (std::net::SocketAddr, Arc<Mutex<Vec<Instant>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let log = accepted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            log.lock().unwrap().push(Instant::now());
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    (addr, accepted)
}

fn two_phases(stream: Stream) -> Workload {
    let phase = |name: &str| Phase {
        name: name.into(),
        duration: plan::Duration::from_secs(1),
        load: vec![stream.clone()],
    };
    Workload {
        endpoints: vec![Endpoint {
            name: "e".into(),
            path: "/e".into(),
            ..Default::default()
        }],
        warmup: plan::Duration::default(),
        phases: vec![phase("one"), phase("two")],
        // Far longer than the phase: only the phase's end can cut these requests.
        timeout: Some(plan::Duration::from_secs(30)),
        spread: Spread::Service,
    }
}

/// Runs two 1 s phases of `stream` against the silent server; returns the result, the accept
/// times relative to the run's start, and how long the run took.
fn run(
    stream: Stream,
) -> (
    benchmatrix_loadgen::result::RunResult,
    Vec<Duration>,
    Duration,
) {
    let (addr, accepted) = silent_server();
    let cfg = RunConfig {
        target: format!("http://{addr}").parse().unwrap(),
        workload: two_phases(stream),
        threads: 1,
        replicas: Vec::new(),
        stats_addresses: Vec::new(),
        stats_path: None,
        open_max_connections: 4,
        share: Default::default(),
        preflight: None,
        header_values: Default::default(),
    };
    let started = Instant::now();
    let r = load::run(&cfg, &mut |_| {}).unwrap();
    let took = started.elapsed();
    let times = accepted
        .lock()
        .unwrap()
        .iter()
        .map(|t| t.saturating_duration_since(started))
        .collect();
    (r, times, took)
}

/// The grace after a phase's end within which the next phase must have started: the 20 ms
/// start lead plus scheduling slack on a busy machine.
const GRACE: Duration = Duration::from_millis(100);

fn check(
    r: &benchmatrix_loadgen::result::RunResult,
    times: &[Duration],
    took: Duration,
    per_phase: u64,
) {
    let second: Vec<_> = times
        .iter()
        .filter(|t| **t > Duration::from_millis(500))
        .collect();
    assert!(
        !second.is_empty(),
        "phase two opened no connection: {times:?}"
    );
    let first_of_second = *second.iter().min().unwrap();
    assert!(
        *first_of_second <= Duration::from_secs(1) + GRACE,
        "phase two started at {first_of_second:?}, not within {GRACE:?} of phase one's end: {times:?}"
    );
    assert!(
        took <= Duration::from_secs(2) + 2 * GRACE,
        "two 1 s phases took {took:?}"
    );
    for p in &r.phases {
        let s = &p.streams[0];
        assert_eq!(s.requests, 0, "{}: nothing was answered: {s:?}", p.name);
        assert_eq!(
            s.in_flight_at_end, per_phase,
            "{}: every request in flight at the end is counted as cut: {s:?}",
            p.name
        );
    }
}

#[test]
fn timing_closed_loop_requests_in_flight_at_a_phase_end_are_cut_within_the_grace() {
    let (r, times, took) = run(Stream {
        endpoint: "e".into(),
        connections: Some(4),
        rate: None,
    });
    check(&r, &times, took, 4);
}

#[test]
fn timing_open_loop_requests_in_flight_at_a_phase_end_are_cut_within_the_grace() {
    // 20 sends per phase: 4 go out on the 4 connections and hang, 16 wait for a connection.
    let (r, times, took) = run(Stream {
        endpoint: "e".into(),
        connections: None,
        rate: Some(20.0),
    });
    check(&r, &times, took, 20);
}

/// Accepts connections and never answers; logs when each load request (not `/stats`) arrived.
fn silent_server_logging_load() -> (std::net::SocketAddr, Arc<Mutex<Vec<Instant>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let load = Arc::new(Mutex::new(Vec::new()));
    let log = load.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let at = Instant::now();
            let log = log.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut first = true;
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if first && !buf[..n].starts_with(b"GET /stats") {
                        log.lock().unwrap().push(at);
                    }
                    first = false;
                }
            });
        }
    });
    (addr, load)
}

/// Between phases the load generator reads every replica's `/stats`; replicas that never answer
/// cost one probe timeout together, not one each, before the next phase starts.
#[test]
fn timing_silent_replicas_delay_the_next_phase_by_one_probe_timeout_not_one_each() {
    let replicas: Vec<_> = (0..4).map(|_| silent_server_logging_load()).collect();
    let cfg = RunConfig {
        target: format!("http://{}", replicas[0].0).parse().unwrap(),
        workload: two_phases(Stream {
            endpoint: "e".into(),
            connections: Some(4),
            rate: None,
        }),
        threads: 1,
        replicas: replicas.iter().map(|(a, _)| a.to_string()).collect(),
        stats_addresses: Vec::new(),
        stats_path: Some("/stats".into()),
        open_max_connections: 4,
        share: Default::default(),
        preflight: None,
        header_values: Default::default(),
    };
    let r = load::run(&cfg, &mut |_| {}).unwrap();
    let mut load: Vec<Instant> = replicas[0].1.lock().unwrap().clone();
    load.sort();
    assert_eq!(load.len(), 8, "4 connections per phase");
    let gap = load[4] - load[3];
    let bound = Duration::from_secs(1) + benchmatrix_loadgen::probe::PROBE_TIMEOUT + GRACE * 3;
    assert!(
        gap <= bound,
        "phase two started {gap:?} after phase one (bound {bound:?}): the silent replicas' /stats were read one after another"
    );
    for p in &r.phases {
        assert_eq!(p.target_stats.len(), 4);
        assert!(
            p.target_stats.iter().all(|s| s.error.is_some()),
            "{:?}",
            p.target_stats
        );
    }
}
