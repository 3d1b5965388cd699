#!/usr/bin/env bash
# The GitHub Action's work (action.yml at the repository root), as one script that also runs
# outside GitHub: get a cluster (a new kind cluster, or the current kubeconfig context), get the
# three images into it, install the chart from this checkout, get the `kubectl benchmatrix`
# plugin, run the BenchmarkRun with `kubectl benchmatrix run`, compare it with a baseline when
# one is given, and write the verdict: a Markdown summary (also into $GITHUB_STEP_SUMMARY), the
# step's outputs (into $GITHUB_OUTPUT) and the exit code.
#
#   SPEC=bench.yaml scripts/action/run.sh                           kind: create, run, delete
#   SPEC=bench.yaml CLUSTER=existing IMAGES=pull scripts/action/run.sh   your cluster, as it is
#   SPEC=bench.yaml BASE_IMAGE=shop:main CANDIDATE_IMAGE=shop:pr scripts/action/run.sh
#                                     base and candidate side by side in one run (paired)
#   SPEC=bench.yaml BASELINE=main/status.yaml scripts/action/run.sh      ... or against a saved run
#
# The action passes each input as the variable of the same name in capitals, `-` as `_`
# (defaults in brackets, the same as the action's):
#   SPEC            the BenchmarkRun file (required)
#   OUT             folder for status.yaml, report.md, the charts, compare/, summary.md
#                                                                       [benchmatrix-out]
#   TIMEOUT         longest the run may take, as `kubectl benchmatrix run --timeout` reads it
#                   (e.g. 30m, 1h30m)                                   [30m]
#   BASE_IMAGE      the base variant's target image: with CANDIDATE_IMAGE, both run as variants
#                   of one run (kubectl benchmatrix run --base --candidate), measured back to
#                   back in each round on the same nodes; loaded into the cluster as LOAD_IMAGES
#                   are                                                 [none]
#   CANDIDATE_IMAGE the candidate variant's target image                 [none]
#   BUILD_COMMAND   a bash command that builds the image named by $IMAGE from the current folder;
#                   run once in a checkout of BASE_REF (IMAGE=BASE_IMAGE) and once in the
#                   workspace (IMAGE=CANDIDATE_IMAGE), with BENCHMATRIX_VARIANT=base|candidate
#                                                                       [none: images exist]
#   BASE_REF        the commit BUILD_COMMAND builds the base from, checked out with `git worktree`
#                   (fetched from origin when the workspace lacks it)
#                                                     [a pull_request event's base.sha]
#   BASELINE        a saved status.yaml or BenchmarkRun to compare with (the two-run flow,
#                   weaker than BASE_IMAGE/CANDIDATE_IMAGE)              [none: no comparison]
#   MAX_REGRESSION  percent a figure may get worse than the base or the baseline before the
#                   step fails (exit 3)                                 [10]
#   CHART_VERSION   the chart version the workflow expects; the chart installed is always this
#                   checkout's, so a different version is refused (exit 2) [this checkout's]
#   IMAGES          build: docker build the three images from this checkout; pull: the
#                   published ghcr.io/benchmatrix images at the chart's appVersion     [build]
#   LOAD_IMAGES     more local images the run needs (your service's), space or newline
#                   separated: loaded into kind, or given to LOAD_IMAGES_CMD  [none]
#   KIND_NODE_IMAGE kindest/node image for `kind create` (the Kubernetes version) [kind's default]
#   ARTIFACT_NAME   name of the artifact the action uploads OUT as, for the summary [benchmatrix]
#   PR_COMMENT      true: also post the summary as a comment on the pull request, and update
#                   that comment (found by a hidden marker) on later pushes   [false]
#   GITHUB_TOKEN    the token PR_COMMENT posts with (pull-requests: write)     [none]
#
# Outside GitHub (the names of tests/e2e/kind.sh, defaults in brackets):
#   CLUSTER           kind | existing (the current kubeconfig context: no create, load or delete;
#                     the run goes into the context's namespace)                          [kind]
#   KIND_CLUSTER      kind cluster name; an existing one is reused and kept   [benchmatrix-action]
#   KEEP_CLUSTER      1: keep the kind cluster this script created                       [unset]
#   IMAGE_REGISTRY    image name prefix                                   [ghcr.io/benchmatrix]
#   IMAGE_TAG         image tag                                       [the chart's appVersion]
#   DOCKER            docker-compatible CLI                                             [docker]
#   LOAD_IMAGES_CMD   existing mode: command that makes a local image known to the cluster, run
#                     once per image with the image last ("k3d image import -c mine",
#                     "minikube image load"); unset: the cluster pulls the images itself  [unset]
#   HELM              helm binary              [helm on PATH, else scripts/install-helm.sh]
#   RELEASE_NAMESPACE namespace of the operator                           [benchmatrix-system]
#   KUBELET_INSECURE_TLS  the chart's operator.kubeletInsecureTLS  [kind: true, existing: false]
#   KUBECTL_BENCHMATRIX   the plugin binary to use (a benchmatrix build: it acts as the plugin
#                     under the name kubectl-benchmatrix)      [see "The plugin" below]
#
# The plugin: KUBECTL_BENCHMATRIX when set; else the benchmatrix binary copied out of the
# operator image when that image is in the local docker (built here, or pulled in kind mode),
# so the plugin is exactly the operator's version; else `kubectl-benchmatrix` on PATH.
#
# Exit codes (also the output exit-code): 0 every cell measured and no regression; 1 a cell
# failed; 2 bad input (a file, a setting) or a BenchmarkRun the plugin refused; 3 a threshold
# failed, or a regression beyond MAX_REGRESSION; 4 the run did not finish within TIMEOUT; 5 the
# setup failed (cluster, images, chart, plugin: the message names the step) or the plugin could
# not reach the cluster; 130 interrupted. When both the run and the comparison fail, the run's
# code wins.
set -euo pipefail

