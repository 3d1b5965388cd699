#!/usr/bin/env bash
# Runs tests/e2e/kind.sh against stand-ins for kind, docker, helm and kubectl that record their
# calls, to check the script's flow where no cluster or Docker engine exists (this is what
# scripts/check-delivery.sh runs). It checks: the order of the steps, that images are built,
# loaded and installed under the same names, that a Failed run exits non-zero and dumps
# diagnostics, KEEP_CLUSTER=1, existing-cluster mode with a user-given load command, the CI
# gate, repeat and stress steps (and a gate whose thresholds failed), and the opt-in API server outage
# check against a stand-in API that goes away and comes back (recovered in time, and too late).
# It also checks tests/e2e/check_results.py on planted runs: passing ones and ones with one
# fault each (a failed verdict, a missing verdict, repetitions run a a b b, no spread).
# The real thing runs in .github/workflows/e2e.yml.
set -euo pipefail
cd "$(dirname "$0")/../.."

root="$(pwd)"
# shellcheck source=tests/selftest-lib.sh
source "${root}/tests/selftest-lib.sh"

recording_stubs kind helm stubload
# docker: `create` prints a container id; `cp` leaves a stand-in benchmatrix binary that records
# its calls too.
cat >"${stubs}/docker" <<'STUB'
#!/usr/bin/env bash
echo "docker $*" >>"${STUB_LOG}"
case "$1" in
  create) echo "stub-container" ;;
  cp)
    printf '#!/usr/bin/env bash\necho "benchmatrix $*" >>"${STUB_LOG}"\n' >"$3"
    chmod +x "$3"
    ;;
  # The control-plane node: moving the static pod manifests out takes the API away, moving
  # them back brings it back.
  exec)
    case "$*" in
      *"mv /etc/kubernetes/manifests/kube-apiserver.yaml /etc/kubernetes/manifests/etcd.yaml /etc/kubernetes/") touch "${STUB_STATE}/down" ;;
      *"mv /etc/kubernetes/kube-apiserver.yaml /etc/kubernetes/etcd.yaml /etc/kubernetes/manifests/")
        rm -f "${STUB_STATE}/down"
        touch "${STUB_STATE}/restored"
        ;;
      *"crictl ps -q --name "*) echo "id-${!#}" ;;
    esac
    ;;
esac
exit 0
STUB
cat >"${stubs}/kubectl" <<'STUB'
#!/usr/bin/env bash
echo "kubectl $*" >>"${STUB_LOG}"
args="$*"
# Like the real kubectl, read the whole manifest given on stdin.
if [[ " ${args} " == *" -f - "* ]]; then cat >/dev/null; fi
# Keep the copy of ci-gate.yaml that the repeat step writes, to check it.
if [[ "${args}" == "apply "*"/repeat.yaml" ]]; then cp "${args##* }" "${STUB_STATE}/repeat.yaml"; fi
case "${args}" in
  # The run whose one cell can never fit: refused at once, Unschedulable, nothing deployed.
  *"e2e-unfit"*"jsonpath={.status.phase}"*) echo -n "Failed" ;;
  *"e2e-unfit"*"jsonpath={.status.cells[0].reason}"*) echo -n "Unschedulable" ;;
  *"e2e-unfit"*"jsonpath={.status.cells[0].message}"*)
    echo -n "needs 4096 CPUs on one node; the largest allocatable is 2 (node stub)" ;;
  *"get deployments"*"e2e-unfit"*) ;;
  # The API server: away while the control plane's manifests are moved out; the second it
  # first answers again is kept.
  *"get --raw /readyz"*)
    [[ ! -e "${STUB_STATE}/down" ]] || exit 1
    if [[ -e "${STUB_STATE}/restored" && ! -e "${STUB_STATE}/answered" ]]; then date +%s >"${STUB_STATE}/answered"; fi
    ;;
  # The outage check's run: its first cell runs until the API answers again, then (after
  # STUB_RECOVERY_DELAY seconds) the operator records it.
  *"e2e-restart"*"jsonpath={.status.cells[0].phase}"*) echo -n "Running" ;;
  *"get pods"*"benchmatrix.dev/run=e2e-restart"*) echo -n "Running" ;;
  *"e2e-restart"*"jsonpath={.status.progress} {.status.cells[*].phase}"*)
    [[ ! -e "${STUB_STATE}/down" ]] || exit 1
    if [[ -e "${STUB_STATE}/answered" ]] &&
      (($(date +%s) >= $(cat "${STUB_STATE}/answered") + ${STUB_RECOVERY_DELAY:-0})); then
      echo -n "1/2 Succeeded Deploying"
    else
      echo -n "0/2 Running Pending"
    fi
    ;;
  *"logs -n benchmatrix-system deployment/benchmatrix --since-time="*)
    echo "2026-12-01T10:00:01Z  INFO benchmatrix::executors::cluster: reconciled"
    echo "2026-12-01T10:00:02Z  WARN benchmatrix::executors::cluster::reconciler::outage: lost the API server's watches; retrying until it answers (logged once per outage)"
    echo "$(date -u -d "@$(cat "${STUB_STATE}/answered" 2>/dev/null || date +%s)" +%Y-%m-%dT%H:%M:%SZ)  WARN benchmatrix::executors::cluster::reconciler::outage: the API server answers again: watches re-listed, runs carried on outage_secs=28.0"
    ;;
  # kubectl wait: ThresholdsMet as STUB_THRESHOLDS_MET says; every other condition is met.
  *"wait "*"--for=condition=ThresholdsMet"*) [[ "${STUB_THRESHOLDS_MET:-True}" == True ]] || exit 1 ;;
  *"wait "*) ;;
  *"jsonpath={.status.conditions[?(@.type==\"ThresholdsMet\")].status}"*)
    echo -n "False: threshold 3 failed on pool-x1: mixed/fast p90 812 ms, at most 0.5 x single-x1's 900 ms = 450 ms" ;;
  *"jsonpath={.status.phase}"*) echo -n "${STUB_PHASE}" ;;
  *"jsonpath={.status.progress}"*) echo -n "2/2" ;;
  *"jsonpath={.status.message}"*) echo -n "cell pool failed: image pull" ;;
  *"get benchmarkrun"*"ci-gate-repeat -o json"*) cat "${STUB_FIXTURES}/repeat.json" ;;
  *"get benchmarkrun"*"own-service -o json"*) cat "${STUB_FIXTURES}/own.json" ;;
  *"get benchmarkrun"*"e2e-stress -o json"*) cat "${STUB_FIXTURES}/stress.json" ;;
  *"get benchmarkrun"*"e2e-capacity -o json"*) cat "${STUB_FIXTURES}/capacity.json" ;;
  *"get benchmarkrun"*"ci-gate -o json"*) cat "${STUB_FIXTURES}/gate.json" ;;
  *"get benchmarkrun"*"e2e-restart -o json"*) cat "${STUB_FIXTURES}/restart.json" ;;
  *"get benchmarkrun"*"benchmatrix.dev/e2e=queue -o json"*) cat "${STUB_FIXTURES}/queue.json" ;;
  *"get benchmarkrun"*"-o json"*) cat "${STUB_FIXTURES}/run.json" ;;
  *"get pods"*"-o name"*) echo "pod/stub-0" ;;
  *"config current-context"*) echo "stub-context" ;;
  # Sizing's manifests: the Deployment as the patch would leave it; no metrics API.
  *"patch deployment e2e-sized"*"--dry-run=server"*)
    printf 'spec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: app\n        env: [{name: BENCH_MODE, value: pool}]\n        resources: {limits: {cpu: "1", memory: 256Mi}}\n' ;;
  *"get --raw /apis/metrics.k8s.io"*) exit 1 ;;
  *"create namespace"*"--dry-run=client"*) echo "kind: Namespace" ;;
