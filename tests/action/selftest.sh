#!/usr/bin/env bash
# Runs scripts/action/run.sh (the GitHub Action's work) against stand-ins for docker, kind,
# helm, kubectl and the kubectl-benchmatrix plugin that record their calls, to check the
# script's flow where no cluster or Docker engine exists (scripts/check-delivery.sh runs it):
# the order of the steps; the plugin copied out of the operator image and reached through
# `kubectl benchmatrix`; the comparison only when a baseline is given; the summary appended to
# $GITHUB_STEP_SUMMARY and the outputs to $GITHUB_OUTPUT; the run's and the comparison's exit
# codes (0, 1, 3, a timeout's) passed on, the run's first; bad input refused before anything
# runs; a failed setup step named, exit 5, the cluster still deleted; existing-cluster mode;
# inputs that hold shell syntax staying data; the JUnit and benchmark JSON outputs; and the pull
# request comment, against a stand-in of GitHub's API: created once, then updated on each push
# (found by its marker, on a later page too), never duplicated, never without a token, and a
# refusal of the API only a warning; base and candidate as variants of one run: the flags, the
# images loaded, the summary's ratio table, and build-command in a checkout of the base.
set -euo pipefail
cd "$(dirname "$0")/../.."

root="$(pwd)"
# shellcheck source=tests/selftest-lib.sh
source "${root}/tests/selftest-lib.sh"

recording_stubs kind helm stubload

