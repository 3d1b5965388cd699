#!/usr/bin/env bash
# The autoscaler target of a sizing answer, checked against the HorizontalPodAutoscaler's own
# algorithm: one replica of the chosen configuration at fixed rates rising through the rate it
# held, each rate a run of its own, measuring the replica's CPU utilization (CPU seconds used
# over the phase / (phase x its CPU limit), which is what the autoscaler's utilization is when
# requests equal limits) and fast's p99.
#
#   bench/hpa-target.sh [STATUS]          # default tests/e2e/sized-status.yaml
#   RATES="12 24 36" PHASE=20 bench/hpa-target.sh
#
# For each rate it prints the rate achieved (fast's, over its 95% share of the traffic) and what
# the autoscaler would do with one replica: its documented rule is
# desired = ceil(current x utilization / target), acted on only when utilization / target is
# outside its tolerance (0.1 by default). The sizing's target is right when the autoscaler asks
# for a second replica at a rate where p99 still meets the SLO (fast p99 below 100 ms here).
# The traffic is the seeds' (fast 19 : slow 1), open loop, as the sizing searched it.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh

STATUS="${1:-tests/e2e/sized-status.yaml}"
RATES="${RATES:-12 18 24 30 36 40 44 48}"
PHASE="${PHASE:-15}"
out_and_binary

read -r MODE CPU MEMORY TARGET < <(python3 - "$STATUS" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))["sizing"]["chosen"]
print(c["mode"], c["cpu"], c["memory"], c["hpa"]["targetUtilization"])
PY
)
stamp
echo "# ${STATUS}: ${MODE}, cpu ${CPU}, memory ${MEMORY}; autoscaler target ${TARGET}%; ${PHASE}s a rate"
for rate in ${RATES}; do
  spec="${OUT}/rate-${rate}.yaml"
  python3 - "$rate" "$MODE" "$CPU" "$MEMORY" "$PHASE" >"$spec" <<'PY'
import sys
rate, mode, cpu, memory, phase = sys.argv[1:]
rate = float(rate)
print(f"""apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: hpa-rate}}
spec:
  configurations:
    - {{name: chosen, mode: {mode}, replicas: 1, cpu: "{cpu}", memory: {memory}}}
  workload:
    endpoints: [{{name: fast, path: /fast}}, {{name: slow, path: /slow}}]
    warmup: 2s
    phases:
      - name: load
        duration: {phase}s
        load: [{{endpoint: fast, rate: {rate * 0.95:.3f}}}, {{endpoint: slow, rate: {rate * 0.05:.3f}}}]
  loadgen: {{cpu: "1"}}""")
PY
  "${BENCHMATRIX}" run "$spec" --out "${OUT}/rate-${rate}" >"${OUT}/rate-${rate}.log" 2>&1 || true
  python3 - "${OUT}/rate-${rate}/status.yaml" "$rate" "$CPU" "$PHASE" "$TARGET" <<'PY'
import math, sys, yaml
path, rate, cpu, phase, target = sys.argv[1:]
s = yaml.safe_load(open(path))
cell = s["cells"][0]
limit = float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
used = (cell.get("target") or {}).get("cpuSecondsUsed")
fast = next(r for r in cell.get("results", []) if r["endpoint"] == "fast")
p99 = (fast.get("latencyMs") or {}).get("p99")
if used is None:
    print(f"rate {rate}: no CPU figure ({cell.get('phase')}: {cell.get('message')})")
    sys.exit(0)
util = 100 * used / (float(phase) * limit)
ratio = util / float(target)
desired = math.ceil(ratio) if abs(ratio - 1) > 0.1 else 1
slo = "held" if p99 is not None and p99 < 100 else "FAILED"
print(f"rate {float(rate):5.1f} rps: achieved {fast['rps'] / 0.95:5.1f}, utilization {util:5.1f}%, "
      f"autoscaler wants {desired} replica(s); fast p99 {p99:7.1f} ms, SLO {slo}")
PY
done
