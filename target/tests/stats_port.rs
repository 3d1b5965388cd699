//! The statistics port: `/stats`, `/healthz` and `/metrics` served by a thread of their own,
//! so a loop blocked in CPU work cannot delay them, while the main port keeps serving `/stats`.

mod common;

use std::net::SocketAddr;
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::{Target, get, get_in_background, ms};

/// The stats port the target announces in its `/stats` (read on the main port while idle);
/// the main address itself when it announces none.
fn stats_addr(t: &Target) -> SocketAddr {
    match t.stats()["statsPort"].as_u64() {
        Some(port) => SocketAddr::new(t.addr.ip(), port as u16),
        None => t.addr,
    }
}

#[test]
fn timing_stats_port_answers_while_the_only_loop_is_busy() {
    let busy_ms = 1_200;
    let t = Target::start_with_env(&["--mode", "single"], &[("BENCH_STATS_PORT", "0")]);
    // Without a stats port this falls back to the main port, and the reads below wait.
    let stats = stats_addr(&t);
    // Idle figures, for comparison in the messages.
    let idle = get(stats, "/stats");
    assert_eq!(idle.status, 200);
    assert_eq!(idle.json()["mode"], "single");

    let t0 = Instant::now();
    let busy = get_in_background(t.addr, &format!("/cpu?ms={busy_ms}"));
    sleep(Duration::from_millis(200));
    let during = get(stats, "/stats");
    let health = get(stats, "/healthz");
    let metrics = get(stats, "/metrics");
    // Ground truth that the loop was blocked meanwhile: the main port's /healthz waits for the
    // rest of the CPU work.
    let main_health = get(t.addr, "/healthz");
    let busy = busy.join().unwrap().unwrap();
    assert_eq!(
        (
            during.status,
            health.status,
            metrics.status,
            main_health.status,
            busy.status
        ),
        (200, 200, 200, 200, 200)
    );
    let remaining = Duration::from_millis(busy_ms).saturating_sub(main_health.started - t0);
    assert!(
        main_health.elapsed >= remaining.mul_f64(0.9),
        "the loop was not blocked: main-port /healthz took {:.0} ms with {:.0} ms of CPU work left",
        ms(main_health.elapsed),
        ms(remaining)
    );
    for (what, r) in [
        ("/stats", &during),
        ("/healthz", &health),
        ("/metrics", &metrics),
    ] {
        assert!(
            r.elapsed < Duration::from_millis(100),
            "{what} on {stats} took {:.1} ms while the loop was busy (idle: {:.1} ms)",
            ms(r.elapsed),
            ms(idle.elapsed)
        );
    }
    assert!(
        during.finished < busy.finished,
        "the stats read did not happen while the loop was busy"
    );
    // The lag of the blocked loop is still measured on the loop itself.
    let after = get(stats, "/stats").json();
    assert!(
        after["loopLagMaxMs"].as_f64().unwrap() >= 0.5 * busy_ms as f64,
        "loop lag not seen: {after}"
    );
}

#[test]
fn timing_stats_port_answers_while_every_loop_of_threads_mode_is_busy() {
    let t = Target::start_with_env(
        &["--mode", "threads", "--threads", "2"],
        &[("BENCH_STATS_PORT", "0")],
    );
    let stats = stats_addr(&t);
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let h = get_in_background(t.addr, "/cpu?ms=1500");
            // Let the first loop take its connection before the second is opened.
            sleep(Duration::from_millis(100));
            h
        })
        .collect();
    sleep(Duration::from_millis(150));
    let during = get(stats, "/stats");
    let busy: Vec<_> = busy
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    assert_eq!(during.status, 200);
    assert!(
        busy.iter()
            .all(|b| b.status == 200 && during.finished < b.finished),
        "the stats read did not happen while both loops were busy"
    );
    assert!(
        during.elapsed < Duration::from_millis(100),
        "/stats on the stats port took {:.1} ms with both loops busy",
        ms(during.elapsed)
    );
}

#[test]
fn the_stats_port_serves_the_same_document_and_is_not_counted() {
    let t = Target::start_with_env(
        &["--mode", "threads", "--threads", "2"],
        &[("BENCH_STATS_PORT", "0")],
    );
    let stats = stats_addr(&t);
    assert_ne!(stats, t.addr, "the target announced no stats port");
    let before = get(stats, "/stats").json();
    assert_eq!(before["loopThreads"], 2);
    assert_eq!(before["statsPort"], stats.port());
    let served = before["requestsServed"].as_u64().unwrap();
    // Reads on the stats port are not workload: they leave requestsServed alone.
    for _ in 0..5 {
        assert_eq!(get(stats, "/healthz").status, 200);
    }
    let m = get(stats, "/metrics");
    assert_eq!(m.status, 200);
    assert!(m.body.contains("benchmatrix_target_requests_served_total"));
    assert_eq!(
        get(stats, "/fast").status,
        404,
        "work is served on the main port only"
    );
    let after = get(stats, "/stats").json();
    assert_eq!(after["requestsServed"].as_u64().unwrap(), served);
    // The main port still serves /stats, and counts it.
    let main = t.stats();
    assert_eq!(main["statsPort"], stats.port());
    assert!(main["requestsServed"].as_u64().unwrap() >= served);
    // The second stdout line names the same address.
    let line = format!("statistics on http://{stats}");
    let start = Instant::now();
    while !t.extra_stdout.lock().unwrap().contains(&line) {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no `{line}` on stdout: {:?}",
            t.extra_stdout.lock().unwrap()
        );
        sleep(Duration::from_millis(10));
    }
}

#[test]
fn without_a_stats_port_none_is_announced() {
    let t = Target::start(&["--mode", "single"]);
    let doc = t.stats();
    assert!(
        doc.as_object().unwrap().contains_key("statsPort") && doc["statsPort"].is_null(),
        "statsPort must be present and null: {doc}"
    );
}
