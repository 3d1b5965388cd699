# shellcheck shell=bash
# Sourced by the bench scripts (not run on its own).

# Sets BENCHMATRIX to the release benchmatrix binary, built here, unless it is set already (a
# binary of your own, e.g. one built with other flags).
benchmatrix_binary() {
  if [[ -n "${BENCHMATRIX:-}" ]]; then
    return
  fi
  cargo build --release -q -p benchmatrix
  local target_dir
  target_dir="$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
  BENCHMATRIX="${target_dir}/release/benchmatrix"
}

# Prints "# DATE TIME UTC, load average: 1 5 15": what a bench's figures were taken under.
stamp() {
  echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# with_repeat SPEC FROM TO COPY: writes SPEC to COPY with its line `  repeat: FROM` (the run's
# spec.repeat) made `  repeat: TO`; stops the script when there is no such line.
with_repeat() {
  sed "s/^  repeat: $2\$/  repeat: $3/" "$1" >"$4"
  grep -qxF "  repeat: $3" "$4" || {
    echo "$(basename "$0" .sh): could not set repeat: $3 in $4" >&2
    exit 1
  }
}

# out_and_binary: for a bench that keeps its runs in OUT: sets OUT as the environment sets it,
# else to a new temporary folder, sets BENCHMATRIX (benchmatrix_binary) and makes OUT.
out_and_binary() {
  OUT="${OUT:-$(mktemp -d)}"
  benchmatrix_binary
  mkdir -p "$OUT"
}

# tiny_run NAME [SPEC_LINE...]: prints the smallest BenchmarkRun that goes all the way through the
# operator, named NAME: one configuration `a` (mode single, one replica of 250m and 64Mi), a 1 s
# warm-up and one 2 s phase `p` on /healthz at one connection, a load generator of 250m and 64Mi,
# cleanup Always. Each SPEC_LINE goes into its spec as it is, before `cleanup`, e.g.
# "timeouts: {ready: 120s, runSlack: 60s}".
tiny_run() {
  cat <<EOF
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata:
  name: $1
spec:
  configurations:
    - {name: a, mode: single, replicas: 1, cpu: 250m, memory: 64Mi}
  workload:
    endpoints: [{name: healthz, path: /healthz}]
    warmup: 1s
    phases: [{name: p, duration: 2s, load: [{endpoint: healthz, connections: 1}]}]
  loadgen: {cpu: 250m, memory: 64Mi}
EOF
  shift
  local line
  for line in "$@"; do
    echo "  $line"
  done
  echo "  cleanup: Always"
}

# timed_run SPEC DIR: runs `$BENCHMATRIX run SPEC --out DIR`, its output in DIR.log, and sets
# CODE to its exit code and WALL to the seconds from its start to its exit.
# shellcheck disable=SC2034 # CODE and WALL are the caller's.
timed_run() {
  local start end
  start=$(date +%s.%N)
  CODE=0
  "$BENCHMATRIX" run "$1" --out "$2" >"$2.log" 2>&1 || CODE=$?
  end=$(date +%s.%N)
  WALL=$(echo "$end - $start" | bc)
}

# hello_server PORT THREADS: builds benchmatrix-loadgen and the axum handler
# loadgen/examples/hello_server.rs (release, into CARGO_TARGET_DIR: ./build unless set), sets BIN
# to the folder they are in, starts the server on 127.0.0.1:PORT with THREADS worker threads
# (SERVER is its pid; it is stopped when the script exits) and waits up to 5 s for its /healthz.
hello_server() {
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/build}"
  cargo build --release -q -p benchmatrix-loadgen --bin benchmatrix-loadgen --example hello_server
  BIN="$CARGO_TARGET_DIR/release"
  "$BIN/examples/hello_server" "$1" "$2" >/dev/null &
  SERVER=$!
  trap 'kill "$SERVER" 2>/dev/null || true' EXIT
  local _
  for _ in $(seq 50); do
    curl -fsS "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
}

# The load of bench/loadgen-peers.sh and loadgen-post.sh, which every tool they compare is given
# alike: CONNS connections for DURATION seconds on THREADS threads, against the hello_server with
# SERVER_THREADS worker threads, ROUNDS times; each as the environment sets it, else the default.
# shellcheck disable=SC2034 # the caller's
peer_load() {
  CONNS="${CONNS:-64}"
  DURATION="${DURATION:-10}"
  THREADS="${THREADS:-1}"
  SERVER_THREADS="${SERVER_THREADS:-1}"
  ROUNDS="${ROUNDS:-3}"
}

# in_rounds ROUNDS COMMAND ITEM...: runs `COMMAND ITEM` for every ITEM, a second apart, ROUNDS
# times; each round starts one ITEM later, so that none always runs first (or right after a
# heavy one) and all see the same background noise.
in_rounds() {
  local rounds="$1" command="$2" round i
  shift 2
  local items=("$@")
  for round in $(seq "$rounds"); do
    for i in "${!items[@]}"; do
      "$command" "${items[$(((i + round - 1) % ${#items[@]}))]}"
      sleep 1
    done
  done
}

# to_ms VALUE UNIT: VALUE in UNIT (us, ms or s) as milliseconds.
to_ms() {
  awk -v v="$1" -v u="$2" 'BEGIN {
    if (u == "us") v = v / 1000; else if (u == "s") v = v * 1000;
    printf "%.3f", v }'
}

# The median of the numbers on stdin, one a line.
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
