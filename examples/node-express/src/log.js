// Logs go to stderr; stdout carries only the readiness line, which runners parse.
import cluster from 'node:cluster';

/** Writes one log line to stderr, tagged with the process's role and pid. */
export function log(message) {
  const role = cluster.isWorker ? `worker ${cluster.worker.id}` : 'main';
  process.stderr.write(`[node-express ${role} pid ${process.pid}] ${message}\n`);
}
