#!/usr/bin/env python3
"""Checks a finished BenchmarkRun (the JSON of `kubectl get bmr NAME -o json`) for tests/e2e/kind.sh.

Prints one row per cell, phase and endpoint, then asserts what an end-to-end run must show:
the run Succeeded; every cell of the matrix is there and Succeeded; every cell has a result for
every (phase, endpoint) pair that the workload loads, with requests served and a full set of
latency percentiles in a sane order. Exits 1 with every problem listed otherwise.

Standard library only, so it runs on any CI image that has python3.
"""

import json
import sys

PERCENTILES = ("p50", "p90", "p99", "p999", "max", "mean")


def expected_pairs(spec):
    """(phase, endpoint) pairs the workload drives, in order; warm-up is not reported."""
    pairs = []
    for phase in spec["workload"]["phases"]:
        for stream in phase["load"]:
            pair = (phase["name"], stream["endpoint"])
            if pair not in pairs:
                pairs.append(pair)
    return pairs


def check(run):
    """Returns the list of problems with the run; empty when it passes."""
    problems = []
    spec, status = run.get("spec", {}), run.get("status") or {}
    name = run.get("metadata", {}).get("name", "?")
    if status.get("phase") != "Succeeded":
        problems.append(f"run {name}: phase {status.get('phase')!r}, want 'Succeeded' ({status.get('message')})")

    cells = status.get("cells") or []
    want_cells = [c["name"] for c in spec.get("configurations") or []]
    got_cells = [c.get("name") for c in cells]
    if want_cells and got_cells[: len(want_cells)] != want_cells:
        problems.append(f"cells {got_cells}, want the configurations {want_cells} first, in order")
    if not cells:
        problems.append("status.cells is empty")

    pairs = expected_pairs(spec)
    for cell in cells:
        cname = cell.get("name")
        if cell.get("phase") != "Succeeded":
            problems.append(f"cell {cname}: phase {cell.get('phase')!r} ({cell.get('reason')}: {cell.get('message')})")
        results = {(r.get("phase"), r.get("endpoint")): r for r in cell.get("results") or []}
        for pair in pairs:
            r = results.get(pair)
            where = f"cell {cname}, phase {pair[0]}, endpoint {pair[1]}"
            if r is None:
                problems.append(f"{where}: no result")
                continue
            if not r.get("requests", 0) > 0:
                problems.append(f"{where}: no requests served")
            lat = r.get("latencyMs") or {}
            missing = [p for p in PERCENTILES if not isinstance(lat.get(p), (int, float))]
            if missing:
                problems.append(f"{where}: latencyMs lacks {missing}")
                continue
            if not 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"] <= lat["max"]:
                problems.append(f"{where}: percentiles out of order or zero: {lat}")
    return problems


def print_table(run):
    """The results as a table, one row per cell, phase and endpoint."""
    header = f"{'cell':<16} {'phase':<12} {'endpoint':<10} {'requests':>9} {'errors':>7} {'rps':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"
    print(header)
    print("-" * len(header))
    for cell in (run.get("status") or {}).get("cells") or []:
        for r in cell.get("results") or []:
            lat = r.get("latencyMs") or {}
            print(
                f"{cell.get('name', '?'):<16} {r.get('phase', '?'):<12} {r.get('endpoint', '?'):<10} "
                f"{r.get('requests', 0):>9} {r.get('errors', 0):>7} {r.get('rps', 0):>8.1f} "
                f"{lat.get('p50', float('nan')):>8.1f} {lat.get('p99', float('nan')):>8.1f} {lat.get('max', float('nan')):>8.1f}"
            )


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} RUN.json", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        run = json.load(f)
    print_table(run)
    problems = check(run)
    if problems:
        print("\nresult check FAILED:", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    cells = len((run.get("status") or {}).get("cells") or [])
    print(f"\nresult check passed: {cells} cells x {len(expected_pairs(run['spec']))} phase/endpoint pairs, all with percentiles")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