esac
exit 0
STUB
chmod +x "${stubs}"/*

# Planted runs, as `kubectl get bmr -o json` shows them when finished: ci-smoke (run.json); the
# CI gate with one Pass verdict per threshold and matched cell, counted by hand from
# manifests/samples/ci-gate.yaml (gate.json); the gate repeated until precise, measured a b a b
# (repeat.json); the outage check's two cells (restart.json); and runs with one fault each.
fixtures="${tmp}/fixtures"
mkdir -p "${fixtures}"
python3 - "${fixtures}" manifests/samples/ci-gate.yaml <<'PY'
import copy, json, sys, yaml
out, gate_sample = sys.argv[1], sys.argv[2]
def lat(scale=1.0):
    return {k: v * scale for k, v in {"p50": 1.0, "p90": 2.0, "p99": 3.0, "p999": 4.0, "max": 5.0, "mean": 1.5}.items()}
def res(phase, ep, rps=2.0, scale=1.0):
    return {"phase": phase, "endpoint": ep, "requests": 10, "errors": 0, "rps": rps, "latencyMs": lat(scale)}
def dump(name, run):
    json.dump(run, open(f"{out}/{name}.json", "w"))
def run(name, spec, cells, **status):
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": "Succeeded", "cells": cells, **status}}

smoke = {"configurations": [{"name": "single"}, {"name": "pool"}],
         "workload": {"phases": [{"name": "fast-only", "load": [{"endpoint": "fast"}]},
                                 {"name": "mixed", "load": [{"endpoint": "fast"}, {"endpoint": "slow"}]}]}}
pairs = [("fast-only", "fast"), ("mixed", "fast"), ("mixed", "slow")]
kubelet = {"source": "kubelet", "cpuSecondsUsed": 5.0, "selfReportedCpuSeconds": 5.03, "cpuDifferencePercent": -0.6,
           "workingSetIdleBytes": 1200000, "workingSetPeakBytes": 1300000}
dump("run", run("ci-smoke", smoke, [{"name": n, "phase": "Succeeded", "results": [res(*p) for p in pairs], "target": kubelet}
                                    for n in ("single", "pool")]))
bad = run("ci-smoke", smoke, [{"name": n, "phase": "Succeeded", "results": [res(*p) for p in pairs],
                               "target": dict(kubelet, cpuDifferencePercent=-25.0)} for n in ("single", "pool")])
dump("run-kubelet-disagrees", bad)
bad = run("ci-smoke", smoke, [{"name": n, "phase": "Succeeded", "results": [res(*p) for p in pairs],
                               "target": {"source": "target", "cpuSecondsUsed": 5.0, "note": "kubelet: 403"}} for n in ("single", "pool")])
dump("run-no-kubelet", bad)

# The gate: thresholds 0-2 apply to both cells (no cell, no cell, "*"), 3 ("pool-*"), 4 and 5
# (pool-x1) to pool-x1 only: 9 verdicts.
gate_spec = yaml.safe_load(open(gate_sample))["spec"]
assert len(gate_spec["thresholds"]) == 6, "ci-gate.yaml changed: recount the verdicts below"
judged = [(0, "single-x1"), (0, "pool-x1"), (1, "single-x1"), (1, "pool-x1"), (2, "single-x1"), (2, "pool-x1"),
          (3, "pool-x1"), (4, "pool-x1"), (5, "pool-x1")]
verdicts = [{"index": i, "threshold": f"threshold {i}", "figure": "p90", "cell": c, "phase": "mixed", "endpoint": "fast",
             "measured": 1.0, "limit": 2.0, "verdict": "Pass", "message": "1 <= 2"} for i, c in judged]
met = {"type": "ThresholdsMet", "status": "True", "reason": "ThresholdsPassed", "message": "9 of 9 held"}
summary = {"recommendation": "pool-x1 meets all 2 thresholds with the smallest CPU reservation"}
gate_cells = [{"name": n, "phase": "Succeeded", "results": [res(*p) for p in pairs]} for n in ("single-x1", "pool-x1")]
gate = run("ci-gate", gate_spec, gate_cells, conditions=[met], thresholds=verdicts, summary=summary)
dump("gate", gate)
bad = copy.deepcopy(gate); bad["status"]["thresholds"][6]["verdict"] = "Fail"; dump("gate-failed-verdict", bad)
bad = copy.deepcopy(gate); del bad["status"]["thresholds"][6]; dump("gate-missing-verdict", bad)
bad = copy.deepcopy(gate); bad["status"]["conditions"][0]["status"] = "False"; dump("gate-not-met", bad)
bad = copy.deepcopy(gate); del bad["status"]["summary"]["recommendation"]; dump("gate-no-recommendation", bad)

# Repeat: each repetition 30 s apart, a1 b1 a2 b2; each figure the median of the two.
starts = {("single-x1", 1): "10:00:00", ("pool-x1", 1): "10:00:30", ("single-x1", 2): "10:01:00", ("pool-x1", 2): "10:01:30"}
def repeated(starts):
    cells = []
    for n in ("single-x1", "pool-x1"):
        reps = [{"repetition": r, "phase": "Succeeded", "startTime": f"2026-12-01T{starts[(n, r)]}Z",
                 "results": [res(*p, rps=2.0 * r, scale=r) for p in pairs]} for r in (1, 2)]
        results = []
        for p in pairs:
            merged = res(*p, rps=3.0, scale=1.5)
            merged["spread"] = {"repetitions": 2, "figures": {
                "rps": {"values": [2.0, 4.0], "median": 3.0, "min": 2.0, "max": 4.0},
                "p90": {"values": [2.0, 4.0], "median": 3.0, "min": 2.0, "max": 4.0}}}
            results.append(merged)
        cells.append({"name": n, "phase": "Succeeded", "results": results, "repetitions": reps,
                      "precision": {"precise": True, "repetitions": 2, "widestFigure": "mixed/fast p99",
                                    "widestPercent": 12.5, "message": "precise after 2: every ranked or judged figure's 95% CI within 25% (widest mixed/fast p99 at 12.5%)"}})
    adaptive = {"min": 2, "max": 3, "precision": 25}
    return run("ci-gate-repeat", dict(gate_spec, repeat=adaptive), cells, conditions=[met], thresholds=verdicts, summary=summary)
dump("repeat", repeated(starts))
dump("repeat-not-interleaved", repeated({**starts, ("pool-x1", 1): "10:01:00", ("single-x1", 2): "10:00:30"}))
bad = repeated(starts); del bad["status"]["cells"][1]["results"][2]["spread"]; dump("repeat-no-spread", bad)
bad = repeated(starts); bad["status"]["cells"][0]["results"][0]["spread"]["figures"]["rps"]["values"] = [4.0, 2.0]; dump("repeat-wrong-values", bad)
bad = repeated(starts); del bad["status"]["cells"][1]["precision"]; dump("repeat-no-precision", bad)
bad = repeated(starts); bad["status"]["cells"][0]["precision"].update(precise=False, message="max of 3 reached and still spread"); dump("repeat-imprecise-early", bad)
bad = repeated(starts); bad["status"]["cells"][0]["precision"]["widestPercent"] = 40.0; dump("repeat-too-wide", bad)

# The stress run: cells a and b x 6 repetitions, a1 b1 a2 b2 ..., each 5 s long and started
# `gap` seconds after the one before it ended (stress.json: 1 s; stress-slow.json: one 7 s wait).
def stressed(gaps):
    n, order, t = 6, [(r, c) for r in range(1, 7) for c in ("a", "b")], 0
    times = {}
    for i, (r, c) in enumerate(order):
        t += gaps.get(i, 1) if i else 0
        times[(c, r)] = (t, t + 5)
        t += 5
    stamp = lambda s: f"2026-12-01T10:{s // 60:02d}:{s % 60:02d}Z"
    cells = []
    for c in ("a", "b"):
        reps = [{"repetition": r, "phase": "Succeeded", "startTime": stamp(times[(c, r)][0]),
                 "completionTime": stamp(times[(c, r)][1]),
                 "results": [res("p", "healthz", rps=2.0 * r, scale=r)]} for r in range(1, n + 1)]
        merged = res("p", "healthz", rps=7.0, scale=3.5)
        own = [2.0 * r for r in range(1, n + 1)]
        merged["spread"] = {"repetitions": n, "figures": {
            "rps": {"values": own, "median": 7.0, "min": 2.0, "max": 12.0},
            "p90": {"values": own, "median": 7.0, "min": 2.0, "max": 12.0}}}
        cells.append({"name": c, "phase": "Succeeded", "results": [merged], "repetitions": reps})
    spec = {"repeat": n, "configurations": [{"name": "a"}, {"name": "b"}],
            "workload": {"phases": [{"name": "p", "load": [{"endpoint": "healthz"}]}]}}
    return run("e2e-stress", spec, cells)
dump("stress", stressed({}))
dump("stress-slow", stressed({5: 7}))

restart = {"configurations": [{"name": "single-x1"}, {"name": "pool-x1"}],
           "workload": {"phases": [{"name": "steady", "load": [{"endpoint": "fast"}]}]}}
# The queue: three runs, each admitted the second the one before it ended (queue.json), and
# one admitted 15 s late, as a timer would (queue-late.json).
def queued(starts):
    items = []
    for i, (start, end) in enumerate(starts, 1):
        r = run(f"e2e-queue-{i}", smoke, [{"name": "single-x1", "phase": "Succeeded", "overheadSeconds": 2.0}],
                startTime=f"2026-12-01T10:00:{start:02d}Z", completionTime=f"2026-12-01T10:00:{end:02d}Z")
        items.append(r)
    return {"apiVersion": "v1", "kind": "List", "items": items}
dump("queue", queued([(0, 7), (7, 14), (15, 22)]))
dump("queue-late", queued([(0, 7), (22, 29), (29, 36)]))
# The own service: three cells, every figure from the kubelet, no error, a recommendation by
# the CPU reservation (own.json), and one with an error (own-errors.json).
own_spec = {"configurations": [{"name": n} for n in ("one-500m", "two-250m", "one-1000m")],
            "workload": {"phases": [{"name": "steady", "load": [{"endpoint": "order"}]}]},
            "thresholds": [{"phase": "steady", "endpoint": "order", "p99": {"below": "2s"}}]}
own_target = dict(kubelet, cfsPeriods=450, throttledPeriods=441, throttledSeconds=33.1, throttleCoveredSeconds=31.5)
own_target.pop("selfReportedCpuSeconds"); own_target.pop("cpuDifferencePercent")
own_cells = [{"name": n, "phase": "Succeeded", "results": [res("steady", "order")], "target": own_target}
             for n in ("one-500m", "two-250m", "one-1000m")]
own_verdicts = [{"index": 0, "threshold": "threshold 0", "figure": "p99", "cell": c, "phase": "steady", "endpoint": "order",
                 "measured": 1.0, "limit": 2.0, "verdict": "Pass", "message": "1 <= 2"} for c in ("one-500m", "two-250m", "one-1000m")]
own_summary = {"recommendation": "two-250m meets all 1 thresholds with the smallest CPU reservation (CPU limit x replicas), 0.5 CPU"}
own = run("own-service", own_spec, own_cells, conditions=[met], thresholds=own_verdicts, summary=own_summary)
dump("own", own)
bad = copy.deepcopy(own); bad["status"]["cells"][1]["results"][0]["errors"] = 3; dump("own-errors", bad)
bad = copy.deepcopy(own); del bad["status"]["cells"][2]["target"]["cfsPeriods"]; dump("own-no-throttling", bad)
# A capacity search as the e2e's (tests/e2e/capacity.yaml): 10 and 20 held, 40 failed with
# seconds of backlog (a fresh target next), 30 and 25 failed on kept targets, 20 confirmed.
cap_spec = yaml.safe_load(open("tests/e2e/capacity.yaml"))["spec"]
def probe(n, rate, achieved, verdict, settle=None):
    p = {"probe": n, "rate": rate, "achieved": achieved, "verdict": verdict}
    if settle is not None:
        p["settleSeconds"] = settle
    return p
cap_probes = [probe(1, 10.0, 10.0, "Held"), probe(2, 20.0, 20.0, "Held", 1), probe(3, 40.0, 24.6, "Failed", 1),
              probe(4, 30.0, 24.8, "Failed"), probe(5, 25.0, 24.1, "Failed", 4), probe(6, 20.0, 20.0, "Held", 3)]
cap_status = {"found": True, "heldRate": 20.0, "failedRate": 25.0, "message": "capacity 20 rps: held (and confirmed)",
              "probes": cap_probes, "targets": 2}
cap_cells = [{"name": "single-500m", "phase": "Succeeded", "results": [res("probe", "fast")], "capacity": cap_status}]
capacity = run("e2e-capacity", cap_spec, cap_cells)
dump("capacity", capacity)
bad = copy.deepcopy(capacity)
for p in bad["status"]["cells"][0]["capacity"]["probes"]:
    p.pop("settleSeconds", None)
bad["status"]["cells"][0]["capacity"]["targets"] = 6
dump("capacity-fresh-every-probe", bad)
bad = copy.deepcopy(capacity); bad["status"]["cells"][0]["capacity"]["probes"][5]["achieved"] = 40.0
dump("capacity-foreign-result", bad)
dump("restart", run("e2e-restart", restart, [{"name": n, "phase": "Succeeded", "results": [res("steady", "fast")]} for n in ("single-x1", "pool-x1")]))
PY

# Runs kind.sh with the stand-ins; sets $status and $log (the recorded calls) and $out.
run_kind_sh() {
  : >"${tmp}/calls"
  set +e
  rm -rf "${tmp}/state" && mkdir -p "${tmp}/state"
  env PATH="${stubs}:${PATH}" STUB_LOG="${tmp}/calls" STUB_FIXTURES="${fixtures}" STUB_STATE="${tmp}/state" \
    HELM="${stubs}/helm" ARTIFACTS_DIR="${tmp}/artifacts" "$@" \
    bash "${root}/tests/e2e/kind.sh" >"${tmp}/out" 2>&1
  status=$?
  set -e
  log="$(cat "${tmp}/calls")"
  out="$(cat "${tmp}/out")"
}

# 1. kind mode, success: the whole flow in order, cluster deleted at the end.
run_kind_sh STUB_PHASE=Succeeded RUN_NAMESPACE=benchmatrix-e2e
if [[ ${status} -eq 0 ]] && in_order \
  "^kind create cluster --name benchmatrix-e2e --config tests/e2e/kind-config.yaml" \
  "^docker build --target operator .*-t ghcr.io/benchmatrix/benchmatrix-operator:0.1.0" \
  "^docker build --target target .*-t ghcr.io/benchmatrix/benchmatrix-target:0.1.0" \
  "^docker build --target loadgen .*-t ghcr.io/benchmatrix/benchmatrix-loadgen:0.1.0" \
  "^kind load docker-image --name benchmatrix-e2e ghcr.io/benchmatrix/benchmatrix-operator:0.1.0 ghcr.io/benchmatrix/benchmatrix-target:0.1.0 ghcr.io/benchmatrix/benchmatrix-loadgen:0.1.0" \
  "^kubectl apply --server-side --force-conflicts -f charts/benchmatrix/crds/" \
  "^helm upgrade --install benchmatrix charts/benchmatrix .*image.target.repository=ghcr.io/benchmatrix/benchmatrix-target" \
  "^kubectl label namespace benchmatrix-e2e --overwrite pod-security.kubernetes.io/enforce=restricted" \
  "^kubectl apply -n benchmatrix-e2e -f manifests/samples/ci-smoke.yaml" \
  "^kubectl get benchmarkrun -n benchmatrix-e2e -o wide" \
  "^docker create ghcr.io/benchmatrix/benchmatrix-operator:0.1.0" \
  "^docker cp stub-container:/usr/local/bin/benchmatrix " \
  "^benchmatrix report .*/report/ci-smoke.yaml --out .*/report" \
  "^kubectl get benchmarkrun -n benchmatrix-e2e e2e-unfit -o jsonpath={.status.cells\[0\].reason}" \
  "^kubectl get deployments -n benchmatrix-e2e -l benchmatrix.dev/run=e2e-unfit" \
  "^kubectl delete benchmarkrun -n benchmatrix-e2e ci-gate --ignore-not-found" \
  "^kubectl apply -n benchmatrix-e2e -f manifests/samples/ci-gate.yaml" \
  "^kubectl wait -n benchmatrix-e2e benchmarkrun/ci-gate --for=condition=Complete --timeout=600s" \
  "^kubectl wait -n benchmatrix-e2e benchmarkrun/ci-gate --for=condition=ThresholdsMet" \
  "^kubectl get benchmarkrun -n benchmatrix-e2e ci-gate -o json" \
  "^benchmatrix report .*/report/ci-gate/ci-gate.yaml --out .*/report/ci-gate" \
  "^kubectl apply -n benchmatrix-e2e -f .*/repeat.yaml" \
  "^kubectl wait -n benchmatrix-e2e benchmarkrun/ci-gate-repeat --for=condition=Complete" \
  "^kubectl get benchmarkrun -n benchmatrix-e2e ci-gate-repeat -o json" \
  "^kubectl delete benchmarkrun -n benchmatrix-e2e e2e-stress --ignore-not-found" \
  "^kubectl apply -n benchmatrix-e2e -f -" \
  "^kubectl wait -n benchmatrix-e2e benchmarkrun/e2e-stress --for=condition=Complete" \
  "^kubectl get benchmarkrun -n benchmatrix-e2e e2e-stress -o json" \
  "^kubectl delete benchmarkrun -n benchmatrix-e2e e2e-capacity --ignore-not-found" \
  "^kubectl wait -n benchmatrix-e2e benchmarkrun/e2e-capacity --for=condition=Complete" \
  "^kubectl get benchmarkrun -n benchmatrix-e2e e2e-capacity -o json" \
  "^kubectl -n benchmatrix-e2e create configmap own-service-www --from-file=orders=examples/own-service/www/cgi-bin/orders" \
  "^kubectl -n benchmatrix-e2e create secret generic api-token --from-literal=token=Bearer " \
  "^kubectl apply -n benchmatrix-e2e -f examples/own-service/benchmarkrun.yaml" \
  "^kubectl get benchmarkrun -n benchmatrix-e2e own-service -o json" \
  "^kubectl apply -n benchmatrix-e2e -f -" \
  "^kubectl wait -n benchmatrix-e2e benchmarkrun/e2e-queue-3 --for=condition=Complete" \
  "^kubectl get benchmarkrun -n benchmatrix-e2e -l benchmatrix.dev/e2e=queue -o json" \
  "^benchmatrix size tests/e2e/sized-status.yaml --manifests .*/sized --deployment e2e-sized" \
  "^kubectl patch deployment e2e-sized -n benchmatrix-e2e --type strategic --patch-file .*/sized/deployment-patch.yaml --dry-run=server" \
  "^kubectl apply -n benchmatrix-e2e -f .*/sized/hpa.yaml --dry-run=server" \
  "^kind delete cluster --name benchmatrix-e2e" && grep -q "result check passed" <<<"${out}" &&
  grep -q "the patch merges: container app gets cpu 1" <<<"${out}" &&
  grep -q "skipped: the HPA watch needs the metrics API" <<<"${out}" &&
  [[ $(grep -c "timing check passed" <<<"${out}") -eq 3 ]] &&
  grep -q "9 threshold verdicts, all Pass" <<<"${out}" && grep -q "repetitions until precise (single-x1 2, pool-x1 2), interleaved" <<<"${out}" &&
  grep -q "6 repetitions a cell, interleaved" <<<"${out}" && grep -q "handovers: 11, median 1 s, max 1 s" <<<"${out}" &&
  grep -q "ci-smoke: resource figures OK" <<<"${out}" && grep -q "own-service: resource figures OK" <<<"${out}" &&
  grep -q "^helm upgrade .*operator.kubeletInsecureTLS=true" <<<"${log}" &&
  ! grep -q "readyz\|^docker exec" <<<"${log}"; then
  pass "kind mode: create, build, load, install, run, check, timing, kubelet figures, report, the unschedulable cell, the gate, the repeat run, the stress run, the own service, the queue, sizing manifests, delete"
