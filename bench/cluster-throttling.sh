#!/usr/bin/env bash
# Throttling figures of your own service on a real cluster: RUNS (5) runs of examples/own-service
# (busybox httpd through POST with a token from a Secret) cut to two cells, 500m and 1 CPU, and a
# PHASE (25 s) measured phase, one after another; per cell the kubelet's CPU seconds, CFS periods,
# throttled periods and the part of the phase the cadvisor samples covered, or why a figure is
# missing (the cell's target.note), and at the end in how many cells throttling was present.
# Needs the operator installed (charts/benchmatrix) and the busybox:1.36 image on the nodes.
#
#   bench/cluster-throttling.sh
#   RUNS=2 PHASE=20s NAMESPACE=ops-throttle bench/cluster-throttling.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-5}" phase="${PHASE:-25s}" ns="${NAMESPACE:-bench-throttling}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
ex=examples/own-service
kubectl -n "$ns" create configmap own-service-www \
  --from-file=orders="$ex/www/cgi-bin/orders" --from-file=healthz="$ex/www/healthz" \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl -n "$ns" create secret generic api-token \
  --from-literal=token="Bearer $(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null
python3 - "$ex/benchmarkrun.yaml" "$phase" >"$out/run.yaml" <<'PY'
import sys, yaml
run = yaml.safe_load(open(sys.argv[1]))
run["metadata"]["name"] = "throttling"
run["spec"]["configurations"] = [
    {"name": "one-500m", "replicas": 1, "cpu": "500m", "memory": "64Mi"},
    {"name": "one-1000m", "replicas": 1, "cpu": "1", "memory": "64Mi"},
]
run["spec"]["workload"]["phases"][0]["duration"] = sys.argv[2]
run["spec"].pop("thresholds", None)
print(yaml.safe_dump(run, sort_keys=False))
PY
report() {
  # Per cell of the runs so far; the last line counts the cells with throttling figures.
  python3 - "$out" "$1" <<'PY'
import json, sys
present = cells = 0
for i in range(1, int(sys.argv[2]) + 1):
    run = json.load(open(f"{sys.argv[1]}/run-{i}.json"))
    for c in run["status"]["cells"]:
        t = c.get("target") or {}
        cells += 1
        has = t.get("throttledPeriods") is not None and t.get("cfsPeriods") is not None
        present += has
        if i == int(sys.argv[2]):
            print(f"run {i} {c['name']}: {c.get('phase')}, CPU {t.get('cpuSecondsUsed')} s, "
                  f"throttled {t.get('throttledPeriods')} of {t.get('cfsPeriods')} periods "
                  f"({t.get('throttledSeconds')} s), cadvisor samples covered "
                  f"{t.get('throttleCoveredSeconds')} s" + (f"; note: {t['note']}" if t.get("note") else ""),
                  flush=True)
print(f"after {sys.argv[2]} run(s): throttling present in {present} of {cells} cells", flush=True)
PY
}
for i in $(seq 1 "$runs"); do
  kubectl delete benchmarkrun -n "$ns" throttling --ignore-not-found --wait=true >/dev/null
  kubectl apply -n "$ns" -f "$out/run.yaml" >/dev/null
  kubectl wait -n "$ns" benchmarkrun/throttling --for=condition=Complete --timeout=600s >/dev/null
  kubectl get benchmarkrun -n "$ns" throttling -o json >"$out/run-$i.json"
  report "$i"
done
