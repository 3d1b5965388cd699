#!/usr/bin/env bash
# Runs manifests/samples/quickstart.yaml RUNS times (default 2) with the release build, timing
# each run, and checks that the verdicts agree between the runs: the headline (its wording and
# the cells it names; the figures may move), in each comparison the best cells (the best and
# those within noise of it) and for every other cell whether it is ranked or why it is not
# (ignoring the counts), and which figures are unstable (spread more than 2x over the
# repetitions).
#
# Usage: bench/quickstart-verdicts.sh                 run and compare
#        bench/quickstart-verdicts.sh compare DIR...  compare the statuses kept in DIR/status.yaml
# Env:   RUNS=2                runs (default 2)
#        OUT=dir               where runs are kept (default: a new temporary folder)
#        BENCHMATRIX=path      a built benchmatrix binary (default: cargo build --release)
#        SPEC=file             another sample to check the same way (default: quickstart)
# Needs: python3 with PyYAML; exits 1 when the verdicts differ.
set -euo pipefail
cd "$(dirname "$0")/.."

compare() {
  python3 - "$@" <<'PY'
import re, sys, yaml
def verdicts(d):
    doc = yaml.safe_load(open(f"{d}/status.yaml"))
    st = doc.get("status", doc)
    sm = st.get("summary", {})
    v = {}
    head = st.get("headline") or sm.get("headline") or ""
    # The cells a headline names, in its wording with the figures taken out; cells tied
    # within noise are named in whatever order their medians fell, so they are sorted.
    words = re.sub(r"[\d.]+", "#", head)
    if "within noise:" in words:
        before, tied = words.split("within noise:", 1)
        words = before + "within noise: " + ", ".join(sorted(t.strip() for t in tied.split(",")))
    v["headline"] = words
    for c in sm.get("comparisons", []):
        key = f"{c['phase']}/{c['endpoint']}"
        best = c.get("bestCell")
        # The verdict is the group of cells that is best (the best cell and those within
        # noise of it: which of them had the lowest median is not a verdict), and for every
        # other cell whether it is ranked behind them or why it is not ranked.
        tied = sorted(x["cell"] for x in c["cells"]
                      if best and (x["cell"] == best or x.get("withinNoiseOf") == best))
        v[f"{key} best (with those within noise)"] = tied
        for x in c["cells"]:
            if x["cell"] in tied:
                continue
            excl = re.sub(r"[\d.]+", "#", x.get("excluded") or "")
            v[f"{key} {x['cell']}"] = excl or "ranked behind the best"
    unstable = []
    for cell in st.get("cells", []):
        for r in cell.get("results", []):
            for name, f in ((r.get("spread") or {}).get("figures") or {}).items():
                if f.get("unstable"):
                    unstable.append(f"{cell['name']} {r['phase']}/{r['endpoint']} {name}")
    v["unstable"] = sorted(unstable)
    return head, v
runs = [(d,) + verdicts(d) for d in sys.argv[1:]]
for d, head, v in runs:
    print(f"{d}: headline: {head}")
    print(f"{d}: unstable figures: {', '.join(v['unstable']) or 'none'}")
first = runs[0][2]
differ = 0
for d, _, v in runs[1:]:
    for k in sorted(set(first) | set(v)):
        if first.get(k) != v.get(k):
            differ += 1
            print(f"DIFFER {k}: {runs[0][0]}: {first.get(k)!r}  {d}: {v.get(k)!r}")
print("verdicts agree" if differ == 0 else f"{differ} verdict(s) differ")
sys.exit(1 if differ else 0)
PY
}

if [[ "${1:-}" == compare ]]; then
  shift
  compare "$@"
  exit
fi
RUNS="${RUNS:-2}"
OUT="${OUT:-$(mktemp -d)}"
SPEC="${SPEC:-manifests/samples/quickstart.yaml}"
# shellcheck source=bench/lib.sh
source bench/lib.sh
benchmatrix_binary
mkdir -p "$OUT"
dirs=()
for i in $(seq 1 "$RUNS"); do
  dir="$OUT/run$i"
  echo "# run $i: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  timed_run "$SPEC" "$dir"
  echo "# run $i: exit $CODE, wall $WALL s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  dirs+=("$dir")
done
compare "${dirs[@]}"
