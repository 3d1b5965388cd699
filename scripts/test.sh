#!/usr/bin/env bash
# The README's test command: installs what the tests need (scripts/test-deps.sh), then runs the
# whole suite. Arguments go to nextest, e.g. `scripts/test.sh -E 'test(chart)'`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
exec cargo nextest run --workspace "$@"
