//! The CPU work the endpoints do, and the clock it is measured with.
//!
//! Work is measured in *thread CPU time* (`CLOCK_THREAD_CPUTIME_ID`), not wall time: under a
//! CFS quota a throttled thread's wall clock runs on while it does nothing, so a wall-clock
//! "burn 12 ms" would do less work exactly when the quota bites — the effect a benchmark wants to
//! see. Every request for N ms of CPU gets N ms of CPU.

use std::hint::black_box;
use std::time::Duration;

/// The largest `n` accepted by `/fib`: fib(45) is already seconds of CPU per request.
pub const MAX_FIB_N: u32 = 45;
/// The largest CPU burn accepted by `/cpu?ms=`, so one request cannot hold a core for minutes.
pub const MAX_CPU_MS: u64 = 30_000;
/// The longest wait accepted by `/io?ms=`.
pub const MAX_IO_MS: u64 = 60_000;

/// A unit of CPU work a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Burn this much thread CPU time.
    Burn {
        /// Milliseconds of CPU.
        ms: u64,
    },
    /// Compute Fibonacci(n) by naive recursion, the seeds' exact work.
    Fib {
        /// Which Fibonacci number.
        n: u32,
    },
}

/// What a finished piece of work reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Done {
    /// Thread CPU time the work took, in milliseconds.
    pub cpu_ms: f64,
    /// Fibonacci(n) for [`Work::Fib`]; `None` for a burn.
    pub value: Option<u64>,
}

/// The work ran past its CPU deadline and was abandoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineExceeded;

impl Work {
    /// Does the work on the calling thread. With a `deadline`, the work checks its own CPU time
    /// as it goes and gives up once it has used that much: a thread cannot be killed from
    /// outside, so stopping is cooperative (at most ~1 ms late for a burn, a few ms for fib).
    pub fn run(self, deadline: Option<Duration>) -> Result<Done, DeadlineExceeded> {
        let start = thread_cpu_time();
        let limit = deadline.map(|d| start + d);
        let value = match self {
            Work::Burn { ms } => {
                burn_until(start + Duration::from_millis(ms), limit)?;
                None
            }
            Work::Fib { n } => Some(fib_checked(n, &mut FibClock::new(limit))?),
        };
        Ok(Done {
            cpu_ms: (thread_cpu_time().saturating_sub(start)).as_secs_f64() * 1e3,
            value,
        })
    }

    /// The expected CPU cost in milliseconds, used to decide whether work is heavy enough to
    /// offload. `fib_ns_per_call` comes from [`calibrate_fib`].
    pub fn estimated_ms(self, fib_ns_per_call: f64) -> f64 {
        match self {
            Work::Burn { ms } => ms as f64,
            Work::Fib { n } => fib_calls(n) as f64 * fib_ns_per_call / 1e6,
        }
    }
}

/// This thread's CPU time so far.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Spins until this thread has used `until` of CPU time, or fails at `limit`.
fn burn_until(until: Duration, limit: Option<Duration>) -> Result<(), DeadlineExceeded> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    loop {
        // About 20-50 µs of arithmetic between clock reads: the clock is a syscall, and this
        // keeps its cost under a percent while overshooting the target by well under 1 ms.
        for _ in 0..20_000 {
            x = black_box(x.rotate_left(5) ^ x.wrapping_mul(0x2545_F491_4F6C_DD1D));
        }
        let now = thread_cpu_time();
        if let Some(limit) = limit
            && now >= limit
            && now < until
        {
            return Err(DeadlineExceeded);
        }
        if now >= until {
            black_box(x);
            return Ok(());
        }
    }
}

/// Reads the CPU clock every 2^20 calls of the recursion (a few ms) to honour a deadline.
struct FibClock {
    calls: u64,
    limit: Option<Duration>,
}

impl FibClock {
    fn new(limit: Option<Duration>) -> Self {
        FibClock { calls: 0, limit }
    }
}

fn fib_checked(n: u32, clock: &mut FibClock) -> Result<u64, DeadlineExceeded> {
    if n < 2 {
        return Ok(n as u64);
    }
    clock.calls += 1;
    if clock.calls & 0xF_FFFF == 0
        && let Some(limit) = clock.limit
        && thread_cpu_time() >= limit
    {
        return Err(DeadlineExceeded);
    }
    Ok(black_box(fib_checked(n - 1, clock)?) + black_box(fib_checked(n - 2, clock)?))
}

/// Number of calls the naive recursion makes for `n`: 2·fib(n+1) − 1.
pub fn fib_calls(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..=n {
        (a, b) = (b, a + b);
    }
    2 * a - 1
}

/// Measures this machine's cost of one recursive fib call, in nanoseconds, from a few small
/// runs (the fastest wins: it is the least disturbed). Used only to estimate `/fib` cost for
/// the offload decision.
pub fn calibrate_fib() -> f64 {
    const N: u32 = 22;
    let mut best = f64::MAX;
    for _ in 0..3 {
        let start = thread_cpu_time();
        let _ = fib_checked(N, &mut FibClock::new(None));
        let ns = thread_cpu_time().saturating_sub(start).as_nanos() as f64;
        best = best.min(ns / fib_calls(N) as f64);
    }
    if best.is_finite() && best > 0.0 {
        best
    } else {
        2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burn_uses_the_cpu_time_asked_for() {
        let done = Work::Burn { ms: 30 }.run(None).unwrap();
        assert!(done.cpu_ms >= 30.0, "{done:?}");
        assert!(done.cpu_ms < 60.0, "{done:?}");
    }

    #[test]
    fn fib_is_right() {
        assert_eq!(Work::Fib { n: 20 }.run(None).unwrap().value, Some(6765));
        assert_eq!(Work::Fib { n: 1 }.run(None).unwrap().value, Some(1));
        assert_eq!(fib_calls(1), 1);
        assert_eq!(fib_calls(2), 3);
        assert_eq!(fib_calls(3), 5);
    }

    #[test]
    fn a_deadline_stops_a_burn_and_a_fib() {
        let d = Some(Duration::from_millis(20));
        assert_eq!(Work::Burn { ms: 2_000 }.run(d), Err(DeadlineExceeded));
        assert_eq!(Work::Fib { n: 45 }.run(d), Err(DeadlineExceeded));
    }

    #[test]
    fn estimates_follow_the_work() {
        assert_eq!(Work::Burn { ms: 12 }.estimated_ms(1.0), 12.0);
        let ns = calibrate_fib();
        assert!(ns > 0.0);
        assert!(Work::Fib { n: 40 }.estimated_ms(ns) > Work::Fib { n: 30 }.estimated_ms(ns));
    }
}
