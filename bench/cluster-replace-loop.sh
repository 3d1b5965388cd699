#!/usr/bin/env bash
# A run created again and again under one name reports only its own figures (issue 43): LOOPS
# times `kubectl benchmatrix run SPEC --replace` of the same run name, as a CI job does on every
# push, with a CPU hog (a busy loop of HOG_CPU) beside every other run. Two specs:
#   one-cell  one threads cell of 500m, a 1 s warm-up and a 2 s phase (what showed the bug)
#   variants  the same cell with two env variants, repeat: 3
# While they run, a watch records every load generator pod (its UID, its controlling owner)
# and every Job (its UID, its owning run's UID). Afterwards it checks, and prints per spec:
#   - every run lasted at least its planned load (first cell's start to completion: warm-up and
#     phase times every cell's measurements, one at a time), and every measurement at least its
#     warm-up and phase (load start to completion);
#   - no run's figures equal the run before it (requests and every percentile);
#   - no measurement failed;
#   - every result the operator read (its `result read` log lines) came from pods whose
#     controlling owner is a Job owned by that very run, by UID.
# Exits 1 on any breach.
#
# Needs: the operator installed (tests/e2e/kind.sh or scripts/install-operator.sh, text logs) in
# OPERATOR_NAMESPACE, the images loaded, busybox:1.36 importable as the hog, kubectl pointed at
# the cluster, python3.
#
#   bench/cluster-replace-loop.sh          LOOPS=30 SPECS="one-cell variants" HOG_CPU=400m
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
benchmatrix_binary
ns="${NAMESPACE:-bench-replace}" op_ns="${OPERATOR_NAMESPACE:-benchmatrix-system}"
loops="${LOOPS:-30}" specs="${SPECS:-one-cell variants}" hog_cpu="${HOG_CPU:-400m}"
out="${OUT:-build/replace-loop}"
mkdir -p "$out"
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null

watch_pids=()
# Appends the watch events of RESOURCE (pods or jobs) in the namespace to $out/RESOURCE.jsonl
# until stopped. kubectl watches one resource type at a time, and a watch ends when the API
# server closes it (after 30 to 60 minutes), so it is started again.
# shellcheck disable=SC2317 # the TERM trap
watch_objects() { # RESOURCE
  local child=""
  trap 'if [[ -n "$child" ]]; then kill "$child" 2>/dev/null; fi; exit 0' TERM
  while :; do
    kubectl get "$1" -n "$ns" --watch --output-watch-events -o json >>"$out/$1.jsonl" \
      2>>"$out/watch.err" &
    child=$!
    wait "$child" || sleep 1
  done
}
stop_watches() {
  local pid
  for pid in "${watch_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  watch_pids=()
}
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  stop_watches
  kubectl delete pod -n "$ns" hog --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

write_spec() { # NAME FILE
  local variants=""
  if [[ $1 == variants ]]; then
    variants='  repeat: 3
  variants:
    - name: base
      env: [{name: BENCH_FAST_MS, value: "20"}]
    - name: cand
      env: [{name: BENCH_FAST_MS, value: "21"}]'
  fi
  cat >"$2" <<EOF
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: rl-$1}
spec:
$variants
  configurations:
    - {name: t, mode: threads, replicas: 1, cpu: 500m, memory: 128Mi}
  workload:
    endpoints: [{name: fast, path: /fast}]
    warmup: 1s
    phases:
      - name: p
        duration: 2s
        load: [{endpoint: fast, connections: 2}]
  loadgen: {cpu: 250m, memory: 128Mi}
  timeouts: {ready: 120s, runSlack: 60s}
EOF
}

hog() { # on|off
  if [[ $1 == on ]]; then
    kubectl apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: loop
      image: busybox:1.36
      imagePullPolicy: IfNotPresent
      command: [sh, -c, 'while :; do :; done']
      resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: $hog_cpu, memory: 16Mi}}
EOF
    kubectl wait -n "$ns" pod/hog --for=condition=Ready --timeout=120s >/dev/null
  else
    kubectl delete pod -n "$ns" hog --ignore-not-found --wait=true >/dev/null
  fi
}

stamp
echo "# $loops runs per spec ($specs), a hog of $hog_cpu beside every other run; out $out"
# Every load generator pod and Job as they come and go: their UIDs and owners, for the check.
: >"$out/pods.jsonl"
: >"$out/jobs.jsonl"
: >"$out/watch.err"
watch_objects pods &
watch_pids+=("$!")
watch_objects jobs &
watch_pids+=("$!")
since="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
for spec in $specs; do
  file="$out/$spec.yaml"
  write_spec "$spec" "$file"
  : >"$out/$spec.tsv"
  for i in $(seq 1 "$loops"); do
    if ((i % 2 == 0)); then hog on; else hog off; fi
    code=0
    rm -rf "$out/$spec-$i"
    "$BENCHMATRIX" kubectl -n "$ns" run "$file" --replace --timeout 10m --out "$out/$spec-$i" \
      >"$out/$spec-$i.log" 2>&1 || code=$?
    printf '%s\t%s\t%s\n' "$i" "$code" "$((i % 2 == 0))" | tee -a "$out/$spec.tsv"
  done
