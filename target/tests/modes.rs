//! The three modes behave like the seeds' Node configurations, shown on a real process.
//!
//! What is asserted is what is deterministic: a request cannot be answered before the CPU work
//! ahead of it on the same loop is done, because that work needs its CPU time (measured as
//! thread CPU time, which is never less than the wall time it takes). Upper bounds (how fast
//! `/fast` is when it is *not* blocked) depend on the machine's load and get wide margins.
//!
//! Every request here opens a new connection, as a browser or a fresh client would; with
//! keep-alive, a connection stays on the loop that accepted it, and a blocked loop blocks it.

mod common;

use std::thread::sleep;
use std::time::{Duration, Instant};

use common::{Target, get_in_background, ms};

#[test]
fn timing_single_mode_fast_waits_for_slow() {
    let slow_ms = 800;
    let t = Target::start(&["--mode", "single", "--slow-ms", "800", "--fast-ms", "5"]);
    assert_eq!(t.get("/healthz").status, 200);

    let t0 = Instant::now();
    let slow = get_in_background(t.addr, "/slow");
    sleep(Duration::from_millis(200));
    let fast = t.get("/fast");
    let slow = slow.join().unwrap().unwrap();
    assert_eq!((slow.status, fast.status), (200, 200));

    // /slow needs 800 ms of CPU on the only loop; when /fast was sent at most the time since
    // /slow was sent had been spent, so /fast waited at least for the rest.
    let remaining = Duration::from_millis(slow_ms).saturating_sub(fast.started - t0);
    assert!(
        fast.elapsed >= remaining.mul_f64(0.9),
        "/fast took {:.0} ms but /slow still had {:.0} ms of CPU to go",
        ms(fast.elapsed),
        ms(remaining)
    );
    assert!(
        slow.finished <= fast.finished,
        "/fast was answered before /slow"
    );
}

#[test]
fn timing_pool_mode_fast_stays_fast_while_slow_runs() {
    let fast_ms: f64 = 10.0;
    let t = Target::start(&[
        "--mode",
        "pool",
        "--pool-size",
        "2",
        "--slow-ms",
        "2000",
        "--fast-ms",
        "10",
    ]);
    // The same /fast with the pool idle, measured side by side: the machine may be busy with
    // other work, and that must not be mistaken for blocking.
    let mut idle: Vec<f64> = (0..5).map(|_| ms(t.get("/fast").elapsed)).collect();
    idle.sort_by(f64::total_cmp);
    let idle_median = idle[idle.len() / 2];

    let slows: Vec<_> = (0..2).map(|_| get_in_background(t.addr, "/slow")).collect();
    sleep(Duration::from_millis(300));
    // Both workers busy, nothing waiting.
    assert_eq!(t.stats()["queueDepth"], 0);

    let mut fast = Vec::new();
    for _ in 0..7 {
        let r = t.get("/fast");
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["ranOn"], "loop", "light work stays on the loop");
        fast.push(r);
    }
    let slows: Vec<_> = slows
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    for s in &slows {
        assert_eq!(s.status, 200);
        assert_eq!(s.json()["ranOn"], "pool", "heavy work goes to the pool");
    }
    let last_fast = fast.iter().map(|r| r.finished).max().unwrap();
    assert!(
        slows.iter().all(|s| s.finished > last_fast),
        "the /fast requests must have run while both /slow were in the pool"
    );
    let mut lat: Vec<f64> = fast.iter().map(|r| ms(r.elapsed)).collect();
    lat.sort_by(f64::total_cmp);
    let median = lat[lat.len() / 2];
    // Not blocked: in single mode /fast would wait for the rest of a 2000 ms /slow.
    assert!(
        median < 500.0,
        "/fast median {median:.1} ms while /slow ran in the pool: {lat:?}"
    );
    // And only slowed by sharing two cores with two busy workers (three runnable threads:
    // about 2/3 of a core each, ~15 ms for 10 ms of CPU on a quiet machine). The bound is six
    // times its CPU time plus 20 ms, or four times the idle figure on a busy machine.
    let bound = (6.0 * fast_ms + 20.0).max(4.0 * idle_median + 20.0);
    assert!(
        median <= bound,
        "/fast median {median:.1} ms (bound {bound:.0} ms, idle {idle_median:.1} ms); all: {lat:?}"
    );
}

#[test]
fn timing_threads_mode_one_slow_leaves_fast_fast_two_block_it() {
    let slow_ms = 1200;
    let t = Target::start(&[
        "--mode",
        "threads",
        "--threads",
        "2",
        "--slow-ms",
        "1200",
        "--fast-ms",
        "10",
    ]);
    assert_eq!(t.stats()["loopThreads"], 2);

    // One /slow occupies one loop; the other loop accepts the new connection for /fast.
    let slow = get_in_background(t.addr, "/slow");
    sleep(Duration::from_millis(200));
    let fast = t.get("/fast");
    let slow = slow.join().unwrap().unwrap();
    assert_eq!((slow.status, fast.status), (200, 200));
    assert!(
        fast.finished < slow.finished && fast.elapsed < Duration::from_millis(400),
        "with one loop free, /fast took {:.0} ms (the /slow beside it needed {slow_ms} ms)",
        ms(fast.elapsed)
    );

    // Two /slow occupy both loops; /fast waits for the first of them to finish.
    let t0 = Instant::now();
    let slow1 = get_in_background(t.addr, "/slow");
    sleep(Duration::from_millis(150));
    let slow2 = get_in_background(t.addr, "/slow");
    sleep(Duration::from_millis(150));
    let fast = t.get("/fast");
    let slow1 = slow1.join().unwrap().unwrap();
    let slow2 = slow2.join().unwrap().unwrap();
    assert_eq!((slow1.status, slow2.status, fast.status), (200, 200, 200));
    let remaining = Duration::from_millis(slow_ms).saturating_sub(fast.started - t0);
    assert!(
        fast.elapsed >= remaining.mul_f64(0.9),
        "with both loops in /slow, /fast took only {:.0} ms; the earlier /slow had {:.0} ms to go",
        ms(fast.elapsed),
        ms(remaining)
    );
    // Which /slow finishes first, and which loop then takes /fast, is up to the scheduler.
}