ACTION_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly ACTION_ROOT
readonly CHART="${ACTION_ROOT}/charts/benchmatrix"
readonly RELEASE="benchmatrix"
readonly EXIT_BAD_INPUT=2
readonly EXIT_SETUP=5

readonly SPEC="${SPEC:-}"
readonly OUT="${OUT:-benchmatrix-out}"
readonly TIMEOUT="${TIMEOUT:-30m}"
readonly BASELINE="${BASELINE:-}"
readonly BASE_IMAGE="${BASE_IMAGE:-}"
readonly CANDIDATE_IMAGE="${CANDIDATE_IMAGE:-}"
readonly BUILD_COMMAND="${BUILD_COMMAND:-}"
readonly BASE_REF="${BASE_REF:-}"
readonly MAX_REGRESSION="${MAX_REGRESSION:-10}"
readonly CHART_VERSION="${CHART_VERSION:-}"
readonly IMAGES="${IMAGES:-build}"
readonly LOAD_IMAGES="${LOAD_IMAGES:-}"
readonly KIND_NODE_IMAGE="${KIND_NODE_IMAGE:-}"
readonly ARTIFACT_NAME="${ARTIFACT_NAME:-benchmatrix}"
readonly PR_COMMENT="${PR_COMMENT:-false}"
readonly GITHUB_TOKEN="${GITHUB_TOKEN:-}"
readonly CLUSTER="${CLUSTER:-kind}"
readonly KIND_CLUSTER="${KIND_CLUSTER:-benchmatrix-action}"
readonly KEEP_CLUSTER="${KEEP_CLUSTER:-}"
readonly IMAGE_REGISTRY="${IMAGE_REGISTRY:-ghcr.io/benchmatrix}"
readonly DOCKER="${DOCKER:-docker}"
readonly LOAD_IMAGES_CMD="${LOAD_IMAGES_CMD:-}"
readonly RELEASE_NAMESPACE="${RELEASE_NAMESPACE:-benchmatrix-system}"
readonly KUBECTL_BENCHMATRIX="${KUBECTL_BENCHMATRIX:-}"
if [[ "${CLUSTER}" == "kind" ]]; then
  readonly KUBELET_INSECURE_TLS="${KUBELET_INSECURE_TLS:-true}"
