//! `/metrics` of a real target process: OpenMetrics text that a strict reader accepts, with
//! figures checked against what the test itself did (requests sent, a loop blocked for a known
//! time).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::openmetrics::{self, Exposition};
use common::{Reply, Target, get, wait_for_stats};

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `/metrics` from `addr`, checked to be OpenMetrics text served as such.
fn scrape(addr: SocketAddr) -> Exposition {
    let r: Reply = get(addr, "/metrics");
    assert_eq!(r.status, 200, "{}", r.body);
    let parsed =
        openmetrics::parse(&r.body).unwrap_or_else(|e| panic!("not OpenMetrics: {e}\n{}", r.body));
    assert_eq!(r.header("content-type"), Some(CONTENT_TYPE));
    parsed
}

/// The address of the statistics port the target announces.
fn stats_addr(t: &Target) -> SocketAddr {
    let port = t.stats()["statsPort"]
        .as_u64()
        .expect("the target announces a statistics port");
    SocketAddr::new(t.addr.ip(), port as u16)
}

fn value(m: &Exposition, name: &str) -> f64 {
    m.value(name)
        .unwrap_or_else(|| panic!("no sample {name} in {m:#?}"))
}

/// Observations of histogram `family` greater than `secs`: `_count` minus the cumulative count
/// of the largest bucket bound at or below `secs`.
fn observations_above(m: &Exposition, family: &str, secs: f64) -> f64 {
    let f = m
        .family(family)
        .unwrap_or_else(|| panic!("no family {family}"));
    let bucket = format!("{family}_bucket");
    let at_or_below = f
        .samples
        .iter()
        .filter(|s| s.name == bucket)
        .filter(|s| {
            let le = &s.labels.iter().find(|(k, _)| k == "le").unwrap().1;
            le.parse::<f64>().is_ok_and(|le| le <= secs)
        })
        .map(|s| s.value)
        .next_back()
        .unwrap_or(0.0);
    value(m, &format!("{family}_count")) - at_or_below
}

#[test]
fn metrics_are_openmetrics_in_every_mode() {
    // Family name, type, unit: what the README promises.
    let expected = [
        ("benchmatrix_target_requests_served", "counter", None),
        ("benchmatrix_target_cpu_seconds", "counter", Some("seconds")),
        ("benchmatrix_target_rss_bytes", "gauge", Some("bytes")),
        ("benchmatrix_target_rss_peak_bytes", "gauge", Some("bytes")),
        (
            "benchmatrix_target_loop_lag_seconds",
            "histogram",
            Some("seconds"),
        ),
        (
            "benchmatrix_target_loop_lag_max_seconds",
            "gauge",
            Some("seconds"),
        ),
        (
            "benchmatrix_target_loop_lag_p99_seconds",
            "gauge",
            Some("seconds"),
        ),
        ("benchmatrix_target_host_cpus", "gauge", None),
        ("benchmatrix_target_detected_cpus", "gauge", None),
        ("benchmatrix_target_pool_size", "gauge", None),
        ("benchmatrix_target_loop_threads", "gauge", None),
        ("benchmatrix_target_pool_queue_depth", "gauge", None),
        ("benchmatrix_target_pool_queue_peak", "gauge", None),
        ("benchmatrix_target_pool_rejected", "counter", None),
        ("benchmatrix_target_pool_timed_out", "counter", None),
        ("benchmatrix_target_pool_workers_replaced", "counter", None),
        ("benchmatrix_target_connections_open", "gauge", None),
        ("benchmatrix_target_connections_refused", "counter", None),
        (
            "benchmatrix_target_connections_header_timeouts",
            "counter",
            None,
        ),
        (
            "benchmatrix_target_connections_idle_timeouts",
            "counter",
            None,
        ),
        (
            "benchmatrix_target_uptime_seconds",
            "gauge",
            Some("seconds"),
        ),
        ("benchmatrix_target", "info", None),
    ];
    for (mode, loops, pool) in [
        ("single", 1.0, 0.0),
        ("threads", 2.0, 0.0),
        ("pool", 1.0, 2.0),
    ] {
        let t = Target::start(&["--mode", mode, "--threads", "2", "--pool-size", "2"]);
        assert_eq!(get(t.addr, "/fast").status, 200);
        // The p99 gauge appears with the first lag observation (a loop's 10 ms timer).
        wait_for_stats(&t, Duration::from_secs(5), |s| !s["loopLagP99Ms"].is_null());
        let m = scrape(t.addr);
        for (name, kind, unit) in expected {
            let f = m
                .family(name)
                .unwrap_or_else(|| panic!("{mode}: no family {name} in {m:#?}"));
            assert_eq!(
                (f.kind.as_str(), f.unit.as_deref()),
                (kind, unit),
                "{mode}: {name}"
            );
            assert!(
                f.help.as_deref().is_some_and(|h| !h.is_empty()),
                "{mode}: {name} has no HELP"
            );
            assert!(!f.samples.is_empty(), "{mode}: {name} has no sample");
        }
        assert_eq!(
            value(&m, "benchmatrix_target_loop_threads"),
            loops,
            "{mode}"
        );
        assert_eq!(value(&m, "benchmatrix_target_pool_size"), pool, "{mode}");
        assert_eq!(
            m.value_with(
                "benchmatrix_target_info",
                &[
                    ("mode", mode),
                    ("quota_source", t.stats()["quotaSource"].as_str().unwrap())
                ]
            ),
            Some(1.0),
            "{mode}"
        );
        assert!(value(&m, "benchmatrix_target_rss_bytes") > 0.0, "{mode}");
        // /fast burns 12 ms of CPU, so the process has used at least that much.
        assert!(
            value(&m, "benchmatrix_target_cpu_seconds_total") >= 0.012,
            "{mode}"
        );
    }
}

