#!/usr/bin/env bash
# Lints the workflows under DIR/.github/workflows (default: this repository) with actionlint:
# unknown or missing action inputs, bad expressions, job wiring, script injection, and the run:
# steps through shellcheck when it is on PATH. A workflow step with `uses: ./` is checked against the
# action's own metadata (action.yml), so .github/workflows/bench.yml checks the action's inputs.
# actionlint finds the project by its .git, which DIR must have (a folder or a file).
#
#   scripts/lint-workflows.sh [DIR]
#
# actionlint is the pinned binary scripts/install-tools.sh installs; ACTIONLINT overrides it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-${root}}"

actionlint="${ACTIONLINT:-}"
if [[ -z "${actionlint}" ]]; then
  actionlint="$("${root}/scripts/install-tools.sh" | tail -n 1)/actionlint"
fi
[[ -e "${dir}/.git" ]] || {
  echo "lint-workflows: ${dir} has no .git: actionlint would find no project there" >&2
  exit 2
}

cd "${dir}"
"${actionlint}" -oneline
printf 'ok: %s\n' .github/workflows/*.yml
