// Detection against a real cgroup v1 CPU quota, where this machine lets us create one (root with
// the v1 cpu controller mounted at /sys/fs/cgroup/cpu); skipped elsewhere, saying why.
import assert from 'node:assert/strict';
import { accessSync, constants, existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { get, startServer, stopServer } from './helpers.js';

const V1_CPU = '/sys/fs/cgroup/cpu';

function v1Writable() {
  try {
    if (!existsSync(path.join(V1_CPU, 'cpu.cfs_quota_us'))) return false;
    accessSync(V1_CPU, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

test('a real cgroup v1 quota of 0.5 CPU: cpuQuota 0.5, one CPU detected, the file named', { skip: v1Writable() ? false : `${V1_CPU} is not a writable cgroup v1 cpu hierarchy` }, async () => {
  const dir = path.join(V1_CPU, `bm-node-test-${process.pid}`);
  mkdirSync(dir);
  try {
    writeFileSync(path.join(dir, 'cpu.cfs_period_us'), '100000');
    writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), '50000');
    // The wrapper shell moves itself into the cgroup, then execs node: the server starts inside.
    const server = await startServer(
      { BENCH_MODE: 'cluster' },
      { command: ['/bin/sh', '-c', `echo $$ > ${path.join(dir, 'cgroup.procs')} && exec "$0" "$1"`] },
    );
    try {
      const stats = (await get(`${server.url}/stats`)).body;
      assert.equal(stats.cpuQuota, 0.5);
      assert.equal(stats.detectedCpus, 1);
      assert.equal(stats.loopThreads, 1, 'cluster sized from the quota, not the host cores');
      assert.equal(stats.quotaSource, path.join(dir, 'cpu.cfs_quota_us'));
      assert.equal(typeof stats.throttledPeriods, 'number');
    } finally {
      await stopServer(server);
    }
  } finally {
    rmdirSync(dir);
  }
});
