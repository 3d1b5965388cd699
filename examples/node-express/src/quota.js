// How many CPUs may this process really use? os.cpus() answers with the host's cores, which in a
// container limited to 500m on a 64-core node means 64 workers fighting over half a core. The
// answer is the smallest of: the cgroup CPU quota (v2 cpu.max, or v1 cpu.cfs_quota_us /
// cpu.cfs_period_us, at the process's own cgroup and every ancestor, since a parent's limit binds
// its children) and the CPU affinity (os.availableParallelism()).
//
// Every function takes a `root` so the tests can point it at a fake /proc and /sys tree.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function readText(file) {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** Parses /proc/self/cgroup into [{ id, controllers: string[], path }]. */
export function parseProcCgroup(text) {
  const out = [];
  for (const line of (text ?? '').split('\n')) {
    if (!line.trim()) continue;
    // The path may itself contain ':' so split only the first two.
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    out.push({
      id: line.slice(0, first),
      controllers: controllers ? controllers.split(',') : [],
      path: line.slice(second + 1),
    });
  }
  return out;
}

/** Parses /proc/self/mountinfo into [{ root, mountPoint, fsType, superOptions: string[] }]. */
export function parseMountinfo(text) {
  const out = [];
  for (const line of (text ?? '').split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const left = line.slice(0, sep).split(' ');
    const right = line.slice(sep + 3).split(' ');
    if (left.length < 5 || right.length < 3) continue;
    out.push({
      root: unescapeMount(left[3]),
      mountPoint: unescapeMount(left[4]),
      fsType: right[0],
      superOptions: right[2].split(','),
    });
  }
  return out;
}

// mountinfo escapes spaces, tabs, newlines and backslashes as octal.
function unescapeMount(s) {
  return s.replace(/\\([0-7]{3})/g, (_, oct) => String.fromCharCode(parseInt(oct, 8)));
}

// Maps a cgroup path from /proc/self/cgroup to a directory under the mount point. When the mount
// root is a prefix of the path (a container without a cgroup namespace), strip it; when it is
// not (a cgroup namespace shows "/"), the mount point itself is the process's cgroup.
function cgroupDir(root, mount, cgPath) {
  let rel = cgPath;
  if (mount.root !== '/' && (cgPath === mount.root || cgPath.startsWith(mount.root + '/'))) {
    rel = cgPath.slice(mount.root.length);
  } else if (mount.root !== '/') {
    rel = '/';
  }
  return path.join(root, mount.mountPoint, rel);
}

// Directories from the process's cgroup up to the mount point, nearest first.
function ancestors(dir, mountDir) {
  const out = [];
  let d = dir;
  for (;;) {
    out.push(d);
    if (d === mountDir || !d.startsWith(mountDir)) break;
    const parent = path.dirname(d);
    if (parent === d) break;
    d = parent;
  }
  return out;
}

/**
 * Reads the cgroup CPU quota. Returns { cores, source, statFile, version } where cores is null
 * when unlimited (source then names the file that said so), or null when no cpu controller is
 * visible at all.
 */
