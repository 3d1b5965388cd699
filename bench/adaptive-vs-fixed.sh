#!/usr/bin/env bash
# The quickstart with `repeat: 5` against the same matrix with `repeat: {min: 3, max: 10,
# precision: 5}` (issue 20's goal: the same verdicts in less wall time). Runs the two specs
# alternately (fixed, adaptive, fixed, adaptive, ...), ROUNDS times each, timing every
# `benchmatrix run` from start to exit, then prints per run its wall time and measurements,
# each adaptive cell's stop (precise after N, or max reached and how spread), the medians and
# their ratio, and compares the verdicts with bench/quickstart-verdicts.sh: the fixed runs
# among themselves (how much the verdicts move by noise alone) and each adaptive run against
# the first fixed one. The first comparison prints, per run, what answers the question: each
# phase and endpoint's best group (the best cell and those within noise of it) and the headline.
#
# Usage: bench/adaptive-vs-fixed.sh
# Env:   ROUNDS=2              runs of each (default 2)
#        ADAPTIVE='{min: 3, max: 10, precision: 5}'   the adaptive rule
#        OUT=dir               where runs are kept (default: a new temporary folder)
#        BENCHMATRIX=path      a built benchmatrix binary (default: cargo build --release)
# Needs: python3 with PyYAML.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS="${ROUNDS:-2}"
ADAPTIVE="${ADAPTIVE:-{min: 3, max: 10, precision: 5\}}"
# shellcheck source=bench/lib.sh
source bench/lib.sh
out_and_binary
fixed=manifests/samples/quickstart.yaml
adaptive="$OUT/quickstart-adaptive.yaml"
with_repeat "$fixed" 5 "$ADAPTIVE" "$adaptive"

stamp
echo "# adaptive: repeat: ${ADAPTIVE}; fixed: repeat: 5; ${ROUNDS} round(s), alternating"
times="$OUT/times.tsv"
: >"$times"
for round in $(seq 1 "$ROUNDS"); do
  for kind in fixed adaptive; do
    spec="$fixed"
    [[ $kind == adaptive ]] && spec="$adaptive"
    dir="$OUT/$kind-$round"
    timed_run "$spec" "$dir"
    # 3 is a failed threshold, which still measured everything; anything else is a broken run.
    [[ $CODE == 0 || $CODE == 3 ]] || {
      echo "adaptive-vs-fixed: $kind run $round exited $CODE (log: $dir.log)" >&2
      exit 1
    }
    printf '%s\t%s\t%s\n' "$kind" "$round" "$(python3 -c "print(round($WALL, 1))")" >>"$times"
  done
done

python3 - "$OUT" <<'PY'
import statistics, sys, yaml
out = sys.argv[1]
rows = [l.split("\t") for l in open(f"{out}/times.tsv").read().splitlines()]
walls = {"fixed": [], "adaptive": []}
for kind, rnd, secs in rows:
    st = yaml.safe_load(open(f"{out}/{kind}-{rnd}/status.yaml"))
    st = st.get("status", st)
    reps = [len(c.get("repetitions", [])) for c in st["cells"]]
    walls[kind].append(float(secs))
    print(f"{kind} {rnd}: {secs} s, {sum(reps)} measurements ({' '.join(map(str, reps))})")
    for c in st["cells"]:
        p = c.get("precision")
        if p:
            print(f"    {c['name']}: {p['message']}")
f, a = statistics.median(walls["fixed"]), statistics.median(walls["adaptive"])
print(f"median wall time: fixed {f:.1f} s, adaptive {a:.1f} s, adaptive/fixed {a / f:.2f}")
PY

echo "## the verdicts that answer the question, per run: each comparison's best group, the headline"
python3 - "$OUT" "$ROUNDS" <<'PY'
import re, sys, yaml
out, rounds = sys.argv[1], int(sys.argv[2])
for kind in ("fixed", "adaptive"):
    for r in range(1, rounds + 1):
        st = yaml.safe_load(open(f"{out}/{kind}-{r}/status.yaml"))
        st = st.get("status", st)
        groups = []
        for c in st["summary"].get("comparisons", []):
            b = c.get("bestCell")
            tied = sorted(x["cell"] for x in c["cells"] if b and (x["cell"] == b or x.get("withinNoiseOf") == b))
            groups.append(f"{c['phase']}/{c['endpoint']} {'+'.join(tied) or '-'}")
        head = re.sub(r"[\d.]+ms|[\d.]+x", "#", st.get("headline", ""))
        print(f"{kind} {r}: {'; '.join(groups)} | {head}")
PY
echo "## verdicts: the fixed runs among themselves"
fixed_dirs=()
for round in $(seq 1 "$ROUNDS"); do fixed_dirs+=("$OUT/fixed-$round"); done
if [[ $ROUNDS -gt 1 ]]; then
  bench/quickstart-verdicts.sh compare "${fixed_dirs[@]}" || true
fi
for round in $(seq 1 "$ROUNDS"); do
  echo "## verdicts: adaptive run $round against fixed run 1"
  bench/quickstart-verdicts.sh compare "$OUT/fixed-1" "$OUT/adaptive-$round" || true
done
echo "# kept in $OUT"
