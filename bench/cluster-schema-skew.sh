#!/usr/bin/env bash
# Schema skew on a real cluster: with this checkout's operator installed (charts/benchmatrix),
# install the CRD of an older commit (OLD_CRD_COMMIT: its manifests/crd.yaml, another schema), and
# measure how long until the operator says so on /readyz (read through the API server's pod
# proxy) and what it says there and in its log; apply a run meanwhile and check that nothing is
# written to it; then apply this checkout's CRD again and measure how long until the operator is
# ready and the run gets its first status. Leaves this checkout's CRD installed.
#
#   OLD_CRD_COMMIT=485e736 bench/cluster-schema-skew.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
old="${OLD_CRD_COMMIT:?OLD_CRD_COMMIT: a commit whose manifests/crd.yaml has another schema}"
release_ns="${RELEASE_NAMESPACE:-benchmatrix-system}" ns="${NAMESPACE:-bench-skew}"
port="${ADMIN_PORT:-8080}" selector="${SELECTOR:-app.kubernetes.io/name=benchmatrix}"
now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }
readyz() {
  # A 503 makes kubectl exit non-zero with "ServiceUnavailable" and without the body.
  kubectl get --raw "/api/v1/namespaces/${release_ns}/pods/$1:${port}/proxy/readyz" 2>&1 || true
}
readyz_body() {
  # The body of a 503 too, through a port-forward.
  kubectl port-forward -n "$release_ns" "pod/$1" 18089:"$port" >/dev/null 2>&1 &
  local pf=$!
  sleep 1.5
  curl -s -w ' (HTTP %{http_code})' http://127.0.0.1:18089/readyz || true
  kill "$pf" 2>/dev/null || true
}
read -r -a pods <<<"$(kubectl get pods -n "$release_ns" -l "$selector" -o jsonpath='{.items[*].metadata.name}')"
echo "operator pods: ${pods[*]}"
for p in "${pods[@]}"; do echo "  $p /readyz: $(readyz "$p")"; done
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl delete benchmarkrun -n "$ns" skew --ignore-not-found --wait=true >/dev/null

git show "${old}:manifests/crd.yaml" >/tmp/skew-old-crd.yaml
t0="$(now)"
kubectl apply --server-side --force-conflicts -f /tmp/skew-old-crd.yaml >/dev/null
echo "applied the CRD of ${old} ($(grep -o 'schema-hash: .*' /tmp/skew-old-crd.yaml))"
said=""
while [[ -z "$said" ]]; do
  for p in "${pods[@]}"; do
    body="$(readyz "$p")"
    if [[ "$body" == *ServiceUnavailable* || "$body" == *"not ready"* ]]; then said="$p"; t_said="$(now)"; break; fi
  done
  if (($(date +%s) - ${t0%.*} > 60)); then echo "no operator said anything within 60 s" >&2; exit 1; fi
  sleep 0.2
done
echo "after $(since "$t0" "$t_said") s, $said /readyz: $(readyz_body "$said" | cut -c1-700)"
kubectl logs -n "$release_ns" "$said" --since=2m | grep -m1 "does not carry" | cut -c1-600 || true
tiny_run skew | kubectl apply -n "$ns" -f - >/dev/null
sleep 15
echo "a run applied under the old CRD, 15 s later: status '$(kubectl get benchmarkrun -n "$ns" skew -o jsonpath='{.status}')' (empty: nothing written)"

t1="$(now)"
kubectl apply --server-side --force-conflicts -f manifests/crd.yaml >/dev/null
echo "applied this checkout's CRD ($(grep -o 'schema-hash: .*' manifests/crd.yaml))"
t_ready="" t_status=""
while [[ -z "$t_ready" || -z "$t_status" ]]; do
  if [[ -z "$t_ready" && "$(readyz "$said")" == ready* ]]; then t_ready="$(now)"; fi
  if [[ -z "$t_status" && -n "$(kubectl get benchmarkrun -n "$ns" skew -o jsonpath='{.status.phase}')" ]]; then
    t_status="$(now)"
  fi
  if (($(date +%s) - ${t1%.*} > 60)); then echo "not resumed within 60 s" >&2; exit 1; fi
  sleep 0.2
done
echo "after the upgrade: ready again after $(since "$t1" "$t_ready") s, the run's first status after $(since "$t1" "$t_status") s"
kubectl wait -n "$ns" benchmarkrun/skew --for=condition=Complete --timeout=300s >/dev/null
echo "the run: $(kubectl get benchmarkrun -n "$ns" skew -o jsonpath='{.status.phase}')"
kubectl delete namespace "$ns" --wait=false >/dev/null
