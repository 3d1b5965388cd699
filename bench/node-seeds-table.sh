#!/usr/bin/env bash
# The seeds' table (the article "Cluster and Worker threads on Express" that this project began
# from) reproduced on this machine with `benchmatrix run`, at the seeds' timings (15 s warm-up,
# 30 s fast-only, 75 s mixed; 2 connections per endpoint) and the same 2-CPU budget per
# configuration, for
#   node: the seeds' Express app (examples/node-express) in its four modes, from
#         manifests/samples/node-express-local.yaml with the phases lengthened;
#   rust: benchmatrix's built-in target, manifests/samples/replicas-vs-pool.yaml (quickstart's
#         four configurations at the seeds' timings).
# Prints one Markdown table per target with the published figures alongside, and the machine
# and its load average (sampled every 2 s, averaged per cell: the machine may be shared).
#
# Usage: bench/node-seeds-table.sh [node|rust|all]        (default all; ~2 min per cell)
#        OUT=dir bench/node-seeds-table.sh table       print the tables of runs kept in OUT
# Env:   CELLS="single pool"   only the cells with these names (default: every cell)
#        WARMUP=15s FAST=30s MIXED=75s     phase lengths (default: the seeds')
#        OUT=dir               where runs are kept (default: a new temporary folder)
#        BENCHMATRIX=path      a built benchmatrix binary (default: cargo build --release)
#        SHARES=262144         run everything in a cgroup v1 cpu group of that weight (against
#                              1024 per other task), so other work on a shared box cannot take
#                              the CPUs; no quota is set by it. Say so beside figures measured so.
# Needs: node 20+ and `npm ci` in examples/node-express (node), python3 with PyYAML, cargo.
set -euo pipefail
cd "$(dirname "$0")/.."

WHICH="${1:-all}"
WARMUP="${WARMUP:-15s}"
FAST="${FAST:-30s}"
MIXED="${MIXED:-75s}"
OUT="${OUT:-$(mktemp -d)}"
case "$WHICH" in node | rust | all | table) ;; *)
  echo "usage: $0 [node|rust|all|table]" >&2
  exit 2
  ;;
esac
if [[ "$WHICH" == node || "$WHICH" == all ]] && [[ ! -d examples/node-express/node_modules/express ]]; then
  echo "node-seeds-table: run \`npm ci\` in examples/node-express first" >&2
  exit 2
fi
if [[ "$WHICH" != table ]]; then
  # shellcheck source=bench/lib.sh
  source bench/lib.sh
  benchmatrix_binary
fi
mkdir -p "$OUT"
if [[ "$WHICH" != table && -n "${SHARES:-}" ]]; then
  CG=/sys/fs/cgroup/cpu/benchmatrix-bench-$$
  mkdir "$CG"
  echo "$SHARES" >"$CG/cpu.shares"
  echo $$ >"$CG/cgroup.procs" # children inherit the group
  # The sampler's last `sleep` may linger in the group for up to 2 s after it is killed.
  trap 'echo $$ >/sys/fs/cgroup/cpu/cgroup.procs; for _ in 1 2 3 4 5; do rmdir "$CG" 2>/dev/null && break; sleep 1; done' EXIT
fi

# derive SAMPLE DEST: the sample with the chosen phase lengths and cells.
derive() {
  python3 - "$1" "$2" "$WARMUP" "$FAST" "$MIXED" "${CELLS:-}" <<'PY'
import sys, yaml
src, dest, warmup, fast, mixed, cells = sys.argv[1:]
doc = yaml.safe_load(open(src))
w = doc["spec"]["workload"]
w["warmup"] = warmup
lengths = {"fast-only": fast, "mixed": mixed}
assert [p["name"] for p in w["phases"]] == ["fast-only", "mixed"], w["phases"]
for p in w["phases"]:
    p["duration"] = lengths[p["name"]]
if cells:
    keep = cells.split()
    doc["spec"]["configurations"] = [c for c in doc["spec"]["configurations"] if c["name"] in keep]
    assert doc["spec"]["configurations"], f"no cell of {src} is named in CELLS={cells!r}"
yaml.safe_dump(doc, open(dest, "w"), sort_keys=False)
PY
}

# run NAME SAMPLE: one matrix, with the load average sampled alongside.
run() {
  local name="$1" sample="$2" spec="$OUT/$1.yaml" sampler
  derive "$sample" "$spec"
  (while :; do
    printf '%s %s\n' "$(date +%s)" "$(cut -d' ' -f1 /proc/loadavg)"
    sleep 2
  done) >"$OUT/$name.loadavg" &
  sampler=$!
  echo "node-seeds-table: $BENCHMATRIX run $spec --out $OUT/$name" >&2
  "$BENCHMATRIX" run "$spec" --out "$OUT/$name" >&2 || echo "node-seeds-table: $name: some cell failed (see $OUT/$name)" >&2
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
}

