// The Express app: the seeds' two endpoints plus /fib, /healthz and /stats. It knows nothing about
// processes or pools: `work` decides where fib runs and `stats` where the figures come from, so
// the same routes serve every mode ("no route changed, only the machinery underneath").
import express from 'express';
import { FIB_MAX_N } from './fib.js';
import { PoolClosedError, PoolFullError, TaskTimeoutError } from './pool.js';

/** fib(30): the seeds' light request, ~12 ms of CPU. */
export const FAST_N = 30;
/** fib(37): the seeds' heavy request, ~380 ms of CPU. */
export const SLOW_N = 37;

/** An error that becomes a JSON response with this status. */
class HttpError extends Error {
  constructor(status, message, extra = {}) {
    super(message);
    this.status = status;
    this.extra = extra;
  }
}

/** Parses the `n` of /fib: a whole number in 0..=FIB_MAX_N, or an HttpError 400. */
export function parseN(raw) {
  if (typeof raw !== 'string' || !/^\d{1,3}$/.test(raw)) {
    throw new HttpError(400, `n must be a whole number from 0 to ${FIB_MAX_N}`, { got: raw ?? null });
  }
  const n = Number(raw);
  if (n > FIB_MAX_N) {
    throw new HttpError(400, `n must be a whole number from 0 to ${FIB_MAX_N}`, { got: raw });
  }
  return n;
}

/**
 * Builds the app.
 * - work.fib(n) -> Promise<{ value, ms, ranOn }>: runs the CPU work (inline or in a pool).
 * - stats() -> Promise<object>: the /stats document.
 * - counters.requestsServed is incremented per answered request (probes excluded).
 * - isDraining() -> true once shutdown began: /healthz answers 503 and connections are closed.
 */
export function buildApp({ work, stats, counters, isDraining }) {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.use((req, res, next) => {
    if (isDraining()) res.set('Connection', 'close');
    if (req.path !== '/healthz' && req.path !== '/stats') {
      res.on('finish', () => {
        counters.requestsServed++;
      });
    }
    next();
  });

  app.get('/healthz', (req, res) => {
    if (isDraining()) return res.status(503).json({ status: 'draining' });
    res.json({ status: 'ok' });
  });

  const fibRoute = (pickN) => async (req, res) => {
    const n = pickN(req);
    const { value, ms, ranOn } = await work.fib(n);
    res.json({ n, value, ms: Math.round(ms * 100) / 100, ranOn, pid: process.pid });
  };
  app.get('/fast', fibRoute(() => FAST_N));
  app.get('/slow', fibRoute(() => SLOW_N));
  app.get('/fib', fibRoute((req) => parseN(req.query.n)));

  app.get('/stats', async (req, res) => {
    res.set('Cache-Control', 'no-store');
    res.json(await stats());
  });

  app.use((req, res) => {
    res.status(404).json({ error: `no route for ${req.method} ${req.path}` });
  });

  // Express 5 forwards rejected promises from async handlers here.
  // eslint-disable-next-line no-unused-vars
  app.use((err, req, res, next) => {
    if (err instanceof HttpError) return res.status(err.status).json({ error: err.message, ...err.extra });
    if (err instanceof PoolFullError || err instanceof PoolClosedError) {
      return res.status(503).set('Retry-After', '1').json({ error: err.message });
    }
    if (err instanceof TaskTimeoutError) return res.status(504).json({ error: err.message });
    // Body-parser style errors carry their own status (e.g. a malformed request).
    if (Number.isInteger(err?.status) && err.status >= 400 && err.status < 500) {
      return res.status(err.status).json({ error: err.message });
    }
    console.error(`error: ${req.method} ${req.originalUrl}: ${err?.stack ?? err}`);
    res.status(500).json({ error: 'internal error' });
  });

  return app;
}
