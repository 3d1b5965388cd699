//! The load ([`load::run`]) against servers whose behaviour is known: a fixed delay, a one-second freeze.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use benchmatrix_loadgen::histogram;
use benchmatrix_loadgen::load::{self, DEFAULT_OPEN_MAX_CONNECTIONS, RunConfig};
use benchmatrix_loadgen::plan::{self, Spread, Stream, Workload};
use benchmatrix_loadgen::result::{self, RunResult, StreamResult};
use common::{Behaviour, TestServer, closed};

fn workload(phase_secs: u64, stream: Stream) -> Workload {
    common::workload(phase_secs, vec![stream], Spread::Service)
}

fn open(rate: f64) -> Stream {
    Stream {
        endpoint: "e".into(),
        connections: None,
        rate: Some(rate),
    }
}

fn config(server: &TestServer, workload: Workload, threads: usize) -> RunConfig {
    RunConfig {
        target: server.url("").parse().unwrap(),
        workload,
        threads,
        replicas: Vec::new(),
        stats_addresses: Vec::new(),
        stats_path: None,
        open_max_connections: DEFAULT_OPEN_MAX_CONNECTIONS,
        share: Default::default(),
        preflight: None,
        header_values: Default::default(),
    }
}

fn run(cfg: &RunConfig) -> RunResult {
    load::run(cfg, &mut |_| {}).unwrap()
}

/// Fraction of the stream's (corrected) histogram above `ms`.
fn share_above(s: &StreamResult, ms: f64) -> f64 {
    let h = histogram::decode(&s.histogram).unwrap();
    let above: u64 = h
        .iter_recorded()
        .filter(|v| v.value_iterated_to() as f64 > ms * 1000.0)
        .map(|v| v.count_at_value())
        .sum();
    above as f64 / h.len() as f64
}

#[test]
fn timing_p50_of_a_20ms_server_is_20ms_and_counts_match_the_server() {
    let server = TestServer::start(Behaviour::Ok {
        delay: Duration::from_millis(20),
    });
    let connections = 8;
    let r = run(&config(&server, workload(3, closed(connections)), 2));
    let s = &r.phases[0].streams[0];
    assert_eq!(s.errors, 0, "{s:?}");
    // The truth is the delay the server actually served, which on a busy 2-core box is 20 ms
    // plus however late its sleeping thread was woken; on a quiet box it is 20.0x ms.
    let p50 = s.latency_ms.unwrap().p50;
    let truth = server.service_p50_ms();
    assert!(truth >= 20.0, "server p50 {truth} ms");
    assert!(
        p50 >= truth,
        "reported p50 {p50} ms is below the server's own {truth} ms"
    );
    assert!(
        p50 - truth <= 0.05 * 20.0,
        "reported p50 {p50} ms is not within 5% (1 ms) of the server's {truth} ms"
    );
    // 8 connections x 3 s / ~20 ms: about 1200 requests.
    assert!(s.requests > 900, "only {} requests", s.requests);
    // Every request the server read was either finished or cut at the end of the phase.
    let received = server.received.load(Ordering::SeqCst);
    let ours = s.requests + s.in_flight_at_end;
    assert!(
        received.abs_diff(ours) <= u64::from(connections),
        "server read {received}, load generator finished {} and cut {}",
        s.requests,
        s.in_flight_at_end
    );
    assert!(s.in_flight_at_end <= u64::from(connections));
    assert_eq!(s.connections_opened, u64::from(connections));
    // The per-second timeline adds up to the phase.
    let timeline_total: u64 = s.timeline.iter().map(|p| p.requests).sum();
    assert_eq!(timeline_total, s.requests);
    assert_eq!(s.timeline.len(), 3);
}

