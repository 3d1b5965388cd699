#!/usr/bin/env bash
# Runs tests/e2e/kind.sh against stand-ins for kind, docker, helm and kubectl that record their
# calls, to check the script's flow where no cluster or Docker engine exists (this is what
# scripts/check-delivery.sh runs). It checks: the order of the steps, that images are built,
# loaded and installed under the same names, that a Failed run exits non-zero and dumps
# diagnostics, KEEP_CLUSTER=1, and existing-cluster mode with a user-given load command.
# The real thing runs in .github/workflows/e2e.yml.
set -euo pipefail
cd "$(dirname "$0")/../.."

root="$(pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
stubs="${tmp}/bin"
mkdir -p "${stubs}"

# Every stand-in appends "<tool> <args>" to $STUB_LOG.
for tool in kind helm stubload; do
  cat >"${stubs}/${tool}" <<STUB
#!/usr/bin/env bash
echo "${tool} \$*" >>"\${STUB_LOG}"
if [[ "${tool}" == kind && "\$1 \$2" == "get clusters" ]]; then cat "\${STUB_KIND_CLUSTERS:-/dev/null}"; fi
exit 0
STUB
done
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
esac
exit 0
STUB
cat >"${stubs}/kubectl" <<'STUB'
#!/usr/bin/env bash
echo "kubectl $*" >>"${STUB_LOG}"
args="$*"
# Like the real kubectl, read the whole manifest given on stdin.
if [[ " ${args} " == *" -f - "* ]]; then cat >/dev/null; fi
case "${args}" in
  # The run whose one cell can never fit: refused at once, Unschedulable, nothing deployed.
  *"e2e-unfit"*"jsonpath={.status.phase}"*) echo -n "Failed" ;;
  *"e2e-unfit"*"jsonpath={.status.cells[0].reason}"*) echo -n "Unschedulable" ;;
  *"e2e-unfit"*"jsonpath={.status.cells[0].message}"*)
    echo -n "needs 4096 CPUs on one node; the largest allocatable is 2 (node stub)" ;;
  *"get deployments"*"e2e-unfit"*) ;;
  *"jsonpath={.status.phase}"*) echo -n "${STUB_PHASE}" ;;
  *"jsonpath={.status.progress}"*) echo -n "2/2" ;;
  *"jsonpath={.status.message}"*) echo -n "cell pool failed: image pull" ;;
  *"get benchmarkrun"*"-o json"*) cat "${STUB_RUN_JSON}" ;;
  *"get pods"*"-o name"*) echo "pod/stub-0" ;;
  *"config current-context"*) echo "stub-context" ;;
  *"create namespace"*"--dry-run=client"*) echo "kind: Namespace" ;;
esac
exit 0
STUB
chmod +x "${stubs}"/*

# A finished run with results for every cell, phase and endpoint of ci-smoke.
python3 - "${tmp}/run.json" <<'PY'
import json, sys
lat = {"p50": 1.0, "p90": 2.0, "p99": 3.0, "p999": 4.0, "max": 5.0, "mean": 1.5}
def res(phase, ep): return {"phase": phase, "endpoint": ep, "requests": 10, "errors": 0, "rps": 2.0, "latencyMs": lat}
spec = {"configurations": [{"name": "single"}, {"name": "pool"}],
        "workload": {"phases": [{"name": "fast-only", "load": [{"endpoint": "fast"}]},
                                {"name": "mixed", "load": [{"endpoint": "fast"}, {"endpoint": "slow"}]}]}}
cells = [{"name": n, "phase": "Succeeded", "results": [res("fast-only", "fast"), res("mixed", "fast"), res("mixed", "slow")]}
         for n in ("single", "pool")]
json.dump({"metadata": {"name": "ci-smoke"}, "spec": spec, "status": {"phase": "Succeeded", "cells": cells}}, open(sys.argv[1], "w"))
PY

failures=0
pass() { printf 'ok: %s\n' "$*"; }
fail() {
  printf 'FAIL: %s\n' "$*"
  failures=$((failures + 1))
}

# Runs kind.sh with the stand-ins; sets $status and $log (the recorded calls) and $out.
run_kind_sh() {
  : >"${tmp}/calls"
  set +e
  env PATH="${stubs}:${PATH}" STUB_LOG="${tmp}/calls" STUB_RUN_JSON="${tmp}/run.json" \
    HELM="${stubs}/helm" ARTIFACTS_DIR="${tmp}/artifacts" "$@" \
    bash "${root}/tests/e2e/kind.sh" >"${tmp}/out" 2>&1
  status=$?
  set -e
  log="$(cat "${tmp}/calls")"
  out="$(cat "${tmp}/out")"
}

# The recorded calls contain these lines' patterns in this order.
in_order() {
  local rest="${log}" pattern
  for pattern in "$@"; do
    local line
    line="$(grep -n -m1 -e "${pattern}" <<<"${rest}" | cut -d: -f1)" || true
    if [[ -z "${line}" ]]; then
      echo "missing or out of order: ${pattern}"
      return 1
    fi
    rest="$(tail -n "+$((line + 1))" <<<"${rest}")"
  done
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
  "^kind delete cluster --name benchmatrix-e2e" && grep -q "result check passed" <<<"${out}"; then
  pass "kind mode: create, build, load, install, run, check, report, the unschedulable cell, delete"
else
  fail "kind mode success (exit ${status})"
  echo "${out}" | tail -n 30
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

if [[ ${failures} -gt 0 ]]; then
  echo "kind.sh self-test: ${failures} failed"
  exit 1
fi
echo "kind.sh self-test: all passed"
