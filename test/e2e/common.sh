# Sourced by the end-to-end case scripts, which all take: CASE BIN_DIR SOURCE_DIR SCRATCH_DIR.
# Sets CASE BIN SRC TMP PY, starts in a fresh TMP, and defines die and expect_error.
set -uo pipefail
CASE=$1 BIN=$2 SRC=$3 TMP=$4
rm -rf "$TMP" && mkdir -p "$TMP" && cd "$TMP" || exit 1
PY=${POPC_PYTHON:-/usr/bin/python3}

die() { echo "FAIL: $*" >&2; exit 1; }

# expect_error "substring" cmd...: command must fail with exit 1 (a user error,
# not a crash) and print a one-line error containing the substring.
expect_error() {
  local want=$1; shift
  "$@" >out.txt 2>err.txt
  local rc=$?
  [ "$rc" -eq 1 ] || { cat err.txt; die "expected exit 1 from '$*', got $rc"; }
  grep -qF -- "$want" err.txt || { cat err.txt; die "error of '$*' lacks '$want'"; }
  [ "$(grep -c . err.txt)" -eq 1 ] || { cat err.txt; die "error of '$*' is not one line"; }
}