else
  fail "kind mode success (exit ${status})"
  echo "${out}" | tail -n 30
fi

# The repeat step's copy of ci-gate.yaml: another name, repeat: {min: 2, max: 3, precision: 25},
# the rest of the spec as it was.
if python3 - manifests/samples/ci-gate.yaml "${tmp}/state/repeat.yaml" <<'PY'; then
import sys, yaml
gate, copy = (yaml.safe_load(open(p)) for p in sys.argv[1:])
assert copy["metadata"] == {"name": "ci-gate-repeat"}, copy["metadata"]
assert copy["spec"].pop("repeat") == {"min": 2, "max": 3, "precision": 25}
assert copy["spec"] == gate["spec"], "the copy's spec differs beyond repeat"
PY
  pass "the repeat step applies ci-gate.yaml as ci-gate-repeat with repeat: {min: 2, max: 3, precision: 25}"
else
  fail "the repeat step's copy of ci-gate.yaml"
fi

# 2. A run that ends Failed: non-zero exit, diagnostics printed and saved, cluster still deleted.
run_kind_sh STUB_PHASE=Failed RUN_NAMESPACE=benchmatrix-e2e
if [[ ${status} -ne 0 ]] && grep -q "ended Failed: cell pool failed: image pull" <<<"${out}" &&
  grep -q "diagnostics" <<<"${out}" && grep -q "^kubectl logs -n benchmatrix-e2e pod/stub-0" <<<"${log}" &&
  grep -q "^kubectl describe benchmarkrun" <<<"${log}" && [[ -s "${tmp}/artifacts/benchmarkrun.txt" ]] &&
  grep -q "^kind delete cluster" <<<"${log}"; then
  pass "failed run: exit ${status}, diagnostics dumped and saved, cluster deleted"
