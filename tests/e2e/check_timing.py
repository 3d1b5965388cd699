#!/usr/bin/env python3
"""Checks where a cluster's time went for tests/e2e/kind.sh (issue: time to a verdict).

    check_timing.py [--max-overhead S] [--max-gap S] RUNS.json

RUNS.json is `kubectl get bmr NAME -o json` (one run) or `kubectl get bmr -l ... -o json` (a
List). Prints, per run, when it started and ended and the gap since the previous run ended
(runs sorted by start), and per cell its overheadSeconds (time outside warm-up and phases: the
target becoming ready, the load generator's pod starting, ending and being read) and message.

--max-overhead S   fail when a cell's overheadSeconds exceeds S (cells without one are listed)
--max-gap S        fail when a run starts more than S seconds after the previous one ended:
                   a queued run must be admitted when the slot frees, not on a timer
--max-handover S   fail when, within a run, a cell or repetition starts more than S seconds
                   after the one before it ended (its pods' containers must stop, then the next
                   is deployed at once)

Times in a status have whole seconds, so bounds need a second of room. Every run must have
Succeeded. Exits 1 with every problem listed otherwise. Standard library only.
"""

import argparse
import json
import sys
from datetime import datetime


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def steps_of(status):
    """(previous step, next step, seconds from the previous one's end to the next one's start)
    over the run's cells, or their repetitions when the run repeats them, in the order run."""
    steps = []
    for cell in status.get("cells") or []:
        reps = cell.get("repetitions") or [dict(cell, repetition=1)]
        for r in reps:
            start, end = when(r.get("startTime")), when(r.get("completionTime"))
            if start and end:
                steps.append((start, end, f"{cell.get('name')}#{r.get('repetition')}"))
    steps.sort()
    return [
        (a[2], b[2], (b[0] - a[1]).total_seconds())
        for a, b in zip(steps, steps[1:])
    ]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", metavar="RUNS.json")
    parser.add_argument("--max-overhead", type=float, metavar="S")
    parser.add_argument("--max-gap", type=float, metavar="S")
    parser.add_argument("--max-handover", type=float, metavar="S")
    args = parser.parse_args(argv[1:])
    with open(args.runs) as f:
        doc = json.load(f)
    runs = doc.get("items", [doc]) if isinstance(doc, dict) else doc
    problems = []
    if not runs:
        problems.append("no run in the document")
    runs = sorted(runs, key=lambda r: (r.get("status") or {}).get("startTime") or "")
    previous_end = None
    for run in runs:
        name = run.get("metadata", {}).get("name", "?")
        status = run.get("status") or {}
        start, end = when(status.get("startTime")), when(status.get("completionTime"))
        gap = (start - previous_end).total_seconds() if start and previous_end else None
        gap_text = f", {gap:.0f} s after the previous run ended" if gap is not None else ""
        print(f"{name}: {status.get('phase')}, {status.get('startTime')} -> {status.get('completionTime')}{gap_text}")
        if status.get("phase") != "Succeeded":
            problems.append(f"{name}: phase {status.get('phase')}: {status.get('message')}")
        if args.max_gap is not None and gap is not None and gap > args.max_gap:
            problems.append(f"{name}: started {gap:.0f} s after the previous run ended (at most {args.max_gap:g})")
        previous_end = end or previous_end
        handovers = steps_of(status)
        for (before, after, gap) in handovers:
            print(f"  {before} -> {after}: {gap:.0f} s")
        if handovers:
            gaps = sorted(g for _, _, g in handovers)
            print(f"  handovers: {len(gaps)}, median {gaps[len(gaps) // 2]:.0f} s, max {gaps[-1]:.0f} s")
        if args.max_handover is not None:
            problems += [
                f"{name}: {after} started {gap:.0f} s after {before} ended (at most {args.max_handover:g})"
                for before, after, gap in handovers
                if gap > args.max_handover
            ]
        for cell in status.get("cells") or []:
            overhead = cell.get("overheadSeconds")
            print(f"  {cell.get('name', '?'):<16} overhead {overhead if overhead is not None else '-':>5} s  {cell.get('message', '')}")
            if args.max_overhead is not None and overhead is not None and overhead > args.max_overhead:
                problems.append(
                    f"{name}/{cell.get('name')}: {overhead} s outside warm-up and phases (at most {args.max_overhead:g})"
                )
    if problems:
        print("\ntiming check FAILED:", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    print("\ntiming check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
