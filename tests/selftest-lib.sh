# shellcheck shell=bash
# Shared by the self-tests of scripts that run against stand-in commands (tests/e2e/selftest.sh
# for kind.sh, tests/action/selftest.sh for the action's run.sh), which source it. Each stand-in
# appends the command line it got to a log; the self-test then checks that log.

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
