// Entry point: `node server.js`, configured by environment (see README.md).
//   single  - one process, one event loop, fib runs inline (plain Express)
//   cluster - node:cluster workers sharing the port, fib inline in each
//   pool    - one process, heavy fib offloaded to a piscina pool
//   both    - cluster workers, each with its own pool
import cluster from 'node:cluster';
import { clusterStatsClient, runPrimary } from './src/cluster.js';
import { ConfigError, loadConfig, sizeWorkers, usesCluster } from './src/config.js';
import { log } from './src/log.js';
import { detectCpus } from './src/quota.js';
import { hostPort, serve } from './src/serve.js';
import { aggregate, composeStats, Throttling } from './src/stats.js';

function fail(message, code) {
  process.stderr.write(`node-express: ${message}\n`);
  process.exit(code);
}

let config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) fail(err.message, 2);
  throw err;
}

const cpus = detectCpus();
const { processes, poolSize } = sizeWorkers(config, cpus.detectedCpus);
const throttling = new Throttling(cpus.throttleStatFile);

if (cluster.isPrimary) {
  log(
    `mode ${config.mode}: host has ${cpus.hostCpus} CPUs, affinity allows ${cpus.affinityCpus}, ` +
      `cgroup ${cpus.cgroupVersion ? `v${cpus.cgroupVersion} quota ${cpus.cpuQuota ?? 'unlimited'} (${cpus.quotaLookedAt})` : 'quota not visible'}` +
      ` -> ${cpus.detectedCpus} CPUs (from ${cpus.quotaSource})`,
  );
  log(
    `sizing: ${processes} serving process${processes > 1 ? 'es' : ''}` +
      `${config.workers !== 'auto' && usesCluster(config.mode) ? ' (BENCH_WORKERS)' : ''}, ` +
      `pool of ${poolSize} thread${poolSize === 1 ? '' : 's'} each` +
      `${config.poolSize !== 'auto' && poolSize > 0 ? ' (BENCH_POOL_SIZE)' : ''}` +
      (poolSize > 0 ? `, queue limit ${config.queueDepth} per pool` : ''),
  );
  // Rust-target settings a shared configuration may pass to every target: say they do nothing here.
  const ignored = { BENCH_THREADS: 'use BENCH_WORKERS', BENCH_FAST_MS: '/fast is fib(30)', BENCH_SLOW_MS: '/slow is fib(37)' };
  for (const [name, why] of Object.entries(ignored)) {
    if (process.env[name]) log(`${name} is a Rust-target setting, ignored here (${why})`);
  }
}

if (usesCluster(config.mode) && cluster.isPrimary) {
  runPrimary({ config, processes, throttling });
} else if (cluster.isWorker) {
  const client = clusterStatsClient();
  let running;
  try {
    running = await serve({
      config,
      poolSize,
      quiet: cluster.worker.id !== 1,
      stats: async () => {
        const r = await client.request();
        return composeStats({ config, cpus, ...r });
      },
    });
  } catch (err) {
    fail(`cannot listen on ${config.host}:${config.port}: ${err.message}`, 1);
  }
  client.attach(running.procStats);
  const stop = () => running.drain().then(() => process.exit(0));
  process.on('message', (msg) => msg?.type === 'shutdown' && stop());
  // A signal to the whole process group (Ctrl-C) reaches workers directly too.
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  let running;
  try {
    running = await serve({
      config,
      poolSize,
      stats: async (procStats) =>
        composeStats({
          config,
          cpus,
          agg: aggregate([procStats.snapshot()]),
          loopThreads: 1,
          uptimeSeconds: process.uptime(),
          throttling: throttling.read(),
        }),
    });
  } catch (err) {
    fail(`cannot listen on ${config.host}:${config.port}: ${err.message}`, 1);
  }
  process.stdout.write(`listening on http://${hostPort(running.address)}\n`);
  let stopping = false;
  const stop = (signal) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: draining (grace period ${config.gracePeriodMs} ms)`);
    running.drain().then(() => {
      log('stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
