#!/usr/bin/env bash
# Parallel measurement on a real cluster (issue 28). Needs the operator installed
# (charts/benchmatrix, e.g. scripts/install-operator.sh or tests/e2e/kind.sh with
# KEEP_CLUSTER=1), kubectl pointed at the cluster, and a benchmatrix binary (BENCHMATRIX, default
# the one on PATH) for `compare` and `report`.
#
# 1. manifests/samples/parallel.yaml (4 one-replica 500m cells, repeat 3) at parallelism 1 and
#    at parallelism 2, one after the other in this one script run: each run's wall time (status
#    startTime to completionTime), `benchmatrix compare` of the two statuses, the node of every
#    repetition, and the parallel run's node-effect table (report.md).
# 2. The stress run: RUNS runs of tests/e2e/repeat-stress.yaml (2 cells x repeat REPEAT) at
#    parallelism 2, and how many measurements failed. Its load generator asks for
#    STRESS_LOADGEN_CPU (400m) rather than the file's 500m: on two nodes of 1 CPU, where the
#    operator's own pod requests 50m on one, a 500m target beside a 500m load generator fits
#    only the other node, so the run would get one slot of both nodes and measure one at a time.
#
#   bench/parallel-cluster.sh                      OUT=build/parallel RUNS=5 REPEAT=10
#   PARTS=compare bench/parallel-cluster.sh        only part 1 (PARTS=stress: only part 2)
set -euo pipefail
cd "$(dirname "$0")/.."
ns="${NAMESPACE:-bench-parallel}" out="${OUT:-build/parallel}" runs="${RUNS:-5}" repeat="${REPEAT:-10}"
bm="${BENCHMATRIX:-benchmatrix}" parts="${PARTS:-compare stress}"
stress_loadgen_cpu="${STRESS_LOADGEN_CPU:-400m}"
mkdir -p "$out"
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null

# run NAME PARALLELISM FILE [REPEAT [LOADGEN_CPU]]: applies FILE as NAME at PARALLELISM (and
# with REPEAT and its load generator's cpu, when given), waits, saves NAME.yaml.
run() {
  local name="$1" p="$2" file="$3" rep="${4:-}" lg_cpu="${5:-}"
  kubectl delete benchmarkrun -n "$ns" "$name" --ignore-not-found --wait=true >/dev/null
  sed -e "s/^  name: .*$/  name: ${name}/" -e "s/^  parallelism: .*$//" \
    -e "s/^spec:$/spec:\n  parallelism: ${p}/" \
    ${rep:+-e "s/^  repeat: .*$/  repeat: ${rep}/"} \
    ${lg_cpu:+-e "s/^  loadgen: {cpu: [0-9a-z.]*,/  loadgen: {cpu: ${lg_cpu},/"} "$file" |
    kubectl apply -n "$ns" -f - >/dev/null
  kubectl wait -n "$ns" "benchmarkrun/$name" --for=condition=Complete --timeout=1800s >/dev/null
  kubectl get benchmarkrun -n "$ns" "$name" -o yaml >"$out/$name.yaml"
  kubectl delete benchmarkrun -n "$ns" "$name" --wait=true >/dev/null
}

if [[ " $parts " == *" compare "* ]]; then
echo "== parallelism 1, then 2 ($(date -u +%H:%M:%S))"
run serial 1 manifests/samples/parallel.yaml
run parallel 2 manifests/samples/parallel.yaml
python3 - "$out" <<'PY'
import sys, yaml
from datetime import datetime
when = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
walls = {}
for name in ["serial", "parallel"]:
    run = yaml.safe_load(open(f"{sys.argv[1]}/{name}.yaml"))
    st = run["status"]
    walls[name] = (when(st["completionTime"]) - when(st["startTime"])).total_seconds()
    print(f"{name}: parallelism {run['spec'].get('parallelism', 1)}, {st['phase']}, wall {walls[name]:.0f} s; "
          f"slots: {(st.get('parallelism') or {}).get('message', '1 (one at a time)')}")
    for c in st["cells"]:
        reps = c.get("repetitions") or []
        print(f"  {c['name']:8s} {c['phase']:9s} " + "  ".join(
            f"#{r['repetition']} {','.join(r.get('nodes') or ['?'])} {r['phase']}" for r in reps))
print(f"wall time parallelism 2 / parallelism 1: {walls['parallel'] / walls['serial']:.2f}")
PY
echo "== benchmatrix compare serial parallel"
"$bm" compare "$out/serial.yaml" "$out/parallel.yaml" || true
echo "== node effects of the parallel run"
"$bm" report "$out/parallel.yaml" --out "$out/parallel-report" >/dev/null
sed -n '/^## Node effects/,/^## /p' "$out/parallel-report/report.md" | sed '$d'
echo "== node effects of the serial run (for comparison; one at a time, unpinned)"
"$bm" report "$out/serial.yaml" --out "$out/serial-report" >/dev/null
sed -n '/^## Node effects/,/^## /p' "$out/serial-report/report.md" | sed '$d'
fi

[[ " $parts " == *" stress "* ]] || exit 0
echo "== stress: $runs runs x 2 cells x repeat $repeat at parallelism 2, load generator cpu $stress_loadgen_cpu ($(date -u +%H:%M:%S))"
for i in $(seq 1 "$runs"); do
  run "stress-$i" 2 tests/e2e/repeat-stress.yaml "$repeat" "$stress_loadgen_cpu"
done
python3 - "$out" "$runs" <<'PY'
import sys, yaml
from datetime import datetime
when = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
total = measured = 0
failures, both = [], 0
for i in range(1, int(sys.argv[2]) + 1):
    run = yaml.safe_load(open(f"{sys.argv[1]}/stress-{i}.yaml"))
    st, want = run["status"], run["spec"]["repeat"]
    ok = 0
    for c in st["cells"]:
        reps = c.get("repetitions") or []
        total += want
        for r in reps:
            if r["phase"] == "Succeeded":
                ok += 1
            else:
                failures.append(f"stress-{i} {c['name']}#{r['repetition']}: {r.get('reason')}: {r.get('message')}")
        if len(reps) < want:
            failures.append(f"stress-{i} {c['name']}: {want - len(reps)} repetition(s) never ran ({c.get('reason')})")
    measured += ok
    # Steps of the two cells that overlapped in time, and on which nodes.
    steps = [(when(r["startTime"]), when(r["completionTime"]), tuple(r.get("nodes") or []), c["name"])
             for c in st["cells"] for r in c.get("repetitions") or [] if r.get("startTime") and r.get("completionTime")]
    overlaps = shared = 0
    for a in steps:
        for b in steps:
            if a[3] < b[3] and a[0] < b[1] and b[0] < a[1]:
                overlaps += 1
                shared += bool(set(a[2]) & set(b[2]))
    both += overlaps
    wall = (when(st["completionTime"]) - when(st["startTime"])).total_seconds()
    print(f"stress-{i}: {st['phase']}, {ok} of {2 * want} measured, wall {wall:.0f} s, "
          f"{overlaps} overlapping pairs of measurements, {shared} of them on a shared node; "
          f"slots: {(st.get('parallelism') or {}).get('message', '?')}")
print(f"measured {measured} of {total}; false failures: {len(failures)}; overlapping pairs {both}")
for f in failures:
    print("  " + f)
PY
