#!/usr/bin/env bash
# benchmatrix-loadgen beside wrk on a POST with headers and a body, and on the plain GET, against
# the axum handler loadgen/examples/hello_server.rs on 127.0.0.1 (POST /orders answers 201 only
# when an `Authorization: Bearer` header and a body arrived). Same connections, duration and
# thread count; the four runs of a round rotate so every one sees the same background noise.
# Prints req/s, p50, errors and the tool's own CPU time per run (GNU time: user + system), then
# the medians, requests per CPU-second of the tool (the figure contention disturbs least), and
# wrk's ratio to ours per request.
#
# Usage: bench/loadgen-post.sh          (wrk from Debian: apt-get install -y wrk)
# Env:   CONNS=64 DURATION=10 THREADS=1 SERVER_THREADS=1 ROUNDS=3 PORT=18182
# Needs: jq, wrk, GNU time (/usr/bin/time), cargo.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=bench/lib.sh
source bench/lib.sh
peer_load
PORT="${PORT:-18182}"
BASE="http://127.0.0.1:$PORT"
TOKEN="Bearer bench-0123456789abcdef0123456789abcdef"
BODY='{"customer":"c-1042","items":[{"sku":"sku-1234","qty":2},{"sku":"sku-9876","qty":1}],"currency":"EUR","note":"leave at the door"}'

hello_server "$PORT" "$SERVER_THREADS"
work="$(mktemp -d)"
# As hello_server's, and the work folder goes too.
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$work"' EXIT
# The POST must be accepted as the tools send it, or the comparison measures 401s.
curl -fsS -X POST -H "Authorization: $TOKEN" -H 'Content-Type: application/json' \
  --data "$BODY" "$BASE/orders" >/dev/null

cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$BODY'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "$TOKEN"
LUA

results="$work/results.tsv"
: >"$results"

# run NAME: one run; appends "name rps p50ms errors requests cpu_s" to the results.
run() {
  local name="$1" out="$work/$1.out" cpu="$work/$1.cpu" rps p50 errors requests line
  case "$name" in
    ours-get | ours-post)
      local args=()
      if [[ "$name" == ours-post ]]; then
        args=(-m POST -H "Content-Type: application/json" -H "Authorization: $TOKEN" --body "$BODY")
      fi
      /usr/bin/time -f '%U %S' -o "$cpu" "$BIN/benchmatrix-loadgen" -t "$THREADS" -c "$CONNS" -d "${DURATION}s" --json "${args[@]}" \
        "$BASE$([[ "$name" == ours-post ]] && echo /orders || echo /healthz)" >"$out"
      rps=$(jq '.phases[0].streams[0].rps' "$out")
      p50=$(jq '.phases[0].streams[0].latencyMs.p50' "$out")
      errors=$(jq '.phases[0].streams[0].errors' "$out")
      requests=$(jq '.phases[0].streams[0].requests' "$out")
      ;;
    wrk-get | wrk-post)
      local args=()
      [[ "$name" == wrk-post ]] && args=(-s "$work/post.lua")
      /usr/bin/time -f '%U %S' -o "$cpu" wrk -t "$THREADS" -c "$CONNS" -d "${DURATION}s" --latency "${args[@]}" \
        "$BASE$([[ "$name" == wrk-post ]] && echo /orders || echo /healthz)" >"$out"
      rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
      line=$(awk '$1 == "50%" {print $2}' "$out")
      p50=$(to_ms "${line%%[a-z]*}" "${line##*[0-9.]}")
      errors=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out")
      errors=${errors:-0}
      requests=$(awk '/requests in/ {print $1}' "$out")
      ;;
  esac
  printf '%s\t%.0f\t%.3f\t%s\t%s\t%s\n' "$name" "$rps" "$p50" "$errors" "$requests" \
    "$(awk '{print $1 + $2}' "$cpu")" | tee -a "$results"
}

echo "load: $CONNS connections, ${DURATION}s, $THREADS thread(s); server: axum, $SERVER_THREADS worker thread(s); $(nproc) CPUs"
echo "POST /orders: $(printf %s "$BODY" | wc -c)-byte JSON body, Content-Type and Authorization headers"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'run\treq/s\tp50_ms\terrors\trequests\tcpu_s\n'
runs=(ours-get wrk-get ours-post wrk-post)
in_rounds "$ROUNDS" run "${runs[@]}"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "medians over $ROUNDS rounds (wrk/ours: wrk's figure over ours for the same request)"
col() { awk -F'\t' -v t="$1" -v c="$2" '$1 == t {print $c}' "$results" | median; }
# Requests per CPU-second of the tool, per run, then the median.
per_cpu() { awk -F'\t' -v t="$1" '$1 == t && $6 > 0 {print $5 / $6}' "$results" | median; }
printf '%-8s %10s %8s %12s %10s %8s %12s %8s %8s %8s\n' request ours_req/s ours_p50 ours_req/cpu-s \
  wrk_req/s wrk_p50 wrk_req/cpu-s rps_w/o p50_w/o cpu_w/o
for req in get post; do
  awk -v q="$req" -v r="$(col "ours-$req" 2)" -v p="$(col "ours-$req" 3)" -v c="$(per_cpu "ours-$req")" \
    -v R="$(col "wrk-$req" 2)" -v P="$(col "wrk-$req" 3)" -v C="$(per_cpu "wrk-$req")" \
    'BEGIN { printf "%-8s %10.0f %8.3f %12.0f %10.0f %8.3f %12.0f %8.2f %8.2f %8.2f\n", q, r, p, c, R, P, C, R / r, P / p, C / c }'
done
awk -F'\t' '$4 != 0 {bad = 1; print "errors in run " $1 ": " $4} END {exit bad}' "$results"
