#!/usr/bin/env bash
# A full disk under the cache and under the output: enospc.sh BIN_DIR SOURCE_DIR SCRATCH_DIR
#
# Mounts a 32 KiB tmpfs in a private mount namespace (as root, or as a user
# namespace's root with unshare -r); exits 77 (ctest: skipped) with a message
# when neither is possible. Checks that:
#  - a compile whose cache write hits ENOSPC still succeeds, warns, writes the
#    right executable, and leaves no entry and no temporary file in the cache
#    (popc-cache verify is clean; the next compile is a plain miss);
#  - a compile whose output hits ENOSPC fails with one line (exit 1) and leaves
#    neither a partial output nor a temporary file.
set -uo pipefail
BIN=$1 SRC=$2 TMP=$3
die() { echo "FAIL: $*" >&2; exit 1; }
if [ -z "${POPC_ENOSPC_INNER:-}" ]; then
  rm -rf "$TMP" && mkdir -p "$TMP" || exit 1
  export POPC_ENOSPC_INNER=1
  if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
    exec unshare -m --propagation private bash "$0" "$@"
  elif unshare -rm true 2>/dev/null; then
    exec unshare -rm bash "$0" "$@"
  fi
  echo "SKIP: cannot mount a small tmpfs here (needs root or unprivileged user namespaces)"
  exit 77
fi
cd "$TMP" || exit 1
mkdir -p small
mount -t tmpfs -o size=32k tmpfs small 2>mount.err || { echo "SKIP: mount failed: $(cat mount.err)"; exit 77; }
MLP=$SRC/samples/mlp/model.onnx

"$BIN/popc-onnx" "$MLP" -o ref.popef || die "reference compile failed"
[ "$(stat -c %s ref.popef)" -gt 32768 ] || die "the executable fits in the tmpfs; the test needs a bigger model"

# 1. Cache on the full disk: compile succeeds with a warning.
"$BIN/popc-onnx" "$MLP" -o out.popef --cache-dir small/cache 2>warn.txt || { cat warn.txt; die "compile failed"; }
grep -q "cannot write cache entry .*No space left on device; continuing without caching it" warn.txt ||
  { cat warn.txt; die "no ENOSPC warning"; }
cmp out.popef ref.popef || die "wrong executable"
left=$(find small/cache/exe -type f 2>/dev/null | wc -l)
[ "$left" = 0 ] || { find small/cache -type f; die "files left in the cache's exe/ after ENOSPC"; }
"$BIN/popc-cache" verify --cache-dir small/cache >verify.txt 2>&1 || { cat verify.txt; die "verify failed"; }
"$BIN/popc-onnx" "$MLP" -o again.popef --cache-dir small/cache --log-level info 2>again.txt || die "second compile failed"
grep -q "cache miss" again.txt || { cat again.txt; die "second compile was not a plain miss"; }
cmp again.popef ref.popef || die "wrong executable on the second compile"
echo "ok: cache write on a full disk: warning, correct output, no entry left"

# 2. Output on the full disk: one-line error, nothing left behind.
"$BIN/popc-onnx" "$MLP" -o small/model.popef 2>err.txt
rc=$?
[ "$rc" = 1 ] || { cat err.txt; die "expected exit 1, got $rc"; }
[ "$(grep -c . err.txt)" = 1 ] || { cat err.txt; die "error is not one line"; }
grep -q "No space left on device" err.txt || { cat err.txt; die "error does not say the disk is full"; }
[ ! -e small/model.popef ] || die "a partial executable was left"
[ -z "$(find small -maxdepth 1 -name '*.tmp*')" ] || { ls -la small; die "a temporary file was left"; }
echo "ok: output on a full disk: $(cat err.txt)"
umount small
