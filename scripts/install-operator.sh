#!/usr/bin/env bash
# Installs the operator the way docs/book/src/kubernetes/install.md does: the CRD first (Helm never upgrades a
# chart's crds/), then the chart with the three images, waiting until the operator is ready.
# One copy for tests/e2e/kind.sh and the GitHub Action (scripts/action/run.sh).
#
#   scripts/install-operator.sh [EXTRA HELM ARGS...]
#
# Environment (all required): HELM (the helm binary), CHART (the chart's folder), RELEASE,
# RELEASE_NAMESPACE, IMAGE_REGISTRY (image name prefix), IMAGE_TAG, KUBELET_INSECURE_TLS
# (true: the operator skips verifying the kubelets' serving certificates).
set -euo pipefail

for var in HELM CHART RELEASE RELEASE_NAMESPACE IMAGE_REGISTRY IMAGE_TAG KUBELET_INSECURE_TLS; do
  if [[ -z "${!var:-}" ]]; then
    echo "install-operator: ${var} is not set" >&2
    exit 2
  fi
done

kubectl apply --server-side --force-conflicts -f "${CHART}/crds/"
kubectl wait --for=condition=Established --timeout=60s crd/benchmarkruns.benchmatrix.dev

"${HELM}" upgrade --install "${RELEASE}" "${CHART}" \
  --namespace "${RELEASE_NAMESPACE}" --create-namespace \
  --set image.operator.repository="${IMAGE_REGISTRY}/benchmatrix-operator" \
  --set image.target.repository="${IMAGE_REGISTRY}/benchmatrix-target" \
  --set image.loadgen.repository="${IMAGE_REGISTRY}/benchmatrix-loadgen" \
  --set image.operator.tag="${IMAGE_TAG}" \
  --set image.target.tag="${IMAGE_TAG}" \
  --set image.loadgen.tag="${IMAGE_TAG}" \
  --set operator.kubeletInsecureTLS="${KUBELET_INSECURE_TLS}" \
  "$@" \
  --wait --timeout 180s
kubectl -n "${RELEASE_NAMESPACE}" rollout status "deployment/${RELEASE}" --timeout=120s
