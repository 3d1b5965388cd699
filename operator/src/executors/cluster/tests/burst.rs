//! A burst: 50 runs applied at once to an operator with `--max-active-runs 1`, driven by the
//! operator's real Controllers (`process::wiring::wire`) over the faked API server with watch
//! events on, the test playing the cluster's other controllers. What a user relies on: every run
//! succeeds, they start in creation order, never more than max-active at once, the first in line
//! starts as soon as a slot frees (not on the 60 s safety net); and what the API server pays:
//! the status writes to waiting runs grow linearly with the runs that start, not with their
//! square.
//!
//! `burst_figures` prints the figures (status writes, reconciles, API requests per reconcile):
//! `cargo nextest run -p benchmatrix burst --no-capture` (`BURST_RUNS=20` for another size).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::{Duration, Instant};

use super::fake::{FakeApi, StatusWrite};
use super::{Harness, NS, healthy, sample};
use crate::engine::QUEUE_PLACES_SHOWN;
use crate::executors::cluster::adapter::Settings;
use crate::executors::cluster::process::wiring::{Wiring, drive, wire};
use crate::executors::cluster::telemetry::metrics::Metrics;

/// Runs in the burst (the real-cluster burst's, bench/cluster-burst.sh).
const RUNS: usize = 50;

/// The most a run may wait after a slot freed: far below the waiting runs' 60 s safety net, so
/// only a wake-up can meet it.
const START_GAP: Duration = Duration::from_secs(5);

/// What a burst came to, from the faked API server's records and the operator's metrics.
#[derive(Debug)]
struct Figures {
    /// Every status write of the burst's runs.
    status_writes: usize,
    /// Status writes that left a run Pending (it waits, or never started yet).
    waiting_writes: usize,
    /// Reconciles started (`benchmatrix_reconciles_total`).
    reconciles: u64,
    /// Every request the operator sent the API server (what `benchmatrix_api_requests_total`
    /// counts), by RBAC verb and resource.
    requests: BTreeMap<String, usize>,
    /// The status writes, in the order the API server stored them.
    log: Vec<StatusWrite>,
}

impl Figures {
    fn requests(&self) -> usize {
        self.requests.values().sum()
    }

    /// The runs in the order they started (their first status write in phase Running).
    fn starts(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.log
            .iter()
            .filter(|w| w.phase == "Running" && seen.insert(w.name.clone()))
            .map(|w| w.name.clone())
            .collect()
    }

    /// The most runs Running at once, as the API server's writes show it.
    fn most_running(&self) -> usize {
        let mut running = BTreeSet::new();
        let mut most = 0;
        for w in &self.log {
            if w.phase == "Running" {
                running.insert(w.name.clone());
            } else {
                running.remove(&w.name);
            }
            most = most.max(running.len());
        }
        most
    }

    /// For each start after the first, how long after the latest end before it.
    fn start_gaps(&self) -> Vec<(String, Duration)> {
        let mut last_end: Option<Instant> = None;
        let mut started = BTreeSet::new();
        let mut gaps = Vec::new();
        for w in &self.log {
            match w.phase.as_str() {
                "Succeeded" | "Failed" => last_end = Some(w.at),
                "Running" if started.insert(w.name.clone()) => {
                    if let Some(end) = last_end {
                        gaps.push((w.name.clone(), w.at.duration_since(end)));
                    }
                }
                _ => {}
            }
        }
        gaps
    }
}

/// `name(i)`: burst-01 ... burst-50, so that name order is creation order.
fn name(i: usize) -> String {
    format!("burst-{i:02}")
}

