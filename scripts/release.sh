#!/usr/bin/env bash
# Builds the files of a release. .github/workflows/release.yml runs the steps below on a tag v*;
# --dry-run runs on this machine what it can, with no network and nothing pushed, and checks it.
#
#   scripts/release.sh --dry-run [OUT_DIR] [--version vX.Y.Z]
#       Into OUT_DIR (default build/release-dry-run in the repository, emptied first): the linux/amd64 static
#       binaries and their release archive, the three images as OCI image tarballs (built
#       without Docker, by scripts/oci-image.py from Dockerfile.release), the chart package, the
#       krew manifest and SHA256SUMS; then checks them all and prints each file's size and
#       sha256. linux/arm64 is built by the workflow only (on an arm64 runner).
#   scripts/release.sh version [TAG]
#       Prints the release's version, v + the workspace version in Cargo.toml; with TAG, fails
#       unless TAG is that version (a release is cut by bumping Cargo.toml first, then tagging).
#   scripts/release.sh binaries TRIPLE OUT_DIR [--version TAG]
#       Builds benchmatrix, benchmatrix-target and benchmatrix-loadgen for TRIPLE
#       (x86_64-unknown-linux-gnu or aarch64-unknown-linux-gnu) as static executables with the
#       release profile, refuses any that is not static, runs them when TRIPLE is this machine's,
#       copies them to OUT_DIR/bin/linux-ARCH/ (Dockerfile.release's context) and packs
#       `benchmatrix` into OUT_DIR/benchmatrix-VERSION-linux-ARCH.tar.gz.
#   scripts/release.sh chart OUT_DIR [--version TAG]
#       helm package of charts/benchmatrix with version and appVersion VERSION without its v
#       (the images' tag), into OUT_DIR/benchmatrix-X.Y.Z.tgz.
#   scripts/release.sh finish OUT_DIR --arch ARCH... [--version TAG]
#       The krew manifest for the archives of each ARCH (amd64, arm64) in OUT_DIR
#       (OUT_DIR/krew-benchmatrix.yaml), checked against those files, and OUT_DIR/SHA256SUMS over
#       the release assets.
#
# Environment: HELM (default: the pinned helm of scripts/install-helm.sh, else helm on PATH);
# KUBECTL (default: kubectl next to helm, else on PATH; only for the plugin check, skipped
# without one); SOURCE_DATE_EPOCH (the images' timestamps; default the last commit's time).
set -euo pipefail
# OUT_DIR is relative to where the script is started; it then works from the repository's root.
caller="$(pwd)"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "${root}"
absolute() { if [[ "$1" == /* ]]; then printf '%s' "$1"; else printf '%s/%s' "${caller}" "$1"; fi; }

# The asset names; tests/tests/release.rs reads these lines and checks the workflow against them.
# @VERSION@ is the tag (v0.1.0), @CHART_VERSION@ the same without its v, @ARCH@ amd64 or arm64.
readonly ARCHIVE_PATTERN='benchmatrix-@VERSION@-linux-@ARCH@.tar.gz'
readonly CHART_PATTERN='benchmatrix-@CHART_VERSION@.tgz'
readonly KREW_MANIFEST='krew-benchmatrix.yaml'
readonly SUMS='SHA256SUMS'
readonly REGISTRY='ghcr.io/benchmatrix'
readonly COMPONENTS=(operator target loadgen)
readonly BINARIES=(benchmatrix benchmatrix-target benchmatrix-loadgen)
# The profile the shipped binaries are built with: the real release profile (Cargo.toml).
readonly PROFILE='release'

log() { printf 'release: %s\n' "$*" >&2; }
fail() {
  printf 'release: %s\n' "$*" >&2
  exit 1
}

archive_name() { # VERSION ARCH
  local name="${ARCHIVE_PATTERN//@VERSION@/$1}"
  printf '%s' "${name//@ARCH@/$2}"
}
chart_name() { # CHART_VERSION
  printf '%s' "${CHART_PATTERN//@CHART_VERSION@/$1}"
}
# The image each component is pushed as (the chart's values.yaml names the same repositories).
image_repo() { printf '%s/benchmatrix-%s' "${REGISTRY}" "$1"; }
# The program each image runs (Dockerfile.release copies it to /usr/local/bin).
component_binary() {
  case "$1" in
    operator) echo benchmatrix ;;
    target) echo benchmatrix-target ;;
    loadgen) echo benchmatrix-loadgen ;;
    *) fail "no component $1" ;;
  esac
}

workspace_version() {
  sed -n '/^\[workspace\.package\]/,/^\[/p' Cargo.toml | sed -n 's/^version = "\(.*\)"$/\1/p' | head -n 1
}

# v + the workspace version; a given tag must be exactly that.
release_version() {
  local ws tag="${1:-}"
  ws="$(workspace_version)"
  [[ -n "${ws}" ]] || fail "no version under [workspace.package] in Cargo.toml"
  if [[ -n "${tag}" && "${tag}" != "v${ws}" ]]; then
    fail "tag ${tag} is not v${ws}, the workspace version in Cargo.toml: bump the version there (and in charts/benchmatrix/Chart.yaml), commit, then tag"
  fi
  printf 'v%s\n' "${ws}"
}

# The time the images and archives carry: SOURCE_DATE_EPOCH, else the last commit's.
source_epoch() {
  printf '%s\n' "${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
}

arch_of() {
  case "$1" in
    x86_64-unknown-linux-gnu) echo amd64 ;;
    aarch64-unknown-linux-gnu) echo arm64 ;;
    *) fail "target ${1}: a release builds x86_64-unknown-linux-gnu and aarch64-unknown-linux-gnu" ;;
  esac
}
host_arch() {
  case "$(uname -m)" in
    x86_64) echo amd64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) uname -m ;;
  esac
}

find_helm() {
  if [[ -n "${HELM:-}" ]]; then
    printf '%s\n' "${HELM}"
  elif [[ -x "${BENCHMATRIX_TOOLS_DIR:-${HOME}/.cache/benchmatrix/bin}/helm" ]]; then
    printf '%s\n' "${BENCHMATRIX_TOOLS_DIR:-${HOME}/.cache/benchmatrix/bin}/helm"
  elif command -v helm >/dev/null 2>&1; then
    command -v helm
  else
    # No download here: a dry run uses no network. scripts/install-tools.sh installs helm.
    fail "no helm: set HELM, or run scripts/install-tools.sh (the pinned helm) first"
  fi
}

# ------------------------------------------------------------------------------------------------
cmd_binaries() { # TRIPLE OUT VERSION
  local triple="$1" out="$2" version="$3" arch target_dir dir bin said
  arch="$(arch_of "${triple}")"
  # --target keeps build scripts and proc macros dynamic; crt-static applies to the binaries only
  # (the Dockerfile's build, and docs/kubernetes.md "Images", build them the same way).
  log "cargo build --profile ${PROFILE} --target ${triple} (static): ${BINARIES[*]}"
  local started="${SECONDS}"
  RUSTFLAGS="${RUSTFLAGS:+${RUSTFLAGS} }-C target-feature=+crt-static" \
    cargo build --profile "${PROFILE}" --locked --target "${triple}" \
    -p benchmatrix -p benchmatrix-target -p benchmatrix-loadgen
  log "the build took $((SECONDS - started)) s"
  # TLS is rustls (ring), never OpenSSL or native-tls: those would need a shared libssl, which a
  # static binary, distroless/static and a krew user's machine cannot be relied on to provide.
  local deps
  deps="$(cargo tree --locked --offline -e normal --target "${triple}" \
    -p benchmatrix -p benchmatrix-target -p benchmatrix-loadgen --prefix none)"
  if grep -qE '^(openssl-sys|openssl|native-tls) ' <<<"${deps}"; then
    fail "a dependency links OpenSSL: $(grep -E '^(openssl-sys|openssl|native-tls) ' <<<"${deps}" | sort -u | tr '\n' ' ')"
  fi
  grep -q '^rustls ' <<<"${deps}" || fail "no rustls among the dependencies: how does the Kubernetes client speak TLS?"
  log "TLS: $(grep -E '^(rustls|ring) ' <<<"${deps}" | sed 's/ (\*)//' | sort -u | tr '\n' ' ')(no OpenSSL)"
  target_dir="$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
  dir="${out}/bin/linux-${arch}"
  mkdir -p "${dir}"
  for bin in "${BINARIES[@]}"; do
    install -m 0755 "${target_dir}/${triple}/${PROFILE}/${bin}" "${dir}/${bin}"
    # Static: no program interpreter (ld.so) and no shared library needed; distroless/static has
    # neither, and a krew user's machine may have another glibc.
    if readelf -lW "${dir}/${bin}" | grep -q 'Requesting program interpreter' ||
      readelf -dW "${dir}/${bin}" | grep -q '(NEEDED)'; then
      readelf -dW "${dir}/${bin}" | grep '(NEEDED)' >&2 || true
      fail "${bin} (${triple}) is not statically linked"
    fi
    if command -v file >/dev/null 2>&1; then log "${bin}: $(file -b "${dir}/${bin}")"; fi
    if [[ "${arch}" == "$(host_arch)" ]]; then
      said="$("${dir}/${bin}" --version)"
      [[ "${said}" == "${bin} ${version#v}" ]] || fail "${bin} --version said '${said}', not '${bin} ${version#v}'"
      log "static, runs: ${said}"
    else
      log "static: ${bin} (linux/${arch}, not run on $(host_arch))"
    fi
  done
  # The krew archive: the one binary at the archive's top, mode 0755, owned by root, dated by
  # the last commit, and gzip without a name or time: the same binary gives the same archive.
  local archive
  archive="${out}/$(archive_name "${version}" "${arch}")"
  tar --owner=0 --group=0 --numeric-owner --mtime="@$(source_epoch)" -cf - -C "${dir}" benchmatrix |
    gzip -n -9 >"${archive}"
  log "archive: ${archive}"
}

cmd_chart() { # OUT VERSION
  local out="$1" version="$2" helm chart_version package
  chart_version="${version#v}"
  helm="$(find_helm)"
  mkdir -p "${out}"
  "${helm}" package charts/benchmatrix --version "${chart_version}" --app-version "${chart_version}" \
    --destination "${out}" >&2
  package="${out}/$(chart_name "${chart_version}")"
  [[ -f "${package}" ]] || fail "helm package wrote no ${package}"
  # The packaged Chart.yaml carries the release's version, and the chart still lints.
  local shown
  shown="$("${helm}" show chart "${package}")"
  grep -qx "version: ${chart_version}" <<<"${shown}" || fail "${package}: version is not ${chart_version}"
  grep -qxE "appVersion: \"?${chart_version}\"?" <<<"${shown}" || fail "${package}: appVersion is not ${chart_version}"
  "${helm}" lint --strict "${package}" >&2
  log "chart: ${package} (version and appVersion ${chart_version})"
}

# The krew manifest against the files it names: each platform's archive is in OUT with the
# manifest's sha256, and krew's install (files, then bin linked as kubectl-benchmatrix) gives an
# executable; on this machine's platform the plugin runs, by its name and through kubectl.
krew_check() { # OUT VERSION ARCH...
  local out="$1" version="$2"
  shift 2
  local kubectl="${KUBECTL:-}"
  if [[ -z "${kubectl}" ]]; then
    local helm_dir
    helm_dir="$(dirname "$(find_helm 2>/dev/null || echo /nonexistent/helm)")"
    if [[ -x "${helm_dir}/kubectl" ]]; then
      kubectl="${helm_dir}/kubectl"
    else
      kubectl="$(command -v kubectl || true)"
    fi
  fi
  python3 - "${out}" "${out}/${KREW_MANIFEST}" "${version}" "$(host_arch)" "${kubectl}" "$@" >&2 <<'PY'
import hashlib, os, subprocess, sys, tarfile, tempfile
try:
    import yaml
except ImportError:
    sys.exit("release: the krew check needs PyYAML (Debian: python3-yaml)")
out, path, version, host, kubectl, *archs = sys.argv[1:]
m = yaml.safe_load(open(path))
problems = []
def need(cond, msg):
    if not cond:
        problems.append(msg)
need(m.get("spec", {}).get("version") == version, f"spec.version {m.get('spec', {}).get('version')} is not {version}")
platforms = m["spec"]["platforms"]
got = sorted(p["selector"]["matchLabels"]["arch"] for p in platforms)
need(got == sorted(archs), f"platforms {got}, expected {sorted(archs)}")
for p in platforms:
    before = len(problems)
    labels = p["selector"]["matchLabels"]
    where = f"{labels['os']}/{labels['arch']}"
    name = os.path.basename(p["uri"])
    need(p["uri"] == f"https://github.com/benchmatrix/benchmatrix/releases/download/{version}/{name}",
         f"{where}: uri {p['uri']} is not this release's download URL")
    archive = os.path.join(out, name)
    if not os.path.isfile(archive):
        problems.append(f"{where}: {name} (the uri's file name) is not in {out}")
        continue
    digest = hashlib.sha256(open(archive, "rb").read()).hexdigest()
    need(p["sha256"] == digest, f"{where}: sha256 {p['sha256']} but {name} hashes to {digest}")
    with tempfile.TemporaryDirectory() as tmp:
        unpacked, installed, bindir = (os.path.join(tmp, d) for d in ("unpacked", "installed", "bin"))
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "tar_filter"):
                tar.extractall(unpacked, filter="tar")
            else:  # Python before 3.11.4 (Debian bookworm's 3.11.2)
                tar.extractall(unpacked)
        os.makedirs(installed)
        for f in p.get("files", []):
            src = os.path.join(unpacked, f["from"])
            need(os.path.exists(src), f"{where}: files.from {f['from']} is not in {name}")
            if os.path.exists(src):
                os.replace(src, os.path.join(installed, f["to"], os.path.basename(f["from"])))
        exe = os.path.join(installed, p["bin"])
        ok = os.path.isfile(exe) and os.access(exe, os.X_OK)
        need(ok, f"{where}: bin {p['bin']} is not an executable file after krew's install of {name}")
        if not ok:
            continue
        if len(problems) > before:
            continue
        if labels["arch"] != host:
            print(f"ok: {where}: {name}, sha256 {digest}, bin {p['bin']} executable (not run on linux/{host})")
            continue
        # krew links bin as kubectl-<plugin name> on PATH; kubectl finds the plugin by that name.
        os.makedirs(bindir)
        plugin = os.path.join(bindir, "kubectl-" + m["metadata"]["name"])
        os.symlink(exe, plugin)
        said = subprocess.run([plugin, "--version"], capture_output=True, text=True).stdout.strip()
        need(said == f"kubectl benchmatrix {version[1:]}", f"{where}: kubectl-benchmatrix --version said {said!r}")
        runs = f"kubectl-benchmatrix --version: {said}"
        if kubectl:
            env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), KUBECONFIG=os.devnull)
            said = subprocess.run([kubectl, "benchmatrix", "--version"], capture_output=True, text=True, env=env)
            need(said.returncode == 0 and said.stdout.strip() == f"kubectl benchmatrix {version[1:]}",
                 f"{where}: kubectl benchmatrix --version said {said.stdout.strip()!r} {said.stderr.strip()!r}")
            runs += f"; kubectl benchmatrix --version: {said.stdout.strip()}"
        else:
            runs += "; no kubectl here to run `kubectl benchmatrix`"
        if len(problems) == before:
            print(f"ok: {where}: {name}, sha256 {digest}, bin {p['bin']} executable; {runs}")
if problems:
    sys.exit("release: the krew manifest does not match its files:\n  " + "\n  ".join(problems))
PY
}

cmd_finish() { # OUT VERSION ARCH...
  local out="$1" version="$2"
  shift 2
  local archives=() arch chart_version assets=()
  [[ $# -gt 0 ]] || fail "finish: name each platform's archive with --arch (amd64, arm64)"
  for arch in "$@"; do
    archives+=("${out}/$(archive_name "${version}" "${arch}")")
    [[ -f "${archives[-1]}" ]] || fail "finish: no ${archives[-1]}"
  done
  scripts/krew-manifest.sh "${version}" "${archives[@]}" >"${out}/${KREW_MANIFEST}"
  krew_check "${out}" "${version}" "$@"
  chart_version="${version#v}"
  for arch in "$@"; do assets+=("$(archive_name "${version}" "${arch}")"); done
  assets+=("${KREW_MANIFEST}")
  if [[ -f "${out}/$(chart_name "${chart_version}")" ]]; then
    assets+=("$(chart_name "${chart_version}")")
  fi
  (cd "${out}" && sha256sum "${assets[@]}" >"${SUMS}" && sha256sum --check --quiet "${SUMS}")
  log "${out}/${SUMS}: ${assets[*]}"
}

cmd_images() { # OUT VERSION ARCH
  local out="$1" version="$2" arch="$3" epoch revision component file
  epoch="$(source_epoch)"
  revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
  mkdir -p "${out}/images"
  for component in "${COMPONENTS[@]}"; do
    file="${out}/images/benchmatrix-${component}-${version}-linux-${arch}.oci.tar"
    python3 scripts/oci-image.py build --dockerfile Dockerfile.release --stage "${component}" \
      --context "${out}/bin" --arch "${arch}" --version "${version#v}" --revision "${revision}" \
      --epoch "${epoch}" --name "$(image_repo "${component}"):${version#v}" --out "${file}" >&2
    # Its name, its entrypoint (the component's program, run with --version), its digests.
    python3 scripts/oci-image.py check "${file}" --run-version "${version#v}" \
      --name "$(image_repo "${component}"):${version#v}" \
      --entrypoint "/usr/local/bin/$(component_binary "${component}")" >&2
  done
  # The images' root filesystem (no libc) runs: the load generator reaches the target by host
  # name (/etc/hosts through the static glibc's resolver) and every request succeeds.
  python3 scripts/oci-image.py smoke \
    "${out}/images/benchmatrix-target-${version}-linux-${arch}.oci.tar" \
    "${out}/images/benchmatrix-loadgen-${version}-linux-${arch}.oci.tar" >&2
  # With skopeo (Debian's package), also the layout as a registry client reads it: a copy
  # verifies every blob's digest. Optional: scripts/oci-image.py check does the same checks.
  if command -v skopeo >/dev/null 2>&1; then
    local copy
    for file in "${out}"/images/*.oci.tar; do
      copy="$(mktemp -d)"
      skopeo --insecure-policy copy --quiet "oci-archive:${file}" "oci:${copy}/layout:check" >&2
      # and through its Docker manifest.json, as `docker load` reads it
      skopeo --insecure-policy copy --quiet "docker-archive:${file}" "dir:${copy}/docker" >&2
      rm -rf "${copy}"
      log "skopeo copy (as oci-archive and as docker-archive): ${file}"
    done
  fi
}

summary() { # OUT
  local out="$1"
  printf '\n%-72s %12s  %s\n' "file (in ${out})" "bytes" "sha256"
  (cd "${out}" && find . -type f ! -name '.release-dry-run' | sed 's|^\./||' | sort |
    while read -r f; do
      printf '%-72s %12s  %s\n' "${f}" "$(stat -c %s "${f}")" "$(sha256sum "${f}" | cut -d ' ' -f 1)"
    done)
}

cmd_dry_run() { # OUT VERSION
  local out="$1" version="$2" started="${SECONDS}" arch
  arch="$(host_arch)"
  [[ "${arch}" == amd64 ]] || fail "--dry-run builds linux/amd64; this machine is linux/${arch}"
  # The folder is emptied: only one this script made (it leaves a marker), or a new/empty one.
  if [[ -d "${out}" && -n "$(ls -A "${out}")" && ! -f "${out}/.release-dry-run" ]]; then
    fail "${out} is not empty and not a dry run's folder: choose another"
  fi
  rm -rf "${out}"
  mkdir -p "${out}"
  touch "${out}/.release-dry-run"
  out="$(cd "${out}" && pwd)"
  log "dry run of ${version} into ${out} (no network, nothing pushed)"
  cmd_binaries x86_64-unknown-linux-gnu "${out}" "${version}"
  log "images (OCI image tarballs, from Dockerfile.release, without Docker)"
  cmd_images "${out}" "${version}" amd64
  log "chart"
  cmd_chart "${out}" "${version}"
  log "krew manifest, its check, ${SUMS}"
  cmd_finish "${out}" "${version}" amd64
  summary "${out}"
  log "dry run done in $((SECONDS - started)) s: ${out}"
}

# ------------------------------------------------------------------------------------------------
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[[ $# -gt 0 ]] || usage
mode="$1"
shift
positional=()
tag=""
archs=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --version)
      tag="${2:?--version needs a value}"
      shift 2
      ;;
    --version=*)
      tag="${1#--version=}"
      shift
      ;;
    --arch)
      archs+=("${2:?--arch needs a value}")
      shift 2
      ;;
    -h | --help) usage ;;
    -*) fail "unknown option $1" ;;
    *)
      positional+=("$1")
      shift
      ;;
  esac
done
version="$(release_version "${tag}")"

case "${mode}" in
  --dry-run)
    [[ ${#positional[@]} -le 1 ]] || usage
    cmd_dry_run "$(absolute "${positional[0]:-${root}/build/release-dry-run}")" "${version}"
    ;;
  version)
    [[ ${#positional[@]} -le 1 ]] || usage
    release_version "${positional[0]:-${tag}}"
    ;;
  binaries)
    [[ ${#positional[@]} -eq 2 ]] || usage
    cmd_binaries "${positional[0]}" "$(absolute "${positional[1]}")" "${version}"
    ;;
  chart)
    [[ ${#positional[@]} -eq 1 ]] || usage
    cmd_chart "$(absolute "${positional[0]}")" "${version}"
    ;;
  finish)
    [[ ${#positional[@]} -eq 1 ]] || usage
    cmd_finish "$(absolute "${positional[0]}")" "${version}" "${archs[@]}"
    ;;
  *) usage ;;
esac
