// The real server, in each mode, over HTTP. Timing checks use order, not thresholds: on a busy
// 2-core machine a blocked loop still cannot answer /fast before the heavy request ends, and a
// free loop still answers /fast long before a ~1 s fib(39) ends.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { get, sleep, startServer, stopServer } from './helpers.js';

const STATS_FIELDS = [
  'mode', 'hostCpus', 'detectedCpus', 'cpuQuota', 'quotaSource', 'poolSize', 'loopThreads',
  'requestsServed', 'cpuSecondsUsed', 'rssBytes', 'rssPeakBytes', 'loopLagMaxMs', 'loopLagP99Ms',
  'queueDepth', 'queuePeak', 'rejected', 'timedOut', 'throttledPeriods', 'throttledSeconds',
  'uptimeSeconds',
];

// Every mode with two serving processes / two pool threads where it has them, so the checks are
// the same on any machine.
const MODES = {
  single: {},
  cluster: { BENCH_WORKERS: '2' },
  pool: { BENCH_POOL_SIZE: '2' },
  both: { BENCH_WORKERS: '2', BENCH_POOL_SIZE: '1' },
};

for (const [mode, env] of Object.entries(MODES)) {
  test(`${mode}: healthz, fast, small fib, 400 on bad input, stats names, clean SIGTERM`, async () => {
    const server = await startServer({ BENCH_MODE: mode, ...env });
    try {
      const health = await get(`${server.url}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(health.body, { status: 'ok' });

      // Fresh connections: in cluster modes they spread over the workers, and /stats must
      // still count all of them.
      const fasts = await Promise.all([1, 2, 3, 4].map(() => get(`${server.url}/fast`)));
      for (const r of fasts) {
        assert.equal(r.status, 200);
        assert.equal(r.body.value, 832040);
        assert.equal(r.body.ranOn, 'loop', 'light work stays on the event loop by default');
      }
      const small = await get(`${server.url}/fib?n=20`);
      assert.deepEqual([small.status, small.body.value], [200, 6765]);

      for (const bad of ['41', 'abc', '-1', '', '3.5']) {
        const r = await get(`${server.url}/fib?n=${bad}`);
        assert.equal(r.status, 400, `n=${bad}`);
        assert.match(r.body.error, /whole number from 0 to 40/);
      }
      assert.equal((await get(`${server.url}/fib`)).status, 400);
      assert.equal((await get(`${server.url}/nope`)).status, 404);

      const stats = (await get(`${server.url}/stats`)).body;
      assert.deepEqual(Object.keys(stats), STATS_FIELDS);
      assert.equal(stats.mode, mode);
      const clustered = mode === 'cluster' || mode === 'both';
      assert.equal(stats.loopThreads, clustered ? 2 : 1);
      assert.equal(stats.poolSize, { single: 0, cluster: 0, pool: 2, both: 2 }[mode]);
      // 4 fast + 1 fib + 6 bad + 1 not found; probes (/healthz, /stats) are not counted.
      assert.equal(stats.requestsServed, 12);
      assert.ok(stats.cpuSecondsUsed > 0);
      // Summed over processes: two Node processes plus the primary are far above one.
      assert.ok(stats.rssBytes > (clustered ? 100 : 20) * 1024 * 1024, `rssBytes ${stats.rssBytes}`);
      assert.ok(stats.rssPeakBytes >= stats.rssBytes * 0.5);
      assert.equal(typeof stats.loopLagP99Ms, 'number');
      if (mode === 'single' || mode === 'cluster') {
        for (const k of ['queueDepth', 'queuePeak', 'rejected', 'timedOut']) assert.equal(stats[k], null, k);
      } else {
        assert.deepEqual([stats.queueDepth, stats.rejected, stats.timedOut], [0, 0, 0]);
      }
    } finally {
      const exit = await stopServer(server);
      assert.deepEqual(exit, { code: 0, signal: null }, server.stderr());
    }
  });
}

describe('a light request while a heavy one runs', () => {
  // fib(39) is ~1 s here: far longer than fib(30), so the order of completion is unambiguous.
  async function race(url) {
    const heavy = get(`${url}/fib?n=39`);
    await sleep(300); // the heavy request is being computed by now
    const light = await get(`${url}/fast`);
    const h = await heavy;
    assert.equal(h.status, 200);
    assert.equal(light.status, 200);
    return { light, heavy: h };
  }

  test('single: /fast waits for the heavy request (the loop is blocked)', async () => {
    const server = await startServer({ BENCH_MODE: 'single' });
    try {
      const { light, heavy } = await race(server.url);
      assert.ok(light.doneAt >= heavy.doneAt, `fast done ${light.doneAt - heavy.doneAt} ms after slow`);
    } finally {
      await stopServer(server);
    }
  });

  test('pool: /fast completes while the heavy request is still in the pool', async () => {
    const server = await startServer({ BENCH_MODE: 'pool', BENCH_POOL_SIZE: '1' });
    try {
      const { light, heavy } = await race(server.url);
      assert.equal(heavy.body.ranOn, 'pool');
      assert.ok(light.doneAt < heavy.doneAt, `fast done ${heavy.doneAt - light.doneAt} ms before slow`);
      assert.ok(light.ms < heavy.body.ms / 2, `fast took ${light.ms} ms, slow ${heavy.body.ms} ms`);
    } finally {
      await stopServer(server);
    }
  });
});

test('cluster: /stats answers while a worker is busy, and counts that worker once it is free', async () => {
  const server = await startServer({ BENCH_MODE: 'cluster', BENCH_WORKERS: '2' });
  try {
    const heavy = get(`${server.url}/fib?n=38`);
    await sleep(200);
    const stats = await get(`${server.url}/stats`);
    assert.equal(stats.status, 200);
    assert.ok(stats.ms < 5000, `/stats took ${stats.ms} ms`);
    assert.equal(stats.body.loopThreads, 2);
    assert.equal((await heavy).status, 200);
    const after = (await get(`${server.url}/stats`)).body;
    assert.equal(after.requestsServed, 1, 'the heavy request, counted by whichever worker ran it');
  } finally {
    await stopServer(server);
  }
});

test('pool: a full queue answers 503 with Retry-After; BENCH_OFFLOAD=all sends light work to the pool', async () => {
  const server = await startServer({
    BENCH_MODE: 'pool', BENCH_POOL_SIZE: '1', BENCH_QUEUE_DEPTH: '1', BENCH_OFFLOAD: 'all',
  });
  try {
    // Six at once against one thread and one queue slot: one runs, one waits, the rest are
    // refused while fib(38) (~0.5-1 s) runs. On a loaded machine a request may arrive after the
    // first finished, so only "at least one refused, at least two served" is certain.
    const results = await Promise.all([1, 2, 3, 4, 5, 6].map(() => get(`${server.url}/fib?n=38`)));
    const refused = results.filter((r) => r.status === 503);
    const served = results.filter((r) => r.status === 200);
    assert.equal(refused.length + served.length, 6, JSON.stringify(results.map((r) => r.status)));
    assert.ok(refused.length >= 1 && served.length >= 2, JSON.stringify(results.map((r) => r.status)));
    for (const r of refused) {
      assert.equal(r.headers['retry-after'], '1');
      assert.match(r.body.error, /queue is full/);
    }

    const fast = await get(`${server.url}/fast`);
    assert.equal(fast.body.ranOn, 'pool');

    const stats = (await get(`${server.url}/stats`)).body;
    assert.equal(stats.rejected, refused.length);
    assert.equal(stats.queuePeak, 1, 'the queue never holds more than BENCH_QUEUE_DEPTH');
    assert.equal(stats.queueDepth, 0);
  } finally {
    await stopServer(server);
  }
});

test('pool: a task past BENCH_TASK_DEADLINE_MS is aborted with 504 and the pool recovers', async () => {
  const server = await startServer({
    BENCH_MODE: 'pool', BENCH_POOL_SIZE: '1', BENCH_TASK_DEADLINE_MS: '300', BENCH_OFFLOAD: 'all',
  });
  try {
    const r = await get(`${server.url}/fib?n=40`);
    assert.equal(r.status, 504);
    assert.match(r.body.error, /deadline/);
    assert.ok(r.ms < 1500, `aborted after ${r.ms} ms`);
    // A tiny task, well inside the deadline even on a loaded machine: the aborted thread was
    // replaced and the pool serves again.
    const after = await get(`${server.url}/fib?n=20`);
    assert.deepEqual([after.status, after.body.ranOn, after.body.value], [200, 'pool', 6765]);
    assert.equal((await get(`${server.url}/stats`)).body.timedOut, 1);
  } finally {
    await stopServer(server);
  }
});

test('SIGTERM lets an in-flight request finish, and /healthz turns 503 meanwhile', async () => {
  const server = await startServer({ BENCH_MODE: 'pool' });
  const slow = get(`${server.url}/slow`);
  await sleep(300); // accepted and running by now, even on a loaded machine
  server.child.kill('SIGTERM');
  await sleep(100);
  const health = await get(`${server.url}/healthz`).catch((e) => ({ status: e.code }));
  // The listener may already be closed (refused) or still answering (503): never 200.
  assert.notEqual(health.status, 200);
  assert.equal((await slow).status, 200);
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});

test('a bad setting exits with code 2 and a message naming it', () => {
  const r = spawnSync(process.execPath, [fileURLToPath(new URL('../server.js', import.meta.url))], {
    env: { ...process.env, BENCH_MODE: 'threads' },
    encoding: 'utf8',
  });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /BENCH_MODE=threads/);
  assert.equal(r.stdout, '');
});
