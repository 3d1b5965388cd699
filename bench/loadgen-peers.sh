#!/usr/bin/env bash
# benchmatrix-loadgen side by side with wrk, oha, hey and autocannon against one trivial axum
# handler on 127.0.0.1: same connections, same duration, same thread count, rounds interleaved
# so every tool sees the same background noise. Prints req/s, p50 and peak RSS per run, then the
# medians and each tool's ratio to benchmatrix-loadgen.
#
# Usage: bench/loadgen-peers.sh            (run bench/install-peers.sh first)
# Env:   CONNS=64 DURATION=10 THREADS=1 SERVER_THREADS=1 ROUNDS=3 PORT=18181
# Needs: jq, GNU time (/usr/bin/time), cargo.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=bench/lib.sh
source bench/lib.sh
peer_load
PORT="${PORT:-18181}"
PEERS_DIR="${PEERS_DIR:-$HOME/.cache/benchmatrix-peers}"
URL="http://127.0.0.1:$PORT/healthz"

hello_server "$PORT" "$SERVER_THREADS"
OHA="$(command -v oha || echo "$PEERS_DIR/cargo/bin/oha")"
AUTOCANNON="$PEERS_DIR/npm/node_modules/.bin/autocannon"

work="$(mktemp -d)"
results="$work/results.tsv"
: >"$results"

# run TOOL: runs one tool once, appends "tool rps p50ms rsskb" to the results.
run() {
  local tool="$1" out="$work/$1.out" rss="$work/$1.rss" rps p50 line
  case "$tool" in
    benchmatrix-loadgen)
      /usr/bin/time -f %M -o "$rss" "$BIN/benchmatrix-loadgen" -t "$THREADS" -c "$CONNS" \
        -d "${DURATION}s" --json "$URL" >"$out"
      rps=$(jq '.phases[0].streams[0].rps' "$out")
      p50=$(jq '.phases[0].streams[0].latencyMs.p50' "$out")
      ;;
    wrk)
      /usr/bin/time -f %M -o "$rss" wrk -t "$THREADS" -c "$CONNS" -d "${DURATION}s" --latency \
        "$URL" >"$out"
      rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
      line=$(awk '$1 == "50%" {print $2}' "$out")
      p50=$(to_ms "${line%%[a-z]*}" "${line##*[0-9.]}")
      ;;
    oha)
      [[ -x "$OHA" ]] || return 0
      /usr/bin/time -f %M -o "$rss" "$OHA" -c "$CONNS" -z "${DURATION}s" --no-tui \
        --worker-threads "$THREADS" \
        --output-format json "$URL" >"$out"
      rps=$(jq '.summary.requestsPerSec' "$out")
      p50=$(jq '.latencyPercentiles.p50 * 1000' "$out")
      ;;
    hey)
      command -v hey >/dev/null || return 0
      /usr/bin/time -f %M -o "$rss" hey -c "$CONNS" -z "${DURATION}s" -cpus "$THREADS" \
        "$URL" >"$out"
      rps=$(awk '/Requests\/sec:/ {print $2}' "$out")
      line=$(awk '$1 == "50%%" || $1 == "50%" {print $3}' "$out")
      p50=$(to_ms "$line" s)
      ;;
    autocannon)
      [[ -x "$AUTOCANNON" ]] || return 0
      # autocannon runs on one Node thread (its -w workers would add more).
      /usr/bin/time -f %M -o "$rss" "$AUTOCANNON" -c "$CONNS" -d "$DURATION" -j "$URL" \
        >"$out" 2>/dev/null
      rps=$(jq '.requests.average' "$out")
      p50=$(jq '.latency.p50' "$out")
      ;;
  esac
  printf '%s\t%.0f\t%.3f\t%s\n' "$tool" "$rps" "$p50" "$(tail -n1 "$rss")" | tee -a "$results"
}

echo "load: $CONNS connections, ${DURATION}s, $THREADS thread(s); server: axum, $SERVER_THREADS worker thread(s); $(nproc) CPUs"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'tool\treq/s\tp50_ms\trss_kb\n'
tools=(benchmatrix-loadgen wrk oha hey autocannon)
in_rounds "$ROUNDS" run "${tools[@]}"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "medians over $ROUNDS rounds (ratio = tool / benchmatrix-loadgen)"
ours_rps=$(awk -F'\t' '$1 == "benchmatrix-loadgen" {print $2}' "$results" | median)
ours_p50=$(awk -F'\t' '$1 == "benchmatrix-loadgen" {print $3}' "$results" | median)
ours_rss=$(awk -F'\t' '$1 == "benchmatrix-loadgen" {print $4}' "$results" | median)
printf '%-20s %10s %8s %10s %10s %10s %10s\n' tool req/s p50_ms rss_mb rps_ratio p50_ratio rss_ratio
for tool in "${tools[@]}"; do
  grep -q "^$tool	" "$results" || continue
  rps=$(awk -F'\t' -v t="$tool" '$1 == t {print $2}' "$results" | median)
  p50=$(awk -F'\t' -v t="$tool" '$1 == t {print $3}' "$results" | median)
  rss=$(awk -F'\t' -v t="$tool" '$1 == t {print $4}' "$results" | median)
  awk -v t="$tool" -v r="$rps" -v p="$p50" -v m="$rss" -v R="$ours_rps" -v P="$ours_p50" -v M="$ours_rss" \
    'BEGIN { printf "%-20s %10.0f %8.3f %10.1f %10.2f %10.2f %10.2f\n", t, r, p, m / 1024, r / R, p / P, m / M }'
done
