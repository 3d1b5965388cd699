#!/usr/bin/env bash
# The autoscaler target of a sizing answer, checked against the HorizontalPodAutoscaler's own
# algorithm: one replica of the chosen configuration at fixed rates rising through the rate it
# held, each rate a run of its own, measuring the replica's CPU utilization (CPU seconds used
# over the phase / (phase x its CPU limit), which is what the autoscaler's utilization is when
# requests equal limits) and fast's p99.
#
#   bench/hpa-target.sh [STATUS]          # default tests/e2e/sized-status.yaml
#   RATES="12 24 36" PHASE=20 bench/hpa-target.sh
#   NAMESPACE=hpa LOADGEN_CPU=500m bench/hpa-target.sh   # on a cluster: kubectl benchmatrix
#
# On a cluster (NAMESPACE set) each rate runs through the operator, and the CPU figure is the
# kubelet's (the target pod's CPU seconds from its node's kubelet, as the autoscaler's metrics
# pipeline reads them), not the local runner's cgroup: the script says which it read.
#
# For each rate it prints the rate achieved (fast's, over its share of the traffic) and what
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
LOADGEN_CPU="${LOADGEN_CPU:-1}"
# The share of /slow in the traffic: the seeds' 5% by default; 0 for /fast alone, as a sizing
# that searched /fast alone measured it.
SLOW_SHARE="${SLOW_SHARE:-0.05}"
NAMESPACE="${NAMESPACE:-}"
out_and_binary
if [ -n "$NAMESPACE" ]; then
  kubectl create namespace "$NAMESPACE" >/dev/null 2>&1 || true
fi

read -r MODE CPU MEMORY TARGET ENV < <(python3 - "$STATUS" <<'PY'
import json, sys, yaml
c = yaml.safe_load(open(sys.argv[1]))["sizing"]["chosen"]
env = json.dumps(c.get("env", []), separators=(",", ":"))
print(c["mode"], c["cpu"], c["memory"], c["hpa"]["targetUtilization"], env)
PY
)
stamp
echo "# ${STATUS}: ${MODE}, cpu ${CPU}, memory ${MEMORY}; autoscaler target ${TARGET}%; ${PHASE}s a rate"
for rate in ${RATES}; do
  spec="${OUT}/rate-${rate}.yaml"
  python3 - "$rate" "$MODE" "$CPU" "$MEMORY" "$PHASE" "$LOADGEN_CPU" "$SLOW_SHARE" "$ENV" \
    >"$spec" <<'PY'
import sys
rate, mode, cpu, memory, phase, loadgen_cpu, slow, env = sys.argv[1:]
rate, slow = float(rate), float(slow)
streams = [f"{{endpoint: fast, rate: {rate * (1 - slow):.3f}}}"]
if slow > 0:
    streams.append(f"{{endpoint: slow, rate: {rate * slow:.3f}}}")
print(f"""apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: hpa-rate}}
spec:
  configurations:
    - {{name: chosen, mode: {mode}, replicas: 1, cpu: "{cpu}", memory: {memory}, env: {env}}}
  workload:
    endpoints: [{{name: fast, path: /fast}}, {{name: slow, path: /slow}}]
    warmup: 2s
    phases:
      - name: load
        duration: {phase}s
        load: [{", ".join(streams)}]
  loadgen: {{cpu: "{loadgen_cpu}"}}
  placement: {{neighbourCpuLimit: "1500m"}}""")
PY
  if [ -n "$NAMESPACE" ]; then
    "${BENCHMATRIX}" kubectl run "$spec" -n "$NAMESPACE" --out "${OUT}/rate-${rate}" \
      >"${OUT}/rate-${rate}.log" 2>&1 || true
    kubectl -n "$NAMESPACE" delete benchmarkrun hpa-rate --wait=true >/dev/null 2>&1 || true
  else
    "${BENCHMATRIX}" run "$spec" --out "${OUT}/rate-${rate}" >"${OUT}/rate-${rate}.log" 2>&1 || true
  fi
  python3 - "${OUT}/rate-${rate}/status.yaml" "$rate" "$CPU" "$PHASE" "$TARGET" "$SLOW_SHARE" <<'PY'
import math, sys, yaml
path, rate, cpu, phase, target, slow = sys.argv[1:]
s = yaml.safe_load(open(path))
cell = s["cells"][0]
limit = float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
used = (cell.get("target") or {}).get("cpuSecondsUsed")
source = (cell.get("target") or {}).get("source", "?")
fast = next(r for r in cell.get("results", []) if r["endpoint"] == "fast")
p99 = (fast.get("latencyMs") or {}).get("p99")
if used is None:
    print(f"rate {rate}: no CPU figure ({cell.get('phase')}: {cell.get('message')})")
    sys.exit(0)
util = 100 * used / (float(phase) * limit)
ratio = util / float(target)
desired = math.ceil(ratio) if abs(ratio - 1) > 0.1 else 1
slo = "held" if p99 is not None and p99 < 100 else "FAILED"
print(f"rate {float(rate):5.1f} rps: achieved {fast['rps'] / (1 - float(slow)):5.1f}, utilization {util:5.1f}%, "
      f"autoscaler wants {desired} replica(s); fast p99 {p99:7.1f} ms, SLO {slo} (CPU from {source})")
PY
done
