//! How connections reach replicas, checked against what each server itself counted: through the
//! one target address (`service`), or dealt to the replicas' own addresses (`roundRobin`).

mod common;

use std::sync::atomic::Ordering;

use benchmatrix_loadgen::load::{self, DEFAULT_OPEN_MAX_CONNECTIONS, RunConfig};
use benchmatrix_loadgen::plan::{Spread, Stream};
use common::{Behaviour, TestServer, closed};

fn two_replicas() -> (TestServer, TestServer) {
    let b = Behaviour::Ok {
        delay: std::time::Duration::from_millis(2),
    };
    (TestServer::start(b), TestServer::start(b))
}

/// One 1-second phase with the given streams (all on endpoint "e").
fn config(
    target: &TestServer,
    replicas: &[&TestServer],
    spread: Spread,
    load: Vec<Stream>,
    threads: usize,
) -> RunConfig {
    RunConfig {
        target: target.url("").parse().unwrap(),
        workload: common::workload(1, load, spread),
        threads,
        replicas: replicas.iter().map(|r| r.addr.to_string()).collect(),
        stats_addresses: Vec::new(),
        // No /stats reads: every request a server counts is load.
        stats_path: None,
        open_max_connections: DEFAULT_OPEN_MAX_CONNECTIONS,
        share: Default::default(),
        preflight: None,
        header_values: Default::default(),
    }
}

fn counts(s: &TestServer) -> (u64, u64) {
    (
        s.connections.load(Ordering::SeqCst),
        s.received.load(Ordering::SeqCst),
    )
}

#[test]
fn round_robin_deals_each_streams_connections_to_every_replica_in_turn() {
    // Two streams of 2 and 4 connections over 3 worker threads: per stream, connection c goes
    // to replica c mod 2 whichever thread runs it, so each replica holds 1 + 2 of them.
    let (a, b) = two_replicas();
    let cfg = config(
        &a,
        &[&a, &b],
        Spread::RoundRobin,
        vec![closed(2), closed(4)],
        3,
    );
    let result = load::run(&cfg, &mut |_| {}).unwrap();
    let (ca, ra) = counts(&a);
    let (cb, rb) = counts(&b);
    assert_eq!((ca, cb), (3, 3), "connections per replica");
    // Same delay and the same number of connections: the same share of the requests.
    let ratio = ra as f64 / rb as f64;
    assert!((0.8..1.25).contains(&ratio), "requests {ra} vs {rb}");
    let done: u64 = result.phases[0].streams.iter().map(|s| s.requests).sum();
    assert!(done > 0 && done <= ra + rb, "{done} vs {ra} + {rb}");
}

#[test]
fn two_generators_deal_four_replicas_one_connection_each() {
    // parallelism 2 over 4 pods: the operator gives each generator 2 of a stream's 4
    // connections and its index; together they must reach every pod once.
    let b = Behaviour::Ok {
        delay: std::time::Duration::from_millis(2),
    };
    let servers: Vec<TestServer> = (0..4).map(|_| TestServer::start(b)).collect();
    let refs: Vec<&TestServer> = servers.iter().collect();
    for index in 0..2 {
        let mut cfg = config(&servers[0], &refs, Spread::RoundRobin, vec![closed(2)], 1);
        cfg.share = load::GeneratorShare { index, count: 2 };
        load::run(&cfg, &mut |_| {}).unwrap();
    }
    let per_server: Vec<u64> = servers.iter().map(|s| counts(s).0).collect();
    assert_eq!(per_server, [1, 1, 1, 1]);
}

#[test]
fn leftover_connections_of_successive_streams_go_to_different_replicas() {
    // Two one-connection streams over two replicas: the second continues the turn.
    let (a, b) = two_replicas();
    let cfg = config(
        &a,
        &[&a, &b],
        Spread::RoundRobin,
        vec![closed(1), closed(1)],
        1,
    );
    load::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!((counts(&a).0, counts(&b).0), (1, 1));
}

#[test]
fn round_robin_open_loop_opens_connections_on_every_replica() {
    let (a, b) = two_replicas();
    let open = Stream {
        endpoint: "e".into(),
        connections: None,
        rate: Some(400.0),
    };
    let cfg = config(&a, &[&a, &b], Spread::RoundRobin, vec![open], 2);
    load::run(&cfg, &mut |_| {}).unwrap();
    let ((ca, ra), (cb, rb)) = (counts(&a), counts(&b));
    assert!(ca >= 1 && cb >= 1, "connections {ca} / {cb}");
    assert!(ra > 0 && rb > 0, "requests {ra} / {rb}");
}

#[test]
fn service_spread_sends_everything_to_the_target_address() {
    // The replica list is still there (for /stats), but connections go to the target only.
    let (a, b) = two_replicas();
    let cfg = config(&a, &[&a, &b], Spread::Service, vec![closed(4)], 2);
    load::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(counts(&a).0, 4);
    assert_eq!(counts(&b), (0, 0));
}