export function readCgroupQuota(root = '/') {
  const cgroups = parseProcCgroup(readText(path.join(root, 'proc/self/cgroup')));
  const mounts = parseMountinfo(readText(path.join(root, 'proc/self/mountinfo')));

  // cgroup v2: the "0::/path" line and a cgroup2 mount whose controllers include cpu.
  const v2 = cgroups.find((c) => c.id === '0' && c.controllers.length === 0);
  const v2mount = mounts.find((m) => m.fsType === 'cgroup2');
  if (v2 && v2mount) {
    const mountDir = path.join(root, v2mount.mountPoint);
    const dir = cgroupDir(root, v2mount, v2.path);
    const controllers = (readText(path.join(dir, 'cgroup.controllers')) ?? '').trim().split(/\s+/);
    if (controllers.includes('cpu') || readText(path.join(dir, 'cpu.max')) !== null) {
      let best = { cores: null, source: path.join(dir, 'cpu.max'), statFile: path.join(dir, 'cpu.stat') };
      for (const d of ancestors(dir, mountDir)) {
        const text = readText(path.join(d, 'cpu.max'));
        if (text === null) continue;
        const [quota, period] = text.trim().split(/\s+/);
        if (quota === 'max') continue;
        const cores = Number(quota) / Number(period || 100000);
        if (Number.isFinite(cores) && cores > 0 && (best.cores === null || cores < best.cores)) {
          best = { cores, source: path.join(d, 'cpu.max'), statFile: path.join(d, 'cpu.stat') };
        }
      }
      return { ...best, version: 2 };
    }
  }

  // cgroup v1: the line listing the "cpu" controller (often "cpu,cpuacct") and its mount.
  const v1 = cgroups.find((c) => c.controllers.includes('cpu'));
  const v1mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes('cpu'));
  if (v1 && v1mount) {
    const mountDir = path.join(root, v1mount.mountPoint);
    const dir = cgroupDir(root, v1mount, v1.path);
    let best = {
      cores: null,
      source: path.join(dir, 'cpu.cfs_quota_us'),
      statFile: path.join(dir, 'cpu.stat'),
    };
    for (const d of ancestors(dir, mountDir)) {
      const quota = Number((readText(path.join(d, 'cpu.cfs_quota_us')) ?? '').trim());
      const period = Number((readText(path.join(d, 'cpu.cfs_period_us')) ?? '').trim());
      if (!Number.isFinite(quota) || quota <= 0 || !Number.isFinite(period) || period <= 0) continue;
      const cores = quota / period;
      if (best.cores === null || cores < best.cores) {
        best = { cores, source: path.join(d, 'cpu.cfs_quota_us'), statFile: path.join(d, 'cpu.stat') };
      }
    }
    return { ...best, version: 1 };
  }
  return null;
}

/**
 * Cumulative CFS throttling of the cgroup that holds the quota: { periods, seconds } or null.
 * v1 reports throttled_time in ns, v2 throttled_usec.
 */
export function readThrottling(statFile) {
  const text = statFile ? readText(statFile) : null;
  if (text === null) return null;
  const kv = Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((p) => p.length === 2)
      .map(([k, v]) => [k, Number(v)]),
  );
  if (kv.nr_throttled === undefined) return null;
  const seconds =
    kv.throttled_usec !== undefined
      ? kv.throttled_usec / 1e6
      : kv.throttled_time !== undefined
        ? kv.throttled_time / 1e9
        : null;
  return { periods: kv.nr_throttled, seconds };
}

/**
 * Decides how many CPUs this process may use. A fractional quota rounds down (1.5 cores -> 1
 * worker: a second busy worker would spend half its time throttled), never below 1.
 */
export function detectCpus({ root = '/', affinity = os.availableParallelism(), host = os.cpus().length } = {}) {
  const quota = readCgroupQuota(root);
  const cpuQuota = quota?.cores ?? null;
  const quotaCpus = cpuQuota === null ? Infinity : Math.max(1, Math.floor(cpuQuota));
  let detectedCpus;
  let quotaSource;
  if (quotaCpus <= affinity && cpuQuota !== null) {
    detectedCpus = quotaCpus;
    quotaSource = quota.source;
  } else if (affinity < host) {
    detectedCpus = affinity;
    quotaSource = 'affinity';
  } else {
    detectedCpus = Math.max(1, affinity);
    quotaSource = 'host';
  }
  return {
    hostCpus: host,
    affinityCpus: affinity,
    cpuQuota,
    quotaSource,
    detectedCpus,
    cgroupVersion: quota?.version ?? null,
    // Where the quota was looked for, even when unlimited: the start-up log says so.
    quotaLookedAt: quota?.source ?? null,
    throttleStatFile: quota?.statFile ?? null,
  };
}
