#!/usr/bin/env bash
# Benchmarks of the built-in target (BENCHMARKS.md, "Target service"). Not a test: it prints
# figures, each the median of RUNS runs, with the machine's load average beside them, because a
# shared 2-core box is noisy and a figure without its conditions is not a figure.
#
#   bench/target.sh            # all three, RUNS=3
#   RUNS=5 DURATION=15 bench/target.sh throughput
#
# 1. throughput: threads mode, 2 loops, /fast (12 ms CPU) with wrk on 127.0.0.1, against the
#    ideal 2 CPUs / (CPU seconds per request). The CPU per request is measured from the
#    process's own CPU time over the run (/stats cpuSecondsUsed), so HTTP overhead is counted.
# 2. rss: idle RSS of one process per mode, 2 s after start (VmRSS, /proc/PID/status).
# 3. healthz: pool mode, 2 workers kept busy by 2 closed-loop /slow connections (wrk), while a
#    probe sends /healthz every 10 ms on one keep-alive connection and times each answer.
#
# SHARES=262144 runs everything (target, wrk, probe) in a cgroup v1 cpu group with that weight,
# so that other work on a shared box (the default weight is 1024 per task) cannot take the two
# CPUs; no quota is set, so the target still sees 2 CPUs. Say so beside any figure measured so.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
WHAT=${1:-all}

if ! command -v wrk >/dev/null; then
  apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi
cargo build --release -q -p benchmatrix-target
BIN="${CARGO_TARGET_DIR:-build}/release/benchmatrix-target"
WORK=$(mktemp -d)
PIDS=()
CG=""
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
  if [ -n "$CG" ]; then
    echo $$ >/sys/fs/cgroup/cpu/cgroup.procs
    sleep 0.2
    rmdir "$CG" 2>/dev/null || true
  fi
}
trap cleanup EXIT
if [ -n "${SHARES:-}" ]; then
  CG=/sys/fs/cgroup/cpu/benchmatrix-bench-$$
  mkdir "$CG"
  echo "$SHARES" >"$CG/cpu.shares"
  echo $$ >"$CG/cgroup.procs" # children (target, wrk, probe) inherit the group
fi

# start_target ARGS... : starts the target on a free port; sets PID and URL.
start_target() {
  : >"$WORK/out"
  "$BIN" --host 127.0.0.1 --port 0 "$@" >"$WORK/out" 2>"$WORK/err" &
  PID=$!
  PIDS+=("$PID")
  for _ in $(seq 100); do
    if grep -q '^listening on ' "$WORK/out"; then break; fi
    sleep 0.05
  done
  URL=$(sed -n 's/^listening on //p' "$WORK/out")
  [ -n "$URL" ] || { cat "$WORK/err" >&2; echo "target did not start" >&2; exit 1; }
}
stop_target() { kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; }
stat_field() { curl -s "$URL/stats" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
median() { python3 -c "import sys,statistics; v=[float(x) for x in sys.argv[1:]]; print(f'{statistics.median(v):.2f}')" "$@"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

throughput() {
  local conns=$1 rps_all=() ratio_all=() cpu_all=()
  for run in $(seq "$RUNS"); do
    start_target --mode threads --threads 2 --fast-ms 12
    curl -s "$URL/fast" >/dev/null
    local cpu0 req0 cpu1 req1 rps
    cpu0=$(stat_field cpuSecondsUsed); req0=$(stat_field requestsServed)
    rps=$(wrk -t2 -c"$conns" -d"${DURATION}s" "$URL/fast" | awk '/Requests\/sec/ {print $2}')
    cpu1=$(stat_field cpuSecondsUsed); req1=$(stat_field requestsServed)
    stop_target
    # requestsServed also counts the /stats call between the two reads: subtract it.
    # got: CPUs the process actually received over the run; on a busy box this, not the
    # target, is what caps throughput, so it is printed beside every figure.
    read -r cpu_per_req ideal ratio got < <(python3 -c "
c=($cpu1-$cpu0)/($req1-$req0-1); ideal=2/c
print(f'{c*1e3:.3f} {ideal:.1f} {$rps/ideal*100:.1f} {($cpu1-$cpu0)/$DURATION:.2f}')")
    echo "  run $run (load $(load)): $rps req/s, ${cpu_per_req} ms CPU/request, ideal $ideal req/s -> ${ratio}%; process got $got CPUs"
    rps_all+=("$rps"); ratio_all+=("$ratio"); cpu_all+=("$cpu_per_req")
  done
  echo "threads mode, 2 loops, /fast 12 ms, wrk -t2 -c$conns -d${DURATION}s: median $(median "${rps_all[@]}") req/s," \
       "CPU/request $(median "${cpu_all[@]}") ms, $(median "${ratio_all[@]}")% of ideal (2 / CPU s per request; 2/0.012 s = 166.7)"
}

rss() {
  for mode in single threads pool; do
    local all=()
    for run in $(seq "$RUNS"); do
      start_target --mode "$mode"
      curl -s "$URL/healthz" >/dev/null
      sleep 2
      all+=("$(awk '/^VmRSS/ {print $2/1024}' "/proc/$PID/status")")
      stop_target
    done
    echo "idle RSS, $mode mode (auto sizing on this machine): median $(median "${all[@]}") MiB (runs: ${all[*]})"
  done
}

healthz() {
  local p99_all=() p50_all=() max_all=()
  for run in $(seq "$RUNS"); do
    start_target --mode pool --pool-size 2 --slow-ms 380
    wrk -t2 -c2 -d"$((DURATION + 3))s" --timeout 10s "$URL/slow" >"$WORK/slow" &
    local wrk_pid=$!
    sleep 1
    read -r p50 p99 max n < <(python3 - "$URL" "$DURATION" <<'PY'
import http.client, sys, time, statistics
url, secs = sys.argv[1], float(sys.argv[2])
host, port = url.removeprefix("http://").split(":")
conn = http.client.HTTPConnection(host, int(port), timeout=10)
lat, start, i = [], time.monotonic(), 0
while True:
    due = start + i * 0.010
    if due - start > secs:
        break
    now = time.monotonic()
    if due > now:
        time.sleep(due - now)
    t0 = time.monotonic()
    conn.request("GET", "/healthz")
    conn.getresponse().read()
    lat.append((time.monotonic() - t0) * 1e3)
    i += 1
lat.sort()
print(f"{lat[len(lat)//2]:.2f} {lat[int(len(lat)*0.99)]:.2f} {lat[-1]:.2f} {len(lat)}")
PY
)
    wait "$wrk_pid"
    local slow_rps queue
    slow_rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/slow")
    queue=$(stat_field queuePeak)
    stop_target
    echo "  run $run (load $(load)): /healthz p50 $p50 ms, p99 $p99 ms, max $max ms over $n probes; /slow $slow_rps req/s, queue peak $queue"
    p99_all+=("$p99"); p50_all+=("$p50"); max_all+=("$max")
  done
  echo "pool mode, 2 workers busy with /slow (wrk -c2), /healthz every 10 ms for ${DURATION}s: median p50 $(median "${p50_all[@]}") ms, p99 $(median "${p99_all[@]}") ms, max $(median "${max_all[@]}") ms"
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(load), $BIN${SHARES:+, cpu.shares=$SHARES}"
case "$WHAT" in
  throughput) throughput 2; throughput 4 ;;
  rss) rss ;;
  healthz) healthz ;;
  all) throughput 2; throughput 4; rss; healthz ;;
  *) echo "usage: $0 [all|throughput|rss|healthz]" >&2; exit 2 ;;
esac