else
  readonly KUBELET_INSECURE_TLS="${KUBELET_INSECURE_TLS:-false}"
fi

in_github() { [[ "${GITHUB_ACTIONS:-}" == "true" ]]; }
log() { printf '[benchmatrix %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

# ---------------------------------------------------------------------------------------------
# The verdict: summary, outputs, message, exit code. The script ends by setting final_code and
# final_verdict, or early through conclude (bad input); finish, the EXIT trap, writes the
# verdict of the first, and a setup failure's for any other way out (a command failing under
# set -e).

work="$(mktemp -d)"
doing="checking the inputs"
cluster_created=""
cluster_ready=""
concluded=""
final_code=""
final_verdict=""
run_code=""
compare_code=""
comment_ready=""
paired=""
base_ref=""
base_tree=""

# The summary's closing sentence on where the files are.
files_sentence() {
  if in_github; then
    local compared=""
    if [[ -d "${OUT}/compare" ]]; then compared=", compare/"; fi
    printf "status.yaml, report.md, the charts%s: the \`%s\` artifact of this run." "${compared}" "${ARTIFACT_NAME}"
    # A comment can link the run's artifacts, not show them: GitHub serves an artifact as a
    # zip download and renders no data: image in a comment, so the pictures stay in the file.
    local where="the run's page"
    if [[ -n "${GITHUB_REPOSITORY:-}" && -n "${GITHUB_RUN_ID:-}" ]]; then
      where="${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY}/actions/runs/${GITHUB_RUN_ID}#artifacts"
    fi
    printf " The whole report as one page, report.html (the verdict, the tables and every chart; no network needed, prints to PDF), is also the \`%s-report\` artifact: %s." "${ARTIFACT_NAME}" "${where}"
    if [[ -f "${OUT}/forest.svg" || -f "${OUT}/compare/forest.svg" ]]; then
      printf " Its forest plot (each figure's ratio to the base with its 95%% interval, against the gate) is forest.svg there; it cannot be shown in this comment."
    fi
  else
    printf 'Files: %s/' "${OUT}"
  fi
}

# Writes summary.md (into OUT, and appended to $GITHUB_STEP_SUMMARY) and the step's outputs.
write_results() {
  local code="$1" verdict="$2"
  local compare_args=(--compare-note "No baseline given: nothing compared.")
  if [[ -n "${paired}" ]]; then
    compare_args=(--no-compare)
  elif [[ -n "${compare_code}" ]]; then
    compare_args=(--compare "${OUT}/compare/compare.md")
  elif [[ -n "${BASELINE}" ]]; then
    compare_args=(--compare-note "Not compared: the run wrote no status.yaml.")
  fi
  local report_args=()
  if [[ -n "${run_code}" ]]; then report_args=(--report "${OUT}/report.md"); fi
  local summary="${work}/summary.md"
  bash "${ACTION_ROOT}/scripts/action/summary.sh" --title "${SPEC:-<no spec>}" \
    --verdict "${verdict} (exit ${code})" "${report_args[@]}" "${compare_args[@]}" \
    --files "$(files_sentence)" >"${summary}" || echo "(the summary could not be written)" >"${summary}"
  if mkdir -p "${OUT}" 2>/dev/null; then cp "${summary}" "${OUT}/summary.md" || true; fi
  if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then cat "${summary}" >>"${GITHUB_STEP_SUMMARY}"; fi
  if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
    local out_dir
    out_dir="$(cd "${OUT}" 2>/dev/null && pwd || echo "${OUT}")"
    # The CI files' paths, each only when the run wrote it (none after a timeout, say).
    local junit="" smaller="" bigger=""
    if [[ -f "${OUT}/junit.xml" ]]; then junit="${out_dir}/junit.xml"; fi
    if [[ -f "${OUT}/benchmark.smaller.json" ]]; then smaller="${out_dir}/benchmark.smaller.json"; fi
    if [[ -f "${OUT}/benchmark.bigger.json" ]]; then bigger="${out_dir}/benchmark.bigger.json"; fi
    {
      echo "exit-code=${code}"
      echo "run-exit-code=${run_code}"
      echo "compare-exit-code=${compare_code}"
      echo "out-dir=${out_dir}"
      echo "junit=${junit}"
      echo "benchmark-smaller=${smaller}"
      echo "benchmark-bigger=${bigger}"
    } >>"${GITHUB_OUTPUT}"
  fi
  if [[ -n "${comment_ready}" ]]; then
    # One comment per spec on the pull request, found again by this marker on each push.
    local marker
    marker="<!-- benchmatrix-pr-comment $(printf '%s' "${SPEC}" | tr -c 'A-Za-z0-9._/' '_') -->"
    if ! bash "${ACTION_ROOT}/scripts/action/comment.sh" "${summary}" "${marker}"; then
      if in_github; then
        echo "::warning title=benchmatrix::could not comment on the pull request (the token needs pull-requests: write)"
      else
        log "could not comment on the pull request"
      fi
    fi
  fi
  if [[ "${code}" -eq 0 ]]; then
    log "${verdict}"
  elif in_github; then
    echo "::error title=benchmatrix::${verdict} (exit ${code})"
  else
    printf '[benchmatrix] error: %s (exit %s)\n' "${verdict}" "${code}" >&2
  fi
}

conclude() {
  write_results "$1" "$2"
  concluded=1
  exit "$1"
}

bad_input() { conclude "${EXIT_BAD_INPUT}" "bad input: $*"; }

# What the cluster knew when something went wrong, into OUT/diagnostics (so into the artifact).
dump_diagnostics() {
  [[ -n "${cluster_ready}" ]] || return 0
  local dir="${OUT}/diagnostics"
  mkdir -p "${dir}" || return 0
  log "diagnostics into ${dir}/"
  kubectl get benchmarkruns -A -o yaml >"${dir}/benchmarkruns.yaml" 2>&1 || true
  kubectl get pods -A -o wide >"${dir}/pods.txt" 2>&1 || true
  kubectl get events -A --sort-by=.metadata.creationTimestamp >"${dir}/events.txt" 2>&1 || true
  kubectl logs -n "${RELEASE_NAMESPACE}" "deployment/${RELEASE}" --tail=500 >"${dir}/operator.log" 2>&1 || true
  tail -n 20 "${dir}/operator.log" || true
}

finish() {
  local status=$?
  set +e
  if [[ -n "${final_code}" ]]; then
    write_results "${final_code}" "${final_verdict}"
    status="${final_code}"
  elif [[ -z "${concluded}" ]]; then
    dump_diagnostics
    write_results "${EXIT_SETUP}" "setup failed while ${doing}: a command exited ${status}"
    status="${EXIT_SETUP}"
  fi
  if [[ -n "${cluster_created}" && -z "${KEEP_CLUSTER}" ]]; then
    log "deleting kind cluster ${KIND_CLUSTER}"
    kind delete cluster --name "${KIND_CLUSTER}"
  elif [[ -n "${cluster_created}" ]]; then
    log "KEEP_CLUSTER=1: kind cluster ${KIND_CLUSTER} stays (kubectl --context kind-${KIND_CLUSTER})"
  fi
  if [[ -n "${base_tree}" ]]; then git worktree remove --force "${base_tree}" >/dev/null 2>&1 || true; fi
  rm -rf "${work}"
  exit "${status}"
}
trap finish EXIT

# Marks the start of a setup step: a failure from here on is "setup failed while <what>".
step() {
  doing="$1"
  log "${doing}"
}

# ---------------------------------------------------------------------------------------------
# 1. Inputs and tools, all checked before anything is built or created

case "${PR_COMMENT}" in true | false) ;; *) bad_input "pr-comment must be true or false, not '${PR_COMMENT}'" ;; esac
if [[ "${PR_COMMENT}" == "true" ]]; then
  [[ -n "${GITHUB_TOKEN}" ]] || bad_input "pr-comment needs github-token (the workflow's github.token, with permissions pull-requests: write)"
  command -v jq >/dev/null 2>&1 || bad_input "pr-comment needs jq (GitHub's ubuntu runners have it)"
  comment_ready=1
