#!/usr/bin/env bash
# One ONNX backend node test through the command-line tools:
#   pb_to_npz.py -> popc-onnx -> poprun-lite -> npz-compare, for every data set.
# Usage: run_test.sh TEST BIN_DIR WORK_DIR [DATA_ROOT]
#   TEST      e.g. test_abs (a leading "node/" is accepted)
#   BIN_DIR   folder holding popc-onnx, poprun-lite, npz-compare
#   WORK_DIR  scratch folder (created; generated files stay here)
#   DATA_ROOT default /usr/share/libonnx-testdata/data/node
# Prints one line "PASS <test>" or "FAIL <test>: <category>: <reason>".
# Exit 0 on pass, 1 on failure. Categories:
#   data-unsupported  the test feeds sequences/optionals/strings/bfloat16
#   compile-error     popc-onnx rejected the model with a user-facing error (exit 1)
#   compile-crash     popc-onnx exited with anything but 0/1 (compiler bug)
#   run-error         poprun-lite failed with a user-facing error (exit 1)
#   run-crash         poprun-lite exited with anything but 0/1 (bug)
#   mismatch          outputs differ from the reference (wrong numbers)
#   converter-error   pb_to_npz.py failed (a bug in this harness)
#   setup / missing-test  a tool or the test's data is missing (not a compiler result)
#   timeout           a step took longer than POPC_ONNX_BACKEND_TIMEOUT seconds (default 120)
set -uo pipefail

test_name=${1#node/}
bin=$2
work=$3
data_root=${4:-/usr/share/libonnx-testdata/data/node}
here=$(cd "$(dirname "$0")" && pwd)
python=${POPC_PYTHON:-/usr/bin/python3}
limit=${POPC_ONNX_BACKEND_TIMEOUT:-120}

fail() {
  echo "FAIL $test_name: $1: $2"
  exit 1
}

# First non-empty line of a log, squashed onto one line and shortened.
first_line() {
  local line
  line=$(grep -m1 -v '^[[:space:]]*$' "$1" | tr -s '[:space:]' ' ' | sed -e "s|$dir/||g" -e "s|$work/||g" -e 's/ $//')
  [ ${#line} -gt 300 ] && line="${line:0:300}..."
  echo "${line:-(no output)}"
}

# Runs "$@" with a time limit, output to $log; sets rc.
step() {
  local log=$1
  shift
  timeout -k 5 "$limit" "$@" >"$log" 2>&1
  rc=$?
}

# Per-test tolerance overrides: "test rtol atol" lines in tolerances.txt.
rtol=1e-4
atol=1e-5
if read -r _ r a < <(grep -E "^${test_name}[[:space:]]" "$here/tolerances.txt" 2>/dev/null); then
  rtol=$r
  atol=$a
fi

for tool in popc-onnx poprun-lite npz-compare; do
  [ -x "$bin/$tool" ] || fail setup "$bin/$tool is missing or not executable (build it first)"
done
dir=$data_root/$test_name
[ -f "$dir/model.onnx" ] || fail missing-test "$dir/model.onnx not found"
rm -rf "$work"
mkdir -p "$work"

step "$work/compile.log" "$bin/popc-onnx" "$dir/model.onnx" -o "$work/model.popef"
case $rc in
0) ;;
1) fail compile-error "$(first_line "$work/compile.log")" ;;
124 | 137) fail timeout "popc-onnx took over ${limit}s" ;;
*) fail compile-crash "popc-onnx exit $rc: $(first_line "$work/compile.log")" ;;
esac

sets=("$dir"/test_data_set_*)
[ -d "${sets[0]}" ] || fail missing-test "$dir has no test_data_set_*"
for set in "${sets[@]}"; do
  name=$(basename "$set")
  out=$work/$name
  mkdir -p "$out"
  step "$out/convert.log" "$python" "$here/pb_to_npz.py" "$dir/model.onnx" "$set" "$out"
  case $rc in
  0) ;;
  3) fail data-unsupported "$(first_line "$out/convert.log")" ;;
  *) fail converter-error "pb_to_npz.py exit $rc: $(first_line "$out/convert.log")" ;;
  esac

  step "$out/run.log" "$bin/poprun-lite" "$work/model.popef" --inputs "$out/inputs.npz" \
    --outputs "$out/outputs.npz"
  case $rc in
  0) ;;
  1) fail run-error "$(first_line "$out/run.log")" ;;
  124 | 137) fail timeout "poprun-lite took over ${limit}s" ;;
  *) fail run-crash "poprun-lite exit $rc: $(first_line "$out/run.log")" ;;
  esac

  step "$out/compare.log" "$bin/npz-compare" "$out/outputs.npz" "$out/expected.npz" \
    --rtol "$rtol" --atol "$atol"
  if [ $rc -ne 0 ]; then
    reason=$(grep -v "elements match" "$out/compare.log" | grep -m1 -v '^[[:space:]]*$' | tr -s '[:space:]' ' ' | sed -e "s|$out/||g" -e 's/ $//')
    fail mismatch "$name: ${reason:-npz-compare exit $rc}"
  fi
done
echo "PASS $test_name"
