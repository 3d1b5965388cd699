#!/usr/bin/env bash
# Issue 41's ground truth: the capacity search against a brute-force sweep of fixed rates, for
# the built-in target with /fast burning 20 ms of CPU a request (single mode), SLO fast p99 below
# 100 ms and error rate below 1%, on three configurations: one replica of 1 CPU, one of 500m, and
# two of 500m.
#
#   bench/capacity-ground-truth.sh                  # all three
#   CONFIGS="cpu1" SEARCHES=10 SWEEPS=3 bench/capacity-ground-truth.sh
#   OUT=DIR ANALYZE_ONLY=1 bench/capacity-ground-truth.sh   # the figures of runs already in DIR
#
# For each configuration it runs SWEEPS sweeps (one run, one phase of 10 s per rate, 5% steps
# through the configuration's knee, after a 2 s warm-up, all on one target) and SEARCHES
# searches (manifests/samples/capacity.yaml's settings: from 10 rps, resolution 5%, probes of
# 10 s after a 2 s warm-up), one after another, and prints:
#   - the sweep's knee: the highest rate at or below which every rate held in every sweep (p99
#     below 100 ms, 98% of the offered rate achieved, nothing failed), and the first rate above it
#     that failed in a sweep;
#   - each search's held and failed rates, probes and wall time, and whether it landed within the
#     resolution of the knee: its held rate no more than 5% from the knee's held rate, or the
#     knee's held rate between the search's held and failed rates;
#   - the times: the sweeps' summed, a full-range sweep's (every 5% step from the search's 10 rps
#     start up to the knee's first failure, 3 repetitions, at the sweeps' measured time per rate)
#     and the searches' median.
# Needs the CPU to itself: run it with nothing else building or measuring.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh

read -r -a configs <<<"${CONFIGS:-cpu1 cpu500m two500m}"
SEARCHES="${SEARCHES:-10}"
SWEEPS="${SWEEPS:-3}"
out_and_binary
[[ -n "${ANALYZE_ONLY:-}" ]] || stamp | tee "$OUT/conditions.txt"
[[ -n "${ANALYZE_ONLY:-}" ]] || echo "# commit $(git rev-parse --short HEAD), binary ${BENCHMATRIX}" | tee -a "$OUT/conditions.txt"

# spec CONFIG KIND: the run of CONFIG (its replicas and CPU, and for a sweep its rates), KIND
# sweep or search.
spec() {
  python3 - "$1" "$2" <<'PY'
import sys
config, kind = sys.argv[1], sys.argv[2]
replicas, cpu, low = {"cpu1": (1, "1", 30.0), "cpu500m": (1, "500m", 15.0), "two500m": (2, "500m", 30.0)}[config]
cell = (f"  configurations:\n    - {{name: {config}, mode: single, replicas: {replicas}, cpu: \"{cpu}\", "
        f"env: [{{name: BENCH_FAST_MS, value: \"20\"}}]}}\n")
head = f"apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {{name: {kind}-{config}}}\nspec:\n{cell}"
head += "  workload:\n    endpoints: [{name: fast, path: /fast}]\n    warmup: 2s\n"
if kind == "sweep":
    head += "    phases:\n"
    rate = low
    for _ in range(14):
        name = f"r{rate:.1f}".replace(".", "_")
        head += f"      - {{name: {name}, duration: 10s, load: [{{endpoint: fast, rate: {rate:.1f}}}]}}\n"
        rate *= 1.05
else:
    head += ("  capacity:\n    slo:\n      - {endpoint: fast, p99: {below: 100ms}}\n      - {errorRate: {below: 0.01}}\n"
             "    resolution: 5%\n    startRate: 10\n    maxRate: 400\n    probeDuration: 10s\n")
head += "  loadgen:\n    cpu: \"1\"\n"
print(head, end="")
PY
}

# timed DIR SPEC: runs SPEC into DIR, its output in DIR.log and its wall time in DIR.secs.
timed() {
  local start
  start=$(date +%s.%N)
  "$BENCHMATRIX" run "$2" --out "$1" >"$1.log" 2>&1
  python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$start" "$(date +%s.%N)" >"$1.secs"
}

