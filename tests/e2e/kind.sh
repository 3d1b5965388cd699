#!/usr/bin/env bash
# End-to-end test on a real cluster: build the three images, install the chart, run
# manifests/samples/ci-smoke.yaml (it fits one 2-CPU node), check that the run and every cell
# Succeeded with percentiles for every phase and endpoint, check that a cell that can never fit
# the nodes fails Unschedulable at once with nothing deployed (this also proves the operator may
# list nodes), and render the report with `benchmatrix report`. On failure it dumps diagnostics
# (events, describe, pod logs) to the terminal and to $ARTIFACTS_DIR. Safe to re-run: every step
# converges (upgrade --install, apply, replace).
#
#   tests/e2e/kind.sh                        kind: create cluster, build, load, test, delete
#   KEEP_CLUSTER=1 tests/e2e/kind.sh         ... and keep the cluster and the run afterwards
#   CLUSTER=existing tests/e2e/kind.sh       use the current kubeconfig context (k3d, minikube,
#                                            a cluster of your own): no create, load or delete
#
# Environment (defaults in brackets):
#   CLUSTER           kind | existing                                   [kind]
#   KIND_CLUSTER      kind cluster name                                 [benchmatrix-e2e]
#   KIND_NODE_IMAGE   kindest/node image for `kind create`              [kind's default]
#   KEEP_CLUSTER      1: keep the kind cluster / the run's namespace    [unset]
#   IMAGE_REGISTRY    image name prefix                                 [ghcr.io/benchmatrix]
#   IMAGE_TAG         image tag                                         [the chart's appVersion]
#   BUILD_IMAGES      1: docker build the images; 0: they exist already [1]
#   DOCKER            docker-compatible CLI (docker, podman)            [docker]
#   LOAD_IMAGES_CMD   existing mode: command that makes a local image known to the cluster, run
#                     once per image with the image as its last argument, e.g.
#                     "k3d image import -c mycluster" or "minikube image load". Unset: the
#                     cluster pulls the images from IMAGE_REGISTRY itself.
#   RUN_NAMESPACE     namespace of the BenchmarkRun; a new one per run, so runs on a shared
#                     cluster never meet                   [benchmatrix-e2e-<UTC timestamp>]
#   RELEASE_NAMESPACE namespace of the operator                         [benchmatrix-system]
#   RUN_TIMEOUT       seconds for the run to finish                     [600]
#   SAMPLE            the BenchmarkRun to apply           [manifests/samples/ci-smoke.yaml]
#   ARTIFACTS_DIR     where diagnostics go on failure                   [build/e2e-artifacts]
#   HELM              helm binary                    [helm on PATH, else scripts/install-helm.sh]
set -euo pipefail
cd "$(dirname "$0")/../.."

readonly CLUSTER="${CLUSTER:-kind}"
readonly KIND_CLUSTER="${KIND_CLUSTER:-benchmatrix-e2e}"
readonly KEEP_CLUSTER="${KEEP_CLUSTER:-}"
readonly IMAGE_REGISTRY="${IMAGE_REGISTRY:-ghcr.io/benchmatrix}"
readonly BUILD_IMAGES="${BUILD_IMAGES:-1}"
readonly DOCKER="${DOCKER:-docker}"
readonly LOAD_IMAGES_CMD="${LOAD_IMAGES_CMD:-}"
readonly RUN_NAMESPACE="${RUN_NAMESPACE:-benchmatrix-e2e-$(date -u +%Y%m%d-%H%M%S)}"
readonly RELEASE_NAMESPACE="${RELEASE_NAMESPACE:-benchmatrix-system}"
readonly RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
readonly SAMPLE="${SAMPLE:-manifests/samples/ci-smoke.yaml}"
readonly ARTIFACTS_DIR="${ARTIFACTS_DIR:-build/e2e-artifacts}"
readonly RELEASE="benchmatrix"
readonly CHART="charts/benchmatrix"

log() { printf '\n[e2e %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() {
  printf '[e2e] error: %s\n' "$*" >&2
  exit 1
}
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is required: $2"; }

case "${CLUSTER}" in
  kind | existing) ;;
  *) die "CLUSTER must be kind or existing, not '${CLUSTER}'" ;;
esac

# ---------------------------------------------------------------------------------------------
# Tools

need kubectl "https://kubernetes.io/docs/tasks/tools/"
need python3 "it reads the run's status"
if [[ "${CLUSTER}" == "kind" ]]; then need kind "https://kind.sigs.k8s.io/"; fi
if [[ "${BUILD_IMAGES}" == "1" ]]; then need "${DOCKER}" "it builds the images (or set BUILD_IMAGES=0)"; fi
helm="${HELM:-}"
if [[ -z "${helm}" ]]; then
  if command -v helm >/dev/null 2>&1; then helm="$(command -v helm)"; else helm="$(scripts/install-helm.sh | tail -n 1)"; fi
