// CPU detection against fake /proc and /sys trees: the quota must come from the cgroup files,
// the smallest limit on the path must win, and the affinity must cap it.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { loadConfig, sizeWorkers } from '../src/config.js';
import { detectCpus, readThrottling } from '../src/quota.js';

const roots = [];
after(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

function fakeRoot(files) {
  const root = mkdtempSync(path.join(tmpdir(), 'quota-test-'));
  roots.push(root);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

const V2_MOUNT = '30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n';
const V1_MOUNTS =
  '32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n' +
  '34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n';

test('cgroup v2: cpu.max of the process cgroup gives the quota', () => {
  const root = fakeRoot({
    'proc/self/cgroup': '0::/kubepods/pod1/c1\n',
    'proc/self/mountinfo': V2_MOUNT,
    'sys/fs/cgroup/kubepods/pod1/c1/cgroup.controllers': 'cpuset cpu io memory\n',
    'sys/fs/cgroup/kubepods/pod1/c1/cpu.max': '150000 100000\n',
    'sys/fs/cgroup/kubepods/pod1/c1/cpu.stat': 'usage_usec 5\nnr_periods 10\nnr_throttled 4\nthrottled_usec 2500000\n',
  });
  const cpus = detectCpus({ root, affinity: 8, host: 64 });
  assert.equal(cpus.cpuQuota, 1.5);
  assert.equal(cpus.detectedCpus, 1, 'a fractional quota rounds down');
  assert.equal(cpus.quotaSource, path.join(root, 'sys/fs/cgroup/kubepods/pod1/c1/cpu.max'));
  assert.deepEqual(readThrottling(cpus.throttleStatFile), { periods: 4, seconds: 2.5 });
});

test('cgroup v2: a parent limit binds when the leaf says max', () => {
  const root = fakeRoot({
    'proc/self/cgroup': '0::/outer/inner\n',
    'proc/self/mountinfo': V2_MOUNT,
    'sys/fs/cgroup/outer/inner/cgroup.controllers': 'cpu memory\n',
    'sys/fs/cgroup/outer/inner/cpu.max': 'max 100000\n',
    'sys/fs/cgroup/outer/cpu.max': '200000 100000\n',
  });
  const cpus = detectCpus({ root, affinity: 8, host: 8 });
  assert.equal(cpus.cpuQuota, 2);
  assert.equal(cpus.detectedCpus, 2);
  assert.equal(cpus.quotaSource, path.join(root, 'sys/fs/cgroup/outer/cpu.max'));
});

test('cgroup v1: cfs quota over period, mount root stripped from the path', () => {
  const root = fakeRoot({
    'proc/self/cgroup': '4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n0::/\n',
    'proc/self/mountinfo': V1_MOUNTS.replace('0:29 / ', '0:29 /docker/abc '),
    'sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': '300000\n',
    'sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
    'sys/fs/cgroup/cpu,cpuacct/cpu.stat': 'nr_periods 9\nnr_throttled 3\nthrottled_time 1500000000\n',
  });
  const cpus = detectCpus({ root, affinity: 16, host: 16 });
  assert.equal(cpus.cpuQuota, 3);
  assert.equal(cpus.detectedCpus, 3);
  assert.equal(cpus.cgroupVersion, 1);
  assert.deepEqual(readThrottling(cpus.throttleStatFile), { periods: 3, seconds: 1.5 });
});

test('cgroup v1 unlimited (-1): the affinity decides when it is below the host count', () => {
  const root = fakeRoot({
    'proc/self/cgroup': '1:cpu,cpuacct:/\n0::/\n',
    'proc/self/mountinfo': V1_MOUNTS + '41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n',
    'sys/fs/cgroup/unified/cgroup.controllers': '\n',
    'sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': '-1\n',
    'sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
  });
  const cpus = detectCpus({ root, affinity: 2, host: 4 });
  assert.equal(cpus.cpuQuota, null);
  assert.equal(cpus.detectedCpus, 2);
  assert.equal(cpus.quotaSource, 'affinity');
  assert.equal(cpus.cgroupVersion, 1, 'a v2 mount without the cpu controller is not used');
});

test('a quota larger than the affinity loses to the affinity', () => {
  const root = fakeRoot({
    'proc/self/cgroup': '0::/\n',
    'proc/self/mountinfo': V2_MOUNT,
    'sys/fs/cgroup/cgroup.controllers': 'cpu\n',
    'sys/fs/cgroup/cpu.max': '400000 100000\n',
  });
  const cpus = detectCpus({ root, affinity: 2, host: 2 });
  assert.equal(cpus.cpuQuota, 4);
  assert.equal(cpus.detectedCpus, 2);
  assert.equal(cpus.quotaSource, 'host');
});

test('no cgroup files at all: host count, null quota', () => {
  const cpus = detectCpus({ root: fakeRoot({}), affinity: 4, host: 4 });
  assert.deepEqual([cpus.cpuQuota, cpus.detectedCpus, cpus.quotaSource], [null, 4, 'host']);
});

test('sizing: cluster one process per CPU, pool one thread per CPU, both shares CPUs out', () => {
  const size = (env, cpus) => sizeWorkers(loadConfig(env), cpus);
  assert.deepEqual(size({ BENCH_MODE: 'single' }, 4), { processes: 1, poolSize: 0 });
  assert.deepEqual(size({ BENCH_MODE: 'cluster' }, 4), { processes: 4, poolSize: 0 });
  assert.deepEqual(size({ BENCH_MODE: 'pool' }, 4), { processes: 1, poolSize: 4 });
  assert.deepEqual(size({ BENCH_MODE: 'both' }, 4), { processes: 4, poolSize: 1 });
  assert.deepEqual(size({ BENCH_MODE: 'both', BENCH_WORKERS: '2' }, 4), { processes: 2, poolSize: 2 });
  assert.deepEqual(size({ BENCH_MODE: 'pool', BENCH_POOL_SIZE: '3' }, 1), { processes: 1, poolSize: 3 });
});

test('bad settings are refused with the variable named', () => {
  assert.throws(() => loadConfig({ BENCH_MODE: 'threads' }), /BENCH_MODE=threads.*cluster/);
  assert.throws(() => loadConfig({ PORT: 'x' }), /PORT=x/);
  assert.throws(() => loadConfig({ BENCH_WORKERS: '0' }), /BENCH_WORKERS=0/);
  assert.throws(() => loadConfig({ BENCH_OFFLOAD: 'some' }), /BENCH_OFFLOAD=some/);
  assert.throws(() => loadConfig({ BENCH_GRACE_PERIOD: '10 s' }), /BENCH_GRACE_PERIOD/);
  assert.equal(loadConfig({ BENCH_GRACE_PERIOD: '1m30s' }).gracePeriodMs, 90_000);
});
