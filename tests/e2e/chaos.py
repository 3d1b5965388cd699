#!/usr/bin/env python3
"""Chaos during a run, on a real cluster (tests/e2e/kind.sh with E2E_CHAOS=1, or on its own).

Runs two cells x repeat (10 by default, tests/e2e/repeat-stress.yaml with a longer phase) and,
while it runs, at moments drawn from a seeded random generator (the seed is printed first, so a
failure can be replayed with --seed):

  - deletes the operator's pod OPERATOR_KILLS times (5), through the API, as a node drain would;
  - deletes the load generator's Job of the repetition under load, once;
  - restarts the kubelet once (a command given with --kubelet-restart; skipped, and said, without).

Each disruption is due after a drawn number of measured repetitions plus a drawn delay, so all
of them land inside the run whatever its speed. Every second it reads the run's status, keeps
each finished repetition the first time it is seen, and fails at once when a later status has
lost or changed one. At the end every repetition must be measured or have failed with a named
cause; none may fail falsely (a disruption above is no reason for a measurement to fail: the
operator resumes from the status, the Job is made again, the kubelet keeps the containers).

Prints one line per disruption and a closing line:
  chaos seed S: N measured, L lost, F falsely failed, C failed with a cause (of T)
and exits 1 when anything was lost or failed falsely.
"""

import argparse
import json
import random
import subprocess
import sys
import time

STABLE = ("repetition", "phase", "reason", "results", "target", "startTime", "completionTime")


def kubectl(*args, check=True, capture=True):
    done = subprocess.run(["kubectl", *args], capture_output=capture, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout if capture else ""


def status(ns, name):
    out = subprocess.run(
        ["kubectl", "get", "benchmarkrun", "-n", ns, name, "-o", "json"],
        capture_output=True, text=True,
    )
    if out.returncode != 0:
        return None
    return json.loads(out.stdout).get("status") or {}


def finished_repetitions(st):
    """(cell, repetition) -> the repetition's stable fields, for every finished repetition."""
    out = {}
    for cell in st.get("cells") or []:
        for rep in cell.get("repetitions") or []:
            if rep.get("phase") in ("Succeeded", "Failed"):
                out[(cell["name"], rep.get("repetition"))] = {
                    k: rep.get(k) for k in STABLE if k in rep
                }
    return out


def log(msg):
    print(f"[chaos {time.strftime('%H:%M:%S', time.gmtime())}] {msg}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--namespace", required=True)
    p.add_argument("--name", default="e2e-chaos")
    p.add_argument("--release-namespace", default="benchmatrix-system")
    p.add_argument("--operator-selector", default="app.kubernetes.io/name=benchmatrix")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--operator-kills", type=int, default=5)
    p.add_argument("--kubelet-restart", default="", help="shell command restarting the kubelet")
    p.add_argument("--timeout", type=int, default=1200)
    p.add_argument("--template", default="tests/e2e/repeat-stress.yaml")
    p.add_argument("--phase", default="4s", help="the measured phase's length")
    a = p.parse_args()

    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 10**6)
    rng = random.Random(seed)
    total = 2 * a.repeat
    print(f"chaos seed {seed} (replay: --seed {seed})", flush=True)

    # What happens, and after how many measured repetitions plus how many seconds.
    plan = [("delete the operator pod", i) for i in range(a.operator_kills)]
    plan.append(("delete the load generator Job", 0))
    plan.append(("restart the kubelet", 0))
    events = sorted(
        (rng.randrange(0, total - 2), round(rng.uniform(0.0, 6.0), 1), what)
        for what, _ in plan
    )
    for after, delay, what in events:
        log(f"plan: {what} after {after} finished repetition(s) + {delay} s")

    template = open(a.template).read()
    run = (
        template.replace("  name: NAME\n", f"  name: {a.name}\n")
        .replace("  repeat: REPEAT\n", f"  repeat: {a.repeat}\n")
        .replace("duration: 2s", f"duration: {a.phase}")
    )
    kubectl("delete", "benchmarkrun", "-n", a.namespace, a.name, "--ignore-not-found", "--wait=true")
    subprocess.run(["kubectl", "apply", "-n", a.namespace, "-f", "-"], input=run, text=True, check=True,
                   capture_output=True)
    log(f"applied {a.name}: 2 cells x repeat {a.repeat}, a {a.phase} phase")

    seen = {}
    problems = []
    deadline = time.time() + a.timeout
    pending = list(events)
    due_at = None
    st = {}
    while time.time() < deadline:
        st = status(a.namespace, a.name)
        if st is None:
            time.sleep(1)
            continue
        now = finished_repetitions(st)
        for key, rep in seen.items():
            if key not in now:
                problems.append(f"lost: {key[0]} repetition {key[1]} was finished and is gone")
            elif now[key] != rep:
                problems.append(f"changed: {key[0]} repetition {key[1]}: {rep} -> {now[key]}")
        for key, rep in now.items():
            seen.setdefault(key, rep)
        if problems:
            break
        if st.get("phase") in ("Succeeded", "Failed"):
            break
        if pending and len(now) >= pending[0][0]:
            if due_at is None:
                due_at = time.time() + pending[0][1]
            if time.time() >= due_at:
                _, _, what = pending.pop(0)
                due_at = None
                disrupt(what, a)
        time.sleep(1)
    else:
        problems.append(f"the run did not finish within {a.timeout} s (phase {st.get('phase')})")
    for _, _, what in pending:
        log(f"not done (the run ended first): {what}")

    measured = sum(1 for r in seen.values() if r.get("phase") == "Succeeded")
    failed = [(k, r) for k, r in seen.items() if r.get("phase") == "Failed"]
    # Nothing this step does is a reason for a measurement to fail: every failure is false.
    false = [f"{k[0]} repetition {k[1]}: {r.get('reason')}" for k, r in failed]
    never = total - len(seen)
    lost = sum(1 for p in problems if p.startswith("lost"))
    for p in problems + [f"falsely failed: {f}" for f in false]:
        log(p)
    if never:
        log(f"{never} repetition(s) never finished")
    print(
        f"chaos seed {seed}: {measured} measured, {lost} lost, {len(false)} falsely failed, "
        f"{never} unfinished (of {total})",
        flush=True,
    )
    sys.exit(1 if problems or false or never else 0)


