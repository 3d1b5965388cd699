#!/usr/bin/env bash
# The regression gate on a real cluster (issue 30): two images of the same target that differ
# only in the BENCH_FAST_MS baked into their environment, base against candidates at 0%, +5%
# and +10%, from bench/cluster-paired-gate.yaml, through the kubectl plugin.
#
# - paired: `kubectl benchmatrix run SPEC --base B --candidate C --max-regression 3` (5 rounds).
# - two-run: the base image alone, then the candidate alone (`repeat: 5` each), then
#   `benchmatrix compare --max-regression 3 --min-change 3`.
# Exit 3 is "regression". One line per verdict in $OUT/verdicts.tsv, with its wall time.
#
# Usage: BASE=IMAGE CANDIDATES="0=IMAGE 5=IMAGE 10=IMAGE" bench/cluster-paired-gate.sh
# Env:   RUNS=3            verdicts per case and flow
#        FLOWS="paired two-run"
#        NAMESPACE=bench   where the runs go (the operator must watch it)
#        OUT=dir           where statuses are kept (default: a new temporary folder)
#        BENCHMATRIX=path  a built benchmatrix binary (default: cargo build --release)
# Needs: a cluster with the operator installed and the images loaded; python3 with PyYAML.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${BASE:?BASE=image of the base}"
: "${CANDIDATES:?CANDIDATES=\"PCT=image ...\"}"
RUNS="${RUNS:-3}"
FLOWS="${FLOWS:-paired two-run}"
NAMESPACE="${NAMESPACE:-bench}"
OUT="${OUT:-$(mktemp -d)}"
# shellcheck source=bench/lib.sh
source bench/lib.sh
benchmatrix_binary
mkdir -p "$OUT"

# with_image IMAGE FILE: the spec with target.image set (one side of the two-run flow).
with_image() {
  python3 - "$1" "$2" <<'PY'
import sys, yaml
image, path = sys.argv[1:]
doc = yaml.safe_load(open("bench/cluster-paired-gate.yaml"))
doc["spec"]["target"] = {"image": image}
yaml.safe_dump(doc, open(path, "w"), sort_keys=False)
PY
}

plugin() { "$BENCHMATRIX" kubectl -n "$NAMESPACE" run "$@" --replace --timeout 20m; }
verdicts="$OUT/verdicts.tsv"
: >"$verdicts"
stamp
echo "# base $BASE; candidates $CANDIDATES; $RUNS run(s) per case; out $OUT"
for run in $(seq 1 "$RUNS"); do
  for case in $CANDIDATES; do
    pct=${case%%=*}
    image=${case#*=}
    for flow in $FLOWS; do
      dir="$OUT/$flow-$pct-$run"
      start=$(date +%s.%N)
      code=0
      if [[ $flow == paired ]]; then
        plugin bench/cluster-paired-gate.yaml --out "$dir" --base "$BASE" --candidate "$image" \
          --max-regression 3 >"$dir.log" 2>&1 || code=$?
      else
        with_image "$BASE" "$dir.base.yaml"
        with_image "$image" "$dir.cand.yaml"
        plugin "$dir.base.yaml" --out "$dir/base" >"$dir.base.log" 2>&1 || true
        plugin "$dir.cand.yaml" --out "$dir/cand" >"$dir.cand.log" 2>&1 || true
        "$BENCHMATRIX" compare "$dir/base/status.yaml" "$dir/cand/status.yaml" \
          --max-regression 3 --min-change 3 >"$dir.compare.log" 2>&1 || code=$?
      fi
      wall=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
      printf '%s\t+%s%%\t%s\t%s\t%s\n' "$run" "$pct" "$flow" "$code" "$wall" | tee -a "$verdicts"
    done
  done
done
