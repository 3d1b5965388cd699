//! Input bounds: the open loop ends by its deadline at any accepted rate, and the command line
//! refuses values beyond the limits (exit 2 naming the flag or field) before any load is sent.

mod common;

use std::time::{Duration, Instant};

use benchmatrix_loadgen::engine::{self, RunConfig};
use benchmatrix_loadgen::limits::MAX_RATE_PER_STREAM;
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
        stats_path: None,
        // A few connections per stream: the server is thread-per-connection.
        open_max_connections: 4,
        share: Default::default(),
    };
    let started = Instant::now();
    let r = engine::run(&cfg, &mut |_| {}).unwrap();
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
