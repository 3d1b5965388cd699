#!/usr/bin/env bash
# Posts a Markdown file as the pull request's benchmatrix comment, or updates it: the comment is
# found among the pull request's comments by a hidden marker in its body, so each push updates
# the one comment instead of adding another. scripts/action/run.sh calls it with pr-comment.
#
#   scripts/action/comment.sh BODY_FILE MARKER
#
# Environment (GitHub Actions sets all but the token): GITHUB_TOKEN (needs pull-requests: write,
# or issues: write), GITHUB_REPOSITORY (owner/name), GITHUB_EVENT_PATH (the event's JSON: a
# pull_request event names its number), GITHUB_API_URL [https://api.github.com].
# The token goes to curl in a header file, never on a command line.
#
# Exit 0 when the comment was created or updated, or when the event is no pull request (said
# on stdout); 1 when the API refused (its answer on stderr).
set -euo pipefail

body_file="$1"
marker="$2"
api="${GITHUB_API_URL:-https://api.github.com}"
repo="${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}"
: "${GITHUB_TOKEN:?GITHUB_TOKEN is not set}"

pr=""
if [[ -n "${GITHUB_EVENT_PATH:-}" && -f "${GITHUB_EVENT_PATH}" ]]; then
  pr="$(jq -r '.pull_request.number // empty' "${GITHUB_EVENT_PATH}")"
fi
if [[ -z "${pr}" ]]; then
  echo "not a pull request event: no comment"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
(
  umask 077
  printf 'Authorization: Bearer %s\nAccept: application/vnd.github+json\nX-GitHub-Api-Version: 2022-11-28\n' \
    "${GITHUB_TOKEN}" >"${work}/headers"
)

# curl METHOD URL [JSON_FILE]: the answer's body on stdout; exit 1 with it on stderr when the
# API answered an error.
github() {
  local method="$1" url="$2" data="${3:-}" args=()
  if [[ -n "${data}" ]]; then args=(-H "Content-Type: application/json" --data-binary "@${data}"); fi
  if ! curl -sS --fail-with-body -X "${method}" -H "@${work}/headers" "${args[@]}" "${url}" >"${work}/answer"; then
    echo "GitHub API ${method} ${url}: $(head -c 500 "${work}/answer" 2>/dev/null)" >&2
    return 1
  fi
  cat "${work}/answer"
}

# The first comment of ours: pages of 100, until one holds the marker or a page is short.
existing=""
page=1
while :; do
  github GET "${api}/repos/${repo}/issues/${pr}/comments?per_page=100&page=${page}" >"${work}/page"
  existing="$(jq -r --arg m "${marker}" '[.[] | select(.body | contains($m))][0].id // empty' "${work}/page")"
  count="$(jq 'length' "${work}/page")"
  if [[ -n "${existing}" || "${count}" -lt 100 ]]; then break; fi
  page=$((page + 1))
done

jq -n --rawfile body "${body_file}" --arg m "${marker}" '{body: ($m + "\n" + $body)}' >"${work}/comment.json"
if [[ -n "${existing}" ]]; then
  github PATCH "${api}/repos/${repo}/issues/comments/${existing}" "${work}/comment.json" >/dev/null
  echo "updated the benchmatrix comment ${existing} on pull request #${pr}"
else
  github POST "${api}/repos/${repo}/issues/${pr}/comments" "${work}/comment.json" >/dev/null
  echo "commented on pull request #${pr}"
fi
