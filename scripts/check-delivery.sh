#!/usr/bin/env bash
# The delivery checks that run without a cluster or a Docker engine: helm lint and template over
# the chart's value combinations; hadolint on the Dockerfiles; shellcheck on every script and on the workflows' run: steps;
# YAML parsing and actionlint of the workflows (and through bench.yml, the action's inputs), and
# proof that actionlint fails on a broken action; YAML parsing of action.yml, the e2e config and
# samples; the e2e script's and the action script's flows against stand-ins; the
# manifests/install.yaml drift check.
# .ci/run calls it; so can you.
#
# The Rust test tests/tests/chart.rs goes further (every rendered object parses as its
# Kubernetes type, Pod Security "restricted", RBAC coverage); it runs with the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

tools_dir="$(scripts/install-tools.sh | tail -n 1)"
export HELM="${HELM:-${tools_dir}/helm}"
readonly chart="charts/benchmatrix"

step() { printf '\n== %s\n' "$*"; }

step "helm lint"
"${HELM}" lint --strict "${chart}"
"${HELM}" lint --strict "${chart}" --set "watchNamespaces={bench-a,bench-b}"

step "helm template (each value combination must render)"
for set in \
  "" \
  "serviceAccount.create=false,serviceAccount.name=existing" \
  "metrics.service.enabled=false,rbac.create=false" \
  "createNamespace=true" \
  "watchNamespaces={bench-a,bench-b},operator.allowedImages={ghcr.io/acme/*}" \
  "watchNamespaces={bench-a},rbac.nodeRead=false" \
  "metrics.serviceMonitor.enabled=true,grafana.dashboard.enabled=true"; do
  args=()
  if [[ -n "${set}" ]]; then args=(--set "${set}"); fi
  "${HELM}" template benchmatrix "${chart}" --namespace benchmatrix-system --include-crds \
    "${args[@]}" >/dev/null
  echo "ok: ${set:-defaults}"
done
# Values that cannot work must fail the render, not produce a broken install.
if "${HELM}" template benchmatrix "${chart}" --set operator.logFormat=xml >/dev/null 2>&1; then
  echo "operator.logFormat=xml rendered; it must fail" >&2
  exit 1
fi
if "${HELM}" template benchmatrix "${chart}" --set 'watchNamespaces={Bad_Name}' >/dev/null 2>&1; then
  echo "watchNamespaces={Bad_Name} rendered; it must fail" >&2
  exit 1
fi
echo "ok: bad values are refused"

step "hadolint Dockerfile, Dockerfile.release"
"${tools_dir}/hadolint" Dockerfile Dockerfile.release
echo "ok: Dockerfile, Dockerfile.release"

step "shellcheck"
mapfile -t scripts < <(find scripts tests/e2e tests/action tests/selftest-lib.sh bench .ci -type f \( -name '*.sh' -o -name run \) 2>/dev/null | sort)
shellcheck --external-sources "${scripts[@]}"
printf 'ok: %s\n' "${scripts[@]}"

step "YAML parses (action, workflows, e2e config, samples)"
mapfile -t yamls < <(find action.yml .github/workflows tests/e2e manifests/samples -type f \( -name '*.yml' -o -name '*.yaml' \) 2>/dev/null | sort)
python3 - "${yamls[@]}" <<'PY'
import sys
try:
    import yaml
except ImportError:
    sys.exit("check-delivery: python3 lacks PyYAML (Debian: python3-yaml; pip: PyYAML)")
for path in sys.argv[1:]:
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    if not docs:
        sys.exit(f"{path}: no YAML document")
    if path.startswith(".github/workflows/"):
        wf = docs[0]
        # PyYAML reads the key `on` as the boolean True (YAML 1.1).
        if "jobs" not in wf or not (("on" in wf) or (True in wf)):
            sys.exit(f"{path}: a workflow needs `on` and `jobs`")
        for name, job in wf["jobs"].items():
            if "runs-on" not in job or "steps" not in job:
                sys.exit(f"{path}: job {name} needs runs-on and steps")
    print(f"ok: {path} ({len(docs)} document(s))")
PY

step "actionlint on the workflows (action inputs, expressions, job wiring)"
ACTIONLINT="${tools_dir}/actionlint" scripts/lint-workflows.sh

step "actionlint fails on a broken action (the check above can fail)"
# A copy of the action and the workflow that uses it, broken one way at a time: an input the
# workflow passes renamed in action.yml, and the required input left out of the workflow.
lint_broken() {
  local name="$1" expect="$2" edit_file="$3" sed_expr="$4" copy said
  copy="$(mktemp -d)"
  mkdir -p "${copy}/.github/workflows" "${copy}/.git"
  cp action.yml "${copy}/"
  cp .github/workflows/bench.yml "${copy}/.github/workflows/"
  sed -i "${sed_expr}" "${copy}/${edit_file}"
  if cmp -s "${copy}/${edit_file}" "${edit_file}"; then
    echo "the broken copy (${name}) is not broken: ${sed_expr} changed nothing in ${edit_file}" >&2
    exit 1
  fi
  if said="$(ACTIONLINT="${tools_dir}/actionlint" scripts/lint-workflows.sh "${copy}" 2>&1)"; then
    echo "actionlint passed a broken copy (${name}):" >&2
    echo "${said}" >&2
    exit 1
  fi
  grep -qF -- "${expect}" <<<"${said}" || {
    echo "actionlint failed on the broken copy (${name}) without saying '${expect}':" >&2
    echo "${said}" >&2
    exit 1
  }
  rm -rf "${copy}"
  echo "ok: actionlint fails on ${name}: ${expect}"
}
lint_broken "an input renamed in action.yml" 'input "max-regression" is not defined in action "benchmatrix"' \
  action.yml 's/^  max-regression:$/  max-regresion:/'
lint_broken "the spec input left out" 'missing input "spec" which is required by action "benchmatrix"' \
  .github/workflows/bench.yml '/^ *spec: /d'

step "shellcheck on the workflows' run: steps"
# Each `run:` block becomes a bash script (GitHub's ${{ ... }} expressions replaced by a word),
# so quoting mistakes in the workflows are caught here rather than on a runner.
steps_dir="$(mktemp -d)"
trap 'rm -rf "${steps_dir}"' EXIT
python3 - "${steps_dir}" .github/workflows/*.yml <<'PY'
import re, sys, yaml
out = sys.argv[1]
for path in sys.argv[2:]:
    wf = yaml.safe_load(open(path))
    for job_name, job in wf["jobs"].items():
        for i, step in enumerate(job.get("steps", [])):
            if "run" not in step:
                continue
            body = re.sub(r"\$\{\{.*?\}\}", "GHA_EXPR", step["run"])
            name = f"{out}/{path.split('/')[-1]}-{job_name}-{i}.sh"
            with open(name, "w") as f:
                f.write("#!/usr/bin/env bash\nset -eo pipefail\n" + body)
            print(f"{path} job {job_name} step {i}")
PY
shellcheck "${steps_dir}"/*.sh
echo "ok: workflow run steps"

step "tests/e2e/kind.sh flow, against recording stand-ins for kind, docker, helm and kubectl"
tests/e2e/selftest.sh

step "scripts/action/run.sh (the GitHub Action) flow, against recording stand-ins"
tests/action/selftest.sh

step "manifests/install.yaml matches the chart"
scripts/gen-install.sh --check

printf '\ncheck-delivery: all checks passed\n'
