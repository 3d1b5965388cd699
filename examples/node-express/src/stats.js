// What /stats reports, with the Rust target's field names (contracts.md). Each serving process
// measures itself (localSnapshot); in cluster modes the primary sums the processes' snapshots
// (aggregate) and the worker that got the request builds the response (composeStats).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { readThrottling } from './quota.js';

// monitorEventLoopDelay samples a timer every LAG_RESOLUTION_MS and records the time between
// firings, so an idle loop reads ~10 ms. Lag is how late the timer fired: the recorded value
// minus the resolution (the same measure as the Rust target's "how late a periodic timer fires").
const LAG_RESOLUTION_MS = 10;

/** Per-process counters and gauges. One instance per process that serves HTTP (or the primary). */
export class ProcessStats {
  #lag = null;
  /** Requests answered, except the /healthz and /stats probes (they would inflate the count). */
  requestsServed = 0;

  /** `serving`: this process runs an HTTP event loop, so its loop lag is measured. */
  constructor({ serving = true, pool = null } = {}) {
    this.pool = pool;
    if (serving) {
      this.#lag = monitorEventLoopDelay({ resolution: LAG_RESOLUTION_MS });
      this.#lag.enable();
    }
  }

  /** This process's figures. CPU covers all its threads (pool threads included): getrusage(SELF). */
  snapshot() {
    const cpu = process.cpuUsage();
    const lagMs = (ns) => Math.max(0, ns / 1e6 - LAG_RESOLUTION_MS);
    const hasLag = this.#lag !== null && this.#lag.count > 0;
    return {
      pid: process.pid,
      requestsServed: this.requestsServed,
      cpuSecondsUsed: (cpu.user + cpu.system) / 1e6,
      rssBytes: process.memoryUsage.rss(),
      // The kernel's high-water mark (ru_maxrss, KiB): exact, no sampling interval to miss a peak.
      rssPeakBytes: process.resourceUsage().maxRSS * 1024,
      loopLagMaxMs: hasLag ? lagMs(this.#lag.max) : null,
      loopLagP99Ms: hasLag ? lagMs(this.#lag.percentile(99)) : null,
      poolSize: this.pool ? this.pool.size : 0,
      queueDepth: this.pool ? this.pool.queueDepth : null,
      queuePeak: this.pool ? this.pool.queuePeak : null,
      rejected: this.pool ? this.pool.rejected : null,
      timedOut: this.pool ? this.pool.timedOut : null,
    };
  }

  /** Stops the loop-delay timer so it cannot keep a closing process alive. */
  stop() {
    this.#lag?.disable();
  }
}

const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const maxOrNull = (xs) => (xs.length ? Math.max(...xs) : null);
const sumOrNull = (xs) => (xs.length ? sum(xs) : null);

/**
 * Combines the snapshots of every process of one target. Counters, CPU, RSS, pool sizes and
 * queues add up (the processes run side by side). rssPeakBytes is the sum of each process's own
 * peak, an upper bound of the peak of the sum (processes rarely peak at different moments under
 * a steady load). Loop lag is the worst loop's: the max of the maxima and of the p99s, because
 * a request landing on the slowest loop sees that loop's delay.
 */
export function aggregate(snapshots) {
  const present = (k) => snapshots.map((s) => s[k]).filter((v) => v !== null && v !== undefined);
  return {
    processes: snapshots.length,
    requestsServed: sum(present('requestsServed')),
    cpuSecondsUsed: sum(present('cpuSecondsUsed')),
    rssBytes: sum(present('rssBytes')),
    rssPeakBytes: sum(present('rssPeakBytes')),
    loopLagMaxMs: maxOrNull(present('loopLagMaxMs')),
    loopLagP99Ms: maxOrNull(present('loopLagP99Ms')),
    poolSize: sum(present('poolSize')),
    queueDepth: sumOrNull(present('queueDepth')),
    queuePeak: sumOrNull(present('queuePeak')),
    rejected: sumOrNull(present('rejected')),
    timedOut: sumOrNull(present('timedOut')),
  };
}

/**
 * Throttling since a baseline taken at start: the cgroup's counters are cumulative since the
 * cgroup was created, which may be long before this target (a shared local cgroup, say).
 */
export class Throttling {
  #file;
  #base;
  constructor(statFile) {
    this.#file = statFile;
    this.#base = readThrottling(statFile);
  }
  /** { periods, seconds } since start, or nulls when the cgroup does not report throttling. */
  read() {
    const now = readThrottling(this.#file);
    if (!now || !this.#base) return { periods: null, seconds: null };
    return {
      periods: now.periods - this.#base.periods,
      seconds: now.seconds === null ? null : Math.max(0, now.seconds - (this.#base.seconds ?? 0)),
    };
  }
}

/** Builds the /stats document from the detection, the sizing and the aggregated figures. */
export function composeStats({ config, cpus, agg, throttling, uptimeSeconds, loopThreads }) {
  return {
    mode: config.mode,
    hostCpus: cpus.hostCpus,
    detectedCpus: cpus.detectedCpus,
    cpuQuota: cpus.cpuQuota,
    quotaSource: cpus.quotaSource,
    poolSize: agg.poolSize,
    loopThreads,
    requestsServed: agg.requestsServed,
    cpuSecondsUsed: round(agg.cpuSecondsUsed, 3),
    rssBytes: agg.rssBytes,
    rssPeakBytes: agg.rssPeakBytes,
    loopLagMaxMs: round(agg.loopLagMaxMs, 3),
    loopLagP99Ms: round(agg.loopLagP99Ms, 3),
    queueDepth: agg.queueDepth,
    queuePeak: agg.queuePeak,
    rejected: agg.rejected,
    timedOut: agg.timedOut,
    throttledPeriods: throttling.periods,
    throttledSeconds: round(throttling.seconds, 3),
    uptimeSeconds: round(uptimeSeconds, 3),
  };
}

function round(x, digits) {
  if (x === null || x === undefined) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
