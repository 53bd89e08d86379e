#!/usr/bin/env bash
# Builds and tests popc under sanitizers, one build tree per preset
# (CMakePresets.json: build-asan, build-ubsan, build-tsan).
#
#   tools/sanitize.sh                 # asan ubsan tsan, the quick set (below)
#   tools/sanitize.sh asan tsan       # some presets
#   FULL=1 tools/sanitize.sh asan     # every target, every test (the whole ctest suite)
#
# The quick set is what a shared 2-core machine can afford: the unit tests of
# support, npz, popef, cache and runtime (thread pool, JIT, sandbox, engine),
# the fuzz corpus replays and, under asan/ubsan, the hostile-executable test.
# The full set builds everything and runs the whole suite, as tools/test.sh
# does (about 45 minutes of building per preset on 2 cores, then 10-60 minutes
# of tests: the ONNX conformance suites and the real models are the long part).
# JIT-compiled vertex code and Debian's libraries (LLVM, libzip, protobuf) are
# not instrumented: ASan/TSan see popc's own accesses and its synchronisation.
set -euo pipefail
cd "$(dirname "$0")/.."
PRESETS=("$@")
[ ${#PRESETS[@]} -gt 0 ] || PRESETS=(asan ubsan tsan)
JOBS=${JOBS:-$(nproc)}
QUICK_TARGETS=(support_tests npz_tests popef_tests cache_tests runtime_tests
               fuzz_replay_npy fuzz_replay_npz fuzz_replay_popef fuzz_replay_bitcode
               fuzz_replay_cache_entry fuzz_replay_loader)
status=0
for preset in "${PRESETS[@]}"; do
  echo "=== $preset ==="
  cmake --preset "$preset" >/dev/null
  dir=build-$preset
  labels='unit|fuzz-smoke'
  if [ -n "${FULL:-}" ]; then
    ninja -C "$dir" -j"$JOBS"
    labels='.' # every test
  else
    targets=("${QUICK_TARGETS[@]}")
    if [ "$preset" != tsan ]; then
      targets+=(make_hostile poprun-lite popef-info npz-compare)
      labels='unit|fuzz-smoke|hardening'
    fi
    ninja -C "$dir" -j"$JOBS" "${targets[@]}"
  fi
  # Only tests whose binaries were built are registered (catch_discover_tests),
  # so -L unit runs exactly the unit tests built above; the tests that need the
  # compiler or an install (fuzz_smoke_onnx, the ONNX and ENOSPC hardening cases,
  # api.*) are left out of the quick set.
  exclude='fuzz_smoke_onnx|hardening\.(onnx|enospc)|api\.'
  [ -n "${FULL:-}" ] && exclude='^$'
  ctest --preset "$preset" -L "$labels" -E "$exclude" -j"$JOBS" || status=1
done
exit $status
