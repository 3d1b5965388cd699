#!/usr/bin/env bash
# Prints the krew manifest of a release: plugins/krew/benchmatrix.yaml with the version filled in
# and its platform entry repeated once per release archive, with that archive's platform,
# download URI and sha256.
#
#   scripts/krew-manifest.sh VERSION ARCHIVE [URI] [ARCHIVE [URI]]...
#
# VERSION is the release tag (v0.1.0). Each ARCHIVE is a release archive, a .tar.gz with the
# `benchmatrix` binary at its top, named ...-linux-amd64.tar.gz or ...-linux-arm64.tar.gz (the
# name gives the platform: scripts/release.sh names them so); an argument with :// after an
# ARCHIVE is where that archive will be downloaded from (default: the GitHub release of VERSION,
# under the archive's file name). Refuses a version krew would refuse (not v + semver), an
# archive without the binary, a URI that is not https, and two archives for one platform.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

readonly template="${root}/plugins/krew/benchmatrix.yaml"
readonly releases="https://github.com/benchmatrix/benchmatrix/releases/download"

fail() {
  echo "krew-manifest: $*" >&2
  exit 2
}

if [[ $# -lt 2 ]]; then
  fail "usage: scripts/krew-manifest.sh VERSION ARCHIVE [URI] [ARCHIVE [URI]]..."
fi
version="$1"
shift

# krew parses spec.version as semver with a leading v.
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
[[ "${version}" =~ ${semver} ]] || fail "version ${version}: not v followed by a semantic version (v0.1.0)"

# The pairs (archive, URI) in the order given.
archives=()
uris=()
while [[ $# -gt 0 ]]; do
  archive="$1"
  shift
  [[ "${archive}" != *://* ]] || fail "${archive}: a URI must follow an archive"
  uri="${releases}/${version}/$(basename "${archive}")"
  if [[ $# -gt 0 && "$1" == *://* ]]; then
    uri="$1"
    shift
  fi
  archives+=("${archive}")
  uris+=("${uri}")
done

# From apiVersion on: the comment above it is about the template. The head ends with
# `platforms:`; the rest is the one platform entry, repeated per archive.
body="$(sed -n '/^apiVersion:/,$p' "${template}")"
head="$(sed -n '1,/^  platforms:$/p' <<<"${body}")"
entry="$(sed -n '/^  platforms:$/,$p' <<<"${body}" | tail -n +2)"
[[ -n "${entry}" ]] || fail "${template} has no platform entry after '  platforms:'"

manifest="${head//@VERSION@/"${version}"}"
seen=" "
for i in "${!archives[@]}"; do
  archive="${archives[i]}"
  uri="${uris[i]}"
  [[ -f "${archive}" ]] || fail "archive ${archive}: no such file"
  tar -tzf "${archive}" >/dev/null 2>&1 || fail "archive ${archive}: not a .tar.gz"
  # The file the manifest's `bin` and `files` name, at the archive's top.
  if ! tar -tzf "${archive}" | grep -qx -e 'benchmatrix' -e './benchmatrix'; then
    fail "archive ${archive}: no benchmatrix binary at its top"
  fi
  [[ "${uri}" == https://* ]] || fail "uri ${uri}: krew downloads over https"
  if [[ "$(basename "${archive}")" =~ -(linux)-(amd64|arm64)\.tar\.gz$ ]]; then
    os="${BASH_REMATCH[1]}"
    arch="${BASH_REMATCH[2]}"
  else
    fail "archive ${archive}: its name does not end in -linux-amd64.tar.gz or -linux-arm64.tar.gz, which say its platform"
  fi
  [[ "${seen}" != *" ${os}/${arch} "* ]] || fail "two archives for ${os}/${arch}"
  seen+="${os}/${arch} "
  sha256="$(sha256sum "${archive}" | cut -d ' ' -f 1)"
  platform="${entry//@OS@/"${os}"}"
  platform="${platform//@ARCH@/"${arch}"}"
  platform="${platform//@URI@/"${uri}"}"
  platform="${platform//@SHA256@/"${sha256}"}"
  manifest+=$'\n'"${platform}"
done
if grep -qE '@[A-Z0-9_]+@' <<<"${manifest}"; then
  fail "${template} has a placeholder this script does not fill"
fi
printf '%s\n' "${manifest}"
