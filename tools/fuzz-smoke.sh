#!/usr/bin/env bash
# Short libFuzzer run of every fuzz target (ctest label "fuzz"), as CI runs it:
# builds build-fuzz/ with clang-19 (-DPOPC_BUILD_FUZZERS=ON, ASan + UBSan) and
# fuzzes each target for POPC_FUZZ_SECONDS (default 8) from its committed seeds.
#
#   tools/fuzz-smoke.sh                    # ~1 minute of fuzzing + the build
#   POPC_FUZZ_SECONDS=60 tools/fuzz-smoke.sh
#
# tools/test.sh runs it after the normal suite; it needs its own instrumented
# build (about 15 minutes from scratch on 2 cores, ccache makes rebuilds quick). Findings land
# in build-fuzz/fuzz-ctest/artifacts-TARGET/; see fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-fuzz}
CC=clang-19 CXX=clang++-19 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPOPC_BUILD_FUZZERS=ON -DPOPC_BUILD_TESTS=OFF -DPOPC_FUZZ_SECONDS="${POPC_FUZZ_SECONDS:-8}" >/dev/null
ninja -C "$BUILD_DIR" -j"${JOBS:-$(nproc)}" fuzzers
ctest --test-dir "$BUILD_DIR" -L fuzz --output-on-failure
