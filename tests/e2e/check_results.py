#!/usr/bin/env python3
"""Checks a finished BenchmarkRun (the JSON of `kubectl get bmr NAME -o json`) for tests/e2e/kind.sh.

    check_results.py RUN.json                  the results
    check_results.py --thresholds RUN.json     ... and the CI gate's verdicts
    check_results.py --repeat N RUN.json       ... and N interleaved repetitions per cell
    check_results.py --adaptive MIN MAX PCT RUN.json   ... repeat: {min, max, precision}

Prints one row per cell, phase and endpoint, then asserts what an end-to-end run must show:
the run Succeeded; every cell of the matrix is there and Succeeded; every cell has a result for
every (phase, endpoint) pair that the workload loads, with requests served and a full set of
latency percentiles in a sane order.

With --thresholds: condition ThresholdsMet is True; status.thresholds holds exactly one verdict
per threshold of spec.thresholds and cell its `cell` glob matches (none: every cell), each Pass
with its measured and limit values; status.summary.recommendation is set.

With --repeat N: every cell has N repetitions, numbered 1..N, each Succeeded; sorted by their
startTime the repetitions run interleaved (every cell once in matrix order, then again: a b a b);
every result carries a spread over the N repetitions whose values are the repetitions' own
figures and whose median is the figure the cell reports.

With --adaptive MIN MAX PCT (spec.repeat: {min: MIN, max: MAX, precision: PCT}): each cell took
MIN to MAX repetitions and records why it stopped (status.cells[].precision): precise, with its
widest interval at most PCT percent, or MAX reached; then the --repeat checks with each cell's
own count (a cell that stopped early drops out of the later rounds of the interleaving).

Exits 1 with every problem listed otherwise.

Standard library only, so it runs on any CI image that has python3.
"""

import argparse
import fnmatch
import json
import statistics
import sys
from datetime import datetime

PERCENTILES = ("p50", "p90", "p99", "p999", "max", "mean")


def expected_pairs(spec):
    """(phase, endpoint) pairs the workload drives, in order; warm-up is not reported. A capacity
    search's cells report their confirmation probe: phase "probe", each endpoint of the mix."""
    capacity = spec.get("capacity")
    if capacity is not None:
        mix = [m["endpoint"] for m in capacity.get("mix") or []]
        return [("probe", e) for e in mix or [spec["workload"]["endpoints"][0]["name"]]]
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


def check_capacity(run):
    """A capacity search on the cluster: each cell found its capacity (or said why not) with every
    probe recorded at its own rate, and its probes shared a target: at least one ran on the
    previous probe's target after a settle, and the targets deployed are fewer than the probes."""
    problems = []
    for cell in (run.get("status") or {}).get("cells") or []:
        cname, cap = cell.get("name"), cell.get("capacity") or {}
        probes = cap.get("probes") or []
        if not probes:
            problems.append(f"cell {cname}: no capacity probes")
            continue
        if not cap.get("message"):
            problems.append(f"cell {cname}: the search says nothing (no capacity.message)")
        for p in probes:
            rate, achieved = p.get("rate", 0), p.get("achieved", 0)
            if achieved > rate * 1.05 + 0.5:
                problems.append(f"cell {cname}, probe {p.get('probe')}: achieved {achieved} rps at {rate} offered: "
                                "another probe's result?")
        kept = [p.get("probe") for p in probes if p.get("settleSeconds") is not None]
        if not kept:
            problems.append(f"cell {cname}: no probe ran on a kept target (no probes[].settleSeconds)")
        targets = cap.get("targets", 0)
        if not 1 <= targets < len(probes):
            problems.append(f"cell {cname}: {targets} targets for {len(probes)} probes, want at least 1 and fewer")
    return problems


def print_probes(run):
    for cell in (run.get("status") or {}).get("cells") or []:
        cap = cell.get("capacity") or {}
        print(f"\n{cell.get('name')}: {cap.get('message')}")
        for p in cap.get("probes") or []:
            target = f"kept, {p['settleSeconds']} s settle" if p.get("settleSeconds") is not None else "fresh"
            print(f"  probe {p.get('probe')}: {p.get('rate')} rps, achieved {p.get('achieved')}, "
                  f"{p.get('verdict')} ({target})")


def condition(status, kind):
    """The condition of type `kind` in status.conditions, or {}."""
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), {})