#[test]
fn each_request_to_fast_adds_exactly_one_to_the_request_counter() {
    const N: usize = 25;
    let t = Target::start_with_env(
        &["--mode", "single", "--fast-ms", "1"],
        &[("BENCH_STATS_PORT", "0")],
    );
    // Read on the statistics port, whose responses are not counted: the difference is exactly
    // the requests this test sent to the main port.
    let stats = stats_addr(&t);
    let before = value(&scrape(stats), "benchmatrix_target_requests_served_total");
    for _ in 0..N {
        assert_eq!(get(t.addr, "/fast").status, 200);
    }
    let after = value(&scrape(stats), "benchmatrix_target_requests_served_total");
    assert_eq!(after - before, N as f64, "{N} requests to /fast");
    // A read of /metrics on the main port is a request too, counted once its response is
    // produced: it does not see itself, the next read does.
    let main = value(&scrape(t.addr), "benchmatrix_target_requests_served_total");
    assert_eq!(main, after);
    let next = value(&scrape(stats), "benchmatrix_target_requests_served_total");
    assert_eq!(next, after + 1.0);
    assert_eq!(t.stats()["requestsServed"].as_f64(), Some(next));
}

#[test]
fn a_loop_blocked_for_300_ms_shows_in_the_lag_histogram() {
    let t = Target::start(&["--mode", "single"]);
    let lag = "benchmatrix_target_loop_lag_seconds";
    let before = scrape(t.addr);
    // /cpu runs inline in single mode: the loop's 10 ms lag timer fires at least ~290 ms late.
    assert_eq!(get(t.addr, "/cpu?ms=300").status, 200);
    let after = scrape(t.addr);
    let late = observations_above(&after, lag, 0.25) - observations_above(&before, lag, 0.25);
    assert!(late >= 1.0, "no lag above 250 ms recorded: {after:#?}");
    let sum = value(&after, &format!("{lag}_sum")) - value(&before, &format!("{lag}_sum"));
    assert!(sum >= 0.29, "lag sum grew by {sum} s only");
    assert!(value(&after, "benchmatrix_target_loop_lag_max_seconds") >= 0.29);
    assert!(
        value(&after, &format!("{lag}_count")) > value(&before, &format!("{lag}_count")),
        "the lag timer stopped"
    );
}

/// The reader used above is strict: it turns down each way an exposition can break the format.
#[test]
fn the_openmetrics_reader_rejects_what_is_not_openmetrics() {
    let orphan_help = "# HELP a_x A.\n# TYPE a counter\na_total 1\n# EOF\n";
    assert!(
        openmetrics::parse(orphan_help).is_err(),
        "a HELP without a TYPE was accepted"
    );
    let good =
        "# HELP a A.\n# TYPE a counter\na_total 1\n# TYPE g gauge\ng{l=\"x\\\"y\"} 2.5\n# EOF\n";
    let e = openmetrics::parse(good).unwrap();
    assert_eq!(e.value("a_total"), Some(1.0));
    assert_eq!(e.value_with("g", &[("l", "x\"y")]), Some(2.5));
    for (bad, why) in [
        ("# TYPE a counter\na_total 1\n", "no EOF"),
        ("a 1\n# EOF\n", "no TYPE"),
        ("# TYPE a counter\na 1\n# EOF\n", "counter without _total"),
        (
            "# TYPE a_total counter\na_total 1\n# EOF\n",
            "counter family named with _total (Prometheus 0.0.4 style)",
        ),
        (
            "# TYPE a gauge\na 1\n# TYPE a gauge\na 2\n# EOF\n",
            "family twice",
        ),
        (
            "# TYPE a gauge\n# TYPE b gauge\na 1\n# EOF\n",
            "sample of an earlier family",
        ),
        ("# TYPE a gauge\na x\n# EOF\n", "bad value"),
        ("# TYPE a gauge\na 1 123\n# EOF\n", "timestamp"),
        (
            "# TYPE a_seconds gauge\n# UNIT a_seconds bytes\na_seconds 1\n# EOF\n",
            "unit",
        ),
        (
            "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\nh_sum 0\n# EOF\n",
            "not cumulative",
        ),
        (
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\nh_sum 0\n# EOF\n",
            "no +Inf bucket",
        ),
    ] {
        assert!(openmetrics::parse(bad).is_err(), "accepted ({why}): {bad}");
    }
}
