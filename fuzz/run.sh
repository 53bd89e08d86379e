#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time.
#
#   fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
#   TARGET: npy | npz | popef | onnx | bitcode | cache_entry | loader
#
# Uses build-fuzz/bin/fuzz_TARGET (override with BUILD_DIR=...). Starts from the
# committed seeds in fuzz/corpus/TARGET/ (read only) and keeps new inputs in
# $WORK_DIR/corpus-TARGET (default build-fuzz/fuzz-work), crashes/leaks/timeouts
# in $WORK_DIR/artifacts-TARGET/. Exits non-zero when the fuzzer found a problem.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
TARGET=$1
SECONDS_=$2
shift 2
BUILD_DIR=${BUILD_DIR:-build-fuzz}
WORK_DIR=${WORK_DIR:-$BUILD_DIR/fuzz-work}
BIN=$BUILD_DIR/bin/fuzz_$TARGET
SEEDS=fuzz/corpus/$TARGET
[ -x "$BIN" ] || { echo "$BIN not built: ninja -C $BUILD_DIR fuzz_$TARGET" >&2; exit 2; }
[ -d "$SEEDS" ] || { echo "no seed corpus $SEEDS" >&2; exit 2; }
mkdir -p "$WORK_DIR/corpus-$TARGET" "$WORK_DIR/artifacts-$TARGET"

# New inputs go to the first corpus directory (the work dir), never to the seeds.
# rss/malloc limits turn a forged size field that allocates gigabytes into a finding.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$BIN" "$WORK_DIR/corpus-$TARGET" "$SEEDS" \
  -max_total_time="$SECONDS_" -timeout=25 -rss_limit_mb=4096 -malloc_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$WORK_DIR/artifacts-$TARGET/" "$@"
