#!/usr/bin/env bash
# Local runner overhead per cell (issue 14's goal: under 0.3 s) for every sample that runs on
# this machine and for 8-replica cells (bench/overhead-8x.yaml). The overhead is the time a cell
# (or one repetition of it) takes beyond its warm-up and phases, and does not depend on how long
# they are, so each sample runs from a copy with a 1 s warm-up and 2 s phases; everything else
# (cells, replicas, CPU limits, streams, spread, repeat) is the sample's own. Prints, per sample,
# the median and the largest overhead per measurement (a cell of a `repeat: 1` sample, else one
# repetition: `cells[].repetitions[].overheadSeconds`), the median of the cells'
# `overheadSeconds` (with repetitions, the sum over them), and the message of the slowest
# measurement ("replicas ready in X s, stopped in Y s").
#
# A second table splits each measurement's overhead into the parts its message names: the load
# overrun (the load generator's "ran in" beyond warm-up + phases: its lead time, the /stats
# reads at phase boundaries, writing its result), replicas ready (start, readiness, the first
# /stats read), stopped, and the rest.
#
# Usage: bench/overhead-samples.sh [SAMPLE...]     (names under manifests/samples/, or paths;
#        default: quickstart replicas-vs-pool ci-smoke ci-gate open-loop node-express-local
#        (if node and examples/node-express/node_modules are there) and bench/overhead-8x.yaml)
#        OUT=dir bench/overhead-samples.sh table   print the tables of runs kept in OUT
# Env:   ROUNDS=1              runs of each sample (default 1)
#        OUT=dir               where runs are kept (default: a new temporary folder)
#        BENCHMATRIX=path      a built benchmatrix binary (default: cargo build --release)
# Needs: python3 with PyYAML, cargo (unless BENCHMATRIX is given). Run from anywhere; the
# samples' relative commands (node-express-local) run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS="${ROUNDS:-1}"
OUT="${OUT:-$(mktemp -d)}"
# shellcheck source=bench/lib.sh
source bench/lib.sh
benchmatrix_binary
summarize() {
  python3 - "$OUT" <<'PY'
import collections, re, statistics, sys, yaml
out = sys.argv[1]
parts_rx = re.compile(r"phases ([\d.]+) s ran in ([\d.]+) s; runner overhead ([\d.]+) s "
                      r"\(replicas ready in ([\d.]+) s, stopped in ([\d.]+) s\)")
per = collections.OrderedDict()
for line in open(f"{out}/runs.txt"):
    name, rnd, load = line.split()
    doc = yaml.safe_load(open(f"{out}/{name}-{rnd}/status.yaml"))
    st = doc.get("status", doc)
    e = per.setdefault(name, {"m": [], "cells": [], "parts": [], "cellmed": collections.defaultdict(list)})
    for c in st.get("cells", []):
        e["cells"].append(c.get("overheadSeconds"))
        for r in c.get("repetitions") or [c]:
            if r.get("overheadSeconds") is None:
                continue
            msg = r.get("message", "")
            e["m"].append((r["overheadSeconds"], c["name"], msg))
            e["cellmed"][c["name"]].append(r["overheadSeconds"])
            m = parts_rx.search(msg)
            if m:
                planned, ran, overhead, ready, stopped = map(float, m.groups())
                overrun = ran - planned
                e["parts"].append((overrun, ready, stopped, overhead - overrun - ready - stopped))
print("| sample | measurements | median s | max s | per cell (median) | cells' overheadSeconds (median) | slowest: message |")
print("|---|---:|---:|---:|---|---:|---|")
for name, e in per.items():
    vals = [m[0] for m in e["m"]]
    worst = max(e["m"])
    cells = ", ".join(f"{c} {statistics.median(v):.2f}" for c, v in e["cellmed"].items())
    cm = statistics.median([c for c in e["cells"] if c is not None])
    print(f"| {name} | {len(vals)} | {statistics.median(vals):.2f} | {worst[0]:.2f} | {cells} | {cm:.2f} | {worst[1]}: {worst[2]} |")
print()
print("Parts of each measurement's overhead, median (max), seconds:")
print()
print("| sample | load overrun | replicas ready | stopped | rest |")
print("|---|---:|---:|---:|---:|")
for name, e in per.items():
    if not e["parts"]:
        continue
    cols = [f"{statistics.median(p[i] for p in e['parts']):.2f} ({max(p[i] for p in e['parts']):.2f})" for i in range(4)]
    print(f"| {name} | " + " | ".join(cols) + " |")
PY
}
if [[ "${1:-}" == table ]]; then
  summarize
  exit 0
fi

samples=("$@")
if [[ ${#samples[@]} == 0 ]]; then
  samples=(quickstart replicas-vs-pool ci-smoke ci-gate open-loop)
  if command -v node >/dev/null && [[ -d examples/node-express/node_modules/express ]]; then
    samples+=(node-express-local)
  else
    echo "# node-express-local left out: needs node and \`npm ci\` in examples/node-express" >&2
  fi
  samples+=(bench/overhead-8x.yaml)
fi
mkdir -p "$OUT/specs"
stamp
for round in $(seq 1 "$ROUNDS"); do
  for sample in "${samples[@]}"; do
    src="$sample"
    [[ -f "$src" ]] || src="manifests/samples/$sample.yaml"
    name="$(basename "$src" .yaml)"
    short="$OUT/specs/$name.yaml"
    python3 - "$src" "$short" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
w = doc["spec"]["workload"]
w["warmup"] = "1s"
for p in w["phases"]:
    p["duration"] = "2s"
yaml.safe_dump(doc, open(sys.argv[2], "w"), sort_keys=False)
PY
    dir="$OUT/$name-$round"
    rc=0
    "$BENCHMATRIX" run "$short" --out "$dir" >"$dir.log" 2>&1 || rc=$?
    # 3: a threshold failed (ci-gate's limits are for its full phases); the cells were measured.
    if [[ $rc != 0 && $rc != 3 ]]; then
      echo "overhead-samples: $name exited $rc, see $dir.log" >&2
    fi
    echo "$name $round $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT/runs.txt"
  done
done

summarize
