#!/usr/bin/env bash
# One real model end to end through the command-line tools, timed:
#   export_models.py (PyTorch → ONNX + reference) → popc-onnx (ipu2) → poprun-lite → npz-compare.
# Usage: run_model.sh NAME BIN_DIR WORK_DIR [EXPECTED_FAILURE_REASON]
# Exit 0 pass; 1 failure; 77 (ctest skip) when it fails and expected_failures.txt lists it,
# printing that reason; a listed model that passes fails the test, so the list stays honest.
set -uo pipefail
name=$1
bin=$2
work=$3
expected_failure=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
python=${POPC_PYTHON:-/usr/bin/python3}
rtol=${POPC_MODELS_RTOL:-1e-3}
# atol is relative to the reference's scale: random-weight outputs range from ~3e-9
# (MobileNetV2) to ~100 (ResNet-50), so a fixed 1e-5 would be vacuous for one and
# stricter than float32 summation order for the other.
atol_of_max=${POPC_MODELS_ATOL_OF_MAX:-1e-5}

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

failed() {
  echo "models: $name: FAILED at $1: $2"
  if [ -n "$expected_failure" ]; then
    echo "models: $name: expected failure (test/models/expected_failures.txt): $expected_failure"
    exit 77
  fi
  exit 1
}

mkdir -p "$work"
t0=$(now)
if [ ! -f "$work/$name/expected.npz" ] || [ "$here/export_models.py" -nt "$work/$name/expected.npz" ]; then
  "$python" "$here/export_models.py" "$work" "$name" >"$work/$name.export.log" 2>&1 ||
    failed export "$(tail -1 "$work/$name.export.log")"
fi
t1=$(now)
dir=$work/$name
"$bin/popc-onnx" "$dir/model.onnx" -o "$dir/model.popef" --stats >"$dir/compile.log" 2>&1 ||
  failed compile "$(grep -m1 -i error "$dir/compile.log" || tail -1 "$dir/compile.log")"
t2=$(now)
"$bin/poprun-lite" "$dir/model.popef" --inputs "$dir/inputs.npz" --outputs "$dir/outputs.npz" --report \
  >"$dir/run.log" 2>&1 || failed run "$(grep -m1 -i error "$dir/run.log" || tail -1 "$dir/run.log")"
t3=$(now)
atol=$("$python" -c "import numpy as np, sys; z = np.load(sys.argv[1]); \
print('%.3g' % max(1e-30, $atol_of_max * max(float(np.abs(z[k]).max()) for k in z.files)))" "$dir/expected.npz") ||
  failed compare "cannot read $dir/expected.npz"
"$bin/npz-compare" "$dir/outputs.npz" "$dir/expected.npz" --rtol "$rtol" --atol "$atol" >"$dir/compare.log" 2>&1
compare_rc=$?
cat "$dir/compare.log"
jit=$(sed -n 's/.*JIT \([0-9.]*\) s.*/\1/p' "$dir/run.log")
echo "models: $name: export $(secs "$t0" "$t1") s, compile $(secs "$t1" "$t2") s, run $(secs "$t2" "$t3") s (JIT ${jit:-?} s)"
[ $compare_rc -eq 0 ] || failed compare "$(grep -m1 differ "$dir/compare.log" || tail -1 "$dir/compare.log")"
if [ -n "$expected_failure" ]; then
  echo "models: $name: PASSES now: remove it from test/models/expected_failures.txt"
  exit 1
fi
echo "models: $name: PASS"
