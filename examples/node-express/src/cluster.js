// cluster and both modes. The primary forks the serving workers (they share the port: the
// primary accepts and hands connections out round-robin), restarts one that crashes, and stops
// them gracefully on SIGTERM.
//
// /stats across processes: the worker that receives /stats asks the primary ("stats-request");
// the primary asks every live worker for a fresh snapshot ("stats-collect"), adds its own process
// (it uses CPU and memory too: it accepts every connection), sums them (stats.aggregate) and
// answers the asking worker ("stats-result"). Pulling on demand, rather than workers pushing
// every few hundred ms, gives exact counters at the moment of the request. A worker whose loop is
// stuck in a long fib answers when it finishes; one that has not answered after STATS_WAIT_MS is
// counted with its last snapshot (and the log says so), so /stats never hangs.
import cluster from 'node:cluster';
import { log } from './log.js';
import { hostPort } from './serve.js';
import { aggregate, ProcessStats } from './stats.js';

const STATS_WAIT_MS = 2000;
const RESTART_WINDOW_MS = 60_000;
const MAX_RESTARTS = 10;

/** Runs the cluster primary: forks `processes` workers and never serves HTTP itself. */
export function runPrimary({ config, processes, throttling }) {
  const own = new ProcessStats({ serving: false });
  const lastSnapshot = new Map(); // worker id -> its most recent snapshot
  const listening = new Set();
  const restarts = [];
  let announced = false;
  let shuttingDown = false;
  let exitCode = 0; // 1 when the primary gives up rather than being asked to stop
  let collectSeq = 0;
  const collecting = new Map(); // collect id -> { waiting: Set<worker id>, snaps: Map, done }

  const liveWorkers = () => Object.values(cluster.workers ?? {}).filter((w) => w && !w.isDead());

  function collect() {
    const id = ++collectSeq;
    const workers = liveWorkers();
    return new Promise((resolve) => {
      const entry = { waiting: new Set(workers.map((w) => w.id)), snaps: new Map() };
      const finish = () => {
        clearTimeout(timer);
        collecting.delete(id);
        for (const wid of entry.waiting) {
          log(`stats: worker ${wid} did not answer within ${STATS_WAIT_MS} ms; using its last snapshot`);
          if (lastSnapshot.has(wid)) entry.snaps.set(wid, lastSnapshot.get(wid));
        }
        resolve({ snaps: [...entry.snaps.values()], loopThreads: workers.length });
      };
      const timer = setTimeout(finish, STATS_WAIT_MS);
      entry.done = finish;
      collecting.set(id, entry);
      if (workers.length === 0) return finish();
      for (const w of workers) w.send({ type: 'stats-collect', id });
    });
  }

  function onMessage(worker, msg) {
    if (msg?.type === 'stats-snapshot') {
      lastSnapshot.set(worker.id, msg.snapshot);
      const entry = collecting.get(msg.id);
      if (!entry) return;
      entry.snaps.set(worker.id, msg.snapshot);
      entry.waiting.delete(worker.id);
      if (entry.waiting.size === 0) entry.done();
    } else if (msg?.type === 'stats-request') {
      collect().then(({ snaps, loopThreads }) => {
        const agg = aggregate([...snaps, own.snapshot()]);
        const result = { agg, loopThreads, uptimeSeconds: process.uptime(), throttling: throttling.read() };
        if (!worker.isDead()) worker.send({ type: 'stats-result', id: msg.id, result });
      });
    }
  }

  function fork() {
    const worker = cluster.fork();
    worker.on('message', (msg) => onMessage(worker, msg));
  }

  cluster.on('listening', (worker, address) => {
    listening.add(worker.id);
    if (!announced && listening.size >= processes) {
      announced = true;
      log(`${processes} worker${processes === 1 ? '' : 's'} listening`);
      // The one line on stdout: runners wait for it (and then for /healthz).
      process.stdout.write(`listening on http://${hostPort({ ...address, address: address.address ?? config.host })}\n`);
    }
  });

  cluster.on('exit', (worker, code, signal) => {
    lastSnapshot.delete(worker.id);
    // A collect in progress must not wait for a worker that is gone.
    for (const entry of collecting.values()) {
      if (entry.waiting.delete(worker.id) && entry.waiting.size === 0) entry.done();
    }
    if (shuttingDown) {
      if (liveWorkers().length === 0) {
        log('all workers stopped');
        process.exit(exitCode);
      }
      return;
    }
    if (!listening.has(worker.id)) {
      log(`worker ${worker.id} exited (${signal ?? code}) before it could listen; giving up`);
      shutdown(1);
      return;
    }
    const now = Date.now();
    restarts.push(now);
    while (restarts.length && restarts[0] < now - RESTART_WINDOW_MS) restarts.shift();
    if (restarts.length > MAX_RESTARTS) {
      log(`${restarts.length} worker crashes within ${RESTART_WINDOW_MS / 1000} s; giving up`);
      shutdown(1);
      return;
    }
    log(`worker ${worker.id} died (${signal ?? code}); starting a replacement`);
    fork();
  });

  function shutdown(code = 0) {
    if (shuttingDown) return;
    shuttingDown = true;
    exitCode = code;
    log('stopping: asking workers to finish their requests');
    for (const w of liveWorkers()) w.send({ type: 'shutdown' });
    if (liveWorkers().length === 0) process.exit(exitCode);
    // Backstop: a worker that ignores the request is killed after its own grace period.
    setTimeout(() => {
      for (const w of liveWorkers()) w.kill('SIGKILL');
      log('workers did not stop within the grace period; killed');
      process.exit(1);
    }, config.gracePeriodMs + 2000).unref();
  }

  process.on('SIGTERM', () => shutdown(0));
  process.on('SIGINT', () => shutdown(0));

  for (let i = 0; i < processes; i++) fork();
}

/**
 * The worker side of the /stats protocol: answers the primary's collects with this process's
 * snapshot, and asks the primary for the aggregate when /stats is requested here.
 */
export function clusterStatsClient() {
  let seq = 0;
  const pending = new Map();
  let procStats = null;

  process.on('message', (msg) => {
    if (msg?.type === 'stats-collect' && procStats) {
      process.send({ type: 'stats-snapshot', id: msg.id, snapshot: procStats.snapshot() });
    } else if (msg?.type === 'stats-result') {
      const p = pending.get(msg.id);
      if (p) {
        pending.delete(msg.id);
        clearTimeout(p.timer);
        p.resolve(msg.result);
      }
    }
  });

  return {
    /** Registers this process's stats so the primary's collects can be answered. */
    attach(stats) {
      procStats = stats;
    },
    /** Asks the primary for the aggregate over all processes. */
    request() {
      const id = ++seq;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error('the cluster primary did not answer the stats request'));
        }, STATS_WAIT_MS + 3000);
        pending.set(id, { resolve, timer });
        process.send({ type: 'stats-request', id });
      });
    },
  };
}