# The plugin: `run` writes what `kubectl benchmatrix run` writes (status.yaml, report.md shaped
# as benchmatrix renders it, a chart) and exits $STUB_RUN_EXIT; `compare` writes compare.md as
# `benchmatrix compare --out` does and exits $STUB_COMPARE_EXIT. It says where it came from
# ($STUB_ORIGIN: the operator image, or PATH).
cat >"${tmp}/plugin" <<'STUB'
#!/usr/bin/env bash
echo "kubectl-benchmatrix[${STUB_ORIGIN:-path}] $*" >>"${STUB_LOG}"
# The exact spellings the script must use; a word split apart (an unquoted path) shows here.
case "$1" in
  run)
    # Paired: --base IMAGE --candidate IMAGE --max-regression PCT after the rest.
    [[ "$3 $5 $7 $9" == "--out --timeout --junit --benchmark-json" ]] &&
      [[ $# -eq 10 || ($# -eq 16 && "${11} ${13} ${15}" == "--base --candidate --max-regression") ]] || {
      echo "kubectl-benchmatrix: want run SPEC --out DIR --timeout D --junit FILE --benchmark-json PATH [--base IMAGE --candidate IMAGE --max-regression PCT], got $# arguments: $*" >&2
      exit 64
    }
    out="$4"
    variants=""
    if [[ $# -eq 16 ]]; then
      variants="$(printf '## Variants\n\nEach candidate against the base over the rounds, measured back to back (base `%s`, candidate `%s`).\n\n| configuration | figure | base | candidate | ratio | 95%% interval | p | verdict |\n|---|---|---:|---:|---:|---|---:|---|\n| pool-x1 | mixed/fast p99 ms | 30.1 | 33.4 | 1.109 | 1.071-1.152 | 0.031 | regression |\n' "${12}" "${14}")"
    fi
    mkdir -p "${out}"
    if [[ "${STUB_RUN_EXIT:-0}" != 2 && "${STUB_RUN_EXIT:-0}" != 4 ]]; then
      echo '<testsuites/>' >"$8"
      echo '[]' >"${10%.json}.smaller.json"
      echo '[]' >"${10%.json}.bigger.json"
    fi
    if [[ "${STUB_RUN_EXIT:-0}" != 2 ]]; then
      printf 'phase: Succeeded\ncells: []\n' >"${out}/status.yaml"
      cat >"${out}/report.md" <<MD
# Benchmark report

- run: \`ci-gate\`
- outcome: Succeeded
- headline: mixed/fast: pool-x1 p99 31.6ms (single-x1 25.0x)

${variants}

## Thresholds

All 9 threshold verdicts passed (condition ThresholdsMet is True).

| threshold | cell | measured | limit | verdict |
|---|---|---:|---:|---|
| p90 below 2s | pool-x1 | 12 ms | 2000 ms | pass |

## Cells

| configuration | outcome | CPU limit enforced by | runner overhead (s) | message |
|---|---|---|---:|---|
| pool-x1 | Succeeded | target: cgroup | 1.20 |  |

## Latency and throughput

### fast in phase mixed

| configuration | requests | errors | samples | rps | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | p99 vs best |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
| pool-x1 | 2092 | 0 | 2092 | 52.0 | 37.0 | 50.1 | 58.4 | 61.0 | 61.5 | 1.0x |

![p99 of fast in mixed](p99-mixed-fast.svg)

## Target resources

| configuration | figures from | replicas |
|---|---|---:|
| pool-x1 | kubelet | 1 |
MD
      echo "<svg/>" >"${out}/p99-mixed-fast.svg"
    fi
    exit "${STUB_RUN_EXIT:-0}"
    ;;
  compare)
    [[ "$4 $6" == "--max-regression --out" && $# -eq 7 ]] || {
      echo "kubectl-benchmatrix: want compare BASE NEW --max-regression PCT --out DIR, got $# arguments: $*" >&2
      exit 64
    }
    out="$7"
    mkdir -p "${out}"
    cat >"${out}/compare.md" <<MD
# Comparison

- base: \`$2\`
- new: \`$3\`

| configuration | phase | endpoint | figure | base | new | change | verdict | evidence |
|---|---|---|---|---:|---:|---:|---|---|
| pool-x1 | mixed | fast | p99 ms | 21.0 | 30.0 | +42.9% | regression | U test p=0.008 |

1 regression(s), 0 improvement(s), 0 within noise, 0 added, 0 removed, 0 failed.

![compare-p99.svg](compare-p99.svg)

MD
    echo "| pool-x1 | mixed | fast | p99 ms | 21.0 | 30.0 | +42.9% | regression |"
    exit "${STUB_COMPARE_EXIT:-0}"
    ;;
esac
exit 0
STUB
chmod +x "${tmp}/plugin"
cp "${tmp}/plugin" "${stubs}/kubectl-benchmatrix"

# docker: `create` prints a container id; `cp` leaves the plugin stand-in, marked as the image's.
cat >"${stubs}/docker" <<'STUB'
#!/usr/bin/env bash
echo "docker $*" >>"${STUB_LOG}"
if [[ "docker $1" == "${STUB_FAIL:-}" ]]; then echo "docker: planted failure" >&2; exit 1; fi
case "$1" in
  create) echo "stub-container" ;;
  cp) printf '#!/usr/bin/env bash\nSTUB_ORIGIN=image exec %q "$@"\n' "${STUB_PLUGIN}" >"$3" && chmod +x "$3" ;;
esac
exit 0
STUB
# kubectl: `kubectl benchmatrix ...` runs kubectl-benchmatrix from PATH, as the real one runs a
# plugin; everything else is recorded.
cat >"${stubs}/kubectl" <<'STUB'
#!/usr/bin/env bash
if [[ "$1" == benchmatrix ]]; then
  shift
  exec kubectl-benchmatrix "$@"
fi
echo "kubectl $*" >>"${STUB_LOG}"
if [[ "kubectl $1" == "${STUB_FAIL:-}" ]]; then echo "kubectl: planted failure" >&2; exit 1; fi
case "$*" in
  "config current-context") echo "stub-context" ;;
  "logs "*) echo "operator log line" ;;
esac
exit 0
STUB
# curl, as GitHub's REST API for issue comments, keeping the comments in $STUB_GITHUB/comments.json.
# It answers only a request that carries the token in a header file (-H @FILE) and records
# "curl METHOD PATH" (never a header); STUB_GITHUB_FAIL=1 makes it answer 403.
cat >"${stubs}/curl" <<'STUB'
#!/usr/bin/env python3
import json, os, re, sys
args = sys.argv[1:]
method, url, data, headers = "GET", None, None, []
i = 0
while i < len(args):
    a = args[i]
    if a == "-X": method = args[i + 1]; i += 2; continue
    if a == "-H": headers.append(args[i + 1]); i += 2; continue
    if a == "--data-binary": data = args[i + 1]; i += 2; continue
    if a.startswith("-"): i += 1; continue
    url = a; i += 1
path = re.sub(r"^https?://[^/]+", "", url)
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(f"curl {method} {path}\n")
auth = ""
for h in headers:
    if h.startswith("@"):
        auth = open(h[1:]).read()
    elif "Authorization" in h:
        sys.exit("the token was passed on the command line")
if f"Authorization: Bearer {os.environ['STUB_TOKEN']}" not in auth:
    print('{"message": "Bad credentials"}'); sys.exit(22)
if os.environ.get("STUB_GITHUB_FAIL") == "1":
    print('{"message": "Resource not accessible by integration"}'); sys.exit(22)
state = os.path.join(os.environ["STUB_GITHUB"], "comments.json")
comments = json.load(open(state)) if os.path.exists(state) else []
m = re.match(r"^/repos/acme/shop/issues/(\d+)/comments(\?per_page=(\d+)&page=(\d+))?$", path)
c = re.match(r"^/repos/acme/shop/issues/comments/(\d+)$", path)
if m and method == "GET":
    per, page = int(m.group(3) or 30), int(m.group(4) or 1)
    mine = [x for x in comments if x["issue"] == int(m.group(1))]
    print(json.dumps(mine[(page - 1) * per: page * per]))
elif m and method == "POST":
    body = json.load(open(data[1:]))["body"]
    new = {"id": 1000 + len(comments), "issue": int(m.group(1)), "body": body}
    comments.append(new); json.dump(comments, open(state, "w")); print(json.dumps(new))
elif c and method == "PATCH":
    body = json.load(open(data[1:]))["body"]
    for x in comments:
        if x["id"] == int(c.group(1)): x["body"] = body
    json.dump(comments, open(state, "w")); print("{}")
else:
    print('{"message": "Not Found"}'); sys.exit(22)
STUB
chmod +x "${stubs}"/*

# Runs run.sh from a fresh workspace (as the action does: relative paths from there) with the
# stand-ins; sets $status, $log (the recorded calls), $out (what it printed), $summary (the
# step summary file, which held a line of an earlier step) and $outputs ($GITHUB_OUTPUT). A
# BenchmarkRun file is there as bench.yaml, and also as $extra_spec when that is set.
ws="${tmp}/ws"
extra_spec=""
# ws_git=1: the workspace is what actions/checkout leaves, a clone of depth 1 of $origin's
# head (VERSION holds "candidate"); its parent, the base (VERSION "base", also the branch
# release), is not in it, and
# ${tmp}/pr-base-event.json is a pull_request event naming that parent as its base.
ws_git=""
origin="${tmp}/origin"
git_q() { git -c user.name=selftest -c user.email=selftest@example.invalid -c init.defaultBranch=main "$@" >/dev/null 2>&1; }
run_action() {
  rm -rf "${ws}"
  if [[ -n "${ws_git}" ]]; then
    if [[ ! -d "${origin}" ]]; then
      git_q init "${origin}"
      echo base >"${origin}/VERSION" && git_q -C "${origin}" add VERSION && git_q -C "${origin}" commit -m base
      git_q -C "${origin}" branch release
      echo candidate >"${origin}/VERSION" && git_q -C "${origin}" commit -am candidate
    fi
    git_q clone --depth 1 "file://${origin}" "${ws}"
    printf '{"pull_request": {"number": 7, "base": {"sha": "%s"}}}' "$(git -C "${origin}" rev-parse HEAD~1)" >"${tmp}/pr-base-event.json"
  fi
  mkdir -p "${ws}"
  printf 'apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\n' >"${ws}/bench.yaml"
  if [[ -n "${extra_spec}" ]]; then cp "${ws}/bench.yaml" "${ws}/${extra_spec}"; fi
  printf 'phase: Succeeded\ncells: []\n' >"${ws}/main-status.yaml"
  echo "earlier step's summary" >"${ws}/summary"
  : >"${ws}/outputs" && : >"${tmp}/calls"
  set +e
  (cd "${ws}" && env PATH="${stubs}:${PATH}" STUB_LOG="${tmp}/calls" STUB_PLUGIN="${tmp}/plugin" \
    GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="${ws}/summary" GITHUB_OUTPUT="${ws}/outputs" \
    HELM="${stubs}/helm" SPEC=bench.yaml "$@" bash "${root}/scripts/action/run.sh" >"${tmp}/out" 2>&1)
  status=$?
  set -e
  log="$(cat "${tmp}/calls")"
  out="$(cat "${tmp}/out")"
  summary="$(cat "${ws}/summary")"
  outputs="$(cat "${ws}/outputs")"
}

# A case: begin NAME, then check/refute COMMAND... (each runs at once; a here-string given to
# check reaches its command), then end_case reports the first check that did not hold.
case_name=""
case_failed=""
begin() {
  case_name="$1"
  case_failed=""
}
check() { "$@" || case_failed="${case_failed:-$*}"; }
refute() { ! "$@" || case_failed="${case_failed:-not: $*}"; }
end_case() {
  if [[ -z "${case_failed}" ]]; then
    pass "${case_name}"
  else
    fail "${case_name} (exit ${status}): ${case_failed}"
    echo "${out}" | tail -n 25
  fi
}
exit_is() { [[ "${status}" -eq "$1" ]]; }
has() { grep -q -- "$1" <<<"$2"; }
has_line() { grep -qxF -- "$1" <<<"$2"; }

tag="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/benchmatrix/Chart.yaml)"
version="$(sed -n 's/^version: *//p' charts/benchmatrix/Chart.yaml)"
img="ghcr.io/benchmatrix/benchmatrix"

# 1. kind mode, images built, no baseline, everything measured.
run_action
begin "kind mode: build, create, load, plugin out of the operator image, install, run, delete; no compare"
check exit_is 0
check in_order "^docker build --target operator .*-t ${img}-operator:${tag} ${root}$" \
  "^docker build --target target .*-t ${img}-target:${tag} ${root}$" \
  "^docker build --target loadgen .*-t ${img}-loadgen:${tag} ${root}$" \
  "^kind create cluster --name benchmatrix-action --wait 180s$" \
  "^kind get kubeconfig --name benchmatrix-action" \
  "^kind load docker-image --name benchmatrix-action ${img}-operator:${tag} ${img}-target:${tag} ${img}-loadgen:${tag}$" \
  "^docker create ${img}-operator:${tag}$" \
  "^docker cp stub-container:/usr/local/bin/benchmatrix " \
  "^kubectl apply --server-side --force-conflicts -f ${root}/charts/benchmatrix/crds/" \
  "^helm upgrade --install benchmatrix ${root}/charts/benchmatrix .*image.operator.tag=${tag} .*operator.kubeletInsecureTLS=true --wait" \
  "^kubectl -n benchmatrix-system rollout status deployment/benchmatrix" \
  "^kubectl-benchmatrix\[image\] run bench.yaml --out benchmatrix-out --timeout 30m --junit benchmatrix-out/junit.xml --benchmark-json benchmatrix-out/benchmark.json$" \
  "^kind delete cluster --name benchmatrix-action$"
refute has "compare\|docker pull\|^kubectl logs" "${log}"
check test -f "${ws}/benchmatrix-out/status.yaml"
check test -f "${ws}/benchmatrix-out/summary.md"
end_case

begin "summary appended to GITHUB_STEP_SUMMARY: verdict, report tables without images or resources, no baseline"
check test "$(head -n 1 <<<"${summary}")" == "earlier step's summary"
check has_line "## benchmatrix: bench.yaml" "${summary}"
check has_line "**every cell measured (exit 0)**" "${summary}"
check has "^- headline: mixed/fast: pool-x1 p99 31.6ms" "${summary}"
check has_line "### Thresholds" "${summary}"
check has_line "### Cells" "${summary}"
check has_line "#### fast in phase mixed" "${summary}"
check has "^| pool-x1 | 2092 | 0 | 2092 | 52.0 |" "${summary}"
refute has "^!\[\|Target resources\|^# Benchmark report" "${summary}"
check has_line "No baseline given: nothing compared." "${summary}"
check has "the \`benchmatrix\` artifact of this run" "${summary}"
check has "report.html (the verdict, the tables and every chart; .*is also the \`benchmatrix-report\` artifact" "${summary}"
check cmp -s <(tail -n +2 "${ws}/summary") "${ws}/benchmatrix-out/summary.md"
end_case

begin "outputs: exit-code, run-exit-code, compare-exit-code (empty), out-dir, junit and benchmark files (absolute)"
check has_line "exit-code=0" "${outputs}"
check has_line "run-exit-code=0" "${outputs}"
check has_line "compare-exit-code=" "${outputs}"
check has_line "out-dir=${ws}/benchmatrix-out" "${outputs}"
check has "run bench.yaml --out benchmatrix-out --timeout 30m --junit benchmatrix-out/junit.xml --benchmark-json benchmatrix-out/benchmark.json$" "${log}"
check has_line "junit=${ws}/benchmatrix-out/junit.xml" "${outputs}"
check has_line "benchmark-smaller=${ws}/benchmatrix-out/benchmark.smaller.json" "${outputs}"
check has_line "benchmark-bigger=${ws}/benchmatrix-out/benchmark.bigger.json" "${outputs}"
refute has "^curl" "${log}"
end_case

# 2. A baseline, no regression: compared after the run, the comparison in the summary.
run_action BASELINE=main-status.yaml MAX_REGRESSION=7.5 OUT=bench-out
begin "baseline, no regression: compare after run, its table in the summary, exit 0"
check exit_is 0
check in_order "^kubectl-benchmatrix\[image\] run bench.yaml --out bench-out --timeout 30m --junit bench-out/junit.xml --benchmark-json bench-out/benchmark.json$" \
  "^kubectl-benchmatrix\[image\] compare main-status.yaml bench-out/status.yaml --max-regression 7.5 --out bench-out/compare$" \
  "^kind delete cluster"
check has_line "**every cell measured; no regression beyond 7.5% against the baseline (exit 0)**" "${summary}"
check has_line "### Against the baseline" "${summary}"
check has "^| pool-x1 | mixed | fast | p99 ms | 21.0 | 30.0 | +42.9% | regression |" "${summary}"
refute has "^# Comparison\|compare-p99.svg" "${summary}"
check has "status.yaml, report.md, the charts, compare/: the" "${summary}"
check has_line "compare-exit-code=0" "${outputs}"
end_case

# 3. A regression beyond the limit: exit 3 with the message, as an error annotation.
run_action BASELINE=main-status.yaml STUB_COMPARE_EXIT=3
begin "regression: exit 3, error annotation, outputs say the comparison failed"
check exit_is 3
check has_line "::error title=benchmatrix::every cell measured; a regression beyond 10% against the baseline (exit 3)" "${out}"
check has_line "exit-code=3" "${outputs}"
check has_line "run-exit-code=0" "${outputs}"
check has_line "compare-exit-code=3" "${outputs}"
refute has "^kubectl logs" "${log}"
end_case

# 4. A cell failed: exit 1 even though the comparison passed; diagnostics into the out folder.
run_action BASELINE=main-status.yaml STUB_RUN_EXIT=1
begin "a cell failed: exit 1 (the run's code first), compared anyway, diagnostics saved"
check exit_is 1
check has "compare main-status.yaml" "${log}"
check has "^::error title=benchmatrix::a cell failed (report.md's Cells say which and why); no regression" "${out}"
check in_order "^kubectl get benchmarkruns -A -o yaml" \
  "^kubectl logs -n benchmatrix-system deployment/benchmatrix --tail=500" "^kind delete cluster"
check test -s "${ws}/benchmatrix-out/diagnostics/operator.log"
check has_line "exit-code=1" "${outputs}"
end_case

# 5. A threshold failed and the comparison too: 3 either way; no diagnostics (nothing broke).
run_action BASELINE=main-status.yaml STUB_RUN_EXIT=3 STUB_COMPARE_EXIT=3
begin "a threshold failed: exit 3, both verdicts in the message, no diagnostics"
check exit_is 3
check has "a threshold failed (report.md's Thresholds say which); a regression beyond 10%" "${summary}"
refute has "^kubectl logs" "${log}"
end_case

# 6. The plugin's timeout (4): passed on, named as such; a code the script does not know is
# passed on too, as an error whose message is in the log.
run_action STUB_RUN_EXIT=4 TIMEOUT=1h30m
begin "the run's timeout: exit 4, named, no CI files to point at"
check exit_is 4
check has "run bench.yaml --out benchmatrix-out --timeout 1h30m --junit" "${log}"
check has "the run did not finish within 1h30m" "${out}"
check has_line "junit=" "${outputs}"
check has_line "benchmark-smaller=" "${outputs}"
end_case
run_action STUB_RUN_EXIT=7 TIMEOUT=1h30m
begin "the run's other code: passed on, an error whose message is in the log"
check exit_is 7
check has "kubectl benchmatrix run ended with exit 7 (an error: its message is in the log)" "${out}"
refute has "a timeout after" "${out}"
end_case

# 7. The plugin refused the file: exit 2, no status, so nothing compared, and said so.
run_action BASELINE=main-status.yaml STUB_RUN_EXIT=2
begin "run exit 2: passed on, no comparison without a status, the summary says why"
check exit_is 2
refute has " compare " "${log}"
check has_line "Not compared: the run wrote no status.yaml." "${summary}"
check has_line "No report: report.md was not written." "${summary}"
end_case

# 8. Pulled images, a node image, your own images: pulled, then loaded with the rest.
run_action IMAGES=pull KIND_NODE_IMAGE=kindest/node:v1.31.0 LOAD_IMAGES=$'acme/orders:1.4 acme/db:2\nacme/cache:3'
begin "images: pull; kind-node-image; load-images loaded with the three"
check exit_is 0
refute has "^docker build" "${log}"
check in_order "^docker pull ${img}-operator:${tag}$" "^docker pull ${img}-target:${tag}$" "^docker pull ${img}-loadgen:${tag}$" \
  "^kind create cluster --name benchmatrix-action --wait 180s --image kindest/node:v1.31.0$" \
  "^kind load docker-image --name benchmatrix-action ${img}-operator:${tag} ${img}-target:${tag} ${img}-loadgen:${tag} acme/orders:1.4 acme/db:2 acme/cache:3$" \
  "^kubectl-benchmatrix\[image\] run"
end_case

# 9. A kind cluster of that name exists: reused, and left alone afterwards.
echo benchmatrix-action >"${tmp}/clusters"
run_action STUB_KIND_CLUSTERS="${tmp}/clusters"
begin "an existing kind cluster: reused, not created, not deleted"
check exit_is 0
refute has "^kind create\|^kind delete" "${log}"
end_case

# 10. Existing cluster, built images: no kind; the load command gets ours and the user's images.
run_action CLUSTER=existing LOAD_IMAGES_CMD="stubload image import -c mine" LOAD_IMAGES=acme/orders:1.4 \
  IMAGE_REGISTRY=reg.example/bench IMAGE_TAG=dev
begin "existing mode: no kind, LOAD_IMAGES_CMD per image, overridden registry and tag, kubelet TLS verified"
check exit_is 0
refute has "^kind " "${log}"
check in_order "^docker build --target operator .*-t reg.example/bench/benchmatrix-operator:dev" \
  "^kubectl config current-context" \
  "^stubload image import -c mine reg.example/bench/benchmatrix-operator:dev$" \
  "^stubload image import -c mine reg.example/bench/benchmatrix-loadgen:dev$" \
  "^stubload image import -c mine acme/orders:1.4$" \
  "^docker create reg.example/bench/benchmatrix-operator:dev$" \
  "^helm upgrade --install .*image.target.repository=reg.example/bench/benchmatrix-target .*operator.kubeletInsecureTLS=false" \
  "^kubectl-benchmatrix\[image\] run"
end_case

# 11. Existing cluster, published images: no docker at all; the plugin from PATH.
run_action CLUSTER=existing IMAGES=pull
begin "existing mode with pull: no docker, no load, the plugin from PATH"
check exit_is 0
refute has "^docker \|^stubload\|^kind " "${log}"
check has "^kubectl-benchmatrix\[path\] run bench.yaml" "${log}"
check has "the cluster pulls ghcr.io/benchmatrix/...:${tag} itself" "${out}"
end_case

# 12. KUBECTL_BENCHMATRIX names the plugin: used in place of the image's. The given binary says
# it is "mine", so the plugin from PATH or the image's would show.
printf '#!/usr/bin/env bash\nSTUB_ORIGIN=mine exec %q "$@"\n' "${tmp}/plugin" >"${tmp}/my-benchmatrix"
chmod +x "${tmp}/my-benchmatrix"
run_action KUBECTL_BENCHMATRIX="${tmp}/my-benchmatrix"
begin "KUBECTL_BENCHMATRIX: that binary is the plugin, nothing copied out of the image"
check exit_is 0
refute has "^docker create\|^docker cp" "${log}"
check has "^kubectl-benchmatrix\[mine\] run bench.yaml" "${log}"
refute has "^kubectl-benchmatrix\[path\]\|^kubectl-benchmatrix\[image\]" "${log}"
end_case

# 13. Bad input: refused before any tool runs, exit 2, said in the summary and the outputs.
bad() {
  local name="$1" expect="$2"
  shift 2
  run_action "$@"
  begin "bad input refused before anything runs: ${name}"
  check exit_is 2
  check test -z "${log}"
  check has "${expect}" "${out}"
  check has "${expect}" "${summary}"
  check has_line "exit-code=2" "${outputs}"
  end_case
}
bad "no spec" "SPEC (the action's input spec) is empty" SPEC=
bad "a spec that is not there" "the BenchmarkRun file 'nope.yaml' is not a readable file" SPEC=nope.yaml
bad "a baseline that is not there" "the baseline 'gone.yaml' is not a readable file" BASELINE=gone.yaml
bad "max-regression not a number" "max-regression 'ten' is not a percentage" MAX_REGRESSION=ten
bad "timeout not a duration" "timeout 'soon' is not a duration" TIMEOUT=soon
bad "timeout a number without a unit" "timeout '1800' is not a duration" TIMEOUT=1800
bad "images neither build nor pull" "images must be build or pull, not 'fetch'" IMAGES=fetch
bad "another chart version" "chart-version 9.9.9 asked for, but this checkout of the action has chart ${version}" CHART_VERSION=9.9.9
bad "load-images on an existing cluster without a load command" "LOAD_IMAGES in existing mode needs LOAD_IMAGES_CMD" \
  CLUSTER=existing LOAD_IMAGES=acme/orders:1.4
run_action CHART_VERSION="${version}"
begin "chart-version equal to the checkout's chart: accepted"
check exit_is 0
end_case

# 14. A setup step fails: exit 5 naming the step, diagnostics, the cluster still deleted.
run_action STUB_FAIL="helm upgrade"
begin "setup failure (helm): exit 5 naming the step, diagnostics, cluster deleted, no run"
check exit_is 5
check has_line "::error title=benchmatrix::setup failed while installing the CRD, then chart ${version} into benchmatrix-system: a command exited 1 (exit 5)" "${out}"
check in_order "^helm upgrade" "^kubectl logs -n benchmatrix-system" "^kind delete cluster --name benchmatrix-action$"
refute has "^kubectl-benchmatrix" "${log}"
check has_line "exit-code=5" "${outputs}"
check has_line "run-exit-code=" "${outputs}"
end_case
run_action STUB_FAIL="docker build"
begin "setup failure (image build): exit 5 before any cluster exists"
check exit_is 5
refute has "^kind \|^kubectl " "${log}"
check has "setup failed while building ${img}-operator:${tag}: a command exited 1" "${summary}"
end_case

# 15. Inputs holding shell syntax stay data: the file is found under its odd name, nothing runs.
# shellcheck disable=SC2016 # the point: this must never expand
weird='spec $(touch pwned) `touch pwned2`;.yaml'
extra_spec="${weird}"
run_action SPEC="${weird}" OUT='out dir' BASELINE=main-status.yaml
extra_spec=""
begin "inputs with shell syntax or spaces are passed as data, each one argument, never run"
check exit_is 0
check test ! -e "${ws}/pwned"
check test ! -e "${ws}/pwned2"
check grep -qF -- "run ${weird} --out out dir --timeout 30m --junit out dir/junit.xml --benchmark-json out dir/benchmark.json" <<<"${log}"
check grep -qF -- "compare main-status.yaml out dir/status.yaml --max-regression 10 --out out dir/compare" <<<"${log}"
check test -f "${ws}/out dir/summary.md"
check grep -qF -- "## benchmatrix: ${weird}" <<<"${summary}"
end_case

# 16. The pull request comment: created on the first push, updated on the next, never added
# twice. The pull request already has 120 comments of others, so ours lands on page 2, where
# the next run must find it.
github="${tmp}/github"
mkdir -p "${github}"
python3 - "${github}/comments.json" <<'PY'
import json, sys
json.dump([{"id": i, "issue": 7, "body": f"a reviewer's comment {i}"} for i in range(1, 121)]
          + [{"id": 500, "issue": 8, "body": "<!-- benchmatrix-pr-comment bench.yaml -->\nanother PR's"}],
          open(sys.argv[1], "w"))
PY
printf '{"pull_request": {"number": 7}}' >"${tmp}/pr-event.json"
printf '{"ref": "refs/heads/main"}' >"${tmp}/push-event.json"
ours() {
  python3 -c 'import json,sys; print(len([c for c in json.load(open(sys.argv[1])) if c["issue"] == 7 and c["body"].startswith("<!-- benchmatrix-pr-comment bench.yaml -->")]))' "${github}/comments.json"
}
our_body() {
  python3 -c 'import json,sys; print([c["body"] for c in json.load(open(sys.argv[1])) if c["issue"] == 7 and "benchmatrix-pr-comment" in c["body"]][0])' "${github}/comments.json"
}
comment_env=(PR_COMMENT=true GITHUB_TOKEN=s3cr3t-token STUB_TOKEN=s3cr3t-token STUB_GITHUB="${github}"
  GITHUB_REPOSITORY=acme/shop GITHUB_API_URL=https://api.example GITHUB_EVENT_PATH="${tmp}/pr-event.json")
run_action "${comment_env[@]}"
begin "pr-comment, first push: the summary posted once, with its marker, after reading every page"
check exit_is 0
check in_order "^kubectl-benchmatrix\[image\] run" "^curl GET /repos/acme/shop/issues/7/comments?per_page=100&page=1$" \
  "^curl GET /repos/acme/shop/issues/7/comments?per_page=100&page=2$" "^curl POST /repos/acme/shop/issues/7/comments$"
check test "$(ours)" -eq 1
check has "every cell measured (exit 0)" "$(our_body)"
check has "commented on pull request #7" "${out}"
refute has "s3cr3t-token" "${log}"
refute has "s3cr3t-token" "${out}"
end_case
run_action "${comment_env[@]}" STUB_RUN_EXIT=3
begin "pr-comment, next push: the same comment updated with the new verdict, none added"
check exit_is 3
check has "^curl PATCH /repos/acme/shop/issues/comments/1121$" "${log}"
refute has "^curl POST" "${log}"
check test "$(ours)" -eq 1
check has "a threshold failed" "$(our_body)"
refute has "every cell measured (exit 0)" "$(our_body)"
check has "updated the benchmatrix comment 1121 on pull request #7" "${out}"
end_case
run_action "${comment_env[@]}" GITHUB_EVENT_PATH="${tmp}/push-event.json"
begin "pr-comment on a push to a branch: no pull request, no API call"
check exit_is 0
refute has "^curl" "${log}"
check has "not a pull request event: no comment" "${out}"
end_case
run_action "${comment_env[@]}" STUB_GITHUB_FAIL=1
begin "pr-comment refused by the API: a warning, the verdict unchanged"
check exit_is 0
check has "^curl GET" "${log}"
check has_line "::warning title=benchmatrix::could not comment on the pull request (the token needs pull-requests: write)" "${out}"
check has_line "exit-code=0" "${outputs}"
end_case
bad "pr-comment without a token" "pr-comment needs github-token" PR_COMMENT=true
bad "pr-comment neither true nor false" "pr-comment must be true or false, not 'yes'" PR_COMMENT=yes

# 17. Base and candidate side by side in one run (paired): both images loaded with the rest,
# passed as --base/--candidate with --max-regression, the Variants table in the summary.
# in_order over the summary instead of the recorded calls.
summary_in_order() {
  local log="${summary}"
  in_order "$@"
}
paired_env=(BASE_IMAGE=shop:base CANDIDATE_IMAGE="registry.example/shop:pr-7" MAX_REGRESSION=5)
run_action "${paired_env[@]}"
begin "paired: both images loaded into kind, run with --base --candidate --max-regression, no compare"
check exit_is 0
check in_order "^kind create cluster" \
  "^kind load docker-image --name benchmatrix-action ${img}-operator:${tag} ${img}-target:${tag} ${img}-loadgen:${tag} shop:base registry.example/shop:pr-7$" \
  "^kubectl-benchmatrix\[image\] run bench.yaml --out benchmatrix-out --timeout 30m --junit benchmatrix-out/junit.xml --benchmark-json benchmatrix-out/benchmark.json --base shop:base --candidate registry.example/shop:pr-7 --max-regression 5$" \
  "^kind delete cluster"
refute has "compare" "${log}"
refute has "^docker build .* shop:\|git" "${log}"
check has_line "exit-code=0" "${outputs}"
end_case
begin "paired: the job summary shows the ratio table with its intervals, and no baseline section"
check has_line "**every cell measured; no regression of the candidate beyond 5% against the base (exit 0)**" "${summary}"
check has_line "### Variants" "${summary}"
check has_line "| configuration | figure | base | candidate | ratio | 95% interval | p | verdict |" "${summary}"
check has_line "| pool-x1 | mixed/fast p99 ms | 30.1 | 33.4 | 1.109 | 1.071-1.152 | 0.031 | regression |" "${summary}"
check has "(base \`shop:base\`, candidate \`registry.example/shop:pr-7\`)" "${summary}"
check summary_in_order "^### Variants" "^### Thresholds" "^### Cells"
refute has "Against the baseline\|No baseline given" "${summary}"
end_case
run_action "${paired_env[@]}" STUB_RUN_EXIT=3
begin "paired, the plugin's regression (exit 3): passed on, the Variants table named"
check exit_is 3
check has "the candidate regressed beyond 5% against the base (report.md's Thresholds and Variants say which)" "${out}"
check has_line "| configuration | figure | base | candidate | ratio | 95% interval | p | verdict |" "${summary}"
end_case
run_action "${paired_env[@]}" CLUSTER=existing LOAD_IMAGES_CMD="stubload --into mine"
begin "paired, existing cluster: LOAD_IMAGES_CMD loads both images after the project's"
check exit_is 0
check in_order "^stubload --into mine ${img}-loadgen:${tag}$" "^stubload --into mine shop:base$" \
  "^stubload --into mine registry.example/shop:pr-7$" "^kubectl-benchmatrix\[image\] run .* --base shop:base --candidate registry.example/shop:pr-7 --max-regression 5$"
end_case

# 18. build-command: the base built in a checkout of the pull request's base (fetched: the
# workspace is a clone of depth 1), the candidate in the workspace, each as $IMAGE, before any
# cluster exists; the base's checkout removed afterwards.
ws_git=1
# shellcheck disable=SC2016 # expanded by the bash that runs build-command
build='echo "build ${BENCHMATRIX_VARIANT} ${IMAGE} $(cat VERSION) in $(basename "$(pwd)")" >>"${STUB_LOG}"'
run_action "${paired_env[@]}" BUILD_COMMAND="${build}" GITHUB_EVENT_PATH="${tmp}/pr-base-event.json"
begin "build-command: base from the pull request's base commit, candidate from the workspace, then the cluster"
check exit_is 0
check in_order "^build base shop:base base in base$" "^build candidate registry.example/shop:pr-7 candidate in ws$" \
  "^kind create cluster" "^kind load docker-image .* shop:base registry.example/shop:pr-7$" \
  "^kubectl-benchmatrix\[image\] run .* --base shop:base --candidate registry.example/shop:pr-7 --max-regression 5$"
check test "$(git -C "${ws}" worktree list | wc -l)" -eq 1
end_case
run_action "${paired_env[@]}" BUILD_COMMAND="${build}" BASE_REF="$(git -C "${origin}" rev-parse HEAD)"
begin "build-command with base-ref: that commit, no event needed"
check exit_is 0
check has "^build base shop:base candidate in base$" "${log}"
end_case
# shellcheck disable=SC2016 # expanded by the bash that runs build-command
run_action "${paired_env[@]}" BUILD_COMMAND='[[ ${BENCHMATRIX_VARIANT} == base ]] || exit 9' GITHUB_EVENT_PATH="${tmp}/pr-base-event.json"
begin "build-command failing for the candidate: exit 5 naming the step, no cluster, the base's checkout gone"
check exit_is 5
check has "setup failed while building the candidate image registry.example/shop:pr-7 (build-command in " "${out}"
refute has "^kind" "${log}"
check test "$(git -C "${ws}" worktree list | wc -l)" -eq 1
end_case
run_action "${paired_env[@]}" BUILD_COMMAND=true BASE_REF=0123456789abcdef0123456789abcdef01234567
begin "build-command with a base-ref origin lacks: exit 5 naming the checkout"
check exit_is 5
check has "setup failed while checking out the base 0123456789abcdef0123456789abcdef01234567" "${out}"
end_case
run_action "${paired_env[@]}" BUILD_COMMAND="${build}" BASE_REF=release
begin "build-command with a branch name as base-ref that the clone lacks: fetched, its head built"
check exit_is 0
check has "^build base shop:base base in base$" "${log}"
end_case
bad "a base-ref that is a git option" "base-ref '--upload-pack=touch pwned' is not a commit or branch name" \
  "${paired_env[@]}" BUILD_COMMAND=true BASE_REF="--upload-pack=touch pwned"
ws_git=""
bad "base-image without candidate-image" "base-image and candidate-image go together" BASE_IMAGE=shop:base
bad "one image as both" "base-image and candidate-image are both 'shop:x'" BASE_IMAGE=shop:x CANDIDATE_IMAGE=shop:x
bad "a baseline and paired images" "baseline and base-image/candidate-image are two ways to compare" \
  "${paired_env[@]}" BASELINE=main-status.yaml
bad "build-command without the images" "build-command needs base-image and candidate-image" BUILD_COMMAND=true
bad "build-command outside a pull request without base-ref" "build-command needs base-ref" \
  "${paired_env[@]}" BUILD_COMMAND=true GITHUB_EVENT_PATH="${tmp}/push-event.json"
bad "build-command outside a git checkout" "build-command builds the base from a git checkout" \
  "${paired_env[@]}" BUILD_COMMAND=true BASE_REF=main

if [[ ${failures} -gt 0 ]]; then
  echo "action self-test: ${failures} failed"
  exit 1
fi
echo "action self-test: all passed"
