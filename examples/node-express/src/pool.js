// A fixed piscina pool for the CPU work, with a bounded queue: beyond `queueDepth` waiting tasks a
// request is refused (503 + Retry-After) rather than queued into an ever-growing latency and
// memory problem. Counts what /stats reports: queue depth and peak, rejections, deadline misses.
import { Piscina } from 'piscina';
import { log } from './log.js';

/** The pool's queue is full; the handler answers 503 with Retry-After. */
export class PoolFullError extends Error {}
/** A task ran past BENCH_TASK_DEADLINE_MS and was aborted; the handler answers 504. */
export class TaskTimeoutError extends Error {}
/** The pool was stopped during shutdown with this task unfinished; the handler answers 503. */
export class PoolClosedError extends Error {}

const WORK_URL = new URL('./work.js', import.meta.url).href;

/** A fixed-size pool of fib workers. */
export class FibPool {
  #pool;
  #queueDepth;
  #deadlineMs;
  #closed = false;

  /** Number of pool threads. */
  size;
  /** Tasks refused because the queue was full. */
  rejected = 0;
  /** Tasks aborted at their deadline. */
  timedOut = 0;
  /** Most tasks ever seen waiting at once. */
  queuePeak = 0;

  constructor({ size, queueDepth, deadlineMs }) {
    this.size = size;
    this.#queueDepth = queueDepth;
    this.#deadlineMs = deadlineMs;
    this.#pool = new Piscina({
      filename: WORK_URL,
      // Fixed size, started up front: thread start-up costs tens of ms, never pay it per request.
      minThreads: size,
      maxThreads: size,
      idleTimeout: Infinity,
      // piscina refuses beyond this ("Task queue is at limit"; with 0, "No task queue
      // available" whenever every thread is busy). The test suite checks that this still maps to 503.
      maxQueue: queueDepth,
    });
    // piscina emits 'error' for a failure outside any task (an idle thread crashing); without a
    // listener that would throw and take the server down. piscina replaces the thread itself.
    this.#pool.on('error', (err) => log(`pool thread error: ${err?.stack ?? err}`));
  }

  /** Tasks currently waiting for a thread. */
  get queueDepth() {
    return this.#pool.queueSize;
  }

  /** Runs fib(n) on a pool thread. Rejects with PoolFullError or TaskTimeoutError. */
  async run(n) {
    const signal = this.#deadlineMs > 0 ? AbortSignal.timeout(this.#deadlineMs) : undefined;
    const task = this.#pool.run({ n }, signal ? { signal } : {});
    this.queuePeak = Math.max(this.queuePeak, this.#pool.queueSize);
    try {
      return await task;
    } catch (err) {
      if (this.#closed) throw new PoolClosedError('the server is shutting down');
      if (signal?.aborted) {
        this.timedOut++;
        throw new TaskTimeoutError(`task fib(${n}) ran past its ${this.#deadlineMs} ms deadline`);
      }
      if (/queue is at limit|No task queue available/i.test(String(err?.message))) {
        this.rejected++;
        throw new PoolFullError(`pool queue is full (${this.#queueDepth} waiting)`);
      }
      throw err;
    }
  }

  /**
   * Stops the threads. Called once the HTTP server has closed, i.e. when no client is waiting
   * any more: what is still queued or running was abandoned (a client timed out and left), so
   * it is dropped rather than computed for nobody.
   */
  async close() {
    this.#closed = true;
    await this.#pool.destroy();
  }
}
