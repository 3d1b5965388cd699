// Settings from the environment, validated once at start. The names follow the Rust target's
// (contracts: PORT, BENCH_HOST, BENCH_MODE, BENCH_POOL_SIZE, BENCH_QUEUE_DEPTH, BENCH_OFFLOAD,
// BENCH_OFFLOAD_THRESHOLD_MS, BENCH_TASK_DEADLINE_MS, BENCH_GRACE_PERIOD) plus BENCH_WORKERS
// for the number of cluster processes. A bad value is a ConfigError: the server exits with code 2.

/** The four ways the seeds ran the same Express app. */
export const MODES = ['single', 'cluster', 'pool', 'both'];

/** A setting that cannot be used; its message names the variable and what is accepted. */
export class ConfigError extends Error {}

function positiveInt(env, name, { allowAuto = false, allowZero = false } = {}) {
  const raw = env[name];
  if (raw === undefined || raw === '') return allowAuto ? 'auto' : undefined;
  if (allowAuto && raw === 'auto') return 'auto';
  if (!/^\d+$/.test(raw)) {
    throw new ConfigError(`${name}=${raw}: expected ${allowAuto ? '"auto" or ' : ''}a whole number`);
  }
  const n = Number(raw);
  if (n === 0 && !allowZero) throw new ConfigError(`${name}=${raw}: must be at least 1`);
  return n;
}

/** Parses "10s", "500ms", "2m", "1m30s" (or a bare number of seconds) into milliseconds. */
export function parseDurationMs(raw, name) {
  if (/^\d+(\.\d+)?$/.test(raw)) return Number(raw) * 1000;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(raw); m; m = re.exec(raw)) {
    total += Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2]];
    consumed = re.lastIndex;
  }
  if (consumed === 0 || consumed !== raw.length) {
    throw new ConfigError(`${name}=${raw}: expected a duration like "10s", "500ms" or "1m30s"`);
  }
  return total;
}

/** Reads and validates the environment. Throws ConfigError with a message a person can act on. */
export function loadConfig(env = process.env) {
  const mode = env.BENCH_MODE || 'single';
  if (!MODES.includes(mode)) {
    const hint = mode === 'threads' ? ' ("threads" is the Rust target\'s mode; for Node use cluster)' : '';
    throw new ConfigError(`BENCH_MODE=${mode}: expected one of ${MODES.join(', ')}${hint}`);
  }
  const port = positiveInt(env, 'PORT', { allowZero: true }) ?? 8080;
  if (port > 65535) throw new ConfigError(`PORT=${port}: must be at most 65535`);
  const offload = env.BENCH_OFFLOAD || 'heavy';
  if (offload !== 'heavy' && offload !== 'all') {
    throw new ConfigError(`BENCH_OFFLOAD=${offload}: expected heavy or all`);
  }
  return {
    mode,
    host: env.BENCH_HOST || '0.0.0.0',
    port,
    workers: positiveInt(env, 'BENCH_WORKERS', { allowAuto: true }),
    poolSize: positiveInt(env, 'BENCH_POOL_SIZE', { allowAuto: true }),
    // Per process: tasks waiting for a pool thread beyond this are refused with 503.
    queueDepth: positiveInt(env, 'BENCH_QUEUE_DEPTH', { allowZero: true }) ?? 64,
    offload,
    offloadThresholdMs: positiveInt(env, 'BENCH_OFFLOAD_THRESHOLD_MS', { allowZero: true }) ?? 50,
    // 0 = no deadline. A pool task past its deadline is aborted (piscina stops its thread) -> 504.
    taskDeadlineMs: positiveInt(env, 'BENCH_TASK_DEADLINE_MS', { allowZero: true }) ?? 0,
    gracePeriodMs: env.BENCH_GRACE_PERIOD ? parseDurationMs(env.BENCH_GRACE_PERIOD, 'BENCH_GRACE_PERIOD') : 10_000,
  };
}

/** True when this mode runs several node:cluster processes. */
export const usesCluster = (mode) => mode === 'cluster' || mode === 'both';
/** True when this mode has a piscina pool in each serving process. */
export const usesPool = (mode) => mode === 'pool' || mode === 'both';

/**
 * Worker counts from the detected CPUs unless overridden. cluster: one process per CPU. pool: one
 * pool thread per CPU (the main thread mostly waits on I/O and light work). both: one process per
 * CPU, and the CPUs shared out among their pools (at least one thread each), so the total number
 * of busy threads still matches the quota.
 */
export function sizeWorkers(config, detectedCpus) {
  const processes = usesCluster(config.mode)
    ? config.workers === 'auto' ? detectedCpus : config.workers
    : 1;
  let poolSize = 0;
  if (usesPool(config.mode)) {
    poolSize =
      config.poolSize === 'auto' ? Math.max(1, Math.floor(detectedCpus / processes)) : config.poolSize;
  }
  return { processes, poolSize };
}
