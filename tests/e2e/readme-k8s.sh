#!/usr/bin/env bash
# Runs README.md's "On Kubernetes" block exactly as a reader would paste it: the one ```sh block
# between <!-- k8s-quickstart:begin --> and <!-- k8s-quickstart:end -->, from the repository
# root, under bash -euo pipefail. It creates its own kind cluster (the block's first line) and
# deletes it afterwards unless KEEP_CLUSTER=1. Needs kind, docker, kubectl, helm and cargo.
# tests/tests/readme.rs checks without a cluster that the block extracts, parses (bash -n) and
# names only files that exist; tests/e2e/kind.sh runs this script with README_BLOCK=1.
#
#   tests/e2e/readme-k8s.sh            run the block
#   tests/e2e/readme-k8s.sh --print    print the extracted script and exit
set -euo pipefail
cd "$(dirname "$0")/../.."

# Prints the block's commands: the lines between the markers, without the ```sh fence.
extract() {
  awk '
    /<!-- k8s-quickstart:begin -->/ { inside = 1; next }
    /<!-- k8s-quickstart:end -->/ { inside = 0; next }
    inside && /^```sh$/ { fence++; code = 1; next }
    inside && /^```$/ { code = 0; next }
    inside && code { print }
    END { if (fence != 1) { print "readme-k8s: want one ```sh block between the markers, found " fence > "/dev/stderr"; exit 1 } }
  ' README.md
}

script="$(extract)"
if [[ "${1:-}" == "--print" ]]; then
  printf '%s\n' "${script}"
  exit 0
fi

cluster="$(sed -n 's/^kind create cluster --name \([^ ]*\).*/\1/p' <<<"${script}" | head -n 1)"
finish() {
  local status=$?
  if [[ -n "${cluster}" && -z "${KEEP_CLUSTER:-}" ]]; then
    kind delete cluster --name "${cluster}" || true
  fi
  exit "${status}"
}
trap finish EXIT

printf '[readme-k8s] running the README block (%d lines)\n' "$(wc -l <<<"${script}")"
bash -euo pipefail -c "${script}"
printf '[readme-k8s] PASSED\n'
