#!/usr/bin/env bash
# Prints the krew manifest of a release: plugins/krew/benchmatrix.yaml with the version, the
# archive's download URI and its sha256 filled in.
#
#   scripts/krew-manifest.sh VERSION ARCHIVE [URI]
#
# VERSION is the release tag (v0.1.0); ARCHIVE the linux/amd64 release archive, a .tar.gz with
# the `benchmatrix` binary at its top; URI where it will be downloaded from (default: the
# GitHub release of VERSION, under the archive's file name). Refuses a version krew would
# refuse (not v + semver) and an archive without the binary.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly template="plugins/krew/benchmatrix.yaml"
readonly releases="https://github.com/benchmatrix/benchmatrix/releases/download"

fail() {
  echo "krew-manifest: $*" >&2
  exit 2
}

if [[ $# -lt 2 || $# -gt 3 ]]; then
  fail "usage: scripts/krew-manifest.sh VERSION ARCHIVE [URI]"
fi
version="$1"
archive="$2"

# krew parses spec.version as semver with a leading v.
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
[[ "${version}" =~ ${semver} ]] || fail "version ${version}: not v followed by a semantic version (v0.1.0)"
[[ -f "${archive}" ]] || fail "archive ${archive}: no such file"
tar -tzf "${archive}" >/dev/null 2>&1 || fail "archive ${archive}: not a .tar.gz"
# The file the manifest's `bin` and `files` name, at the archive's top.
if ! tar -tzf "${archive}" | grep -qx -e 'benchmatrix' -e './benchmatrix'; then
  fail "archive ${archive}: no benchmatrix binary at its top"
fi
uri="${3:-${releases}/${version}/$(basename "${archive}")}"
[[ "${uri}" == https://* ]] || fail "uri ${uri}: krew downloads over https"
sha256="$(sha256sum "${archive}" | cut -d ' ' -f 1)"

# From apiVersion on: the comment above it is about the template.
manifest="$(sed -n '/^apiVersion:/,$p' "${template}")"
manifest="${manifest//@VERSION@/"${version}"}"
manifest="${manifest//@URI_LINUX_AMD64@/"${uri}"}"
manifest="${manifest//@SHA256_LINUX_AMD64@/"${sha256}"}"
if grep -qE '@[A-Z0-9_]+@' <<<"${manifest}"; then
  fail "${template} has a placeholder this script does not fill"
fi
printf '%s\n' "${manifest}"