def check_thresholds(run):
    """Problems with the CI gate's outcome: ThresholdsMet, one Pass per threshold and cell, a recommendation."""
    problems = []
    spec, status = run.get("spec", {}), run.get("status") or {}
    thresholds = spec.get("thresholds") or []
    if not thresholds:
        return ["spec.thresholds is empty: nothing to judge"]
    met = condition(status, "ThresholdsMet")
    if met.get("status") != "True":
        problems.append(f"condition ThresholdsMet is {met.get('status')!r}, want 'True' ({met.get('reason')}: {met.get('message')})")

    # The cells each threshold applies to, from its glob (`*` any run, `?` one character; the
    # CRD allows no other special character, so fnmatch's rules are the operator's).
    cells = [c.get("name") for c in status.get("cells") or []]
    want = sorted(
        (i, cell) for i, t in enumerate(thresholds) for cell in cells if t.get("cell") is None or fnmatch.fnmatchcase(cell, t["cell"])
    )
    verdicts = status.get("thresholds") or []
    got = sorted((v.get("index"), v.get("cell")) for v in verdicts)
    if got != want:
        missing = [p for p in want if p not in got]
        extra = [p for p in got if p not in want or got.count(p) > 1]
        problems.append(f"status.thresholds has {len(got)} verdicts, want {len(want)} (one per threshold and matched cell); missing (index, cell) {missing}, unexpected or repeated {sorted(set(extra))}")
    for v in verdicts:
        where = f"threshold {v.get('index')} ({v.get('threshold')}) on {v.get('cell')}"
        if v.get("verdict") != "Pass":
            problems.append(f"{where}: verdict {v.get('verdict')!r}: {v.get('message')}")
        elif not isinstance(v.get("measured"), (int, float)) or not isinstance(v.get("limit"), (int, float)):
            problems.append(f"{where}: Pass without measured and limit values: {v}")

    recommendation = ((status.get("summary") or {}).get("recommendation") or "").strip()
    if not recommendation:
        problems.append("status.summary.recommendation is not set")
    return problems


def rfc3339(text):
    """A Kubernetes timestamp ("2026-12-01T10:00:00Z", perhaps with fractions) as a datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def close(a, b):
    """Equal as the operator computed them: the same doubles, allowing for JSON's printing."""
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def check_adaptive(run, low, high, precision):
    """Problems with a run of spec.repeat {min: low, max: high, precision}: each cell took from
    low to high repetitions, says why it stopped in status.cells[].precision, and stopped early
    only when precise; then the checks of check_repeat with each cell's own count."""
    problems = []
    counts = {}
    for cell in (run.get("status") or {}).get("cells") or []:
        cname, k = cell.get("name"), len(cell.get("repetitions") or [])
        counts[cname] = k
        if not low <= k <= high:
            problems.append(f"cell {cname}: {k} repetitions, want {low} to {high}")
        p = cell.get("precision")
        if not p:
            problems.append(f"cell {cname}: no precision (why it stopped repeating)")
            continue
        if p.get("repetitions") != k:
            problems.append(f"cell {cname}: precision says {p.get('repetitions')} repetitions, it has {k}")
        widest = p.get("widestPercent")
        if p.get("precise"):
            if widest is not None and widest > precision:
                problems.append(f"cell {cname}: precise, but its widest interval is {widest}% (want at most {precision}%)")
            if not str(p.get("message", "")).startswith(("precise after", "stopped after")):
                problems.append(f"cell {cname}: precise, but its message is {p.get('message')!r}")
        else:
            if k != high:
                problems.append(f"cell {cname}: not precise, yet stopped after {k} of at most {high}")
            if not str(p.get("message", "")).startswith(f"max of {high} reached"):
                problems.append(f"cell {cname}: not precise, but its message is {p.get('message')!r}")
    return problems + check_repeat(run, counts)


def check_repeat(run, n):
    """Problems with a run of spec.repeat n: n repetitions a cell (or, given a dict, each cell's
    own count), interleaved, spread on every result."""
    problems = []
    status = run.get("status") or {}
    cells = status.get("cells") or []
    names = [c.get("name") for c in cells]
    count = (lambda name: n.get(name, 0)) if isinstance(n, dict) else (lambda name: n)
    starts = []
    for cell in cells:
        cname, reps = cell.get("name"), cell.get("repetitions") or []
        n_cell = count(cname)
        numbers = [r.get("repetition") for r in reps]
        if numbers != list(range(1, n_cell + 1)):
            problems.append(f"cell {cname}: repetitions {numbers}, want {list(range(1, n_cell + 1))}")
        for r in reps:
            if r.get("phase") != "Succeeded":
                problems.append(f"cell {cname} repetition {r.get('repetition')}: phase {r.get('phase')!r} ({r.get('reason')}: {r.get('message')})")
            if not r.get("startTime"):
                problems.append(f"cell {cname} repetition {r.get('repetition')}: no startTime")
            else:
                starts.append((rfc3339(r["startTime"]), cname, r.get("repetition")))

        # The spread's values are the repetitions' own figures, in order; the cell reports their median.
        for result in cell.get("results") or []:
            where = f"cell {cname}, phase {result.get('phase')}, endpoint {result.get('endpoint')}"
            spread = result.get("spread")
            if not spread:
                problems.append(f"{where}: no spread")
                continue
            if spread.get("repetitions") != n_cell:
                problems.append(f"{where}: spread over {spread.get('repetitions')} repetitions, want {n_cell}")
            per_rep = [
                next((x for x in r.get("results") or [] if (x.get("phase"), x.get("endpoint")) == (result.get("phase"), result.get("endpoint"))), {})
                for r in reps
            ]
            figures = spread.get("figures") or {}
            for figure, own, reported in (
                ("rps", [x.get("rps") for x in per_rep], result.get("rps")),
                ("p90", [(x.get("latencyMs") or {}).get("p90") for x in per_rep], (result.get("latencyMs") or {}).get("p90")),
            ):
                # A repetition whose percentile had too few samples has none, and the spread
                # holds each repetition's value that exists (FigureSpread.values).
                own = [x for x in own if x is not None]
                values = (figures.get(figure) or {}).get("values")
                if values is None or len(values) != len(own) or not all(close(a, b) for a, b in zip(values, own)):
                    problems.append(f"{where}: spread of {figure} has values {values}, want the repetitions' {own}")
                    continue
                if own and not close(reported, statistics.median(own)):
                    problems.append(f"{where}: {figure} {reported}, want the median of {own}")

    # Interleaved: ordered by start, every cell's first repetition in matrix order, then every
    # cell's second, and so on (a cell that stopped earlier drops out of the later rounds).
    starts.sort()
    if len(starts) == sum(count(c) for c in names):
        order = [(c, r) for _, c, r in starts]
        rounds = max((count(c) for c in names), default=0)
        want = [(c, r) for r in range(1, rounds + 1) for c in names if count(c) >= r]
        if order != want:
            problems.append(f"repetitions by startTime ran {order}, want interleaved {want}")
        ties = [f"{a[1]}#{a[2]} and {b[1]}#{b[2]}" for a, b in zip(starts, starts[1:]) if a[0] == b[0]]
        if ties:
            problems.append(f"repetitions started in the same second, order unknown: {ties}")
    return problems


