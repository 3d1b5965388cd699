#!/usr/bin/env bash
# Repetitions on a real cluster: RUNS runs, one after another, of two cells x repeat REPEAT with
# a 1 s warm-up and one 2 s phase on /healthz (nothing disturbs them), and per run how many of
# the 2 x REPEAT measurements succeeded, the failures with their reasons, and the handover
# between measurements (one repetition's completionTime to the next one's startTime: the
# previous pods' containers stopping, then the next Deployment). Needs the operator installed
# (charts/benchmatrix, e.g. by tests/e2e/kind.sh with KEEP_CLUSTER=1) and kubectl pointed at the
# cluster.
#
#   bench/cluster-repeat-stress.sh                 5 runs x 2 cells x repeat 10 = 100
#   RUNS=6 REPEAT=6 bench/cluster-repeat-stress.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-5}" repeat="${REPEAT:-10}" ns="${NAMESPACE:-bench-stress}"
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for i in $(seq 1 "$runs"); do
  name="stress-$i"
  kubectl delete benchmarkrun -n "$ns" "$name" --ignore-not-found --wait=true >/dev/null
  sed -e "s/^  name: NAME$/  name: ${name}/" -e "s/^  repeat: REPEAT$/  repeat: ${repeat}/" \
    tests/e2e/repeat-stress.yaml | kubectl apply -n "$ns" -f - >/dev/null
  kubectl wait -n "$ns" "benchmarkrun/$name" --for=condition=Complete --timeout=900s >/dev/null
  kubectl get benchmarkrun -n "$ns" "$name" -o json >"$out/$name.json"
done
python3 - "$out" "$runs" <<'PY'
import glob, json, statistics, sys
from datetime import datetime
when = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
total = measured = 0
all_gaps, failures, walls = [], [], []
for path in sorted(glob.glob(f"{sys.argv[1]}/*.json")):
    run = json.load(open(path))
    status, name = run["status"], run["metadata"]["name"]
    steps = []
    for cell in status["cells"]:
        want = run["spec"]["repeat"]
        reps = cell.get("repetitions") or []
        total += want
        for r in reps:
            if r.get("phase") == "Succeeded":
                measured += 1
            else:
                failures.append(f"{name} {cell['name']}#{r.get('repetition')}: {r.get('reason')}: {r.get('message')}")
            if r.get("startTime") and r.get("completionTime"):
                steps.append((when(r["startTime"]), when(r["completionTime"])))
        if len(reps) < want:
            failures.append(f"{name} {cell['name']}: {want - len(reps)} repetition(s) never ran ({cell.get('reason')})")
    steps.sort()
    gaps = [(b[0] - a[1]).total_seconds() for a, b in zip(steps, steps[1:])]
    all_gaps += gaps
    wall = (when(status["completionTime"]) - when(status["startTime"])).total_seconds()
    walls.append(wall)
    print(f"{name}: {status['phase']}, {sum(1 for c in status['cells'] for r in c.get('repetitions') or [] if r.get('phase') == 'Succeeded')} of {len(status['cells']) * run['spec']['repeat']} measured, "
          f"wall {wall:.0f} s, handover median {statistics.median(gaps):.0f} s, max {max(gaps):.0f} s")
print(f"\nmeasured {measured} of {total}; false failures: {len(failures)}")
for f in failures:
    print("  " + f)
print(f"handovers: {len(all_gaps)}, median {statistics.median(all_gaps):.0f} s, max {max(all_gaps):.0f} s "
      f"(whole seconds); run wall time median {statistics.median(walls):.0f} s")
PY
