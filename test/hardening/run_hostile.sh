#!/usr/bin/env bash
# Runs every case of the hostile-executable corpus through poprun-lite (and popef-info):
#   run_hostile.sh BIN_DIR SCRATCH_DIR [FINDINGS_DIR]
# Each case must end with its expected exit code within a wall-clock bound
# (never a crash, a signal or a hang); a refused case must print exactly one
# line naming the problem; a case that must run must produce the reference
# outputs. Prints one line per case and a summary; exit 1 on any failure.
set -uo pipefail
BIN=$1 TMP=$2 FINDINGS=${3:-}
rm -rf "$TMP" && mkdir -p "$TMP" && cd "$TMP" || exit 1
"$BIN/make_hostile" corpus $FINDINGS >/dev/null || { echo "FAIL: make_hostile"; exit 1; }
LIMIT=${HOSTILE_CASE_SECONDS:-60}
failed=0 total=0
while IFS=$'\t' read -r name rc want args; do
  total=$((total + 1))
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  timeout -s KILL "$LIMIT" "$BIN/poprun-lite" "corpus/$name.popef" --inputs corpus/inputs.npz \
    --outputs "$name.out.npz" --threads 2 $args >"$name.stdout" 2>"$name.stderr"
  got=$?
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  problem=""
  if [ "$got" -ne "$rc" ]; then
    problem="exit code $got, expected $rc"
  elif [ "$want" = "expected.npz" ]; then
    "$BIN/npz-compare" "$name.out.npz" corpus/expected.npz >/dev/null 2>&1 || problem="outputs differ from the reference"
  else
    [ "$(grep -c . "$name.stderr")" -eq 1 ] || problem="error is not one line"
    grep -qF -- "$want" "$name.stderr" || problem="${problem:+$problem; }error lacks '$want'"
    [ -e "$name.out.npz" ] && problem="${problem:+$problem; }an output file was written"
  fi
  # popef-info reads every case too: a description (0) or the same refusal (1).
  timeout -s KILL "$LIMIT" "$BIN/popef-info" "corpus/$name.popef" >/dev/null 2>"$name.info.stderr"
  info=$?
  [ "$info" -le 1 ] || problem="${problem:+$problem; }popef-info exit code $info"
  if [ -n "$problem" ]; then
    failed=$((failed + 1))
    printf 'FAIL %-32s %6.2fs  %s\n' "$name" "$secs" "$problem"
    sed 's/^/      stderr: /' "$name.stderr" | head -5
  else
    printf 'ok   %-32s %6.2fs  exit %s  %s\n' "$name" "$secs" "$got" "$(head -c 160 "$name.stderr" | head -1)"
  fi
done <corpus/cases.tsv
echo "$((total - failed))/$total hostile executables handled as expected"
[ "$failed" -eq 0 ]
