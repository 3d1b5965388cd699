// Test helpers: start the real server as a child process on a free port and talk to it over HTTP.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';

const SERVER = fileURLToPath(new URL('../server.js', import.meta.url));

/**
 * Starts `node server.js` with PORT=0 and the given env; resolves once it printed its
 * `listening on` line, with { url, child, stderr(), exited }.
 */
export function startServer(env = {}, { timeoutMs = 15_000, command = [] } = {}) {
  // `command` wraps the start (e.g. a shell that first joins a cgroup); it gets node and
  // server.js as its last two arguments.
  const [program, ...args] = [...command, process.execPath, SERVER];
  const child = spawn(program, args, {
    env: { ...process.env, PORT: '0', BENCH_HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms:\n${stderr}`)), timeoutMs);
    child.stdout.on('data', (d) => {
      stdout += d;
      const m = /^listening on (http:\/\/\S+)$/m.exec(stdout);
      if (m) {
        clearTimeout(timer);
        resolve(m[1].replace('0.0.0.0', '127.0.0.1'));
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${signal ?? code}) before listening:\n${stderr}`));
    });
  });
  return ready.then((url) => ({ url, child, stderr: () => stderr, stdout: () => stdout, exited }));
}

/** Stops a server with SIGTERM and resolves to its exit { code, signal } (SIGKILL after 10 s). */
export async function stopServer(server) {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return server.exited;
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
  const result = await server.exited;
  clearTimeout(timer);
  return result;
}

/**
 * GET on a fresh connection (no keep-alive agent), so cluster workers each get their share.
 * Resolves to { status, headers, body (parsed JSON when possible), ms, doneAt }.
 */
export function get(url) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (data += d));
        res.on('end', () => {
          let body = data;
          try {
            body = JSON.parse(data);
          } catch {
            // not JSON: keep the text
          }
          const doneAt = performance.now();
          resolve({ status: res.statusCode, headers: res.headers, body, ms: doneAt - t0, doneAt });
        });
      })
      .on('error', reject);
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