if [[ "$WHICH" == node || "$WHICH" == all ]]; then
  run node manifests/samples/node-express-local.yaml
fi
if [[ "$WHICH" == rust || "$WHICH" == all ]]; then
  run rust manifests/samples/replicas-vs-pool.yaml
fi

echo
date -u +%FT%TZ
echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr); node $(node --version 2>/dev/null || echo -)"
[[ -n "${SHARES:-}" ]] && echo "Measured inside a cgroup v1 cpu group with cpu.shares=$SHARES (no quota from it)"
echo "Phases: warm-up $WARMUP, fast-only $FAST (2 connections on /fast), mixed $MIXED (2 on /fast + 2 on /slow), closed loop"
python3 - "$OUT" <<'PY'
import json, os, sys, yaml
from datetime import datetime

out = sys.argv[1]
# The seeds' figures, as far as the published text states them (None: not given in the text).
# Keys: mixed /fast rps, mixed /fast p99 ms, mixed /slow rps, idle RSS MB.
published = {
    "single": ("plain", 2.9, 1600, "2.7-5.4", 65),
    "cluster": ("cluster", None, None, "2.7-5.4", 128),
    "pool": ("worker_threads", None, 85, "2.7-5.4", 85),
    "both": ("both", 81.8, 48, "2.7-5.4", None),
}
# The Rust target's cells answer the same questions: which seeds' configuration each mirrors.
mirror = {"single-x1": "single", "single-x2": "cluster", "pool-x1": "pool", "pool-x2": "both"}

def ts(v):
    # PyYAML already turns RFC 3339 timestamps into (time-zone aware) datetimes.
    if isinstance(v, datetime):
        return v.timestamp()
    return datetime.fromisoformat(str(v).replace("Z", "+00:00")).timestamp()

def fig(cell, phase, ep):
    for r in cell.get("results") or []:
        if r["phase"] == phase and r["endpoint"] == ep:
            return r
    return None

def f(v, fmt="{:.1f}"):
    return "-" if v is None else fmt.format(v)

for name in ("node", "rust"):
    path = os.path.join(out, name, "status.yaml")
    if not os.path.exists(path):
        continue
    st = yaml.safe_load(open(path))
    samples = []
    for line in open(os.path.join(out, name + ".loadavg")):
        t, l = line.split()
        samples.append((int(t), float(l)))
    title = "Express app (examples/node-express)" if name == "node" else "Rust built-in target"
    print(f"\n#### {title}\n")
    print("| Cell | fast-only /fast rps | fast-only /fast p99 | mixed /fast rps | mixed /fast p50 | mixed /fast p99 | mixed /slow rps | mixed /slow p99 | idle RSS (runner: main process) | RSS after warm-up (/stats: all processes) | load avg (1 min) during the cell | published (seeds): mixed /fast rps, p99; /slow rps; idle RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in st["cells"]:
        if c.get("phase") != "Succeeded":
            print(f"| {c['name']} | failed: {c.get('reason')}: {c.get('message')} |" + " |" * 10)
            continue
        fo, mf, ms = fig(c, "fast-only", "fast"), fig(c, "mixed", "fast"), fig(c, "mixed", "slow")
        t0, t1 = ts(c["startTime"]), ts(c["completionTime"])
        during = [l for t, l in samples if t0 <= t <= t1]
        load = f"{sum(during) / len(during):.1f} ({min(during):.1f}-{max(during):.1f})" if during else "-"
        rss = (c.get("target") or {}).get("idleRssBytes")
        warm = None
        try:
            res = json.load(open(os.path.join(out, name, "results", c["name"] + ".json")))
            snaps = [r["start"]["rssBytes"] for r in res["phases"][0]["targetStats"]]
            warm = sum(snaps) if snaps and None not in snaps else None
        except (OSError, KeyError, IndexError, TypeError, ValueError):
            pass
        key = c["name"] if name == "node" else mirror.get(c["name"], "")
        p = published.get(key)
        pub = "-" if p is None else (
            f"{p[0]}: {f(p[1])} rps, {f(p[2], '{:.0f}')} ms; {p[3]} rps; {f(p[4], '{:.0f}')} MB")
        print(
            f"| {c['name']} | {fo['rps']:.1f} | {fo['latencyMs']['p99']:.0f} ms | {mf['rps']:.1f} "
            f"| {mf['latencyMs']['p50']:.0f} ms | {mf['latencyMs']['p99']:.0f} ms | {ms['rps']:.2f} "
            f"| {ms['latencyMs']['p99']:.0f} ms | {f(rss and rss / 2**20, '{:.0f}')} MiB | {f(warm and warm / 2**20, '{:.0f}')} MiB | {load} | {pub} |")
print(f"\nRuns kept in {out}")
PY
