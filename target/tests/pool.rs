//! The pool's limits on a real process: a full queue refuses at once, and a task past its CPU
//! deadline fails while the pool keeps its size.

mod common;

use std::thread::sleep;
use std::time::Duration;

use common::{Target, get_in_background, ms, try_get};

#[test]
fn timing_queue_bound_rejects_at_once_with_retry_after() {
    let t = Target::start(&[
        "--mode",
        "pool",
        "--pool-size",
        "1",
        "--queue-depth",
        "2",
        "--slow-ms",
        "5000",
    ]);
    // One /slow runs, two wait: the queue is full.
    let _held: Vec<_> = (0..3)
        .map(|_| {
            let h = get_in_background(t.addr, "/slow");
            sleep(Duration::from_millis(30));
            h
        })
        .collect();
    common::wait_for_stats(&t, Duration::from_secs(10), |s| s["queueDepth"] == 2);

    let burst = |n: usize| {
        let handles: Vec<_> = (0..n)
            .map(|_| {
                let addr = t.addr;
                std::thread::spawn(move || {
                    (0..10)
                        .map(|_| try_get(addr, "/slow").unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    };

    let first = burst(10);
    let rss_after_first = t.stats()["rssBytes"].as_u64().unwrap();
    let second = burst(10);
    let stats = t.stats();
    let rss_after_second = stats["rssBytes"].as_u64().unwrap();

    for r in first.iter().chain(&second) {
        assert_eq!(r.status, 503, "{}", r.body);
        let retry: u64 = r
            .header("retry-after")
            .expect("Retry-After")
            .parse()
            .expect("seconds");
        assert!(retry >= 1);
        assert_eq!(r.json()["error"], "queue_full");
        // "At once": no CPU work or queueing happened for these. 10 client threads share two
        // cores with the target, so allow for scheduling, not for the 5 s of work ahead.
        assert!(
            r.elapsed < Duration::from_millis(1000),
            "a refusal took {:.0} ms",
            ms(r.elapsed)
        );
    }
    assert_eq!(stats["rejected"], 200);
    assert_eq!(stats["queueDepth"], 2);
    assert_eq!(stats["queuePeak"], 2);
    // Refusals keep nothing: a second burst of the same size must not grow the process.
    let growth = rss_after_second.saturating_sub(rss_after_first);
    assert!(
        growth < 1024 * 1024,
        "RSS grew by {growth} bytes over 100 refusals"
    );
}

#[test]
fn timing_task_past_its_deadline_gets_504_and_the_worker_is_replaced() {
    let t = Target::start(&[
        "--mode",
        "pool",
        "--pool-size",
        "1",
        "--task-deadline-ms",
        "200",
    ]);
    let r = t.get("/cpu?ms=10000");
    assert_eq!(r.status, 504, "{}", r.body);
    assert_eq!(r.json()["error"], "deadline_exceeded");
    // Stopped at its 200 ms of CPU, not after the 10 s it asked for (CPU time never exceeds
    // wall time, so finishing would have taken at least 10 s).
    assert!(
        r.elapsed < Duration::from_millis(10_000),
        "took {:.0} ms",
        ms(r.elapsed)
    );

    let s = t.stats();
    assert_eq!(s["timedOut"], 1);
    assert_eq!(s["poolSize"], 1);
    // The replacement worker serves the next heavy request.
    let r = t.get("/cpu?ms=100");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["ranOn"], "pool");
    let metrics = t.get("/metrics").body;
    assert!(
        metrics.contains("benchmatrix_target_pool_workers_replaced_total 1\n"),
        "{metrics}"
    );
}

#[test]
fn offload_all_sends_light_work_to_the_pool_too() {
    let t = Target::start(&["--mode", "pool", "--pool-size", "1", "--offload", "all"]);
    assert_eq!(t.get("/fast").json()["ranOn"], "pool");
    let t = Target::start(&["--mode", "pool", "--pool-size", "1"]);
    assert_eq!(t.get("/fast").json()["ranOn"], "loop");
    assert_eq!(t.get("/slow").json()["ranOn"], "pool");
    // fib(37), the seeds' /slow, is well above 50 ms of CPU; fib(10) far below.
    assert_eq!(t.get("/fib?n=37").json()["ranOn"], "pool");
    assert_eq!(t.get("/fib?n=10").json()["ranOn"], "loop");
}