fi

app_version="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "${CHART}/Chart.yaml")"
readonly IMAGE_TAG="${IMAGE_TAG:-${app_version}}"
[[ -n "${IMAGE_TAG}" ]] || die "cannot read appVersion from ${CHART}/Chart.yaml; set IMAGE_TAG"
readonly OPERATOR_IMAGE="${IMAGE_REGISTRY}/benchmatrix-operator:${IMAGE_TAG}"
readonly TARGET_IMAGE="${IMAGE_REGISTRY}/benchmatrix-target:${IMAGE_TAG}"
readonly LOADGEN_IMAGE="${IMAGE_REGISTRY}/benchmatrix-loadgen:${IMAGE_TAG}"
readonly IMAGES=("${OPERATOR_IMAGE}" "${TARGET_IMAGE}" "${LOADGEN_IMAGE}")

run_name="$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["metadata"]["name"])' "${SAMPLE}" 2>/dev/null)" ||
  run_name="$(sed -n '/^metadata:/,/^[^ ]/s/^  name: *//p' "${SAMPLE}" | head -n 1)"
[[ -n "${run_name}" ]] || die "cannot read metadata.name from ${SAMPLE}"
readonly RUN_NAME="${run_name}"

# ---------------------------------------------------------------------------------------------
# Diagnostics and cleanup

work="$(mktemp -d)"
cluster_created=""

dump_diagnostics() {
  mkdir -p "${ARTIFACTS_DIR}"
  local out="${ARTIFACTS_DIR}"
  log "diagnostics (also in ${out}/)"
  local ns
  for ns in "${RUN_NAMESPACE}" "${RELEASE_NAMESPACE}"; do
    {
      echo "### kubectl get all,bmr,configmaps -n ${ns} -o wide"
      kubectl get all,benchmarkruns,configmaps -n "${ns}" -o wide 2>&1 || true
      echo "### events in ${ns}, oldest first"
      kubectl get events -n "${ns}" --sort-by=.metadata.creationTimestamp 2>&1 || true
      echo "### kubectl describe pods -n ${ns}"
      kubectl describe pods -n "${ns}" 2>&1 || true
    } | tee "${out}/${ns}-overview.txt"
    local pod
    for pod in $(kubectl get pods -n "${ns}" -o name 2>/dev/null); do
      local file="${out}/${ns}-${pod#pod/}.log"
      {
        echo "### logs ${ns}/${pod}"
        kubectl logs -n "${ns}" "${pod}" --all-containers --tail=300 2>&1 || true
        echo "### previous logs ${ns}/${pod} (after a restart)"
        kubectl logs -n "${ns}" "${pod}" --all-containers --previous --tail=100 2>&1 || true
      } >"${file}"
      tail -n 40 "${file}"
    done
  done
  {
    echo "### kubectl describe bmr ${RUN_NAME}"
    kubectl describe benchmarkrun -n "${RUN_NAMESPACE}" "${RUN_NAME}" 2>&1 || true
    echo "### kubectl get bmr ${RUN_NAME} -o yaml"
    kubectl get benchmarkrun -n "${RUN_NAMESPACE}" "${RUN_NAME}" -o yaml 2>&1 || true
  } | tee "${out}/benchmarkrun.txt"
}

finish() {
  local status=$?
  set +e
  if [[ ${status} -ne 0 ]]; then
    dump_diagnostics
    log "FAILED (exit ${status})"
  fi
  if [[ -n "${KEEP_CLUSTER}" ]]; then
    log "KEEP_CLUSTER=1: leaving the cluster and namespace ${RUN_NAMESPACE} in place"
    if [[ "${CLUSTER}" == "kind" ]]; then echo "  kubectl --context kind-${KIND_CLUSTER} get bmr -A"; fi
  elif [[ "${CLUSTER}" == "kind" && -n "${cluster_created}" ]]; then
    log "deleting kind cluster ${KIND_CLUSTER}"
    kind delete cluster --name "${KIND_CLUSTER}"
  elif [[ "${CLUSTER}" == "existing" ]]; then
    log "deleting namespace ${RUN_NAMESPACE} (the operator release stays installed)"
    kubectl delete namespace "${RUN_NAMESPACE}" --ignore-not-found --wait=false
  fi
  rm -rf "${work}"
  exit "${status}"
}
trap finish EXIT

# ---------------------------------------------------------------------------------------------
# 1. Cluster