else
  fail "failed run (exit ${status})"
  echo "${out}" | tail -n 30
fi

# 3. KEEP_CLUSTER=1 and an existing kind cluster: reused, not created, not deleted.
echo benchmatrix-e2e >"${tmp}/clusters"
run_kind_sh STUB_PHASE=Succeeded KEEP_CLUSTER=1 STUB_KIND_CLUSTERS="${tmp}/clusters"
if [[ ${status} -eq 0 ]] && ! grep -q "^kind create" <<<"${log}" && ! grep -q "^kind delete" <<<"${log}"; then
  pass "KEEP_CLUSTER=1 with an existing cluster: reused and kept"
else
  fail "KEEP_CLUSTER=1 (exit ${status})"
fi

# 4. Existing-cluster mode: no kind at all; the user's load command gets each image; images and
#    tags overridable; the run's namespace is removed at the end.
run_kind_sh STUB_PHASE=Succeeded CLUSTER=existing LOAD_IMAGES_CMD="stubload image import -c mine" \
  IMAGE_REGISTRY=reg.example/bench IMAGE_TAG=dev
if [[ ${status} -eq 0 ]] && ! grep -q "^kind " <<<"${log}" && in_order \
  "^docker build --target operator .*-t reg.example/bench/benchmatrix-operator:dev" \
  "^stubload image import -c mine reg.example/bench/benchmatrix-operator:dev" \
  "^stubload image import -c mine reg.example/bench/benchmatrix-target:dev" \
  "^stubload image import -c mine reg.example/bench/benchmatrix-loadgen:dev" \
  "^helm upgrade --install .*image.operator.tag=dev" \
  "^kubectl apply -n benchmatrix-e2e-[0-9]\{8\}-[0-9]\{6\} -f manifests/samples/ci-smoke.yaml" \
  "^kubectl delete namespace benchmatrix-e2e-[0-9]\{8\}-[0-9]\{6\} "; then
  pass "existing-cluster mode: user's load command, overridden images, a namespace of its own, removed"
