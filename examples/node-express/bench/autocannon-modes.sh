#!/usr/bin/env bash
# The seeds' experiment with autocannon, against this app in each mode, on 127.0.0.1 only:
# warm-up, a fast-only phase (2 connections on /fast), then a mixed phase (2 connections on
# /fast and 2 on /slow at once). Prints one line per mode and phase with requests/s, p50, p99.
#
#   bench/autocannon-modes.sh [mode ...]         modes: single cluster pool both pool-all
#   WARMUP=5 FAST=10 MIXED=20 PORT=18090 bench/autocannon-modes.sh
#
# autocannon is not a dependency of the app: set AUTOCANNON to its binary, or npx fetches it.
set -euo pipefail
cd "$(dirname "$0")/.."

WARMUP=${WARMUP:-5}
FAST=${FAST:-10}
MIXED=${MIXED:-20}
PORT=${PORT:-18090}
AUTOCANNON=${AUTOCANNON:-"npx --yes autocannon@8"}
OUT=${OUT:-$(mktemp -d)}
MODES=("$@")
[ ${#MODES[@]} -eq 0 ] && MODES=(single cluster pool both pool-all)

summary() { # file label
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const l = r.latency;
    console.log(`${process.argv[2].padEnd(22)} rps ${r.requests.average.toFixed(1).padStart(7)}  p50 ${String(l.p50).padStart(5)} ms  p99 ${String(l.p99).padStart(5)} ms  max ${String(l.max).padStart(5)} ms  non2xx ${r.non2xx}  errors ${r.errors}`);
  ' "$1" "$2"
}

for m in "${MODES[@]}"; do
  mode=$m; offload=heavy
  [ "$m" = pool-all ] && { mode=pool; offload=all; }
  BENCH_MODE=$mode BENCH_OFFLOAD=$offload PORT=$PORT BENCH_HOST=127.0.0.1 node server.js >"$OUT/$m.out" 2>"$OUT/$m.err" &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
  url=http://127.0.0.1:$PORT
  $AUTOCANNON -c 2 -d "$WARMUP" "$url/fast" >/dev/null 2>&1
  $AUTOCANNON -c 2 -d "$FAST" -j "$url/fast" >"$OUT/$m.fastonly.json" 2>/dev/null
  $AUTOCANNON -c 2 -d "$MIXED" -j "$url/fast" >"$OUT/$m.mixed-fast.json" 2>/dev/null &
  a=$!
  $AUTOCANNON -c 2 -d "$MIXED" -j "$url/slow" >"$OUT/$m.mixed-slow.json" 2>/dev/null
  wait $a
  curl -s "$url/stats" >"$OUT/$m.stats.json"
  kill -TERM $pid; wait $pid || true
  summary "$OUT/$m.fastonly.json" "$m fast-only /fast"
  summary "$OUT/$m.mixed-fast.json" "$m mixed /fast"
  summary "$OUT/$m.mixed-slow.json" "$m mixed /slow"
  node -e 'const s=JSON.parse(require("fs").readFileSync(process.argv[1]));console.log(`${process.argv[2].padEnd(22)} rss ${(s.rssBytes/2**20).toFixed(0)} MiB (peak ${(s.rssPeakBytes/2**20).toFixed(0)}), cpu ${s.cpuSecondsUsed} s, loop lag p99 ${s.loopLagP99Ms} ms max ${s.loopLagMaxMs} ms, queuePeak ${s.queuePeak}, rejected ${s.rejected}`)' "$OUT/$m.stats.json" "$m /stats"
done
echo "raw results: $OUT"
