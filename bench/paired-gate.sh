#!/usr/bin/env bash
# The regression gate's power, today's two-run flow against paired variants in one run (issue
# 30), on the built-in target: base BENCH_FAST_MS=20 against candidates at 20 (identical), 21
# (+5%) and 22 (+10%), from bench/paired-gate.yaml.
#
# - two-run: the base alone (`repeat: 5`), then the candidate alone (`repeat: 5`), then
#   `benchmatrix compare base cand --max-regression 3 --min-change 3`: exit 3 is "regression".
# - paired: both variants in one run (`repeat: 5`: 5 rounds, the same 10 measurements of a 0.5 s warmup and a 2.5 s phase), with
#   `benchmatrix run --max-regression 3`: exit 3 is "regression".
#
# Both flows gate at 3%, on the same figures (p50, p99, rps; compare also checks CPU per
# request). Every round of the loop runs each case once in each flow, alternating which flow
# goes first; odd rounds run quiet, even rounds with a CPU hog (HOG: one busy loop per core,
# `python3 -c 'while 1: pass'`, bounded by `timeout`) during half of each verdict: in the
# two-run flow during the base run, in the paired flow during the first half of the run (the
# previous paired run's wall time). Each verdict's wall time is recorded, so the budgets can be
# compared. Results: one line per verdict in $OUT/verdicts.tsv, and the table at the end.
#
# Usage: bench/paired-gate.sh
# Env:   ROUNDS=10   loop rounds (half quiet, half with the hog)
#        CASES="20 21 22"  candidate BENCH_FAST_MS values
#        OUT=dir    where runs are kept (default: a new temporary folder)
#        BENCHMATRIX=path  a built benchmatrix binary (default: cargo build --release)
# Needs: python3 with PyYAML.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS="${ROUNDS:-10}"
CASES="${CASES:-20 21 22}"
# shellcheck source=bench/lib.sh
source bench/lib.sh
out_and_binary
cores=$(nproc)

# spec CANDIDATE_MS KIND FILE: the paired spec, or one side of it alone (KIND base|candidate:
# the variants list dropped and that variant's env moved to the configuration).
spec() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys, yaml
ms, kind, path = sys.argv[1:]
doc = yaml.safe_load(open("bench/paired-gate.yaml"))
candidate = next(v for v in doc["spec"]["variants"] if v["name"] == "candidate")
candidate["env"] = [{"name": "BENCH_FAST_MS", "value": ms}]
if kind != "paired":
    variant = next(v for v in doc["spec"].pop("variants") if v["name"] == kind)
    for c in doc["spec"]["configurations"]:
        c["env"] = variant["env"]
yaml.safe_dump(doc, open(path, "w"), sort_keys=False)
PY
}

hog_pids=()
hog_on() {
  local seconds=$1
  for _ in $(seq 1 "$cores"); do
    timeout "$seconds" python3 -c 'while 1: pass' &
    hog_pids+=($!)
  done
}
hog_off() {
  for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${hog_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  hog_pids=()
}
trap hog_off EXIT

now() { date +%s.%N; }
verdicts="$OUT/verdicts.tsv"
: >"$verdicts"
paired_wall=40
stamp
echo "# $ROUNDS rounds, cases $CASES, out $OUT"

two_run() { # MS HOG DIR
  local ms=$1 hog=$2 dir=$3 start code=0
  spec "$ms" base "$dir.base.yaml"
  spec "$ms" candidate "$dir.cand.yaml"
  start=$(now)
  [[ $hog == hog ]] && hog_on 120
  "$BENCHMATRIX" run "$dir.base.yaml" --out "$dir/base" >"$dir.base.log" 2>&1 || true
  hog_off
  "$BENCHMATRIX" run "$dir.cand.yaml" --out "$dir/cand" >"$dir.cand.log" 2>&1 || true
  "$BENCHMATRIX" compare "$dir/base/status.yaml" "$dir/cand/status.yaml" \
    --max-regression 3 --min-change 3 >"$dir.compare.log" 2>&1 || code=$?
  WALL=$(python3 -c "print(round($(now) - $start, 1))")
  CODE=$code
}

paired() { # MS HOG DIR
  local ms=$1 hog=$2 dir=$3 start code=0
  spec "$ms" paired "$dir.yaml"
  start=$(now)
  [[ $hog == hog ]] && hog_on "$(python3 -c "print(int($paired_wall / 2))")"
  "$BENCHMATRIX" run "$dir.yaml" --out "$dir" --max-regression 3 >"$dir.log" 2>&1 || code=$?
  hog_off
  WALL=$(python3 -c "print(round($(now) - $start, 1))")
  paired_wall=$WALL
  CODE=$code
}

for round in $(seq 1 "$ROUNDS"); do
  hog=quiet
  ((round % 2 == 0)) && hog=hog
  for ms in $CASES; do
    flows=(two-run paired)
    ((round % 2 == 0)) && flows=(paired two-run)
    for flow in "${flows[@]}"; do
      dir="$OUT/$flow-$ms-$round"
      if [[ $flow == two-run ]]; then two_run "$ms" "$hog" "$dir"; else paired "$ms" "$hog" "$dir"; fi
      [[ $CODE == 0 || $CODE == 3 ]] || echo "# $dir: exit $CODE (see its logs)"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$hog" "$ms" "$flow" "$CODE" "$WALL" \
        "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$verdicts"
    done
  done
done

python3 - "$verdicts" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
print("\n| condition | flow | 20 ms (0%): false alarms | 21 ms (+5%): caught | 22 ms (+10%): caught | median wall s per verdict |")
print("|---|---|---:|---:|---:|---:|")
for cond in ("quiet", "hog"):
    for flow in ("two-run", "paired"):
        mine = [r for r in rows if r[1] == cond and r[3] == flow]
        if not mine:
            continue
        cell = lambda ms: (lambda rs: f"{sum(r[4] == '3' for r in rs)} of {len(rs)}")([r for r in mine if r[2] == ms])
        broken = sum(r[4] not in ("0", "3") for r in mine)
        wall = statistics.median(float(r[5]) for r in mine)
        note = f" ({broken} broken)" if broken else ""
        print(f"| {cond} | {flow}{note} | {cell('20')} | {cell('21')} | {cell('22')} | {wall:.0f} |")
PY