done
hog off
sleep 2
stop_watches
kubectl logs -n "$op_ns" -l app.kubernetes.io/name=benchmatrix --since-time="$since" \
  --tail=-1 --max-log-requests=10 >"$out/operator.log" 2>/dev/null || true
python3 - "$out" "$specs" <<'PY'
import datetime as dt, json, re, statistics, sys, yaml
out, specs = sys.argv[1], sys.argv[2].split()

def objects(path):
    """The objects of a file of watch events, JSON documents one after another."""
    text, decoder, i = open(path).read(), json.JSONDecoder(), 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return
        event, i = decoder.raw_decode(text, i)
        yield event["object"]

def seconds(text):
    """A duration of the spec ("1s", "500ms", "2m") in seconds."""
    number, unit = re.fullmatch(r"([0-9.]+)(ms|s|m|h)", str(text)).groups()
    return float(number) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]

def at(time):
    """A status time in seconds: YAML reads an RFC 3339 time as a datetime already."""
    if isinstance(time, str):
        time = dt.datetime.fromisoformat(time.replace("Z", "+00:00"))
    return time.timestamp()

def lasted(item):
    start, end = item.get("start"), item.get("end")
    return at(end) - at(start) if start and end else None

# Each load generator pod's controlling owner (its Job) and each Job's (its run), by UID.
owners = {}
for resource in ("pods", "jobs"):
    for o in objects(f"{out}/{resource}.jsonl"):
        meta = o["metadata"]
        owner = next((r for r in meta.get("ownerReferences", []) if r.get("controller")), {})
        owners[meta["uid"]] = owner.get("uid")
# `pods=` is the one field with spaces (each pod as "NAME/UID owner UID", joined by ", ").
reads = []
for line in open(f"{out}/operator.log"):
    if "result read" not in line:
        continue
    fields = {k: v.strip('"') for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', line)}
    pods = re.search(r' pods=(.*?) parsed=', line)
    fields["pods"] = pods.group(1).strip('"') if pods else ""
    reads.append(fields)
bad = 0
for spec in specs:
    run = yaml.safe_load(open(f"{out}/{spec}.yaml"))["spec"]
    load = seconds(run["workload"]["warmup"]) + sum(
        seconds(p["duration"]) for p in run["workload"]["phases"])
    repeat = run.get("repeat", 1)
    repeat = repeat if isinstance(repeat, int) else repeat["min"]
    planned = load * len(run["configurations"]) * max(1, len(run.get("variants", []))) * repeat
    lines = [l.split("\t") for l in open(f"{out}/{spec}.tsv").read().split("\n") if l]
    previous, short, short_measurements, failed, same, durations = None, 0, 0, 0, 0, []
    for i, code, _ in lines:
        try:
            status = yaml.safe_load(open(f"{out}/{spec}-{i}/status.yaml"))
        except FileNotFoundError:
            failed += 1
            previous = None
            continue
        st = status.get("status", status)
        took = lasted({"start": st.get("startTime"), "end": st.get("completionTime")})
        if took is not None:
            durations.append(took)
        if took is None or took < planned:
            short += 1
        cells = st.get("cells", [])
        failed += sum(1 for c in cells if c.get("phase") != "Succeeded")
        for c in cells:
            for m in c.get("repetitions") or [c]:
                took = lasted({"start": m.get("loadStartTime"), "end": m.get("completionTime")})
                if took is None or took < load:
                    short_measurements += 1
        figures = [(c["name"], r.get("requests"), json.dumps(r.get("latencyMs"), sort_keys=True))
                   for c in cells for r in c.get("results", [])]
        if previous is not None and figures == previous:
            same += 1
        previous = figures
    run_reads = [r for r in reads if r.get("run") == f"rl-{spec}"]
    foreign = 0
    for r in run_reads:
        entries = [e for e in r["pods"].split(", ") if e]
        if not entries:
            foreign += 1
        for entry in entries:
            pod_uid = entry.partition(" owner ")[0].split("/")[-1]
            job_uid = owners.get(pod_uid)
            if job_uid is None or owners.get(job_uid) != r.get("run_uid"):
                foreign += 1
    codes = sum(1 for _, code, _ in lines if code != "0")
    runs_read = len({r.get("run_uid") for r in run_reads})
    spread = (f"min {min(durations):.0f} s, median {statistics.median(durations):.0f} s"
              if durations else "none")
    print(f"{spec}: {len(lines)} runs, exit non-zero {codes}, run durations {spread} "
          f"(planned load {planned:.0f} s), shorter than planned {short}, measurements shorter "
          f"than their load {short_measurements}, figures equal to the previous run's {same}, "
          f"failed measurements {failed}, results read {len(run_reads)} (of {runs_read} runs), "
          f"from a pod not of the run's own Job {foreign}")
    bad += codes + short + short_measurements + same + failed + foreign + (len(run_reads) == 0)
sys.exit(1 if bad else 0)
PY
