#!/usr/bin/env bash
# README command 2 (and .ci/run): install dependencies, build, run every test,
# then the short fuzzing run of every fuzz target (label "fuzz", its own clang-19
# instrumented build: tools/fuzz-smoke.sh).
#
#   tools/test.sh                  # everything
#   tools/test.sh -L unit          # ctest arguments: only those tests, no fuzzing
#   POPC_SKIP_FUZZ=1 tools/test.sh # everything but the fuzzing
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
if [ $# -eq 0 ] && [ -z "${POPC_SKIP_FUZZ:-}" ]; then
  tools/fuzz-smoke.sh
fi