if [[ "${CLUSTER}" == "kind" ]]; then
  if kind get clusters 2>/dev/null | grep -qx "${KIND_CLUSTER}"; then
    log "reusing kind cluster ${KIND_CLUSTER}"
  else
    log "creating kind cluster ${KIND_CLUSTER}"
    create_args=(--name "${KIND_CLUSTER}" --config tests/e2e/kind-config.yaml --wait 180s)
    if [[ -n "${KIND_NODE_IMAGE:-}" ]]; then create_args+=(--image "${KIND_NODE_IMAGE}"); fi
    kind create cluster "${create_args[@]}"
  fi
  # Deleted at the end unless KEEP_CLUSTER=1, also when it was reused: the run leaves no trace.
  cluster_created=1
  # A private kubeconfig: the user's current context is neither used nor changed.
  kind get kubeconfig --name "${KIND_CLUSTER}" >"${work}/kubeconfig"
  export KUBECONFIG="${work}/kubeconfig"
else
  log "using the current context: $(kubectl config current-context)"
fi
kubectl version

# ---------------------------------------------------------------------------------------------
# 2. Images

if [[ "${BUILD_IMAGES}" == "1" ]]; then
  for component in operator target loadgen; do
    image="${IMAGE_REGISTRY}/benchmatrix-${component}:${IMAGE_TAG}"
    log "building ${image}"
    DOCKER_BUILDKIT=1 "${DOCKER}" build --target "${component}" \
      --build-arg VERSION="${IMAGE_TAG}" \
      --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
      -t "${image}" .
  done
fi

if [[ "${CLUSTER}" == "kind" ]]; then
  log "loading images into kind"
  kind load docker-image --name "${KIND_CLUSTER}" "${IMAGES[@]}"
elif [[ -n "${LOAD_IMAGES_CMD}" ]]; then
  read -r -a load_cmd <<<"${LOAD_IMAGES_CMD}"
  for image in "${IMAGES[@]}"; do
    log "loading ${image}: ${LOAD_IMAGES_CMD} ${image}"
    "${load_cmd[@]}" "${image}"
  done
else
  log "LOAD_IMAGES_CMD unset: the cluster pulls ${IMAGE_REGISTRY}/...:${IMAGE_TAG} itself"
fi

# ---------------------------------------------------------------------------------------------
# 3. Install (the same commands as docs/kubernetes.md)

log "installing the CRD (Helm never upgrades crds/, so apply it first)"
kubectl apply --server-side --force-conflicts -f "${CHART}/crds/"
kubectl wait --for=condition=Established --timeout=60s crd/benchmarkruns.benchmatrix.dev

log "installing the chart into ${RELEASE_NAMESPACE}"
"${helm}" upgrade --install "${RELEASE}" "${CHART}" \
  --namespace "${RELEASE_NAMESPACE}" --create-namespace \
  --set image.operator.repository="${IMAGE_REGISTRY}/benchmatrix-operator" \
  --set image.target.repository="${IMAGE_REGISTRY}/benchmatrix-target" \
  --set image.loadgen.repository="${IMAGE_REGISTRY}/benchmatrix-loadgen" \
  --set image.operator.tag="${IMAGE_TAG}" \
  --set image.target.tag="${IMAGE_TAG}" \
  --set image.loadgen.tag="${IMAGE_TAG}" \
  --set operator.logFormat=text \
  --set-string 'operator.logLevel=info\,benchmatrix=debug' \
  --wait --timeout 180s
kubectl -n "${RELEASE_NAMESPACE}" rollout status "deployment/${RELEASE}" --timeout=120s

# ---------------------------------------------------------------------------------------------
# 4. Run the sample

log "applying ${SAMPLE} in namespace ${RUN_NAMESPACE}"
kubectl create namespace "${RUN_NAMESPACE}" --dry-run=client -o yaml | kubectl apply -f -
# The benchmark's own pods must pass the strictest Pod Security profile too.
kubectl label namespace "${RUN_NAMESPACE}" --overwrite pod-security.kubernetes.io/enforce=restricted
# A run left from an earlier try would already be finished: start afresh.
kubectl delete benchmarkrun -n "${RUN_NAMESPACE}" "${RUN_NAME}" --ignore-not-found --wait=true --timeout=120s
kubectl apply -n "${RUN_NAMESPACE}" -f "${SAMPLE}"

log "waiting up to ${RUN_TIMEOUT}s for ${RUN_NAME} to finish"
deadline=$((SECONDS + RUN_TIMEOUT))
last=""
while :; do
  phase="$(kubectl get benchmarkrun -n "${RUN_NAMESPACE}" "${RUN_NAME}" -o jsonpath='{.status.phase}' 2>/dev/null || true)"
  progress="$(kubectl get benchmarkrun -n "${RUN_NAMESPACE}" "${RUN_NAME}" -o jsonpath='{.status.progress}' 2>/dev/null || true)"
  now="phase=${phase:-<none>} cells=${progress:-?}"
  if [[ "${now}" != "${last}" ]]; then
    printf '[e2e %s] %s\n' "$(date -u +%H:%M:%S)" "${now}"
    last="${now}"
  fi
  case "${phase}" in
    Succeeded) break ;;
    Failed) die "${RUN_NAME} ended Failed: $(kubectl get benchmarkrun -n "${RUN_NAMESPACE}" "${RUN_NAME}" -o jsonpath='{.status.message}')" ;;
  esac
  if ((SECONDS >= deadline)); then die "${RUN_NAME} did not finish within ${RUN_TIMEOUT}s (phase ${phase:-<none>})"; fi
  sleep 5