for config in "${configs[@]}"; do
  [[ -z "${ANALYZE_ONLY:-}" ]] || break
  spec "$config" sweep >"$OUT/sweep-$config.yaml"
  spec "$config" search >"$OUT/search-$config.yaml"
  for i in $(seq 1 "$SWEEPS"); do
    timed "$OUT/sweep-$config-$i" "$OUT/sweep-$config.yaml"
    echo "sweep $config $i: $(cat "$OUT/sweep-$config-$i.secs") s"
  done
  for i in $(seq 1 "$SEARCHES"); do
    timed "$OUT/search-$config-$i" "$OUT/search-$config.yaml"
    echo "search $config $i: $(cat "$OUT/search-$config-$i.secs") s"
  done
done
[[ -n "${ANALYZE_ONLY:-}" ]] || stamp | tee -a "$OUT/conditions.txt"

python3 - "$OUT" "${configs[@]}" <<'PY'
import glob, math, statistics, sys, yaml
out, configs = sys.argv[1], sys.argv[2:]
secs = lambda path: float(open(path).read())
for config in configs:
    sweeps = sorted(glob.glob(f"{out}/sweep-{config}-*/status.yaml"))
    held = {}  # rate -> [held in each sweep]
    per_rate = []
    for path in sweeps:
        cell = yaml.safe_load(open(path))["cells"][0]
        for r in cell["results"]:
            rate = float(r["phase"][1:].replace("_", "."))
            ok = (r.get("latencyMs") or {}).get("p99", math.inf) < 100 and r["rps"] >= 0.98 * rate and r["errors"] == 0
            held.setdefault(rate, []).append(ok)
        per_rate.append(secs(path.replace("/status.yaml", ".secs")) / len(cell["results"]))
    rates = sorted(held)
    knee_held, knee_failed = None, None
    for rate in rates:
        if all(held[rate]) and knee_failed is None:
            knee_held = rate
        elif not all(held[rate]) and knee_failed is None:
            knee_failed = rate
    print(f"\n== {config}: sweeps {len(sweeps)}")
    print("   rate   " + " ".join(f"{r:6.1f}" for r in rates))
    print("   held   " + " ".join(f"{sum(held[r]):>4}/{len(held[r])}" for r in rates))
    print(f"   knee: held {knee_held} rps, first failure {knee_failed} rps")
    searches = sorted(glob.glob(f"{out}/search-{config}-*/status.yaml"), key=lambda p: int(p.split("-")[-1].split("/")[0]))
    times, landed = [], 0
    for path in searches:
        cap = yaml.safe_load(open(path))["cells"][0].get("capacity") or {}
        h, f = cap.get("heldRate"), cap.get("failedRate")
        t = secs(path.replace("/status.yaml", ".secs"))
        times.append(t)
        ok = bool(cap.get("found")) and knee_held is not None and (
            abs(h / knee_held - 1) <= 0.05 or (f is not None and h <= knee_held <= f))
        landed += ok
        kept = sum(1 for p in cap.get("probes") or [] if p.get("settleSeconds") is not None)
        print(f"   search {path.split('/')[-2]}: held {h} failed {f} probes {len(cap.get('probes') or [])} "
              f"(kept target {kept}) in {t:.0f} s: {'within' if ok else 'NOT within'} the resolution of the knee")
    sweep_secs = sum(secs(p.replace("/status.yaml", ".secs")) for p in sweeps)
    full_rates = math.ceil(math.log(knee_failed / 10.0) / math.log(1.05)) + 1 if knee_failed else 0
    full = 3 * full_rates * statistics.median(per_rate) if per_rate else 0
    med = statistics.median(times) if times else 0
    print(f"   landed within the resolution: {landed} of {len(searches)}")
    print(f"   time: searches median {med:.0f} s; these {len(sweeps)} sweeps {sweep_secs:.0f} s "
          f"({med / sweep_secs * 100 if sweep_secs else 0:.0f}%); a full-range sweep from 10 rps, {full_rates} rates x 3, "
          f"at {statistics.median(per_rate) if per_rate else 0:.1f} s a rate: {full:.0f} s ({med / full * 100 if full else 0:.0f}%)")
PY