else
  fail "existing-cluster mode (exit ${status})"
  echo "${out}" | tail -n 30
fi

# 5. Existing-cluster mode with images already in a registry: nothing built or loaded.
run_kind_sh STUB_PHASE=Succeeded CLUSTER=existing BUILD_IMAGES=0
if [[ ${status} -eq 0 ]] && ! grep -q "^docker " <<<"${log}" && ! grep -q "^stubload " <<<"${log}"; then
  pass "existing-cluster mode, BUILD_IMAGES=0: no build, no load"
else
  fail "BUILD_IMAGES=0 (exit ${status})"
fi

# 6. Bad mode: refused with a message before anything runs.
run_kind_sh STUB_PHASE=Succeeded CLUSTER=minikube
if [[ ${status} -ne 0 ]] && grep -q "CLUSTER must be kind or existing" <<<"${out}" && [[ -z "${log}" ]]; then
  pass "unknown CLUSTER refused"
else
  fail "unknown CLUSTER (exit ${status})"
fi

# 7. A gate whose thresholds failed: non-zero exit naming the failed one, diagnostics of the gate.
run_kind_sh STUB_PHASE=Succeeded RUN_NAMESPACE=benchmatrix-e2e STUB_THRESHOLDS_MET=False
if [[ ${status} -ne 0 ]] && grep -q "ci-gate: ThresholdsMet is not True: False: threshold 3 failed on pool-x1" <<<"${out}" &&
  grep -q "^kubectl describe benchmarkrun -n benchmatrix-e2e ci-gate$" <<<"${log}" && ! grep -q "ci-gate-repeat" <<<"${log}"; then
  pass "failed gate: exit ${status}, the failed threshold named, the gate's diagnostics"
