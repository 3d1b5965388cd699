// The seeds' CPU work: naive recursive Fibonacci. Deliberately exponential and synchronous, so
// fib(30) is a "light" request (~12 ms on the seeds' machine) and fib(37) a "heavy" one (~380 ms).
// Pure, with no imports, so it runs unchanged on the event loop, in a pool thread, or in a test.

/** Largest n accepted from a client: fib(40) is already ~1.6 s of CPU on the seeds' machine. */
export const FIB_MAX_N = 40;

/** Naive recursive Fibonacci (the work under test; do not memoize). */
export function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

const PHI = (1 + Math.sqrt(5)) / 2;
const CALIBRATION_N = 27;

/**
 * Measures this machine's speed once, so the offload decision can be made on estimated CPU cost
 * (milliseconds) like the Rust target's `--offload-threshold-ms`, not on a hard-coded n.
 * The call count of naive fib grows by the golden ratio per step, so one timing extrapolates.
 * Takes the fastest of several runs: the first ones include JIT warm-up, and noise only adds.
 */
export function calibrate(runs = 7) {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fib(CALIBRATION_N);
    best = Math.min(best, performance.now() - t0);
  }
  const baseMs = Math.max(best, 0.01);
  return {
    calibrationN: CALIBRATION_N,
    calibrationMs: baseMs,
    /** Estimated milliseconds of CPU for fib(n) on this machine. */
    costMs: (n) => baseMs * PHI ** (n - CALIBRATION_N),
  };
}
