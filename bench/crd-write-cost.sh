#!/usr/bin/env bash
# What the BenchmarkRun CRD's schema costs the API server on each status write: the installed
# CRD copied under three throwaway API groups, as it is (`full`), without its CEL rules
# (`no-cel`), and with no schema for spec and status at all (`open`: preserve unknown fields).
# One object in each, with the spec and status of an existing run; then ROUNDS rounds, each
# writing that status (a new message each time) to the three in turn by merge patch, so drift of
# the machine falls on all three alike. The figure is the API server's own time per write
# (apiserver_request_duration_seconds sum over count for each group's status PATCH), so
# kubectl's start-up does not count. The copies are deleted at the end.
# Needs the CRD installed, a run to copy (RUN, namespace/name, with a status), and kubectl with
# get on the API server's /metrics and the right to create CRDs.
#
#   bench/crd-write-cost.sh                       copies bench-burst/burst-1, 25 rounds
#   RUN=bench/ci-smoke ROUNDS=50 bench/crd-write-cost.sh
set -euo pipefail
run="${RUN:-bench-burst/burst-1}" rounds="${ROUNDS:-25}"
ns="${NAMESPACE:-bench-crd-cost}"
variants=(full no-cel open)
out="$(mktemp -d)"
cleanup() {
  for v in "${variants[@]}"; do
    kubectl delete crd "benchmarkruns.${v}.crd-cost.benchmatrix.dev" --ignore-not-found --wait=false >/dev/null || true
  done
  kubectl delete namespace "$ns" --ignore-not-found --wait=false >/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT

kubectl get crd benchmarkruns.benchmatrix.dev -o json >"$out/crd.json"
kubectl get benchmarkrun -n "${run%%/*}" "${run#*/}" -o json >"$out/run.json"
python3 - "$out" "${variants[@]}" <<'PY'
import copy, json, sys
out, variants = sys.argv[1], sys.argv[2:]
crd = json.load(open(f"{out}/crd.json"))
run = json.load(open(f"{out}/run.json"))
if not run.get("status"):
    sys.exit("the run to copy has no status yet")

def strip_cel(node):
    if isinstance(node, dict):
        node.pop("x-kubernetes-validations", None)
        for v in node.values():
            strip_cel(v)
    elif isinstance(node, list):
        for v in node:
            strip_cel(v)

for v in variants:
    group = f"{v}.crd-cost.benchmatrix.dev"
    c = {"apiVersion": crd["apiVersion"], "kind": crd["kind"],
         "metadata": {"name": f"benchmarkruns.{group}"}, "spec": copy.deepcopy(crd["spec"])}
    c["spec"]["group"] = group
    c["spec"].pop("conversion", None)
    # No short name or category: `kubectl get bmr` (or `all`) must not meet the copies.
    c["spec"]["names"].pop("shortNames", None)
    c["spec"]["names"].pop("categories", None)
    if v == "no-cel":
        strip_cel(c)
    if v == "open":
        for version in c["spec"]["versions"]:
            props = version["schema"]["openAPIV3Schema"]["properties"]
            for field in ("spec", "status"):
                props[field] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            version.pop("additionalPrinterColumns", None)
    json.dump(c, open(f"{out}/crd-{v}.json", "w"))
    version = crd["spec"]["versions"][0]["name"]
    obj = {"apiVersion": f"{group}/{version}", "kind": crd["spec"]["names"]["kind"],
           "metadata": {"name": "cost"}, "spec": run["spec"]}
    json.dump(obj, open(f"{out}/obj-{v}.json", "w"))
json.dump(run["status"], open(f"{out}/status.json", "w"))
PY
# A namespace left terminating by the previous try refuses new objects: wait until it is gone.
kubectl delete namespace "$ns" --ignore-not-found --wait=true >/dev/null
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
for v in "${variants[@]}"; do
  kubectl apply -f "$out/crd-$v.json" >/dev/null
done
for v in "${variants[@]}"; do
  kubectl wait --for=condition=Established "crd/benchmarkruns.${v}.crd-cost.benchmatrix.dev" --timeout=60s >/dev/null
  kubectl apply -n "$ns" -f "$out/obj-$v.json" >/dev/null
done

status_patch_time() {
  kubectl get --raw /metrics | grep -E '^apiserver_request_duration_seconds_(sum|count)\{' \
    | grep 'resource="benchmarkruns"' | grep 'subresource="status"' | grep 'verb="PATCH"' \
    | grep 'crd-cost.benchmatrix.dev' || true
}
status_patch_time >"$out/before.txt"
for i in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); s["message"]="write %s" % sys.argv[2]; print(json.dumps({"status": s}))' \
      "$out/status.json" "$i" >"$out/patch.json"
    kubectl patch "benchmarkruns.${v}.crd-cost.benchmatrix.dev" cost -n "$ns" --subresource=status \
      --type=merge --patch-file "$out/patch.json" >/dev/null
  done
done
status_patch_time >"$out/after.txt"
python3 - "$out" "$rounds" "$(wc -c <"$out/status.json")" "${variants[@]}" <<'PY'
import re, sys
out, rounds, size, variants = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]

def read(path):
    m = {}
    for line in open(path):
        key, value = line.rsplit(" ", 1)
        kind = "sum" if "_sum{" in key else "count"
        group = re.search(r'group="([^"]+)"', key).group(1).split(".")[0]
        m[(group, kind)] = m.get((group, kind), 0.0) + float(value)
    return m

a, b = read(f"{out}/before.txt"), read(f"{out}/after.txt")
mean = {}
for v in variants:
    n = b.get((v, "count"), 0) - a.get((v, "count"), 0)
    s = b.get((v, "sum"), 0) - a.get((v, "sum"), 0)
    mean[v] = s / n * 1000 if n else float("nan")
print(f"status writes of {size} bytes, {rounds} rounds; the API server's own mean time per write:")
for v in variants:
    print(f"  {v:7} {mean[v]:5.2f} ms  ({mean[v] / mean['full']:.2f} of full)")
PY
