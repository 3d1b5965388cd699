#!/usr/bin/env bash
# The same Express configuration driven by benchmatrix-loadgen and by autocannon, side by side:
# the seeds' app (examples/node-express) in one mode on 127.0.0.1, one endpoint, closed loop, the
# same connections and duration for both tools, rounds interleaved so both see the same
# background noise. Prints requests/s, p50, p99 and max per run, then the medians and
# autocannon's ratio to benchmatrix-loadgen.
#
# Usage: bench/node-side-by-side.sh
# Env:   MODE=single PATH_=/fast CONNS=2 DURATION=10 WARMUP=3 ROUNDS=3 PORT=18095
#        LOADGEN=path/to/benchmatrix-loadgen (default: cargo build --release into $CARGO_TARGET_DIR)
#        PEERS_DIR=~/.cache/benchmatrix-peers (autocannon is npm-installed there when missing)
#        SHARES=262144         run everything in a cgroup v1 cpu group of that weight (against
#                              1024 per other task), so other work on a shared box cannot take
#                              the CPUs; no quota is set by it. Say so beside figures measured so.
# Needs: node 20+, npm, jq, curl, cargo; `npm ci` in examples/node-express.
#
# How the two measure (why p99 and max can differ while rps and p50 agree):
# - both are closed loop: each connection sends its next request when the previous answer
#   arrives, so neither corrects for coordinated omission (a stalled server is sampled less);
# - benchmatrix-loadgen records each latency in microseconds into an HDR histogram (3
#   significant digits) from the moment the request is written to the full answer;
# - autocannon records whole milliseconds into its HDR histogram (hdr-histogram-js), so its
#   percentiles are integers; its rps here is requests.total / duration (its requests.average is
#   a mean of per-second samples); it runs in Node, on the same 2 cores as the server.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE="${MODE:-single}"
ENDPOINT="${PATH_:-/fast}"
CONNS="${CONNS:-2}"
DURATION="${DURATION:-10}"
WARMUP="${WARMUP:-3}"
ROUNDS="${ROUNDS:-3}"
PORT="${PORT:-18095}"
PEERS_DIR="${PEERS_DIR:-$HOME/.cache/benchmatrix-peers}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/build}"
URL="http://127.0.0.1:$PORT$ENDPOINT"

if [[ ! -d examples/node-express/node_modules/express ]]; then
  echo "node-side-by-side: run \`npm ci\` in examples/node-express first" >&2
  exit 2
fi
if [[ -z "${LOADGEN:-}" ]]; then
  cargo build --release -q -p benchmatrix-loadgen --bin benchmatrix-loadgen
  LOADGEN="$CARGO_TARGET_DIR/release/benchmatrix-loadgen"
fi
AUTOCANNON="$PEERS_DIR/npm/node_modules/.bin/autocannon"
if [[ ! -x "$AUTOCANNON" ]]; then
  echo "node-side-by-side: npm install autocannon@8 into $PEERS_DIR/npm"
  mkdir -p "$PEERS_DIR/npm"
  npm install --silent --no-audit --no-fund --prefix "$PEERS_DIR/npm" autocannon@8 >/dev/null
fi

work="$(mktemp -d)"
if [[ -n "${SHARES:-}" ]]; then
  CG=/sys/fs/cgroup/cpu/benchmatrix-bench-$$
  mkdir "$CG"
  echo "$SHARES" >"$CG/cpu.shares"
  echo $$ >"$CG/cgroup.procs" # children inherit the group
fi
BENCH_MODE="$MODE" PORT="$PORT" BENCH_HOST=127.0.0.1 node examples/node-express/server.js \
  >"$work/server.out" 2>"$work/server.err" &
server=$!
cleanup() {
  kill -TERM "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  if [[ -n "${CG:-}" ]]; then
    echo $$ >/sys/fs/cgroup/cpu/cgroup.procs
    rmdir "$CG" 2>/dev/null || true
  fi
}
trap cleanup EXIT
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "node $(node --version), autocannon $("$AUTOCANNON" --version 2>/dev/null | head -1 | awk '{print $2}'), $("$LOADGEN" --version)"
[[ -n "${SHARES:-}" ]] && echo "inside a cgroup v1 cpu group with cpu.shares=$SHARES (no quota from it)"
echo "target: BENCH_MODE=$MODE $URL; closed loop, $CONNS connections, ${DURATION}s per run, $ROUNDS rounds"
"$LOADGEN" -t 1 -c "$CONNS" -d "${WARMUP}s" "$URL" >/dev/null

results="$work/results.tsv"
: >"$results"
for round in $(seq "$ROUNDS"); do
  load="$(cut -d' ' -f1 /proc/loadavg)"
  "$LOADGEN" -t 1 -c "$CONNS" -d "${DURATION}s" --json "$URL" | tail -n 1 >"$work/lg.json"
  jq -r --arg load "$load" --arg r "$round" '.phases[0].streams[0] |
    ["benchmatrix-loadgen", $r, .rps, .latencyMs.p50, .latencyMs.p99, .latencyMs.max,
     .requests, .errors, $load] | @tsv' "$work/lg.json" >>"$results"
  load="$(cut -d' ' -f1 /proc/loadavg)"
  "$AUTOCANNON" -c "$CONNS" -d "$DURATION" -j "$URL" >"$work/ac.json" 2>/dev/null
  jq -r --arg load "$load" --arg r "$round" '
    ["autocannon", $r, (.requests.total / .duration), .latency.p50, .latency.p99,
     .latency.max, .requests.total, (.errors + .non2xx), $load] | @tsv' "$work/ac.json" >>"$results"
done

printf '\n%-20s %5s %9s %9s %9s %9s %8s %6s %6s\n' tool round "req/s" "p50 ms" "p99 ms" \
  "max ms" requests errors load1
awk -F'\t' '{ printf "%-20s %5s %9.1f %9.2f %9.2f %9.2f %8d %6d %6s\n",
  $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$results"

# Medians per tool, then autocannon / benchmatrix-loadgen.
echo
awk -F'\t' '
  function median(arr, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
    return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
  }
  { n[$1]++; rps[$1, n[$1]] = $3; p50[$1, n[$1]] = $4; p99[$1, n[$1]] = $5 }
  END {
    split("benchmatrix-loadgen autocannon", tools, " ")
    printf "%-20s %9s %9s %9s\n", "median", "req/s", "p50 ms", "p99 ms"
    for (t = 1; t <= 2; t++) {
      k = tools[t]; m = n[k]
      for (i = 1; i <= m; i++) { a[i] = rps[k, i]; b[i] = p50[k, i]; q[i] = p99[k, i] }
      R[k] = median(a, m); P[k] = median(b, m); Q[k] = median(q, m)
      printf "%-20s %9.1f %9.2f %9.2f\n", k, R[k], P[k], Q[k]
    }
    l = "benchmatrix-loadgen"; ac = "autocannon"
    printf "%-20s %9.3f %9.3f %9.3f\n", "autocannon / loadgen", R[ac] / R[l], P[ac] / P[l], Q[ac] / Q[l]
  }' "$results"
echo "raw results: $work"
