#!/usr/bin/env bash
# README command 2 (and .ci/run): install dependencies, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