/// Applies `runs` runs at once to an operator allowing `max_active` at a time, and plays the
/// cluster until every run has finished.
async fn burst(runs: usize, max_active: usize) -> Figures {
    let fake = FakeApi::default();
    fake.serve_watch_events();
    let metrics = Arc::new(Metrics::default());
    let Wiring {
        controllers,
        ctx,
        node_watch,
        ..
    } = wire(
        &fake.client(),
        &[],
        max_active,
        metrics.clone(),
        Settings::default(),
        None,
        Arc::default(),
    );
    let harness = Harness {
        fake: fake.clone(),
        ctx: ctx.clone(),
        now: Arc::new(AtomicI64::new(0)),
    };
    fake.insert_cluster_scoped("nodes", super::node("n1", "64", "64Gi"));
    let mut tasks: Vec<_> = controllers
        .into_iter()
        .map(|c| tokio::spawn(drive(c, ctx.clone(), futures::future::pending())))
        .collect();
    tasks.push(tokio::spawn(node_watch));
    // The Controllers watch runs, Deployments, Services, Jobs and pods; the node cache, nodes.
    while fake.open_watches() < 6 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for i in 1..=runs {
        let mut run = sample(&name(i), &["a"]);
        // As from one `kubectl apply`: several runs share a creation second (then the name
        // orders them).
        run["metadata"]["creationTimestamp"] = format!("2026-01-01T00:00:{:02}Z", i / 4).into();
        fake.insert("benchmarkruns", run);
    }
    let finished = |fake: &FakeApi| {
        fake.list("benchmarkruns")
            .iter()
            .filter(|r| matches!(r["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(150);
    while finished(&fake) < runs {
        if Instant::now() > deadline {
            let states: Vec<String> = fake
                .list("benchmarkruns")
                .iter()
                .map(|r| {
                    format!(
                        "{} {} {}",
                        r["metadata"]["name"], r["status"]["phase"], r["status"]["message"]
                    )
                })
                .collect();
            let t0 = fake.status_writes()[0].at;
            let writes: Vec<String> = fake
                .status_writes()
                .iter()
                .map(|w| format!("{:?} {} {} {}", w.at - t0, w.name, w.phase, w.message))
                .collect();
            panic!(
                "{} of {runs} finished after 150 s:\n{}\n{}",
                finished(&fake),
                states.join("\n"),
                writes.join("\n")
            );
        }
        harness.simulate(&healthy);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Let the reconciles that the last writes trigger run, so they are counted too.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for task in &tasks {
        task.abort();
    }
    let mut requests = BTreeMap::new();
    for call in fake.api_calls() {
        let sub = if call.subresource.is_empty() {
            String::new()
        } else {
            format!("/{}", call.subresource)
        };
        *requests
            .entry(format!("{} {}{sub}", call.verb, call.resource))
            .or_default() += 1;
    }
    let log: Vec<StatusWrite> = fake
        .status_writes()
        .into_iter()
        .filter(|w| w.namespace == NS)
        .collect();
    for run in fake.list("benchmarkruns") {
        assert_eq!(run["status"]["phase"], "Succeeded", "{}", run);
    }
    fake.check_calls_are_declared();
    Figures {
        status_writes: log.len(),
        waiting_writes: log
            .iter()
            .filter(|w| w.phase.is_empty() || w.phase == "Pending")
            .count(),
        reconciles: metrics.reconciles(),
        requests,
        log,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn burst_figures() {
    let runs = std::env::var("BURST_RUNS").map_or(RUNS, |n| n.parse().unwrap());
    let figures = tokio::time::timeout(Duration::from_secs(180), burst(runs, 1))
        .await
        .expect("the burst finished within 3 minutes");
    let per_reconcile = figures.requests() as f64 / figures.reconciles.max(1) as f64;
    eprintln!(
        "burst of {runs} runs, max-active 1: {} status writes ({} to waiting runs), {} \
         reconciles, {} API requests ({per_reconcile:.2} per reconcile; {:?})",
        figures.status_writes,
        figures.waiting_writes,
        figures.reconciles,
        figures.requests(),
        figures.requests,
    );

    // They start in creation order, one at a time.
    let expected: Vec<String> = (1..=runs).map(name).collect();
    assert_eq!(figures.starts(), expected);
    assert_eq!(figures.most_running(), 1);
    // The first in line takes a freed slot at once.
    let gaps = figures.start_gaps();
    assert_eq!(gaps.len(), runs - 1);
    for (run, gap) in &gaps {
        assert!(*gap < START_GAP, "{run} started {gap:?} after a slot freed");
    }
    // Each waiting run's status is written when it arrives, then only while its place is shown
    // exactly: at most once per start for each of the first QUEUE_PLACES_SHOWN in line (a
    // run further back says only that it is further back, and is not rewritten). Before,
    // every start rewrote every waiting run: 1,225 writes more over 50 runs.
    let further_back = figures
        .log
        .iter()
        .filter(|w| w.message.contains("or more runs ahead"))
        .count();
    assert!(
        further_back <= runs,
        "{further_back} writes of a place further back: a run there was rewritten"
    );
    let bound = runs + QUEUE_PLACES_SHOWN * (runs - 1);
    assert!(
        figures.waiting_writes <= bound,
        "{} status writes to waiting runs; at most {bound} expected",
        figures.waiting_writes
    );
}
