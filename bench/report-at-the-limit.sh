#!/usr/bin/env bash
# report.html for a matrix at the schema's limit: the largest finished status the size model
# admits for 64 cells of 9 streams with the longest names (operator/examples/status-at-the-limit.rs),
# rendered by `benchmatrix report`; prints the status's size, the page's size and the render's
# wall time, median of RUNS (default 5). BENCHMARKS.md quotes it.
#
#   bench/report-at-the-limit.sh            # release build
#   PROFILE=debug bench/report-at-the-limit.sh
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${PROFILE:-release}"
runs="${RUNS:-5}"
flag=(); [ "$profile" = release ] && flag=(--release)
cargo build -q "${flag[@]}" -p benchmatrix --bin benchmatrix --example status-at-the-limit
bin="build/${profile}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${bin}/examples/status-at-the-limit" > "${work}/status.yaml"
times=()
for _ in $(seq "$runs"); do
  start=$(date +%s.%N)
  # The synthetic status is refused (SpecValid False in the worst case), so report exits 2.
  "${bin}/benchmatrix" report "${work}/status.yaml" --out "${work}/out" > /dev/null || true
  end=$(date +%s.%N)
  times+=("$(echo "$end - $start" | bc -l)")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
printf 'status.yaml %d bytes; report.html %d bytes; %d files; render median %.3f s of %d (%s)\n' \
  "$(stat -c %s "${work}/status.yaml")" "$(stat -c %s "${work}/out/report.html")" \
  "$(find "${work}/out" -type f | wc -l)" "$median" "$runs" "$profile"