fi
[[ -n "${SPEC}" ]] || bad_input "SPEC (the action's input spec) is empty: name the BenchmarkRun file"
[[ -f "${SPEC}" && -r "${SPEC}" ]] || bad_input "the BenchmarkRun file '${SPEC}' is not a readable file (paths are relative to $(pwd))"
if [[ -n "${BASELINE}" ]]; then
  [[ -f "${BASELINE}" && -r "${BASELINE}" ]] || bad_input "the baseline '${BASELINE}' is not a readable file"
fi
if [[ -n "${BASE_IMAGE}" || -n "${CANDIDATE_IMAGE}" ]]; then
  [[ -n "${BASE_IMAGE}" && -n "${CANDIDATE_IMAGE}" ]] || bad_input "base-image and candidate-image go together: give both, or neither"
  [[ "${BASE_IMAGE}" != "${CANDIDATE_IMAGE}" ]] || bad_input "base-image and candidate-image are both '${BASE_IMAGE}': one image cannot be compared with itself (give each build its own tag)"
  [[ -z "${BASELINE}" ]] || bad_input "baseline and base-image/candidate-image are two ways to compare: give one (base and candidate side by side is the stronger)"
  paired=1
fi
if [[ -n "${BUILD_COMMAND}" ]]; then
  [[ -n "${paired}" ]] || bad_input "build-command needs base-image and candidate-image: the tags it builds (it gets each as \$IMAGE)"
  base_ref="${BASE_REF}"
  if [[ -z "${base_ref}" && -n "${GITHUB_EVENT_PATH:-}" && -f "${GITHUB_EVENT_PATH}" ]] && command -v jq >/dev/null 2>&1; then
    base_ref="$(jq -r '.pull_request.base.sha // empty' "${GITHUB_EVENT_PATH}")"
  fi
  [[ -n "${base_ref}" ]] || bad_input "build-command needs base-ref, the commit to build the base from (a pull_request event gives its base branch's)"
  # A ref, never an option of git's.
  [[ "${base_ref}" != -* ]] || bad_input "base-ref '${base_ref}' is not a commit or branch name"
  git rev-parse --is-inside-work-tree >/dev/null 2>&1 || bad_input "build-command builds the base from a git checkout, but $(pwd) is none (actions/checkout first)"
