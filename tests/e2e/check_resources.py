#!/usr/bin/env python3
"""Checks the resource figures of a finished BenchmarkRun for tests/e2e/kind.sh.

    check_resources.py RUN.json                 every cell has the kubelet's figures
    check_resources.py --agree PCT RUN.json     ... and they agree with the target's own
                                                CPU seconds within PCT percent
    check_resources.py --throttling RUN.json    ... and CFS throttling figures
    check_resources.py --no-errors RUN.json     ... and every stream had zero errors

Every Succeeded cell must carry `status.cells[].target` with `source: kubelet`, CPU seconds
above zero and a memory working set (idle and peak) above zero. With --agree, each cell whose
target also reported its own CPU seconds (the built-in target does) must have
`cpuDifferencePercent` within PCT: the kubelet and the target measure the same process over the
same phases, a ground-truth check of each against the other. With --throttling each cell also
has CFS periods above zero and throttled periods (possibly zero). Exits 1 listing every problem.
"""

import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run", metavar="RUN.json")
    parser.add_argument("--agree", type=float, metavar="PCT")
    parser.add_argument("--throttling", action="store_true")
    parser.add_argument("--no-errors", action="store_true")
    args = parser.parse_args()
    with open(args.run) as f:
        run = json.load(f)
    name = run["metadata"]["name"]
    problems = []
    cells = run.get("status", {}).get("cells", [])
    if not cells:
        problems.append("no cells in the status")
    for cell in cells:
        c = cell["name"]
        if cell.get("phase") != "Succeeded":
            problems.append(f"{c}: phase {cell.get('phase')}: {cell.get('message')}")
            continue
        t = cell.get("target") or {}
        print(
            f"{name}/{c}: source {t.get('source')}, cpu {t.get('cpuSecondsUsed')} s "
            f"(target's own {t.get('selfReportedCpuSeconds')}, difference "
            f"{t.get('cpuDifferencePercent')}%), periods {t.get('cfsPeriods')} throttled "
            f"{t.get('throttledPeriods')} ({t.get('throttledSeconds')} s, covering "
            f"{t.get('throttleCoveredSeconds')} s), working set {t.get('workingSetIdleBytes')} -> "
            f"{t.get('workingSetPeakBytes')} B; note: {t.get('note')}"
        )
        if t.get("source") != "kubelet":
            problems.append(f"{c}: figures from {t.get('source')!r}, not the kubelet ({t.get('note')})")
        if not (t.get("cpuSecondsUsed") or 0) > 0:
            problems.append(f"{c}: no CPU seconds")
        for field in ("workingSetIdleBytes", "workingSetPeakBytes"):
            if not (t.get(field) or 0) > 0:
                problems.append(f"{c}: no {field}")
        if args.throttling:
            if not (t.get("cfsPeriods") or 0) > 0:
                problems.append(f"{c}: no CFS periods ({t.get('note')})")
            if t.get("throttledPeriods") is None:
                problems.append(f"{c}: no throttled periods ({t.get('note')})")
        if args.agree is not None and t.get("selfReportedCpuSeconds") is not None:
            d = t.get("cpuDifferencePercent")
            if d is None or abs(d) > args.agree:
                problems.append(
                    f"{c}: kubelet {t.get('cpuSecondsUsed')} s vs target {t.get('selfReportedCpuSeconds')} s: "
                    f"{d}% apart, more than {args.agree}%"
                )
        if args.no_errors:
            for r in cell.get("results", []):
                if r.get("errors", 0) != 0:
                    problems.append(f"{c}: {r['phase']}/{r['endpoint']} had {r['errors']} error(s)")
    if args.agree is not None and not any(
        (cell.get("target") or {}).get("selfReportedCpuSeconds") is not None for cell in cells
    ):
        problems.append("--agree: no cell's target reported its own CPU seconds")
    if problems:
        print(f"{name}: " + "; ".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"{name}: resource figures OK")


if __name__ == "__main__":
    main()
