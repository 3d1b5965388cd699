#!/usr/bin/env bash
# A burst on a real cluster: RUNS BenchmarkRuns applied at once (one cell, a 1 s warm-up and one
# 2 s phase on /healthz each, so the operator's queue does the work), then: how many ended
# Succeeded, and the operator's own figures over the burst, read from its /metrics before and
# after (through the API server's service proxy): reconciles, their duration's p50 and p99 (from
# the histogram's buckets, interpolated within one), API requests per reconcile
# (benchmatrix_api_requests_total over benchmatrix_reconciles_total, when the operator has that
# counter), refused status writes, and where the time went: each part of a reconcile (reading
# the run again, its step's reads, the engine's turn, the status write, the children; and the
# Events, in an operator older than 2026-12-05) by the run's phase
# (benchmatrix_reconcile_stage_duration_seconds, when the operator has it). Beside the operator's own count it reads the API server's requests on benchmarkruns
# (apiserver_request_total, group benchmatrix.dev: only the operator, and this script's
# applies, call it), which an operator without the counter can be measured by; and the API
# server's own time per write on the operator's kinds (apiserver_request_duration_seconds: its
# APPLY, PATCH, POST and DELETE on runs, Deployments, Services, ConfigMaps and Jobs; this
# script's 50 applies and its deletion of the previous burst's runs among them), the floor under
# a reconcile's own time. (With several API servers each read of /metrics may reach another
# one: point kubectl at one of them, or these differences mean nothing.)
# Needs the operator installed (charts/benchmatrix, e.g. tests/e2e/kind.sh) and kubectl pointed at
# the cluster, with get on the API server's /metrics.
#
#   bench/cluster-burst.sh                     50 runs in namespace bench-burst
#   RUNS=10 NAMESPACE=ops-burst bench/cluster-burst.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
runs="${RUNS:-50}" ns="${NAMESPACE:-bench-burst}"
release_ns="${RELEASE_NAMESPACE:-benchmatrix-system}" svc="${METRICS_SERVICE:-benchmatrix-metrics:metrics}"
timeout="${TIMEOUT:-1800}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

operator_metrics() {
  kubectl get --raw "/api/v1/namespaces/${release_ns}/services/${svc}/proxy/metrics"
}
# The API server's own figures for the burst: its requests on benchmarkruns, and its time per
# request for the writes a reconcile waits on (apiserver_request_duration_seconds).
apiserver_metrics() {
  kubectl get --raw /metrics | grep -E '^apiserver_request_(total|duration_seconds_bucket)\{' || true
}

kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl delete benchmarkrun -n "$ns" --all --wait=true >/dev/null
operator_metrics >"$out/before.txt"
apiserver_metrics >"$out/api-before.txt"
for i in $(seq 1 "$runs"); do
  echo ---
  tiny_run "burst-$i" "timeouts: {ready: 120s, runSlack: 60s}"
done >"$out/runs.yaml"
start=$(date +%s)
kubectl apply -n "$ns" -f "$out/runs.yaml" >/dev/null
echo "applied $runs runs at $(date -u +%H:%M:%S)"
while :; do
  phases="$(kubectl get benchmarkrun -n "$ns" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}')"
  finished=$(grep -cE '^(Succeeded|Failed)$' <<<"$phases" || true)
  if ((finished >= runs)); then break; fi
  if (($(date +%s) - start > timeout)); then echo "not finished within ${timeout}s" >&2; break; fi
  sleep 10
done
wall=$(($(date +%s) - start))
operator_metrics >"$out/after.txt"
apiserver_metrics >"$out/api-after.txt"
kubectl get benchmarkrun -n "$ns" -o json >"$out/runs.json"
python3 - "$out" "$runs" "$wall" <<'PY'
import json, re, sys
out, runs, wall = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def metrics(path):
    m = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        key, value = line.rsplit(" ", 1)
        m[key] = float(value)
    return m

a, b = metrics(f"{out}/before.txt"), metrics(f"{out}/after.txt")
d = lambda k: b.get(k, 0.0) - a.get(k, 0.0)
items = json.load(open(f"{out}/runs.json"))["items"]
ok = sum(1 for r in items if r.get("status", {}).get("phase") == "Succeeded")
print(f"runs Succeeded: {ok} of {runs} (wall {wall} s)")
for r in items:
    s = r.get("status", {})
    if s.get("phase") != "Succeeded":
        print(f"  {r['metadata']['name']}: {s.get('phase')}: {s.get('message')}")
reconciles = d("benchmatrix_reconciles_total")
buckets = sorted(
    (float(re.search(r'le="([^"]+)"', k).group(1)), d(k))
    for k in b if k.startswith("benchmatrix_reconcile_duration_seconds_bucket")
)
count = d("benchmatrix_reconcile_duration_seconds_count")

