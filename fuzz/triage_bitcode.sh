#!/usr/bin/env bash
# What poprun-lite does with each module the bitcode fuzzer flagged:
#
#   fuzz/triage_bitcode.sh [ARTIFACT_DIR] [BIN_DIR]
#   ARTIFACT_DIR: crash-*/oom-*/timeout-*/slow-unit-* files (default build-fuzz/fuzz-work/artifacts-bitcode)
#   BIN_DIR:      a normal build's bin/ with make_hostile, poprun-lite (default build/bin)
#
# Each file becomes the code module of the hostile corpus's sample popef (valid
# checksums, so nothing before the bitcode gate refuses it) and goes through
# poprun-lite. Prints one line per file: exit code and first line of stderr. Every
# one must be a one-line refusal (exit 1) within 90 s (the probe gives LLVM 60); exit 1 from this script if not.
set -uo pipefail
cd "$(dirname "$0")/.."
ARTIFACTS=${1:-build-fuzz/fuzz-work/artifacts-bitcode}
BIN=$(realpath "${2:-build/bin}")
for tool in make_hostile poprun-lite; do
  [ -x "$BIN/$tool" ] || { echo "$BIN/$tool not built" >&2; exit 2; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/modules"
for f in "$ARTIFACTS"/crash-* "$ARTIFACTS"/oom-* "$ARTIFACTS"/timeout-* "$ARTIFACTS"/slow-unit-*; do
  [ -f "$f" ] && cp "$f" "$WORK/modules/bitcode-$(basename "$f").bc"
done
(cd "$WORK" && "$BIN/make_hostile" corpus "$WORK/modules" >/dev/null) || { echo "make_hostile failed" >&2; exit 2; }
total=0 bad=0
for popef in "$WORK"/corpus/llvm_crash_*.popef; do
  [ -e "$popef" ] || continue
  total=$((total + 1))
  name=$(basename "$popef" .popef)
  timeout -s KILL 90 "$BIN/poprun-lite" "$popef" --inputs "$WORK/corpus/inputs.npz" \
    --outputs "$WORK/out.npz" >/dev/null 2>"$WORK/stderr"
  rc=$?
  verdict=ok
  { [ "$rc" -eq 1 ] && [ "$(grep -c . "$WORK/stderr")" -eq 1 ]; } || { verdict=BAD; bad=$((bad + 1)); }
  printf '%-4s %-60s exit %3s  %s\n' "$verdict" "${name#llvm_crash_}" "$rc" \
    "$(head -1 "$WORK/stderr" | sed 's/^.*code module 0: //' | cut -c1-110)"
done
echo "$((total - bad))/$total flagged modules refused by poprun-lite in one line"
[ "$bad" -eq 0 ]
