#!/usr/bin/env bash
# check-unit-tests.sh BUILD_DIR BINARY...: every Catch2 test case of the unit binaries is
# registered with ctest as one entry of label "unit" named after it. A ';' in a case name
# makes ctest split it into entries that run nothing (and pass, were it not for
# `-w NoTests`), so such names fail here, as does a case that no entry runs.
set -euo pipefail
build=$1; shift
bad=0
all_cases=""
for bin in "$@"; do
  # Catch2 v2 exits with the number of cases listed, so its status says nothing here.
  names=$("$bin" --list-test-names-only || true)
  names=$(printf "%s\n" "$names" | sed '/^$/d')
  if printf '%s\n' "$names" | grep -n ';' >/dev/null; then
    printf '%s\n' "$names" | grep ';' | sed "s|^|error: $(basename "$bin"): test name has ';' (ctest splits it): |" >&2
    bad=1
  fi
  all_cases+="$names"$'\n'
done
all_cases=$(printf '%s' "$all_cases" | sed '/^$/d' | sort)
cases=$(printf '%s\n' "$all_cases" | grep -c . || true)
registered=$(cd "$build" && ctest -N -L '^unit$' | sed -n 's/^ *Test *#[0-9]*: //p' | sort)
missing=$(comm -23 <(printf '%s\n' "$all_cases") <(printf '%s\n' "$registered"))
if [ -n "$missing" ]; then
  printf '%s\n' "$missing" | sed 's/^/error: test case is not a ctest entry of label unit: /' >&2
  bad=1
fi
[ "$bad" = 0 ] && echo "ok: $cases test cases in $# binaries, each one ctest entry"
exit "$bad"
