#!/usr/bin/env python3
"""Watches one namespace of a real cluster while BenchmarkRuns run in it, and measures the
handover between their steps at sub-second resolution, as a client sees it:

    stop    the moment the last container of the previous step's target pods is seen stopped
            (the pod being deleted, every container status terminated)
    create  the moment the next step's Deployment is seen created

    bench/handover-watch.py NAMESPACE SECONDS

Prints each handover (stop -> create) and their median and maximum. Start it before the runs
(e.g. bench/cluster-repeat-stress.sh with NAMESPACE set) and give it their duration. Both
watches are kubectl's, timed on arrival with one clock. Standard library only.
"""

import json
import statistics
import subprocess
import sys
import threading
import time


def watch(kind, ns, events, stop_at):
    proc = subprocess.Popen(
        ["kubectl", "get", kind, "-n", ns, "-w", "-o", "json", "--output-watch-events"],
        stdout=subprocess.PIPE, text=True)
    decoder, buf = json.JSONDecoder(), ""
    while time.time() < stop_at:
        line = proc.stdout.readline()
        if not line:
            break
        buf += line
        try:
            obj, end = decoder.raw_decode(buf.lstrip())
        except json.JSONDecodeError:
            continue
        buf = ""
        events.append((time.time(), kind, obj))
    proc.kill()


def stopped(pod):
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return pod["metadata"].get("deletionTimestamp") and all("running" not in (c.get("state") or {}) for c in statuses)


def main(ns, seconds):
    events, stop_at = [], time.time() + seconds
    threads = [threading.Thread(target=watch, args=(k, ns, events, stop_at), daemon=True) for k in ("pods", "deployments")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 5)
    events.sort(key=lambda e: e[0])
    # Per step (run, cell, repetition): when its Deployment was created, and when its last
    # target container was seen stopped.
    created, stops, seen_pods = {}, {}, set()
    for at, kind, ev in events:
        obj = ev.get("object") or {}
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        step = (labels.get("benchmatrix.dev/run"), labels.get("benchmatrix.dev/cell"), labels.get("benchmatrix.dev/repetition", "1"))
        if None in step[:2]:
            continue
        if kind == "deployments" and ev.get("type") == "ADDED":
            created.setdefault(step, at)
        if kind == "pods" and labels.get("benchmatrix.dev/role") == "target" and stopped(obj) and meta["name"] not in seen_pods:
            seen_pods.add(meta["name"])
            stops[step] = max(stops.get(step, 0), at)
    order = sorted(created.items(), key=lambda kv: kv[1])
    gaps = []
    for (prev, _), (step, at) in zip(order, order[1:]):
        if prev[0] != step[0] or prev not in stops:
            continue
        gap = at - stops[prev]
        gaps.append(gap)
        print(f"{prev[0]} {prev[1]}#{prev[2]} -> {step[1]}#{step[2]}: {gap:.2f} s")
    if gaps:
        print(f"\nhandovers: {len(gaps)}, median {statistics.median(gaps):.2f} s, max {max(gaps):.2f} s "
              "(last target container seen stopped -> next Deployment seen created)")
    else:
        print("no handover seen")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
