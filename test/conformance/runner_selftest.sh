#!/usr/bin/env bash
# Checks popc-conformance's own classification: a segfault, an abort, a hang, an
# early exit and an internal error in one test each are reported as errors (and
# counted as crashes/timeouts where they are), while the other tests still run.
# Usage: runner_selftest.sh BIN_DIR DATA_ROOT
set -uo pipefail
bin=$1
root=$2
# The expect list holds only test_exp, which passes: the run still fails (exit 1)
# because tests outside the list crashed or timed out.
expect_list=$(mktemp)
trap 'rm -f "$expect_list"' EXIT
echo "node/test_exp" >"$expect_list"
out=$(POPC_CONFORMANCE_INJECT="test_abs=segv,test_add=abort,test_relu=hang,test_neg=exit,test_sqrt=throw" \
  "$bin/popc-conformance" --data-root "$root" --suite node --timeout 3 -j 2 --expect "$expect_list" \
  test_abs test_add test_relu test_neg test_sqrt test_exp test_nonzero_example test_cast_FLOAT_to_STRING 2>&1)
rc=$?
echo "$out"
fail=0
expect() {
  grep -Eq "$1" <<<"$out" || { echo "runner_selftest: expected a line matching: $1"; fail=1; }
}
expect '^ERROR +node/test_abs .*crash: Segmentation fault .*during compile'
expect '^ERROR +node/test_add .*crash: Aborted .*during compile'
expect '^ERROR +node/test_relu .*timeout: over 3 s during compile'
expect '^ERROR +node/test_neg .*exited with code 3 during compile'
expect '^ERROR +node/test_sqrt .*compile: internal error: injected internal error'
expect '^PASS +node/test_exp '
expect '^UNSUPPORTED +node/test_nonzero_example .*NonZero'
expect '^DATA-UNSUPPORTED +node/test_cast_FLOAT_to_STRING '
expect 'crashes, hangs and timeouts +4 +NOT MET'
expect '^4 test\(s\) crashed, hung or timed out \(listed or not, each fails the run\):'
[ "$rc" = 1 ] || { echo "runner_selftest: crashes outside the expect list must fail the run (exit 1), got $rc"; fail=1; }
exit $fail
