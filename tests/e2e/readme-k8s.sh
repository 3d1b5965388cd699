#!/usr/bin/env bash
# Runs README.md's "On Kubernetes" block exactly as a reader would paste it: the one ```sh block
# between <!-- k8s-quickstart:begin --> and <!-- k8s-quickstart:end -->, from the repository
# root, under bash -euo pipefail. It creates its own kind cluster (the block's first line) and
# deletes it afterwards unless KEEP_CLUSTER=1. Needs kind, docker, kubectl, helm and cargo.
# tests/tests/readme.rs checks without a cluster that the block extracts, parses (bash -n) and
# names only files that exist; tests/e2e/kind.sh runs this script with README_BLOCK=1.
#
#   tests/e2e/readme-k8s.sh                     run the block
#   tests/e2e/readme-k8s.sh --print             print the extracted script and exit
#   tests/e2e/readme-k8s.sh --current-context   run the block from its step 2 on the current
#                                               kubeconfig context
#
# --current-context is for a cluster that is not kind, or a machine without Docker: the block's
# step 1 (create a kind cluster, docker build, kind load) is the only part that depends on
# both, so it is left out, and the three images must already be known to the cluster's nodes
# under the names the block gives them (benchmatrix.local/benchmatrix-{operator,target,loadgen}:dev,
# e.g. imported into containerd). Steps 2 to 4 (the CRD, the chart, the plugin, the sample to its
# verdict) run exactly as written. It leaves the cluster as it is; the chart's release and the
# run stay for a look.
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
case "${1:-}" in
  --print)
    printf '%s\n' "${script}"
    exit 0
    ;;
  --current-context)
    # From the line that opens step 2 to the end.
    script="$(awk '/^# 2\./ { on = 1 } on' <<<"${script}")"
    [[ -n "${script}" ]] || { echo "readme-k8s: the block has no '# 2.' step" >&2; exit 1; }
    printf '[readme-k8s] on context %s, from step 2 (the images are already on the nodes)\n' \
      "$(kubectl config current-context)"
    ;;
  "") ;;
  *)
    echo "readme-k8s: unknown argument '$1' (--print or --current-context)" >&2
    exit 2
    ;;
esac

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
# Each "# N." comment line also prints the seconds since the start, so the log times each step.
timed="$(awk 'match($0, /^# [0-9]+\./) { n = substr($0, 3, RLENGTH - 3); print "echo \"[readme-k8s] step " n " at ${SECONDS} s\"" } { print }' <<<"${script}")"
started=${SECONDS}
bash -euo pipefail -c "${timed}"
printf '[readme-k8s] PASSED in %d s\n' "$((SECONDS - started))"
