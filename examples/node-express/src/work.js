// Entry point of a piscina pool thread. Kept tiny and pure (see fib.js): it receives {n}, runs
// the same function the event loop would run, and reports how long it took in this thread.
import { fib } from './fib.js';

/** Runs fib(n) in a pool thread and returns its value and wall time in milliseconds. */
export default function runFib({ n }) {
  const t0 = performance.now();
  const value = fib(n);
  return { value, ms: performance.now() - t0 };
}