def print_verdicts(run):
    """The threshold verdicts, one row each."""
    verdicts = (run.get("status") or {}).get("thresholds") or []
    if not verdicts:
        return
    print()
    for v in verdicts:
        print(f"{v.get('verdict', '?'):<5} {v.get('cell', '?'):<16} {v.get('threshold', '?')}: {v.get('message', '')}")
    print(f"recommendation: {((run.get('status') or {}).get('summary') or {}).get('recommendation')}")


def print_repetitions(run):
    """Each repetition's start, in the order they ran."""
    rows = sorted(
        (r.get("startTime") or "?", c.get("name", "?"), r.get("repetition"), r.get("phase"))
        for c in (run.get("status") or {}).get("cells") or []
        for r in c.get("repetitions") or []
    )
    if rows:
        print()
        for start, cell, rep, phase in rows:
            print(f"{start}  {cell:<16} repetition {rep}  {phase}")


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
    parser = argparse.ArgumentParser(description="Checks a finished BenchmarkRun for tests/e2e/kind.sh.")
    parser.add_argument("run", metavar="RUN.json", help="kubectl get bmr NAME -o json")
    parser.add_argument("--thresholds", action="store_true", help="check the CI gate: ThresholdsMet, verdicts, recommendation")
    parser.add_argument("--repeat", type=int, metavar="N", help="check N interleaved repetitions per cell and the spread")
    parser.add_argument("--adaptive", type=float, nargs=3, metavar=("MIN", "MAX", "PRECISION"),
                        help="check repeat: {min, max, precision}: MIN to MAX repetitions a cell, why each stopped, interleaved, spread")
    parser.add_argument("--capacity", action="store_true",
                        help="check a capacity search: probes at their own rates, sharing targets")
    args = parser.parse_args(argv[1:])
    with open(args.run) as f:
        run = json.load(f)
    print_table(run)
    problems = check(run)
    if args.thresholds:
        print_verdicts(run)
        problems += check_thresholds(run)
    if args.repeat is not None:
        print_repetitions(run)
        problems += check_repeat(run, args.repeat)
    if args.capacity:
        print_probes(run)
        problems += check_capacity(run)
    if args.adaptive is not None:
        print_repetitions(run)
        low, high, precision = int(args.adaptive[0]), int(args.adaptive[1]), args.adaptive[2]
        problems += check_adaptive(run, low, high, precision)
    if problems:
        print("\nresult check FAILED:", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    cells = len((run.get("status") or {}).get("cells") or [])
    extra = ""
    if args.thresholds:
        extra += f"; {len((run.get('status') or {}).get('thresholds') or [])} threshold verdicts, all Pass"
    if args.repeat is not None:
        extra += f"; {args.repeat} repetitions a cell, interleaved, with spread"
    if args.capacity:
        extra += "; capacity probes at their own rates, sharing targets"
    if args.adaptive is not None:
        took = [f"{c.get('name')} {len(c.get('repetitions') or [])}" for c in (run.get("status") or {}).get("cells") or []]
        extra += f"; repetitions until precise ({', '.join(took)}), interleaved, with spread"
    print(f"\nresult check passed: {cells} cells x {len(expected_pairs(run['spec']))} phase/endpoint pairs, all with percentiles{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
