# shellcheck shell=bash
# Sourced by the bench scripts (not run on its own).

# Sets BENCHMATRIX to the release benchmatrix binary, built here, unless it is set already (a
# binary of your own, e.g. one built with other flags).
benchmatrix_binary() {
  if [[ -n "${BENCHMATRIX:-}" ]]; then
    return
  fi
  cargo build --release -q -p benchmatrix
  local target_dir
  target_dir="$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
  BENCHMATRIX="${target_dir}/release/benchmatrix"
}