else
  fail "failed gate (exit ${status})"
  echo "${out}" | tail -n 30
fi

# 8. The outage check, kind mode: the API goes away and comes back; the run moves on in time.
run_kind_sh STUB_PHASE=Succeeded RUN_NAMESPACE=benchmatrix-e2e E2E_RESTART_CONTROL_PLANE=1 RESTART_OUTAGE_SECONDS=1
node="docker exec benchmatrix-e2e-control-plane"
if [[ ${status} -eq 0 ]] && in_order \
  "^kubectl wait -n benchmatrix-e2e benchmarkrun/ci-gate-repeat --for=condition=Complete" \
  "^kubectl apply -n benchmatrix-e2e -f -" \
  "^kubectl get pods -n benchmatrix-e2e -l benchmatrix.dev/run=e2e-restart,benchmatrix.dev/role=loadgen" \
  "^kubectl get benchmarkrun -n benchmatrix-e2e e2e-restart --request-timeout=5s -o jsonpath={.status.progress} {.status.cells\[\*\].phase}" \
  "^${node} mv /etc/kubernetes/manifests/kube-apiserver.yaml /etc/kubernetes/manifests/etcd.yaml /etc/kubernetes/$" \
  "^${node} crictl stop --timeout 5 id-kube-apiserver" \
  "^${node} crictl stop --timeout 5 id-etcd" \
  "^kubectl get --raw /readyz --request-timeout=2s" \
  "^${node} mv /etc/kubernetes/kube-apiserver.yaml /etc/kubernetes/etcd.yaml /etc/kubernetes/manifests/$" \
  "^kubectl get --raw /readyz --request-timeout=2s" \
  "^kubectl logs -n benchmatrix-system deployment/benchmatrix --since-time=20[0-9-]*T[0-9:]*Z" \
  "^kubectl wait -n benchmatrix-e2e benchmarkrun/e2e-restart --for=condition=Complete" \
  "^kubectl get benchmarkrun -n benchmatrix-e2e e2e-restart -o json" \
  "^kind delete cluster" &&
  grep -q "the run moved on [0-9.]*s after the API server answered again: 0/2 Running Pending -> 1/2 Succeeded Deploying" <<<"${out}" &&
  grep -q "WARN .*lost the API server's watches" <<<"${out}" && ! grep -q " INFO " <<<"${out}" &&
  grep -q "s until the operator reached the API server, [0-9.-]*s from there to the run's next status change" <<<"${out}"; then
  pass "outage check: control plane stopped and started on the node, recovery measured and split, warnings printed"
