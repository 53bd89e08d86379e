#!/usr/bin/env bash
# Checks popc-conformance's own classification: a segfault, an abort, a hang, an
# early exit and an internal error in one test each are reported as errors (and
# counted as crashes/timeouts where they are), while the other tests still run.
# Usage: runner_selftest.sh BIN_DIR DATA_ROOT
set -uo pipefail
bin=$1
root=$2
out=$(POPC_CONFORMANCE_INJECT="test_abs=segv,test_add=abort,test_relu=hang,test_neg=exit,test_sqrt=throw" \
  "$bin/popc-conformance" --data-root "$root" --suite node --timeout 3 -j 2 \
  test_abs test_add test_relu test_neg test_sqrt test_exp test_nonzero_example test_cast_FLOAT_to_STRING 2>&1)
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
exit $fail
