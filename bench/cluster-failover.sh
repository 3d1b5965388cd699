#!/usr/bin/env bash
# Leader failover on a real cluster: with the operator installed at `replicas: 2` (charts/
# benchmatrix, --set replicas=2), TRIES times: apply a run of two cells x repeat 2 with a 3 s
# phase, wait until a repetition's load is running, kill the leader's pod (the Lease's
# holderIdentity) at once (--grace-period=0 --force: it cannot release the Lease, so the standby
# waits out the Lease's duration), and measure from the kill to the Lease's new holder and to the
# run's next status change, against the Lease's duration; then wait for the run to end and check
# that every repetition was measured. KILL=graceful deletes the pod normally instead (it releases
# the Lease on SIGTERM). KILL=sigkill sends SIGKILL to the leader's process itself, as a crash
# or a lost node would: it cannot release the Lease, and the standby must wait for it to expire.
# That needs the node's processes in reach of this shell (a cluster of processes on this
# machine): the process is the one whose environment holds HOSTNAME=<the leader's pod>. A
# sibling container cannot do it: SIGKILL sent to PID 1 from inside its own PID namespace is
# ignored.
#
#   bench/cluster-failover.sh                 3 tries in namespace bench-failover
#   TRIES=1 KILL=graceful bench/cluster-failover.sh
#   KILL=sigkill bench/cluster-failover.sh
#   KILL=sigstop bench/cluster-failover.sh   freezes the leader for STOP_SECONDS (20), past the
#                                            Lease, then lets it go on: a standby must take over
#                                            when the Lease expires, and the old leader, thawed,
#                                            must step down (a lost node, a long pause).
#                                            With the operator at logLevel debug and logFormat
#                                            text, it also checks the fence: no "status written"
#                                            line of the thawed process after the new leader's
#                                            first one (the try fails otherwise)
set -euo pipefail
cd "$(dirname "$0")/.."
tries="${TRIES:-3}" ns="${NAMESPACE:-bench-failover}" kill="${KILL:-force}"
stop_seconds="${STOP_SECONDS:-20}"
release_ns="${RELEASE_NAMESPACE:-benchmatrix-system}" lease="${LEASE:-benchmatrix}"
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
duration="$(kubectl get lease -n "$release_ns" "$lease" -o jsonpath='{.spec.leaseDurationSeconds}')"
echo "Lease ${release_ns}/${lease}: ${duration} s; kill: ${kill}"
now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
snapshot() {
  kubectl get benchmarkrun -n "$ns" failover -o jsonpath='{.metadata.resourceVersion}' 2>/dev/null
}
holder() { kubectl get lease -n "$release_ns" "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
# The Lease's holder and its last renewal, as seconds since the epoch.
renewal() {
  local got
  got="$(kubectl get lease -n "$release_ns" "$lease" \
    -o jsonpath='{.spec.holderIdentity} {.spec.renewTime}' 2>/dev/null)" || return 0
  [[ "$got" == *" "?* ]] || return 0
  echo "${got%% *} $(date -d "${got#* }" +%s.%N)"
}
for _ in $(seq 1 "$tries"); do
  kubectl delete benchmarkrun -n "$ns" failover --ignore-not-found --wait=true >/dev/null
  kubectl apply -n "$ns" -f - >/dev/null <<'EOF'
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata:
  name: failover
spec:
  repeat: 2
  configurations:
    - {name: a, mode: single, replicas: 1, cpu: 500m, memory: 128Mi}
    - {name: b, mode: pool, replicas: 1, cpu: 500m, memory: 128Mi}
  workload:
    endpoints: [{name: healthz, path: /healthz}]
    warmup: 1s
    phases: [{name: p, duration: 3s, load: [{endpoint: healthz, connections: 2}]}]
  loadgen: {cpu: 500m, memory: 128Mi}
  timeouts: {ready: 120s, runSlack: 120s}
  cleanup: Always
EOF
  # Mid-measurement: the second step's load has started.
  until [[ "$(kubectl get benchmarkrun -n "$ns" failover -o jsonpath='{.status.cells[1].phase}' 2>/dev/null)" == Running ]]; do
    case "$(kubectl get benchmarkrun -n "$ns" failover -o jsonpath='{.status.phase}' 2>/dev/null)" in
      Succeeded | Failed)
        echo "try: the run ended before its second cell's load was seen; no kill" >&2
        kubectl get benchmarkrun -n "$ns" failover -o jsonpath='{range .status.cells[*]}{.name}: {.phase} {.reason} {.message}{"\n"}{end}' >&2
        continue 2
        ;;
    esac
    sleep 0.2
  done
  leader="$(holder)"
  before="$(snapshot)"
  t0="$(now)"
  if [[ "$kill" == force ]]; then
    kubectl delete pod -n "$release_ns" "$leader" --grace-period=0 --force --wait=false >/dev/null 2>&1
  elif [[ "$kill" == sigkill || "$kill" == sigstop ]]; then
    mapfile -t pids < <(grep -lsxz "HOSTNAME=${leader}" /proc/[0-9]*/environ | cut -d/ -f3)
    if [[ ${#pids[@]} -eq 0 ]]; then
      echo "KILL=${kill}: no process of pod ${leader} on this machine" >&2
      exit 1
    fi
    if [[ "$kill" == sigkill ]]; then
      kill -KILL "${pids[@]}"
    else
      frozen_at="$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)"
      kill -STOP "${pids[@]}"
      thawed_at="$(mktemp)"
      (sleep "$stop_seconds" && date -u +%Y-%m-%dT%H:%M:%S.%NZ >"$thawed_at" && kill -CONT "${pids[@]}") &
    fi
  else
    kubectl delete pod -n "$release_ns" "$leader" --wait=false >/dev/null
  fi
  # A leader again: the first renewal of the Lease after the kill. The killed process cannot
  # renew, so that is the standby taking over or, after a SIGKILL, the same pod's restarted
  # container resuming the Lease it still holds under its own name (the kubelet restarts it
  # within a second or two, well before the Lease expires).
  new_holder="" t_holder="" t_status=""
  while [[ -z "$t_holder" || -z "$t_status" ]]; do
    if [[ -z "$t_holder" ]]; then
      read -r h renewed <<<"$(renewal)" || true
      if [[ -n "${renewed:-}" ]] && python3 -c "import sys; sys.exit(not float(sys.argv[1]) > float(sys.argv[2]))" "$renewed" "$t0"; then
        new_holder="$h" t_holder="$(now)"
        [[ "$h" == "$leader" ]] && new_holder="$h (restarted)"
      fi
    fi
    if [[ -z "$t_status" && "$(snapshot)" != "$before" ]]; then t_status="$(now)"; fi
    sleep 0.1
  done
  kubectl wait -n "$ns" benchmarkrun/failover --for=condition=Complete --timeout=600s >/dev/null
  if [[ "$kill" == sigstop ]]; then
    wait
    # The thawed leader's own words: it must have stepped down (or still be a standby).
    sleep 3
    echo "the thawed ${leader} after ${stop_seconds} s frozen:"
    kubectl logs -n "$release_ns" "$leader" --since=60s 2>/dev/null |
      grep -E "Lease|stepping down|stopped reconciling" | tail -n 3 | cut -c1-240 || true
    echo "  holder now: $(holder)"
    # The fence: every status write that landed, by process, from the debug lines "status
    # written" (reconciler/reconcile.rs). The thawed process may have written before the new
    # leader's first write (a turn decided before the freeze, which the resourceVersion
    # precondition lets through only while nobody else has written), never after.
    new_pod="${new_holder% (restarted)}"
    if [[ "$new_pod" != "$leader" ]]; then
      fence_ok=1
      python3 - "$frozen_at" "$(cat "$thawed_at")" \
        <(kubectl logs -n "$release_ns" "$leader" --timestamps=false 2>/dev/null) \
        <(kubectl logs -n "$release_ns" "$new_pod" --timestamps=false 2>/dev/null) <<'PY' || fence_ok=0
import sys
frozen, thawed, old_log, new_log = sys.argv[1:5]
# Each log is a pipe: read it once.
old_lines, new_lines = list(open(old_log)), list(open(new_log))
def stamps(lines, words):
    return [l.split()[0] for l in lines if words in l]
def writes(lines):
    return stamps(lines, "status written")
def withheld(lines):
    return stamps(lines, "status write withheld")
new = [t for t in writes(new_lines) if t >= frozen]
if not new:
    print("  fence: FAILED to check: no 'status written' line from the new leader (install with "
          "operator.logFormat=text and operator.logLevel=info,benchmatrix=debug)")
    sys.exit(1)
first_new = min(new)
old_after_thaw = [t for t in writes(old_lines) if t >= thawed]
late = [t for t in old_after_thaw if t >= first_new]
print(f"  fence: thawed at {thawed}; new leader's first write {first_new}; the thawed process "
      f"wrote {len(old_after_thaw)} status(es) after its thaw, {len(late)} after the new leader's "
      f"first, and withheld {len([t for t in withheld(old_lines) if t >= thawed])}")
sys.exit(1 if late else 0)
PY
      [[ "$fence_ok" == 1 ]] || fence_failed=1
    fi
    rm -f "$thawed_at"
  fi
  kubectl get benchmarkrun -n "$ns" failover -o json | python3 -c '
import json, sys
t0, th, ts, dur, old, new = sys.argv[1:7]
run = json.load(sys.stdin)
reps = [(c["name"], r) for c in run["status"]["cells"] for r in c.get("repetitions") or []]
ok = sum(1 for _, r in reps if r.get("phase") == "Succeeded")
phase = run["status"]["phase"]
print(f"try: killed {old}; leader {new} after {float(th) - float(t0):.1f} s, next status change "
      f"after {float(ts) - float(t0):.1f} s (Lease {dur} s); run {phase}, "
      f"{ok} of {len(reps)} repetitions measured (of 4)")
for cell, r in reps:
    if r.get("phase") != "Succeeded":
        rep, phase, why, said = (r.get(k) for k in ("repetition", "phase", "reason", "message"))
        print(f"  {cell}#{rep}: {phase} {why}: {(said or str())[:200]}")
' "$t0" "$t_holder" "$t_status" "$duration" "$leader" "$new_holder"
  kubectl -n "$release_ns" rollout status deployment/benchmatrix --timeout=120s >/dev/null
done
if [[ -n "${fence_failed:-}" ]]; then
  echo "FAILED: a thawed former leader wrote a status after the new leader's first write" >&2
  exit 1
fi