else
  fail "outage check (exit ${status})"
  echo "${out}" | tail -n 30
fi

# 9. The outage check when the run moves on too late: non-zero exit with the figure.
run_kind_sh STUB_PHASE=Succeeded RUN_NAMESPACE=benchmatrix-e2e E2E_RESTART_CONTROL_PLANE=1 RESTART_OUTAGE_SECONDS=1 \
  STUB_RECOVERY_DELAY=3 RESTART_RECOVERY_BOUND=1
if [[ ${status} -ne 0 ]] && grep -q "e2e-restart: the run moved on [0-9.]*s after the API server's return; the bound is 1s" <<<"${out}" &&
  [[ ! -e "${tmp}/state/down" ]] && grep -q "^kind delete cluster" <<<"${log}"; then
  pass "slow recovery: exit ${status}, the measured figure and the bound printed"
else
  fail "slow recovery (exit ${status})"
  echo "${out}" | tail -n 30
fi

# 10a. The outage check in existing mode with commands of its own to stop and start the control
#      plane (one that is not static pods).
run_kind_sh STUB_PHASE=Succeeded CLUSTER=existing BUILD_IMAGES=0 RUN_NAMESPACE=benchmatrix-e2e \
  E2E_RESTART_CONTROL_PLANE=1 RESTART_OUTAGE_SECONDS=1 \
  CONTROL_PLANE_STOP="echo stop >>\"\${STUB_LOG}\"; touch \"\${STUB_STATE}/down\"" \
  CONTROL_PLANE_START="echo start >>\"\${STUB_LOG}\"; rm -f \"\${STUB_STATE}/down\"; touch \"\${STUB_STATE}/restored\""
if [[ ${status} -eq 0 ]] && in_order "^stop$" "^kubectl get --raw /readyz" "^start$" "^kubectl get --raw /readyz" &&
  ! grep -q "^docker " <<<"${log}" && grep -q "the run moved on [0-9.]*s after the API server answered again" <<<"${out}"; then
  pass "outage check, existing mode: CONTROL_PLANE_STOP and CONTROL_PLANE_START stop and start it"
else
  fail "outage check with CONTROL_PLANE_STOP/START (exit ${status})"
  echo "${out}" | tail -n 30
fi

# 10. The outage check in existing mode needs a way onto the node: refused before anything runs.
run_kind_sh STUB_PHASE=Succeeded CLUSTER=existing E2E_RESTART_CONTROL_PLANE=1
if [[ ${status} -ne 0 ]] && grep -q "needs CONTROL_PLANE_EXEC" <<<"${out}" && [[ -z "${log}" ]]; then
  pass "outage check in existing mode without CONTROL_PLANE_EXEC refused"
