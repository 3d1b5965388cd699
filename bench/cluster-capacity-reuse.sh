#!/usr/bin/env bash
# What sharing a target between a search's probes saves on a cluster: the e2e's capacity search
# (tests/e2e/capacity.yaml: one replica of the built-in target at 500m, /fast burning 20 ms of
# CPU a request, p99 below 100 ms from 10 rps, probes of 10 s), run ROUNDS times with
# `capacity.reuseTarget: true` and as often with `false` (a fresh target for every probe),
# alternating, each in turn, on the current kubeconfig's cluster with the operator installed.
#
#   ROUNDS=2 bench/cluster-capacity-reuse.sh
#   SPEC=bench/cluster-slow-start.yaml ROUNDS=1 bench/cluster-capacity-reuse.sh   # a slow starter
#
# SPEC is any run with `  name: NAME` and `    probeDuration: 10s` lines (tests/e2e/capacity.yaml
# by default).
# Prints each run's capacity, probes, targets deployed and wall time (the run's startTime to
# its completionTime), then the medians of each kind side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh

ROUNDS="${ROUNDS:-2}"
SPEC="${SPEC:-tests/e2e/capacity.yaml}"
NS="${NS:-bench-capacity-reuse}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
stamp | tee "$OUT/conditions.txt"
kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
for round in $(seq 1 "$ROUNDS"); do
  for reuse in true false; do
    name="reuse-${reuse}-${round}"
    sed -e "s/^  name: NAME$/  name: ${name}/" \
      -e "s/^    probeDuration: 10s$/    probeDuration: 10s\n    reuseTarget: ${reuse}/" \
      "$SPEC" >"$OUT/${name}.yaml"
    grep -q "reuseTarget: ${reuse}" "$OUT/${name}.yaml"
    kubectl apply -n "$NS" -f "$OUT/${name}.yaml" >/dev/null
    kubectl wait -n "$NS" "benchmarkrun/${name}" --for=condition=Complete --timeout=1800s >/dev/null
    kubectl get benchmarkrun -n "$NS" "$name" -o yaml >"$OUT/${name}.status.yaml"
    kubectl delete benchmarkrun -n "$NS" "$name" --wait=true >/dev/null
    echo "${name} done"
  done
done
stamp | tee -a "$OUT/conditions.txt"

python3 - "$OUT" "$ROUNDS" <<'PY'
import datetime, statistics, sys, yaml
out, rounds = sys.argv[1], int(sys.argv[2])
at = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
seen = {"true": [], "false": []}
for r in range(1, rounds + 1):
    for reuse in ("true", "false"):
        run = yaml.safe_load(open(f"{out}/reuse-{reuse}-{r}.status.yaml"))
        st = run["status"]
        cap = st["cells"][0]["capacity"]
        secs = (at(st["completionTime"]) - at(st["startTime"])).total_seconds()
        probes = len(cap["probes"])
        seen[reuse].append((secs, probes))
        print(f"reuseTarget {reuse:5} round {r}: {cap['message']}; targets {cap.get('targets', 0)}, "
              f"{probes} probes in {secs:.0f} s ({secs / probes:.1f} s a probe)")
for reuse in ("true", "false"):
    secs = statistics.median(s for s, _ in seen[reuse])
    per = statistics.median(s / p for s, p in seen[reuse])
    print(f"median reuseTarget {reuse}: {secs:.0f} s a search, {per:.1f} s a probe")
PY
