# shellcheck shell=bash
# Shared by the self-tests of scripts that run against stand-in commands (tests/e2e/selftest.sh
# for kind.sh, tests/action/selftest.sh for the action's run.sh), which source it. Each stand-in
# appends the command line it got to a log; the self-test then checks that log. Sourcing it
# makes $tmp (removed on exit) and $stubs in it, the folder the stand-ins go into.

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
stubs="${tmp}/bin"
mkdir -p "${stubs}"

# Writes a recording stand-in into $stubs for each tool named: it appends "<tool> <args>" to
# $STUB_LOG and exits 0, or 1 when STUB_FAIL is "<tool> <first arg>". `kind get clusters`
# prints $STUB_KIND_CLUSTERS's file and `kind get kubeconfig` a kubeconfig's first line.
recording_stubs() {
  local tool
  for tool in "$@"; do
    cat >"${stubs}/${tool}" <<STUB
#!/usr/bin/env bash
echo "${tool} \$*" >>"\${STUB_LOG}"
if [[ "${tool} \$1" == "\${STUB_FAIL:-}" ]]; then echo "${tool}: planted failure" >&2; exit 1; fi
if [[ "${tool}" == kind && "\$1 \$2" == "get clusters" ]]; then cat "\${STUB_KIND_CLUSTERS:-/dev/null}"; fi
if [[ "${tool}" == kind && "\$1 \$2" == "get kubeconfig" ]]; then echo "apiVersion: v1"; fi
exit 0
STUB
  done
}

failures=0
pass() { printf 'ok: %s\n' "$*"; }
fail() {
  printf 'FAIL: %s\n' "$*"
  failures=$((failures + 1))
}

# The recorded calls ($log) contain these lines' patterns in this order.
in_order() {
  # shellcheck disable=SC2154 # $log is set by the self-test that sources this
  local rest="${log}" pattern
  for pattern in "$@"; do
    local line
    line="$(grep -n -m1 -e "${pattern}" <<<"${rest}" | cut -d: -f1)" || true
    if [[ -z "${line}" ]]; then
      echo "missing or out of order: ${pattern}"
      return 1
    fi
    rest="$(tail -n "+$((line + 1))" <<<"${rest}")"
  done
}
