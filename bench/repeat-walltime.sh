#!/usr/bin/env bash
# Wall time of a matrix with `repeat: 3` against the same matrix with `repeat: 1` (issue 14's
# goal: at most 3.2x). Runs bench/repeat-walltime.yaml (four cells, 4 s of load each) as it is
# and with `repeat: 3`, alternately (1, 3, 1, 3, ...), ROUNDS times each, timing every
# `benchmatrix run` from start to exit, and prints each run, the medians and their ratio.
#
# Usage: bench/repeat-walltime.sh
# Env:   ROUNDS=3              runs of each (default 3)
#        OUT=dir               where runs are kept (default: a new temporary folder)
#        BENCHMATRIX=path      a built benchmatrix binary (default: cargo build --release)
# Needs: python3 with PyYAML, cargo (unless BENCHMATRIX is given).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS="${ROUNDS:-3}"
OUT="${OUT:-$(mktemp -d)}"
# shellcheck source=bench/lib.sh
source bench/lib.sh
benchmatrix_binary
mkdir -p "$OUT"
spec1=bench/repeat-walltime.yaml
spec3="$OUT/repeat-walltime-3.yaml"
with_repeat "$spec1" 1 3 "$spec3"

stamp
times="$OUT/times.tsv"
: >"$times"
for round in $(seq 1 "$ROUNDS"); do
  for repeat in 1 3; do
    spec="$spec1"
    [[ $repeat == 3 ]] && spec="$spec3"
    dir="$OUT/r$repeat-$round"
    timed_run "$spec" "$dir"
    [[ $CODE == 0 ]] || {
      echo "repeat-walltime: run failed, see $dir.log" >&2
      exit 1
    }
    printf '%s\t%s\t%s\t%s\n' "$repeat" "$round" "$WALL" "$(cut -d' ' -f1 /proc/loadavg)" >>"$times"
  done
done

python3 - "$times" "$OUT" <<'PY'
import statistics, sys, yaml
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
walls = {"1": [], "3": []}
print("| repeat | round | wall s | load s (planned) | runner overhead s (all cells and repetitions) | load avg |")
print("|---:|---:|---:|---:|---:|---:|")
for repeat, rnd, wall, load in rows:
    status = yaml.safe_load(open(f"{sys.argv[2]}/r{repeat}-{rnd}/status.yaml"))
    cells = status.get("status", status).get("cells", [])
    overhead = sum(c.get("overheadSeconds") or 0 for c in cells)
    planned = 4 * len(cells) * int(repeat)
    walls[repeat].append(float(wall))
    print(f"| {repeat} | {rnd} | {float(wall):.2f} | {planned} | {overhead:.2f} | {load.strip()} |")
m1, m3 = statistics.median(walls["1"]), statistics.median(walls["3"])
print()
print(f"median wall: repeat 1 {m1:.2f} s, repeat 3 {m3:.2f} s; ratio {m3 / m1:.3f} (goal <= 3.2)")
pairs = [b / a for a, b in zip(walls["1"], walls["3"])]
print("ratio per round: " + ", ".join(f"{p:.3f}" for p in pairs))
PY
