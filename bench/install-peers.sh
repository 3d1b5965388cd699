#!/usr/bin/env bash
# Installs the load generators the loadgen benchmark compares against: wrk and hey (Debian),
# oha (cargo install) and autocannon (npm), both cached in $PEERS_DIR (default
# ~/.cache/benchmatrix-peers).
# Each is skipped when already present. Usage: bench/install-peers.sh
set -euo pipefail

# Outside the work tree, so nothing here needs ignoring and the cache outlives a checkout.
peers="${PEERS_DIR:-$HOME/.cache/benchmatrix-peers}"
mkdir -p "$peers"

need_apt=()
command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
command -v hey >/dev/null 2>&1 || need_apt+=(hey)
if ((${#need_apt[@]})); then
  echo "install-peers: apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v oha >/dev/null 2>&1 && [[ ! -x "$peers/cargo/bin/oha" ]]; then
  echo "install-peers: cargo install oha (a few minutes)"
  cargo install oha --locked --root "$peers/cargo" --quiet
fi

if [[ ! -x "$peers/npm/node_modules/.bin/autocannon" ]]; then
  if command -v npm >/dev/null 2>&1; then
    echo "install-peers: npm install autocannon"
    npm install --silent --no-audit --no-fund --prefix "$peers/npm" autocannon >/dev/null
  else
    echo "install-peers: npm not found; autocannon skipped" >&2
  fi
fi

echo "install-peers: wrk=$(command -v wrk || echo -) hey=$(command -v hey || echo -)" \
  "oha=$(command -v oha || echo "$peers/cargo/bin/oha")" \
  "autocannon=$peers/npm/node_modules/.bin/autocannon"
