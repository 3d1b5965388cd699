#!/usr/bin/env bash
# Memory of benchmatrix-loadgen does not grow with the number of requests: peak RSS of a short
# run (about 100 thousand requests) against a long one (about 10 million), and wrk's peak RSS
# for the same long one-off run. Same trivial axum handler as bench/loadgen-peers.sh.
#
# Usage: bench/loadgen-rss.sh
# Env:   CONNS=64 THREADS=1 SHORT=3 LONG=240 (seconds; raise LONG until the long run passes 10M)
# Needs: jq, GNU time (/usr/bin/time), wrk.
set -euo pipefail
cd "$(dirname "$0")/.."

CONNS="${CONNS:-64}"
THREADS="${THREADS:-1}"
SHORT="${SHORT:-3}"
LONG="${LONG:-240}"
PORT="${PORT:-18182}"
URL="http://127.0.0.1:$PORT/healthz"
# shellcheck source=bench/lib.sh
source bench/lib.sh

hello_server "$PORT" 1

work="$(mktemp -d)"
ours() {
  /usr/bin/time -f %M -o "$work/rss" "$BIN/benchmatrix-loadgen" -t "$THREADS" -c "$CONNS" \
    -d "${1}s" --json "$URL" >"$work/out"
  printf 'benchmatrix-loadgen %5ss: requests %10s  peak RSS %6s KiB\n' "$1" \
    "$(jq '.phases[0].streams[0].requests' "$work/out")" "$(tail -n1 "$work/rss")"
}
ours "$SHORT"
ours "$LONG"
/usr/bin/time -f %M -o "$work/rss" wrk -t "$THREADS" -c "$CONNS" -d "${LONG}s" "$URL" >"$work/wrk"
printf 'wrk                 %5ss: requests %10s  peak RSS %6s KiB\n' "$LONG" \
  "$(awk '/requests in/ {print $1}' "$work/wrk")" "$(tail -n1 "$work/rss")"
