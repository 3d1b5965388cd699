#!/usr/bin/env bash
# A run created again and again under one name reports only its own figures (issue 43): LOOPS
# times `kubectl benchmatrix run SPEC --replace` of the same run name, as a CI job does on every
# push, with a CPU hog (a busy loop of HOG_CPU) beside every other run. Two specs:
#   one-cell  one threads cell of 500m, a 1 s warm-up and a 2 s phase (what showed the bug)
#   variants  the same cell with two env variants, repeat: 3
# While they run, a watch records every load generator pod (its UID, its controlling owner)
# and every Job (its UID, its owning run's UID). Afterwards it checks, and prints per spec:
#   - every run lasted at least its planned load (creation to completion);
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

watch_pid=""
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  if [[ -n "$watch_pid" ]]; then kill "$watch_pid" 2>/dev/null || true; fi
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
kubectl get pods,jobs -n "$ns" --watch --output-watch-events -o json >"$out/objects.jsonl" &
watch_pid=$!
since="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
for spec in $specs; do
  file="$out/$spec.yaml"
  write_spec "$spec" "$file"
  : >"$out/$spec.tsv"
  for i in $(seq 1 "$loops"); do
    if ((i % 2 == 0)); then hog on; else hog off; fi
    code=0
    "$BENCHMATRIX" kubectl -n "$ns" run "$file" --replace --timeout 10m --out "$out/$spec-$i" \
      >"$out/$spec-$i.log" 2>&1 || code=$?
    printf '%s\t%s\t%s\n' "$i" "$code" "$((i % 2 == 0))" | tee -a "$out/$spec.tsv"
  done
done
hog off
sleep 2
kill "$watch_pid" 2>/dev/null || true
watch_pid=""
kubectl logs -n "$op_ns" -l app.kubernetes.io/name=benchmatrix --since-time="$since" \
  --tail=-1 --max-log-requests=10 >"$out/operator.log" 2>/dev/null || true
python3 - "$out" "$specs" <<'PY'
import json, re, sys, yaml
out, specs = sys.argv[1], sys.argv[2].split()

def objects(path):
    text, depth, start = open(path).read(), 0, None
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                yield json.loads(text[start:i + 1])["object"]

pods, jobs = {}, {}
for o in objects(f"{out}/objects.jsonl"):
    meta = o["metadata"]
    owner = next((r for r in meta.get("ownerReferences", []) if r.get("controller")), {})
    (jobs if o["kind"] == "Job" else pods)[meta["uid"]] = owner.get("uid")
reads = [dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line)) for line in open(f"{out}/operator.log")
         if "result read" in line]
bad = 0
for spec in specs:
    lines = [l.split("\t") for l in open(f"{out}/{spec}.tsv").read().split("\n") if l]
    previous, short, failed, same = None, 0, 0, 0
    for i, code, _ in lines:
        status = yaml.safe_load(open(f"{out}/{spec}-{i}/status.yaml"))
        st = status.get("status", status)
        planned = 1 + 2
        start, end = st.get("startTime"), st.get("completionTime")
        import datetime as dt
        secs = lambda t: dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
        if start and end and secs(end) - secs(start) < planned:
            short += 1
        failed += sum(1 for c in st.get("cells", []) if c.get("phase") != "Succeeded")
        figures = [(c["name"], r.get("requests"), json.dumps(r.get("latencyMs"), sort_keys=True))
                   for c in st.get("cells", []) for r in c.get("results", [])]
        if previous is not None and figures == previous:
            same += 1
        previous = figures
    run_reads = [r for r in reads if r.get("run", "").strip('"') == f"rl-{spec}"]
    foreign = 0
    for r in run_reads:
        for entry in r.get("pods", "").strip('"').split(", "):
            if not entry:
                continue
            name_uid, _, _ = entry.partition(" owner ")
            pod_uid = name_uid.split("/")[-1]
            job_uid = pods.get(pod_uid)
            run_uid = jobs.get(job_uid)
            if job_uid is None or run_uid != r.get("run_uid", "").strip('"'):
                foreign += 1
    codes = sum(1 for _, code, _ in lines if code != "0")
    print(f"{spec}: {len(lines)} runs, exit non-zero {codes}, shorter than planned {short}, "
          f"figures equal to the previous run's {same}, failed measurements {failed}, "
          f"results read {len(run_reads)}, from a pod not of the run's own Job {foreign}")
    bad += codes + short + same + failed + foreign + (len(run_reads) == 0)
sys.exit(1 if bad else 0)
PY
