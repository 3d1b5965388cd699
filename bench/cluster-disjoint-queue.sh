#!/usr/bin/env bash
# Runs on disjoint nodes measure at the same time (issue 28): on a real cluster of two nodes,
# labels one node pool=a and the other pool=b, then applies three runs a second apart: q-a
# (placement.nodeSelector pool: a), q-b (pool: b) and q-any (no selector). With the chart's
# default maxActiveRuns of 1, q-a and q-b must be Running at the same time, each on its own
# node, and q-any (which could land on either node) must wait until both have finished.
# Prints each run's start and end and exits 1 when the queue did otherwise.
#
# Needs the operator installed (charts/benchmatrix, e.g. tests/e2e/kind.sh) and kubectl pointed
# at the cluster. The node labels are removed again on exit.
#
#   bench/cluster-disjoint-queue.sh        NODE_A=realk8s-node NODE_B=realk8s-node2 REPEAT=3
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
ns="${NAMESPACE:-bench-disjoint}" out="${OUT:-build/disjoint-queue}" repeat="${REPEAT:-3}"
node_a="${NODE_A:-realk8s-node}" node_b="${NODE_B:-realk8s-node2}"
mkdir -p "$out"
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
cleanup() {
  kubectl delete benchmarkrun -n "$ns" --all --wait=true >/dev/null 2>&1 || true
  kubectl label node "$node_a" "$node_b" pool- >/dev/null 2>&1 || true
}
trap cleanup EXIT
kubectl label node "$node_a" pool=a --overwrite >/dev/null
kubectl label node "$node_b" pool=b --overwrite >/dev/null

# spec NAME [POOL]: a one-cell run (500m target and 400m load generator: one node of 1 CPU holds
# both beside the operator's own 50m),
# repeat REPEAT, on the nodes labelled pool=POOL (no POOL: anywhere).
spec() {
  cat <<EOF
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: $1}
spec:
  repeat: $repeat
  configurations:
    - {name: a, mode: single, replicas: 1, cpu: 500m, memory: 128Mi}
  workload:
    endpoints: [{name: healthz, path: /healthz}]
    warmup: 1s
    phases: [{name: p, duration: 5s, load: [{endpoint: healthz, connections: 2}]}]
  loadgen: {cpu: 400m, memory: 128Mi}
  timeouts: {ready: 120s, runSlack: 60s}
  cleanup: Always
EOF
  if [[ -n "${2:-}" ]]; then
    echo "  placement: {nodeSelector: {pool: $2}}"
  fi
}

stamp
kubectl delete benchmarkrun -n "$ns" --all --wait=true >/dev/null
spec q-a a | kubectl apply -n "$ns" -f - >/dev/null
sleep 1
spec q-b b | kubectl apply -n "$ns" -f - >/dev/null
sleep 1
spec q-any | kubectl apply -n "$ns" -f - >/dev/null
sleep 3
echo "== 3 s after the last apply"
kubectl get benchmarkrun -n "$ns" -o custom-columns='NAME:.metadata.name,PHASE:.status.phase,MESSAGE:.status.message'
for run in q-a q-b q-any; do
  kubectl wait -n "$ns" "benchmarkrun/$run" --for=condition=Complete --timeout=900s >/dev/null
  kubectl get benchmarkrun -n "$ns" "$run" -o yaml >"$out/$run.yaml"
done
python3 - "$out" <<'PY'
import sys, yaml
from datetime import datetime
when = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
runs, phases = {}, []
for name in ["q-a", "q-b", "q-any"]:
    st = yaml.safe_load(open(f"{sys.argv[1]}/{name}.yaml"))["status"]
    phases.append(st["phase"])
    runs[name] = (when(st["startTime"]), when(st["completionTime"]))
    nodes = sorted({n for c in st["cells"] for r in c.get("repetitions") or [] for n in r.get("nodes") or []})
    print(f"{name:6s} {st['phase']:9s} {runs[name][0]:%H:%M:%S} to {runs[name][1]:%H:%M:%S}  nodes: {', '.join(nodes) or '?'}")
(a0, a1), (b0, b1), (n0, _) = runs["q-a"], runs["q-b"], runs["q-any"]
overlap = (min(a1, b1) - max(a0, b0)).total_seconds()
ok = overlap > 0 and n0 >= max(a1, b1) and phases == ["Succeeded"] * 3
print(f"q-a and q-b measured at the same time for {max(overlap, 0):.0f} s; "
      f"q-any started {(n0 - max(a1, b1)).total_seconds():.0f} s after both ended: {'as expected' if ok else 'NOT as expected'}")
sys.exit(0 if ok else 1)
PY
