#!/usr/bin/env bash
# Busy neighbours are flagged (issue 28, item 3): on a real cluster of two nodes, starts a
# busy-loop pod (busybox, `while :; do :; done`, limited to BUSY_CPU, 300m) pinned to BUSY_NODE,
# then a 2-cell run at parallelism 2, repeat 2 (500m targets, 400m load generators: each node of
# 1 CPU holds one measurement; the busy pod requests only 10m, so both nodes still hold one), so
# that each cell is measured once on each node. Prints each repetition's node, the CPU used on it
# outside the measurement's own pods (status neighbours[].foreignCpu), its busy flag and top
# other pod, and the report's Neighbours section; exits 1 unless every measurement on BUSY_NODE
# was flagged and none on QUIET_NODE was (spec.placement.neighbourCpuLimit: LIMIT, 250m).
#
# Needs the operator installed with its kubelet figures on (scripts/install-operator.sh), kubectl
# pointed at the cluster, and a benchmatrix binary (BENCHMATRIX, default the one on PATH) for
# `report`. The busy pod and the run are deleted on exit.
#
#   bench/cluster-neighbours.sh        BUSY_NODE=realk8s-node2 QUIET_NODE=realk8s-node BUSY_CPU=300m
set -euo pipefail
cd "$(dirname "$0")/.."
ns="${NAMESPACE:-bench-neighbours}" noise_ns="${NOISE_NAMESPACE:-bench-noise}"
out="${OUT:-build/neighbours}" bm="${BENCHMATRIX:-benchmatrix}"
busy_node="${BUSY_NODE:-realk8s-node2}" quiet_node="${QUIET_NODE:-realk8s-node}"
busy_cpu="${BUSY_CPU:-300m}" limit="${LIMIT:-250m}"
mkdir -p "$out"
for n in "$ns" "$noise_ns"; do
  kubectl create namespace "$n" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
done
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  kubectl delete benchmarkrun -n "$ns" neighbours --ignore-not-found --wait=true >/dev/null 2>&1 || true
  kubectl delete pod -n "$noise_ns" busy --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

echo "== a busy loop of at most $busy_cpu on $busy_node ($(date -u +%H:%M:%S))"
kubectl delete pod -n "$noise_ns" busy --ignore-not-found --wait=true >/dev/null
kubectl apply -n "$noise_ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: busy, labels: {app: busy}}
spec:
  nodeName: $busy_node
  terminationGracePeriodSeconds: 0
  containers:
    - name: loop
      image: busybox:1.36
      command: [sh, -c, 'while :; do :; done']
      resources:
        requests: {cpu: 10m, memory: 16Mi}
        limits: {cpu: $busy_cpu, memory: 16Mi}
EOF
kubectl wait -n "$noise_ns" pod/busy --for=condition=Ready --timeout=180s >/dev/null

echo "== a 2-cell run, parallelism 2, repeat 2, neighbourCpuLimit $limit ($(date -u +%H:%M:%S))"
kubectl delete benchmarkrun -n "$ns" neighbours --ignore-not-found --wait=true >/dev/null
kubectl apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: neighbours}
spec:
  parallelism: 2
  repeat: 2
  placement:
    neighbourCpuLimit: $limit
  configurations:
    - {name: single, mode: single, replicas: 1, cpu: 500m, memory: 128Mi}
    - {name: pool, mode: pool, replicas: 1, cpu: 500m, memory: 128Mi}
  workload:
    endpoints: [{name: fast, path: /fast}]
    warmup: 2s
    phases:
      - {name: steady, duration: 20s, load: [{endpoint: fast, connections: 2}]}
  loadgen: {cpu: 400m, memory: 128Mi}
  timeouts: {ready: 120s, runSlack: 60s}
  cleanup: Always
EOF
kubectl wait -n "$ns" benchmarkrun/neighbours --for=condition=Complete --timeout=900s >/dev/null
kubectl get benchmarkrun -n "$ns" neighbours -o yaml >"$out/neighbours.yaml"
kubectl get events -n "$ns" --field-selector reason=BusyNeighbours \
  -o custom-columns=REASON:.reason,MESSAGE:.message --no-headers >"$out/events.txt" || true

echo "== each repetition's node and what else used it"
code=0
python3 - "$out/neighbours.yaml" "$busy_node" "$quiet_node" <<'PY' || code=$?
import sys, yaml
run, busy_node, quiet_node = yaml.safe_load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
st = run["status"]
print(f"run {st['phase']}; slots: {(st.get('parallelism') or {}).get('message', '?')}")
wrong, seen = [], {busy_node: 0, quiet_node: 0}
for c in st["cells"]:
    for r in c.get("repetitions") or []:
        for n in r.get("neighbours") or []:
            top = (n.get("pods") or [{}])[0]
            figure = n.get("foreignCpu")
            print(f"  {c['name']:7s} #{r['repetition']} {r['phase']:9s} node {n['node']:16s} "
                  f"other CPU {'-' if figure is None else f'{figure:.3f}':>6s} "
                  f"over {n.get('windowSeconds', '-')} s  busy {str(n.get('busy', False)):5s} "
                  f"top {top.get('pod', '-')} {top.get('cpu', '')}"
                  + (f"  missing: {n['missing']}" if n.get("missing") else ""))
            if n["node"] in seen:
                seen[n["node"]] += 1
            want = n["node"] == busy_node
            if n.get("missing") or bool(n.get("busy")) != want:
                wrong.append(f"{c['name']}#{r['repetition']} on {n['node']}: busy "
                             f"{n.get('busy', False)}, want {want}")
for node, count in seen.items():
    if count == 0:
        wrong.append(f"no measurement on {node}")
if st["phase"] != "Succeeded":
    wrong.append(f"the run ended {st['phase']}: {st.get('message')}")
print("flags as expected" if not wrong else "UNEXPECTED:\n  " + "\n  ".join(wrong))
sys.exit(1 if wrong else 0)
PY
echo "== BusyNeighbours Events"
cat "$out/events.txt"
echo "== the report's Neighbours section"
"$bm" report "$out/neighbours.yaml" --out "$out/report" >/dev/null
sed -n '/^## Neighbours/,/^## /p' "$out/report/report.md" | sed '/^## [^N]/d'
exit "$code"