else
  fail "outage check without CONTROL_PLANE_EXEC (exit ${status})"
fi

# 11. check_results.py on the planted runs: the good ones pass, each fault is caught by name.
check() {
  local want="$1" fixture="$2" expect="$3"
  shift 3
  local got=0 said
  said="$(python3 tests/e2e/check_results.py "$@" "${fixtures}/${fixture}.json" 2>&1)" || got=$?
  if [[ "${want}" == pass && ${got} -eq 0 ]] || [[ "${want}" == fail && ${got} -eq 1 ]] && grep -q -- "${expect}" <<<"${said}"; then
    pass "check_results.py $* ${fixture}: ${want} as it should (${expect})"
  else
    fail "check_results.py $* ${fixture}: want ${want} with '${expect}', got exit ${got}"
    echo "${said}" | tail -n 10
  fi
}
check pass gate "9 threshold verdicts, all Pass" --thresholds
check fail gate-failed-verdict "threshold 3 (threshold 3) on pool-x1: verdict 'Fail'" --thresholds
check fail gate-missing-verdict "missing (index, cell) \[(3, 'pool-x1')\]" --thresholds
check fail gate-not-met "condition ThresholdsMet is 'False'" --thresholds
check fail gate-no-recommendation "recommendation is not set" --thresholds
check fail run "spec.thresholds is empty" --thresholds
check pass repeat "2 repetitions a cell, interleaved, with spread" --repeat 2
check fail repeat-not-interleaved "want interleaved" --repeat 2
check fail repeat-no-spread "cell pool-x1, phase mixed, endpoint slow: no spread" --repeat 2
check fail repeat-wrong-values "spread of rps has values \[4.0, 2.0\], want the repetitions' \[2.0, 4.0\]" --repeat 2
check fail repeat "repetitions \[1, 2\], want \[1, 2, 3\]" --repeat 3
check fail run "cell single: repetitions \[\], want \[1, 2\]" --repeat 2
check pass repeat "repetitions until precise (single-x1 2, pool-x1 2), interleaved, with spread" --adaptive 2 3 25
check fail repeat "cell single-x1: 2 repetitions, want 3 to 4" --adaptive 3 4 25
check fail repeat-no-precision "cell pool-x1: no precision (why it stopped repeating)" --adaptive 2 3 25
check fail repeat-imprecise-early "cell single-x1: not precise, yet stopped after 2 of at most 3" --adaptive 2 3 25
check fail repeat-too-wide "cell single-x1: precise, but its widest interval is 40.0% (want at most 25.0%)" --adaptive 2 3 25
check fail repeat-not-interleaved "want interleaved" --adaptive 2 3 25
check pass capacity "capacity probes at their own rates, sharing targets" --capacity
check fail capacity-fresh-every-probe "cell single-500m: no probe ran on a kept target" --capacity
check fail capacity-foreign-result "cell single-500m, probe 6: achieved 40.0 rps at 20.0 offered" --capacity

# 12. check_timing.py on the planted queue: runs admitted as the slot frees pass; one admitted on
# a timer, or a cell slower than the bound, is caught with its figure.
# judge SCRIPT WANT FIXTURE EXPECT ARGS...: SCRIPT passes (exit 0) or fails (exit 1) on the
# planted FIXTURE as WANT says, saying EXPECT.
judge() {
  local script="$1" want="$2" fixture="$3" expect="$4"
  shift 4
  local got=0 said
  said="$(python3 "tests/e2e/${script}" "$@" "${fixtures}/${fixture}.json" 2>&1)" || got=$?
  if [[ "${want}" == pass && ${got} -eq 0 ]] || [[ "${want}" == fail && ${got} -eq 1 ]] && grep -q -- "${expect}" <<<"${said}"; then
    pass "${script} $* ${fixture}: ${want} as it should (${expect})"
  else
    fail "${script} $* ${fixture}: want ${want} with '${expect}', got exit ${got}"
    echo "${said}" | tail -n 10
  fi
}
timing() { judge check_timing.py "$@"; }
timing pass queue "1 s after the previous run ended" --max-gap 2 --max-overhead 4
timing fail queue-late "e2e-queue-2: started 15 s after the previous run ended (at most 2)" --max-gap 2
timing fail queue "e2e-queue-1/single-x1: 2.0 s outside warm-up and phases (at most 1)" --max-overhead 1
timing pass stress "handovers: 11, median 1 s, max 1 s" --max-handover 3
timing fail stress-slow "e2e-stress: b#3 started 7 s after a#3 ended (at most 3)" --max-handover 3
check pass stress "6 repetitions a cell, interleaved, with spread" --repeat 6

# 13. check_resources.py: the kubelet's figures are there and agree with the target's own; a
# cell read from the target's own /stats, one 25% off, an error or missing throttling is caught.
resources() { judge check_resources.py "$@"; }
resources pass run "ci-smoke: resource figures OK" --agree 10
resources fail run-kubelet-disagrees "-25.0% apart, more than 10.0%" --agree 10
resources fail run-no-kubelet "figures from 'target', not the kubelet (kubelet: 403)"
resources pass own "own-service: resource figures OK" --throttling --no-errors
resources fail own-errors "two-250m: steady/order had 3 error(s)" --no-errors
resources fail own-no-throttling "one-1000m: no CFS periods" --throttling
resources fail own "no cell's target reported its own CPU seconds" --agree 10

if [[ ${failures} -gt 0 ]]; then
  echo "kind.sh self-test: ${failures} failed"
  exit 1
fi
echo "kind.sh self-test: all passed"