fi
[[ "${MAX_REGRESSION}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad_input "max-regression '${MAX_REGRESSION}' is not a percentage (a number, 0 or more)"
# Durations as the plugin's --timeout takes them (30m, 1h30m, 90s): the same pattern, so a
# number without a unit is refused here, before anything is built.
[[ "${TIMEOUT}" =~ ^([0-9]+(h|m|s|ms))+$ ]] || bad_input "timeout '${TIMEOUT}' is not a duration such as 30m or 1h30m"
case "${IMAGES}" in build | pull) ;; *) bad_input "images must be build or pull, not '${IMAGES}'" ;; esac
case "${CLUSTER}" in kind | existing) ;; *) bad_input "CLUSTER must be kind or existing, not '${CLUSTER}'" ;; esac
read -r -d '' -a extra_images <<<"${LOAD_IMAGES}" || true
if [[ "${CLUSTER}" == "existing" && ${#extra_images[@]} -gt 0 && -z "${LOAD_IMAGES_CMD}" ]]; then
  bad_input "LOAD_IMAGES in existing mode needs LOAD_IMAGES_CMD, the command that loads an image into your cluster"
fi
if [[ "${CLUSTER}" == "existing" && -n "${BUILD_COMMAND}" && -z "${LOAD_IMAGES_CMD}" ]]; then
  bad_input "build-command in existing mode needs LOAD_IMAGES_CMD, the command that loads the images it builds into your cluster"
fi
# The variants' images go where LOAD_IMAGES go: into kind, or through LOAD_IMAGES_CMD (without
# it, an existing cluster pulls them from their registry).
variant_images=()
if [[ -n "${paired}" ]]; then variant_images=("${BASE_IMAGE}" "${CANDIDATE_IMAGE}"); fi
if [[ -e "${OUT}" && ! -d "${OUT}" ]]; then bad_input "out '${OUT}' exists and is not a folder"; fi

chart_field() { sed -n "s/^$1: *\"\{0,1\}\([^\"]*\)\"\{0,1\}$/\1/p" "${CHART}/Chart.yaml"; }
chart_version="$(chart_field version)"
app_version="$(chart_field appVersion)"
[[ -n "${chart_version}" && -n "${app_version}" ]] || bad_input "cannot read version and appVersion from ${CHART}/Chart.yaml"
if [[ -n "${CHART_VERSION}" && "${CHART_VERSION}" != "${chart_version}" ]]; then
  bad_input "chart-version ${CHART_VERSION} asked for, but this checkout of the action has chart ${chart_version}: use the action's tag of that version (uses: .../benchmatrix@v${CHART_VERSION})"
fi
readonly IMAGE_TAG="${IMAGE_TAG:-${app_version}}"
readonly OPERATOR_IMAGE="${IMAGE_REGISTRY}/benchmatrix-operator:${IMAGE_TAG}"
readonly IMAGE_LIST=("${OPERATOR_IMAGE}" "${IMAGE_REGISTRY}/benchmatrix-target:${IMAGE_TAG}" "${IMAGE_REGISTRY}/benchmatrix-loadgen:${IMAGE_TAG}")

need() { command -v "$1" >/dev/null 2>&1 || bad_input "$1 is required: $2"; }
need kubectl "https://kubernetes.io/docs/tasks/tools/ (GitHub's ubuntu runners have it)"
if [[ "${CLUSTER}" == "kind" ]]; then need kind "https://kind.sigs.k8s.io/ (GitHub's ubuntu runners have it)"; fi
# Local images: built here, or pulled into docker so that kind can load them.
images_local=""
if [[ "${IMAGES}" == "build" || "${CLUSTER}" == "kind" ]]; then
  need "${DOCKER}" "it builds or pulls the images (or CLUSTER=existing IMAGES=pull)"
  images_local=1
fi
if [[ -n "${KUBECTL_BENCHMATRIX}" && ! -x "${KUBECTL_BENCHMATRIX}" ]]; then
  bad_input "KUBECTL_BENCHMATRIX '${KUBECTL_BENCHMATRIX}' is not an executable file"
fi
if [[ -z "${KUBECTL_BENCHMATRIX}" && -z "${images_local}" ]]; then
  need kubectl-benchmatrix "with IMAGES=pull on an existing cluster the plugin comes from PATH or KUBECTL_BENCHMATRIX"
fi

# ---------------------------------------------------------------------------------------------
# 2. Images, before the cluster: a failed build leaves nothing to clean up

if [[ "${IMAGES}" == "build" ]]; then
  revision="$(git -C "${ACTION_ROOT}" rev-parse HEAD 2>/dev/null || echo unknown)"
  for component in operator target loadgen; do
    image="${IMAGE_REGISTRY}/benchmatrix-${component}:${IMAGE_TAG}"
    step "building ${image}"
    DOCKER_BUILDKIT=1 "${DOCKER}" build --target "${component}" \
      --build-arg VERSION="${IMAGE_TAG}" --build-arg REVISION="${revision}" \
      -t "${image}" "${ACTION_ROOT}"
  done
elif [[ "${CLUSTER}" == "kind" ]]; then
  for image in "${IMAGE_LIST[@]}"; do
    step "pulling ${image}"
    "${DOCKER}" pull "${image}"
  done
fi

# The base and the candidate: BUILD_COMMAND in a checkout of BASE_REF, then in the workspace.
if [[ -n "${BUILD_COMMAND}" ]]; then
  step "checking out the base ${base_ref}"
  # actions/checkout leaves a clone of depth 1: the base is fetched from origin when missing.
  base_commit="$(git rev-parse --verify --quiet "${base_ref}^{commit}" || true)"
  if [[ -z "${base_commit}" ]]; then
    git fetch --no-tags --depth=1 origin "${base_ref}"
    base_commit="$(git rev-parse --verify "FETCH_HEAD^{commit}")"
  fi
  base_tree="${work}/base"
  git worktree add --detach "${base_tree}" "${base_commit}"
  step "building the base image ${BASE_IMAGE} (build-command in the checkout of ${base_ref})"
  (cd "${base_tree}" && IMAGE="${BASE_IMAGE}" BENCHMATRIX_VARIANT=base bash -euo pipefail -c "${BUILD_COMMAND}")
  step "building the candidate image ${CANDIDATE_IMAGE} (build-command in $(pwd))"
  IMAGE="${CANDIDATE_IMAGE}" BENCHMATRIX_VARIANT=candidate bash -euo pipefail -c "${BUILD_COMMAND}"
fi

# ---------------------------------------------------------------------------------------------
# 3. Cluster and images in it

if [[ "${CLUSTER}" == "kind" ]]; then
  if kind get clusters 2>/dev/null | grep -qx "${KIND_CLUSTER}"; then
    step "reusing kind cluster ${KIND_CLUSTER} (it stays afterwards)"
  else
    step "creating kind cluster ${KIND_CLUSTER}"
    create_args=(--name "${KIND_CLUSTER}" --wait 180s)
    if [[ -n "${KIND_NODE_IMAGE}" ]]; then create_args+=(--image "${KIND_NODE_IMAGE}"); fi
    cluster_created=1
    kind create cluster "${create_args[@]}"
  fi
  # A private kubeconfig: the user's current context is neither used nor changed.
  kind get kubeconfig --name "${KIND_CLUSTER}" >"${work}/kubeconfig"
  export KUBECONFIG="${work}/kubeconfig"
  cluster_ready=1
  step "loading the images into kind"
  kind load docker-image --name "${KIND_CLUSTER}" "${IMAGE_LIST[@]}" "${extra_images[@]}" "${variant_images[@]}"
else
  step "using the current context $(kubectl config current-context)"
  cluster_ready=1
  to_load=("${extra_images[@]}" "${variant_images[@]}")
  if [[ "${IMAGES}" == "build" ]]; then to_load=("${IMAGE_LIST[@]}" "${extra_images[@]}" "${variant_images[@]}"); fi
  if [[ -n "${LOAD_IMAGES_CMD}" ]]; then
    read -r -a load_cmd <<<"${LOAD_IMAGES_CMD}"
    for image in "${to_load[@]}"; do
      step "loading ${image}: ${LOAD_IMAGES_CMD} ${image}"
      "${load_cmd[@]}" "${image}"
    done
  else
    log "LOAD_IMAGES_CMD unset: the cluster pulls ${IMAGE_REGISTRY}/...:${IMAGE_TAG} itself"
  fi
fi

# ---------------------------------------------------------------------------------------------
# 4. The plugin: kubectl runs kubectl-benchmatrix from PATH for `kubectl benchmatrix`

mkdir -p "${work}/bin"
if [[ -n "${KUBECTL_BENCHMATRIX}" ]]; then
  step "the plugin: ${KUBECTL_BENCHMATRIX}"
  ln -s "$(cd "$(dirname "${KUBECTL_BENCHMATRIX}")" && pwd)/$(basename "${KUBECTL_BENCHMATRIX}")" "${work}/bin/kubectl-benchmatrix"
elif [[ -n "${images_local}" ]]; then
  step "the plugin: the benchmatrix binary out of ${OPERATOR_IMAGE}"
  container="$("${DOCKER}" create "${OPERATOR_IMAGE}")"
  "${DOCKER}" cp "${container}:/usr/local/bin/benchmatrix" "${work}/bin/kubectl-benchmatrix"
  "${DOCKER}" rm "${container}" >/dev/null
else
  step "the plugin: $(command -v kubectl-benchmatrix)"
fi
export PATH="${work}/bin:${PATH}"

# ---------------------------------------------------------------------------------------------
# 5. Install (the commands of docs/book/src/kubernetes/install.md)

helm="${HELM:-}"
if [[ -z "${helm}" ]]; then
  if command -v helm >/dev/null 2>&1; then
    helm="$(command -v helm)"
  else
    step "installing helm (scripts/install-helm.sh)"
    helm="$("${ACTION_ROOT}/scripts/install-helm.sh" | tail -n 1)"
  fi
fi

step "installing the CRD, then chart ${chart_version} into ${RELEASE_NAMESPACE}"
env HELM="${helm}" CHART="${CHART}" RELEASE="${RELEASE}" RELEASE_NAMESPACE="${RELEASE_NAMESPACE}" \
  IMAGE_REGISTRY="${IMAGE_REGISTRY}" IMAGE_TAG="${IMAGE_TAG}" KUBELET_INSECURE_TLS="${KUBELET_INSECURE_TLS}" \
  "${ACTION_ROOT}/scripts/install-operator.sh"

# ---------------------------------------------------------------------------------------------
# 6. Run, then compare

doing="creating the out folder ${OUT}"
mkdir -p "${OUT}"
run_args=(--out "${OUT}" --timeout "${TIMEOUT}" --junit "${OUT}/junit.xml" --benchmark-json "${OUT}/benchmark.json")
if [[ -n "${paired}" ]]; then
  run_args+=(--base "${BASE_IMAGE}" --candidate "${CANDIDATE_IMAGE}" --max-regression "${MAX_REGRESSION}")
fi
log "kubectl benchmatrix run ${SPEC} ${run_args[*]}"
set +e
kubectl benchmatrix run "${SPEC}" "${run_args[@]}"
run_code=$?
set -e

if [[ -n "${BASELINE}" && -f "${OUT}/status.yaml" ]]; then
  log "kubectl benchmatrix compare ${BASELINE} ${OUT}/status.yaml --max-regression ${MAX_REGRESSION}"
  set +e
  kubectl benchmatrix compare "${BASELINE}" "${OUT}/status.yaml" \
    --max-regression "${MAX_REGRESSION}" --out "${OUT}/compare"
  compare_code=$?
  set -e
elif [[ -n "${BASELINE}" ]]; then
  log "no ${OUT}/status.yaml: nothing to compare with ${BASELINE}"
fi

# ---------------------------------------------------------------------------------------------
# 7. The verdict: the run's, else the comparison's

case "${run_code}" in
  0)
    run_says="every cell measured"
    if [[ -n "${paired}" ]]; then run_says+="; no regression of the candidate beyond ${MAX_REGRESSION}% against the base"; fi
    ;;
  1) run_says="a cell failed (report.md's Cells say which and why)" ;;
  2) run_says="kubectl benchmatrix run refused the BenchmarkRun or its --out (its message is in the log)" ;;
  3)
    if [[ -n "${paired}" ]]; then
      run_says="a threshold failed, or the candidate regressed beyond ${MAX_REGRESSION}% against the base (report.md's Thresholds and Variants say which)"
    else
      run_says="a threshold failed (report.md's Thresholds say which)"
    fi
    ;;
  4) run_says="the run did not finish within ${TIMEOUT} (the plugin deleted it; raise timeout)" ;;
  5) run_says="kubectl benchmatrix run could not reach the cluster or the operator, or the run was deleted under it (its message is in the log)" ;;
  130) run_says="kubectl benchmatrix run was interrupted (the job was cancelled; the plugin deleted the run)" ;;
  *) run_says="kubectl benchmatrix run ended with exit ${run_code} (an error: its message is in the log)" ;;
esac
case "${compare_code}" in
  "") compare_says="" ;;
  0) compare_says="no regression beyond ${MAX_REGRESSION}% against the baseline" ;;
  3) compare_says="a regression beyond ${MAX_REGRESSION}% against the baseline" ;;
  2) compare_says="the baseline could not be compared (not a status, or no cell measured in both runs: see the log)" ;;
  *) compare_says="the comparison failed with exit ${compare_code}" ;;
esac
if [[ "${run_code}" -ne 0 && "${run_code}" -ne 3 ]]; then dump_diagnostics; fi
final_verdict="${run_says}${compare_says:+; ${compare_says}}"
final_code="${run_code}"
if [[ "${run_code}" -eq 0 ]]; then final_code="${compare_code:-0}"; fi