def quantile(q, buckets=buckets, count=count):
    want, prev_le, prev_n = q * count, 0.0, 0.0
    for le, n in buckets:
        if n >= want:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * (want - prev_n) / max(n - prev_n, 1e-9)
        prev_le, prev_n = le, n
    return float("nan")

over = lambda t: count - next((n for le, n in buckets if le >= t), count)
# The goal's 50 ms is a bucket edge from 2026-12-05 on; an older operator's doubling buckets
# have 64 ms (and 256 ms) as the nearest edges.
goal = 0.05 if any(abs(le - 0.05) < 1e-9 for le, _ in buckets) else 0.064
far = 0.25 if goal == 0.05 else 0.256
print(f"reconciles: {reconciles:.0f}; duration p50 {quantile(0.5) * 1000:.1f} ms, "
      f"p99 {quantile(0.99) * 1000:.1f} ms (interpolated within a bucket); "
      f"over {far * 1000:.0f} ms: {over(far) / max(count, 1) * 100:.1f}%, "
      f"over {goal * 1000:.0f} ms: {over(goal):.0f} ({over(goal) / max(count, 1) * 100:.2f}%; "
      f"the p99 is under {goal * 1000:.0f} ms when this is under 1%)")
# Where the time went: each part of a reconcile (benchmatrix_reconcile_stage_duration_seconds),
# by the run's phase when the reconcile began; a part a reconcile skips is not counted.
stages = {}
for k in b:
    if k.startswith("benchmatrix_reconcile_stage_duration_seconds_bucket"):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', k))
        key = (labels["phase"], labels["stage"])
        stages.setdefault(key, []).append((float(labels["le"]), d(k)))
if stages:
    print(f"parts of a reconcile (phase, part: count, p50, p99, over {goal * 1000:.0f} ms):")
    for (phase, stage), bs in sorted(stages.items()):
        bs.sort()
        n = bs[-1][1]
        if n <= 0:
            continue
        slow = n - next((c for le, c in bs if le >= goal - 1e-9), n)
        print(f"  {phase:9} {stage:9} {n:6.0f}  p50 {quantile(0.5, bs, n) * 1000:6.1f} ms  "
              f"p99 {quantile(0.99, bs, n) * 1000:6.1f} ms  over {goal * 1000:.0f} ms {slow:4.0f}")
requests = sum(d(k) for k in b if k.startswith("benchmatrix_api_requests_total"))
if requests:
    by = {re.search(r'method="([^"]+)"', k).group(1): d(k) for k in b if k.startswith("benchmatrix_api_requests_total")}
    print(f"operator API requests: {requests:.0f}, {requests / max(reconciles, 1):.2f} per reconcile "
          f"({', '.join(f'{m} {n:.0f}' for m, n in sorted(by.items()))})")
sa, sb = metrics(f"{out}/api-before.txt"), metrics(f"{out}/api-after.txt")
sd = lambda k: sb.get(k, 0.0) - sa.get(k, 0.0)
api = sum(sd(k) for k in sb if k.startswith("apiserver_request_total{") and 'group="benchmatrix.dev"' in k)
print(f"API server requests on group benchmatrix.dev: {api:.0f} ({api / max(reconciles, 1):.2f} per reconcile; "
      f"includes this script's {runs} applies and its polling)")
# How long the API server itself took for each write a reconcile waits on: the floor under
# the reconcile's own figure (its buckets have 5, 25, 50 and 100 ms edges).
writes = {}
for k in sb:
    if not k.startswith("apiserver_request_duration_seconds_bucket{"):
        continue
    labels = dict(re.findall(r'(\w+)="([^"]*)"', k))
    what = (labels.get("verb"), labels.get("resource"), labels.get("subresource", ""))
    if what[0] in ("APPLY", "PATCH", "POST", "DELETE") and what[1] in (
            "benchmarkruns", "deployments", "services", "configmaps", "jobs"):
        le = float(labels["le"])
        bs = writes.setdefault(what, {})
        bs[le] = bs.get(le, 0.0) + sd(k)
if writes:
    print("the API server's own time per write (verb resource: count, p50, over 50 ms):")
    for (verb, resource, sub), bs in sorted(writes.items()):
        bs = sorted(bs.items())
        n = bs[-1][1]
        if n <= 0:
            continue
        slow = n - next((c for le, c in bs if le >= 0.05 - 1e-9), n)
        name = f"{resource}/{sub}" if sub else resource
        print(f"  {verb:6} {name:21} {n:5.0f}  p50 {quantile(0.5, bs, n) * 1000:5.1f} ms  "
              f"over 50 ms {slow:4.0f} ({slow / n * 100:.1f}%)")
refused = sum(d(k) for k in b if k.startswith("benchmatrix_status_write_refused_total"))
print(f"refused status writes: {refused:.0f}")
PY