#[test]
fn timing_open_loop_shows_a_one_second_freeze_that_closed_loop_hides() {
    let rate = 200.0;
    let secs = 4;
    let freeze_at = Duration::from_millis(1500);
    let freeze_for = Duration::from_secs(1);

    let frozen_run = |stream: Stream, max_conns: usize| {
        let server = TestServer::start(Behaviour::Ok {
            delay: Duration::ZERO,
        });
        let mut cfg = config(&server, workload(secs, stream), 1);
        cfg.open_max_connections = max_conns;
        let started = Instant::now();
        let freezer = std::thread::spawn(move || {
            std::thread::sleep(freeze_at);
            server.pause();
            std::thread::sleep(freeze_for);
            server.resume();
            server
        });
        let r = run(&cfg);
        let _server = freezer.join().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(secs + 2),
            "run overran"
        );
        r
    };

    // Open loop with 4 connections, like wrk2 -c 4 -R 200.
    let open_result = frozen_run(open(rate), 4);
    let o = &open_result.phases[0].streams[0];
    assert_eq!(o.errors, 0, "{o:?}");
    assert_eq!(o.offered_rps, Some(rate));
    let expected = rate * secs as f64;
    assert!(
        (o.requests + o.in_flight_at_end) as f64 > expected * 0.95,
        "sent {} of {expected} scheduled",
        o.requests + o.in_flight_at_end
    );
    // Corrected: the sends due during the freeze waited up to 1 s.
    assert!(
        o.latency_ms.unwrap().max >= 900.0,
        "corrected max {} ms",
        o.latency_ms.unwrap().max
    );
    // Sends due in the second of the freeze (200 of 800) waited from ~1000 ms down to ~0:
    // the share above 100 ms is about (1000 - 100) / 1000 * 200 / 800 = 22.5%.
    let share = share_above(o, 100.0);
    assert!(
        (0.15..=0.30).contains(&share),
        "share above 100 ms is {share}"
    );
    assert!(
        o.latency_ms.unwrap().p90 >= 200.0,
        "corrected p90 {} ms",
        o.latency_ms.unwrap().p90
    );
    // Most of them were sent late, once the connections came free.
    let late = o.late_sends.unwrap();
    assert!(late >= 150, "late sends {late}");
    // Uncorrected: only the 4 requests in flight at the freeze saw it.
    let u = o.uncorrected_latency_ms.unwrap();
    assert!(u.max >= 900.0, "uncorrected max {} ms", u.max);
    assert!(
        u.p90 * 10.0 < o.latency_ms.unwrap().p90,
        "uncorrected p90 {} ms should look far smaller than corrected {} ms",
        u.p90,
        o.latency_ms.unwrap().p90
    );

    // Closed loop with 4 connections: the freeze hides in a handful of slow requests.
    let closed_result = frozen_run(closed(4), DEFAULT_OPEN_MAX_CONNECTIONS);
    let c = &closed_result.phases[0].streams[0];
    assert!(
        c.latency_ms.unwrap().max >= 900.0,
        "closed max {} ms",
        c.latency_ms.unwrap().max
    );
    let closed_share = share_above(c, 100.0);
    assert!(
        closed_share < 0.01,
        "closed loop share above 100 ms is {closed_share}"
    );
    assert!(
        c.latency_ms.unwrap().p99 * 10.0 < o.latency_ms.unwrap().p99,
        "closed-loop p99 {} ms should look far smaller than open-loop p99 {} ms",
        c.latency_ms.unwrap().p99,
        o.latency_ms.unwrap().p99
    );
}

#[test]
fn timing_merged_runs_equal_the_combined_histograms() {
    let server = TestServer::start(Behaviour::Ok {
        delay: Duration::from_millis(2),
    });
    let cfg = config(&server, workload(1, closed(2)), 1);
    let a = run(&cfg);
    let b = run(&cfg);
    let merged = result::merge(&[a.clone(), b.clone()]).unwrap();
    let (sa, sb) = (&a.phases[0].streams[0], &b.phases[0].streams[0]);
    let m = &merged.phases[0].streams[0];
    let mut truth = histogram::decode(&sa.histogram).unwrap();
    truth
        .add(histogram::decode(&sb.histogram).unwrap())
        .unwrap();
    let got = histogram::decode(&m.histogram).unwrap();
    assert_eq!(got.len(), truth.len());
    assert_eq!(got.len(), sa.requests + sb.requests);
    for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
        assert_eq!(
            got.value_at_quantile(q),
            truth.value_at_quantile(q),
            "q={q}"
        );
    }
    assert_eq!(m.requests, sa.requests + sb.requests);
    assert!((m.rps - (sa.rps + sb.rps)).abs() < 1e-9);
}