def disrupt(what, a):
    if what == "delete the operator pod":
        pods = kubectl("get", "pods", "-n", a.release_namespace, "-l", a.operator_selector,
                       "-o", "jsonpath={.items[*].metadata.name}").split()
        if not pods:
            log("no operator pod to delete")
            return
        kubectl("delete", "pod", "-n", a.release_namespace, *pods, "--wait=false")
        log(f"deleted the operator pod(s) {' '.join(pods)}")
    elif what == "delete the load generator Job":
        for _ in range(30):
            jobs = kubectl("get", "jobs", "-n", a.namespace, "-l",
                           f"benchmatrix.dev/run={a.name},benchmatrix.dev/role=loadgen",
                           "-o", "jsonpath={.items[*].metadata.name}").split()
            if jobs:
                kubectl("delete", "job", "-n", a.namespace, *jobs, "--wait=false")
                log(f"deleted the load generator Job(s) {' '.join(jobs)}")
                return
            time.sleep(0.5)
        log("no load generator Job appeared within 15 s; none deleted")
    elif what == "restart the kubelet":
        if not a.kubelet_restart:
            log("no --kubelet-restart command: kubelet restart skipped")
            return
        started = time.time()
        done = subprocess.run(["bash", "-c", a.kubelet_restart], capture_output=True, text=True)
        log(f"restarted the kubelet in {time.time() - started:.1f} s (exit {done.returncode})")
        if done.returncode != 0:
            log(done.stderr.strip()[-500:])


if __name__ == "__main__":
    main()