done

# ---------------------------------------------------------------------------------------------
# 5. Results

log "kubectl get bmr -o wide"
kubectl get benchmarkrun -n "${RUN_NAMESPACE}" -o wide

log "results of ${RUN_NAME}"
kubectl get benchmarkrun -n "${RUN_NAMESPACE}" "${RUN_NAME}" -o json >"${work}/run.json"
python3 tests/e2e/check_results.py "${work}/run.json"

# The report a user renders from a saved run (docs/kubernetes.md). The binary comes out of the
# operator image just built, so the check costs no second compile; else from PATH.
report_bin=""
if [[ "${BUILD_IMAGES}" == "1" ]]; then
  container="$("${DOCKER}" create "${OPERATOR_IMAGE}")"
  "${DOCKER}" cp "${container}:/usr/local/bin/benchmatrix" "${work}/benchmatrix"
  "${DOCKER}" rm "${container}" >/dev/null
  report_bin="${work}/benchmatrix"
elif command -v benchmatrix >/dev/null 2>&1; then
  report_bin="$(command -v benchmatrix)"
fi
if [[ -n "${report_bin}" ]]; then
  log "benchmatrix report (files in ${ARTIFACTS_DIR}/report)"
  mkdir -p "${ARTIFACTS_DIR}/report"
  kubectl get benchmarkrun -n "${RUN_NAMESPACE}" "${RUN_NAME}" -o yaml >"${ARTIFACTS_DIR}/report/${RUN_NAME}.yaml"
  "${report_bin}" report "${ARTIFACTS_DIR}/report/${RUN_NAME}.yaml" --out "${ARTIFACTS_DIR}/report"
else
  log "no benchmatrix binary (BUILD_IMAGES=0 and none on PATH): report step skipped"
fi

# ---------------------------------------------------------------------------------------------
# 6. A cell that can never fit fails at once, Unschedulable, without deploying anything

readonly UNFIT="e2e-unfit"
log "applying ${UNFIT}: one cell asking for more CPU than any node has"
kubectl delete benchmarkrun -n "${RUN_NAMESPACE}" "${UNFIT}" --ignore-not-found --wait=true --timeout=60s
kubectl apply -n "${RUN_NAMESPACE}" -f - <<'YAML'
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata:
  name: e2e-unfit
spec:
  configurations:
    - {name: huge, mode: single, replicas: 1, cpu: "4096", memory: 128Mi}
  workload:
    endpoints: [{name: fast, path: /fast}]
    phases: [{name: p, duration: 2s, load: [{endpoint: fast, connections: 1}]}]
  loadgen: {cpu: 500m, memory: 128Mi}
  timeouts: {ready: 300s}
YAML
# Well inside the 300 s ready timeout: a NeverReady ending cannot pass for this one.
deadline=$((SECONDS + 60))
while :; do
  phase="$(kubectl get benchmarkrun -n "${RUN_NAMESPACE}" "${UNFIT}" -o jsonpath='{.status.phase}' 2>/dev/null || true)"
  [[ "${phase}" == "Failed" || "${phase}" == "Succeeded" ]] && break
  if ((SECONDS >= deadline)); then die "${UNFIT} did not end within 60s (phase ${phase:-<none>})"; fi
  sleep 2
done
reason="$(kubectl get benchmarkrun -n "${RUN_NAMESPACE}" "${UNFIT}" -o jsonpath='{.status.cells[0].reason}')"
message="$(kubectl get benchmarkrun -n "${RUN_NAMESPACE}" "${UNFIT}" -o jsonpath='{.status.cells[0].message}')"
printf '[e2e] %s: phase %s, cell reason %s: %s\n' "${UNFIT}" "${phase}" "${reason}" "${message}"
[[ "${phase}" == "Failed" && "${reason}" == "Unschedulable" ]] ||
  die "${UNFIT}: want phase Failed with cell reason Unschedulable, got ${phase} / ${reason}"
[[ "${message}" == *"needs 4096 CPU"* ]] || die "${UNFIT}: the message lacks the numbers: ${message}"
deployed="$(kubectl get deployments -n "${RUN_NAMESPACE}" -l "benchmatrix.dev/run=${UNFIT}" -o name)"
[[ -z "${deployed}" ]] || die "${UNFIT}: a cell that cannot fit was deployed: ${deployed}"

log "PASSED"