#[test]
fn timing_plan_phases_run_back_to_back_with_stats_snapshots() {
    let server = TestServer::start(Behaviour::Ok {
        delay: Duration::from_millis(1),
    });
    let text = format!(
        r#"
target: {}
replicas: ["{}", "127.0.0.1:{}"]
workload:
  endpoints: [{{name: fast, path: /fast}}, {{name: other, path: /other}}]
  warmup: 500ms
  phases:
    - name: one
      duration: 1s
      load: [{{endpoint: fast, connections: 2}}]
    - name: two
      duration: 1s500ms
      load: [{{endpoint: fast, connections: 1}}, {{endpoint: other, rate: 50}}]
"#,
        server.url(""),
        server.addr,
        common::closed_port()
    );
    let plan = plan::parse_plan_file(&text).unwrap();
    let cfg = RunConfig {
        target: plan.target.parse().unwrap(),
        workload: plan.workload,
        threads: 2,
        replicas: plan.replicas,
        stats_addresses: plan.stats_addresses,
        stats_path: Some("/stats".into()),
        open_max_connections: DEFAULT_OPEN_MAX_CONNECTIONS,
        share: Default::default(),
        preflight: None,
        header_values: Default::default(),
    };
    let mut lines = Vec::new();
    let started = Instant::now();
    let r = load::run(&cfg, &mut |p| lines.push(p.clone())).unwrap();
    assert!(started.elapsed() < Duration::from_secs(6));
    let names: Vec<_> = r.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["one", "two"]);
    assert_eq!(r.phases[1].duration_secs, 1.5);
    let two = &r.phases[1];
    assert_eq!(two.streams.len(), 2);
    let other = &two.streams[1];
    assert_eq!(other.endpoint, "other");
    // 50/s for 1.5 s.
    assert!(
        (70..=76).contains(&(other.requests + other.in_flight_at_end)),
        "{other:?}"
    );
    // The live replica reports; the dead one is a missing snapshot, not a failed run.
    let live = &two.target_stats[0];
    assert!(live.error.is_none(), "{live:?}");
    assert!(live.requests_served_in_phase.unwrap() > 0.0);
    assert!(live.end.as_ref().unwrap().rss_peak_bytes.is_some());
    assert!(two.target_stats[1].error.is_some());
    // Phases are contiguous: phase two starts from phase one's end snapshot, so the target is
    // read once per boundary (start of one, one/two, end of two), not twice between phases.
    assert_eq!(two.target_stats[0].start, r.phases[0].target_stats[0].end);
    assert_eq!(server.stats_reads.load(Ordering::SeqCst), 3);
    // Progress: warm-up (1 line) + one (1) + two (2 lines: 1 s and the partial second), each
    // phase then closed by a line with its whole figures.
    let phases: Vec<_> = lines.iter().map(|l| (l.phase.as_str(), l.ended)).collect();
    assert_eq!(
        phases,
        [
            ("warmup", false),
            ("warmup", true),
            ("one", false),
            ("one", true),
            ("two", false),
            ("two", false),
            ("two", true)
        ]
    );
    let end = &lines[6].streams[1];
    assert_eq!((end.requests, end.rps), (other.requests, other.rps));
}

/// With `statsAddresses` each replica's `/stats` is read from its statistics address, never
/// through the address under load, and the snapshot is still filed under the replica's address.
#[test]
fn a_plan_with_stats_addresses_reads_stats_there_and_files_it_under_the_replica() {
    let busy = TestServer::start(Behaviour::Ok {
        delay: Duration::from_millis(1),
    });
    let stats_port = TestServer::start(Behaviour::Ok {
        delay: Duration::from_millis(1),
    });
    let text = format!(
        r#"
target: {}
replicas: ["{}"]
statsAddresses: ["{}"]
workload:
  endpoints: [{{name: fast, path: /fast}}]
  warmup: 200ms
  phases:
    - name: one
      duration: 500ms
      load: [{{endpoint: fast, connections: 1}}]
"#,
        busy.url(""),
        busy.addr,
        stats_port.addr
    );
    let plan = plan::parse_plan_file(&text).unwrap();
    let cfg = RunConfig {
        target: plan.target.parse().unwrap(),
        workload: plan.workload,
        threads: 1,
        replicas: plan.replicas,
        stats_addresses: plan.stats_addresses,
        stats_path: Some("/stats".into()),
        open_max_connections: DEFAULT_OPEN_MAX_CONNECTIONS,
        share: Default::default(),
        preflight: None,
        header_values: Default::default(),
    };
    let r = run(&cfg);
    // One phase: read at its start and at its end, both on the statistics address.
    assert_eq!(stats_port.stats_reads.load(Ordering::SeqCst), 2);
    assert_eq!(busy.stats_reads.load(Ordering::SeqCst), 0);
    let snap = &r.phases[0].target_stats;
    assert_eq!(snap.len(), 1, "{snap:?}");
    assert_eq!(snap[0].address, busy.addr.to_string());
    assert!(snap[0].error.is_none(), "{:?}", snap[0]);
}
