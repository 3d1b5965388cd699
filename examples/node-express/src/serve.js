// One serving process: the Express app on one event loop, with or without a pool. Used as is in
// `single` and `pool` modes, and by every worker process in `cluster` and `both` modes.
import http from 'node:http';
import { buildApp } from './app.js';
import { calibrate, fib } from './fib.js';
import { log } from './log.js';
import { FibPool } from './pool.js';
import { ProcessStats } from './stats.js';

/** Formats a bound address for the readiness line and logs ("[::1]" for IPv6). */
export function hostPort(address) {
  const host = address.family === 'IPv6' || address.address.includes(':') ? `[${address.address}]` : address.address;
  return `${host}:${address.port}`;
}

/**
 * Starts the app in this process.
 * - poolSize: threads for this process's pool (0 = run everything on the event loop).
 * - stats(procStats): builds the /stats document (locally, or by asking the cluster primary).
 * Resolves to { server, address, procStats, drain } once listening.
 */
export async function serve({ config, poolSize, stats, quiet = false }) {
  const cost = calibrate();
  const pool =
    poolSize > 0
      ? new FibPool({ size: poolSize, queueDepth: config.queueDepth, deadlineMs: config.taskDeadlineMs })
      : null;
  const procStats = new ProcessStats({ pool });
  if (!quiet) {
    log(
      `fib calibration: fib(${cost.calibrationN}) = ${cost.calibrationMs.toFixed(2)} ms -> ` +
        `fib(30) ~ ${cost.costMs(30).toFixed(1)} ms, fib(37) ~ ${cost.costMs(37).toFixed(0)} ms; ` +
        (pool
          ? `offload ${config.offload === 'all' ? 'every request' : `work >= ${config.offloadThresholdMs} ms`} to the pool`
          : 'all work on the event loop'),
    );
  }

  const work = {
    async fib(n) {
      if (pool && (config.offload === 'all' || cost.costMs(n) >= config.offloadThresholdMs)) {
        const r = await pool.run(n);
        return { ...r, ranOn: 'pool' };
      }
      const t0 = performance.now();
      const value = fib(n);
      return { value, ms: performance.now() - t0, ranOn: 'loop' };
    },
  };

  let draining = false;
  const app = buildApp({
    work,
    stats: () => stats(procStats),
    counters: procStats,
    isDraining: () => draining,
  });

  const server = http.createServer(app);
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: config.host, port: config.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });

  /**
   * Graceful stop: refuse keep-alive for new responses, stop accepting, let in-flight requests
   * finish for up to the grace period, then cut what is left and stop the pool.
   */
  let drained = null;
  function drain() {
    // A stop can be asked twice (the primary's message and a process-group signal): both callers
    // must wait for the same drain, not see the second call return at once.
    drained ??= drainOnce();
    return drained;
  }
  async function drainOnce() {
    draining = true;
    const closed = new Promise((resolve) => server.close(resolve));
    // Connections that finish their request during the drain become idle: close them as they do.
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    const deadline = setTimeout(() => {
      log(`grace period of ${config.gracePeriodMs} ms is over; closing remaining connections`);
      server.closeAllConnections();
    }, config.gracePeriodMs);
    server.closeIdleConnections();
    await closed;
    clearInterval(sweep);
    clearTimeout(deadline);
    if (pool) await pool.close();
    procStats.stop();
  }

  return { server, address: server.address(), procStats, drain };
}
