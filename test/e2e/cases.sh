#!/usr/bin/env bash
# End-to-end test cases: cases.sh CASE BIN_DIR SOURCE_DIR SCRATCH_DIR
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
compile() { "$BIN/popc-onnx" "$@" || die "popc-onnx $* failed"; }

sample_matches() {
  local s=$1
  compile "$SRC/samples/$s/model.onnx" -o $s.popef
  "$BIN/poprun-lite" $s.popef --inputs "$SRC/samples/$s/inputs.npz" --outputs out.npz || die "poprun-lite failed"
  "$BIN/npz-compare" out.npz "$SRC/samples/$s/expected.npz" --rtol 1e-4 --atol 1e-5 || die "outputs differ from PyTorch"
}

case $CASE in
mlp_matches_pytorch) sample_matches mlp ;;
cnn_matches_pytorch) sample_matches cnn ;;
compile_is_deterministic)
  compile "$SRC/samples/cnn/model.onnx" -o a.popef
  compile "$SRC/samples/cnn/model.onnx" -o b.popef
  cmp a.popef b.popef || die "two compiles differ"
  ;;
out_of_memory_report)
  "$BIN/popc-onnx" "$SRC/samples/cnn/model.onnx" -o x.popef --bytes-per-tile 1024 --tiles-per-ipu 4 2>err.txt
  [ $? -eq 1 ] || die "expected failure"
  grep -q "out of memory" err.txt || die "no out-of-memory report"
  grep -q "tile 0:\|tile [0-9]*:" err.txt || die "report lacks tiles"
  grep -q "largest tensors" err.txt || die "report lacks tensors"
  [ ! -e x.popef ] || die "an executable was written"
  ;;
unsupported_operator_listed)
  "$PY" - <<'PY' || die "could not build model"
import onnx
from onnx import helper, TensorProto as T
x = helper.make_tensor_value_info("x", T.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", T.FLOAT, [2, 3])
# Unique and NonZero: outputs whose shapes depend on the data.
nodes = [helper.make_node("Unique", ["x"], ["a"], name="u1"),
         helper.make_node("Unique", ["a"], ["b"], name="u2"),
         helper.make_node("NonZero", ["b"], ["y"], name="nz")]
m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 14)])
onnx.save(m, "unsupported.onnx")
PY
  expect_error "unsupported operators" "$BIN/popc-onnx" unsupported.onnx -o u.popef
  grep -q "opset 14" err.txt || die "opset missing: $(cat err.txt)"
  grep -q "Unique (nodes: u1, u2)" err.txt || die "op list wrong: $(cat err.txt)"
  grep -q "NonZero (nodes: nz)" err.txt || die "op list wrong: $(cat err.txt)"
  ;;
not_an_onnx_file)
  echo "this is not a model" > bad.onnx
  expect_error "bad.onnx" "$BIN/popc-onnx" bad.onnx -o bad.popef
  ;;
errors_say_what_is_wrong)
  # Issue 22, item 4: each mistake gets a one-line error that names it.
  mkdir modeldir
  expect_error "modeldir: is a directory, not an ONNX model file" "$BIN/popc-onnx" modeldir -o d.popef
  head -c 300 "$SRC/samples/mlp/model.onnx" > trunc.onnx
  expect_error "trunc.onnx: ONNX model truncated: the file ends at byte 300" "$BIN/popc-onnx" trunc.onnx -o t.popef
  printf 'hello, this is not a protobuf\n' > text.onnx
  expect_error "text.onnx: not an ONNX model (not a protobuf" "$BIN/popc-onnx" text.onnx -o t.popef
  "$PY" - <<'PY' || die "model generation failed"
import onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
n = helper.make_node("FusedThing", ["x"], ["y"], name="ft", domain="com.example")
m = helper.make_model(helper.make_graph([n], "g", [x], [y]),
                      opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 3)])
onnx.save(m, "custom.onnx")
PY
  expect_error "FusedThing (domain com.example version 3, which popc does not implement; nodes: ft)" \
    "$BIN/popc-onnx" custom.onnx -o c.popef
  grep -q "ai.onnx opset" err.txt && die "custom-domain op reported under ai.onnx: $(cat err.txt)"
  compile "$SRC/samples/mlp/model.onnx" -o m.popef
  mkdir outdir
  expect_error "outdir: is a directory; fix: name the .npz file to write" \
    "$BIN/poprun-lite" m.popef --inputs "$SRC/samples/mlp/inputs.npz" --outputs outdir
  # popc-codelet follows docs/cli.md like every tool.
  "$BIN/popc-codelet" --version > v.txt 2>&1 || die "popc-codelet --version failed"
  grep -q "^popc " v.txt || die "popc-codelet --version: $(cat v.txt)"
  expect_error "popc-codelet: error: input is required" "$BIN/popc-codelet"
  expect_error "popc-codelet: error: The following argument was not expected: --frob" "$BIN/popc-codelet" --frob x.cpp
  expect_error "popc-codelet: error: missing.cpp" "$BIN/popc-codelet" missing.cpp
  ;;
gather_index_checked)
  # Issue 22, item 5: an index outside an embedding table stops the run with the
  # node, the index and the bound (PyTorch raises too); --no-index-checks reads zeros.
  "$PY" - <<'PY' || die "model generation failed"
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
table = np.arange(100 * 4, dtype=np.float32).reshape(100, 4)
ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4])
g = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["y"], name="embed")], "g", [ids], [y],
                      [numpy_helper.from_array(table, "table")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "emb.onnx")
np.savez("good.npz", ids=np.array([[1, 99, -1, 0]], dtype=np.int64))
np.savez("good_expected.npz", y=table[[[1, 99, 99, 0]]])
np.savez("bad.npz", ids=np.array([[1, 150, 3, 4]], dtype=np.int64))
bad = table[[[1, 0, 3, 4]]].copy(); bad[0, 1] = 0
np.savez("bad_zeros.npz", y=bad)
PY
  compile emb.onnx -o emb.popef
  "$BIN/poprun-lite" emb.popef --inputs good.npz --outputs o.npz || die "in-range indices refused"
  "$BIN/npz-compare" o.npz good_expected.npz --rtol 0 --atol 0 || die "gathered rows differ"
  rm -f o.npz
  expect_error "Gather 'embed': index 150 (element 1 of 'ids') is out of range for axis 0 of 'table', which has 100 entries (valid: -100 to 99)" \
    "$BIN/poprun-lite" emb.popef --inputs bad.npz --outputs o.npz
  [ ! -e o.npz ] || die "outputs written after a failed check"
  "$BIN/poprun-lite" emb.popef --inputs bad.npz --outputs o.npz --no-index-checks || die "--no-index-checks still refused"
  "$BIN/npz-compare" o.npz bad_zeros.npz --rtol 0 --atol 0 || die "out-of-range row is not zeros"
  rm -f o.npz
  compile emb.onnx -o emb-unchecked.popef --no-index-checks
  "$BIN/poprun-lite" emb-unchecked.popef --inputs bad.npz --outputs o.npz || die "unchecked executable refused"
  "$BIN/npz-compare" o.npz bad_zeros.npz --rtol 0 --atol 0 || die "out-of-range row is not zeros (unchecked)"
  "$BIN/popef-info" emb-unchecked.popef --json --all > info.json || die "popef-info failed"
  grep -q '"no-index-checks"' info.json || die "option not in metadata"
  ;;
noop_options_warn)
  # Issue 22, item 5: an option that changes nothing says so (a warning; the run goes on).
  compile "$SRC/samples/mlp/model.onnx" -o m.popef
  "$BIN/poprun-lite" m.popef --inputs "$SRC/samples/mlp/inputs.npz" 2>err.txt >/dev/null || die "run failed"
  [ ! -s err.txt ] || die "warning without a reason: $(cat err.txt)"
  "$BIN/poprun-lite" m.popef --inputs "$SRC/samples/mlp/inputs.npz" --show-var-storage --report-top 3 \
    2>err.txt >/dev/null || die "run failed"
  grep -q "warning: --show-var-storage does nothing without --summary" err.txt || die "no warning: $(cat err.txt)"
  grep -q "warning: --report-top and --report-sort do nothing without --report" err.txt || die "no warning: $(cat err.txt)"
  "$BIN/popc-onnx" "$SRC/samples/mlp/model.onnx" -o p.popef --auto-shard 2 --pipeline 2>err.txt ||
    die "compile failed: $(cat err.txt)"
  grep -q "warning: --pipeline with one micro-batch per step changes nothing" err.txt || die "no warning: $(cat err.txt)"
  "$BIN/popc-onnx" "$SRC/samples/mlp/model.onnx" -o p4.popef --auto-shard 2 --pipeline --batches-per-step 4 \
    2>err.txt || die "compile failed: $(cat err.txt)"
  grep -q "pipeline" err.txt && die "warned with 4 micro-batches: $(cat err.txt)"
  true
  ;;
runner_conveniences)
  # Issue 22, item 6: what tvmc / iree-run-module users reach for.
  compile "$SRC/samples/mlp/model.onnx" -o m.popef
  "$PY" - "$SRC/samples/mlp" <<'PY' || die "data preparation failed"
import sys, numpy as np
d = np.load(sys.argv[1] + "/inputs.npz"); e = np.load(sys.argv[1] + "/expected.npz")
np.save("input.npy", d["input"])
np.savez("wrong.npz", **{k: v + 1 for k, v in e.items()})
PY
  # --input NAME=FILE.npy and --expected-outputs: exit 0 when the outputs match PyTorch's...
  "$BIN/poprun-lite" m.popef --input input=input.npy --expected-outputs "$SRC/samples/mlp/expected.npz" \
    --rtol 1e-4 --atol 1e-5 > out.txt || die "outputs do not match the reference: $(cat out.txt)"
  grep -q "elements match (rtol 0.0001, atol 1e-05)" out.txt || die "no comparison printed: $(cat out.txt)"
  # ...also when the outputs are written too (they were compared after being moved out).
  "$BIN/poprun-lite" m.popef --input input=input.npy --expected-outputs "$SRC/samples/mlp/expected.npz" \
    --rtol 1e-4 --atol 1e-5 --outputs both.npz > out.txt || die "--outputs broke the comparison: $(cat out.txt)"
  "$BIN/npz-compare" both.npz "$SRC/samples/mlp/expected.npz" --rtol 1e-4 --atol 1e-5 > /dev/null ||
    die "--outputs with --expected-outputs wrote other outputs"
  # ...and exit 1, naming the worst element, when they do not.
  "$BIN/poprun-lite" m.popef --input input=input.npy --expected-outputs wrong.npz > out.txt 2> err.txt
  [ $? -eq 1 ] || die "a mismatch did not exit 1"
  grep -q "elements differ" out.txt && grep -q "outputs differ from wrong.npz" err.txt || die "mismatch: $(cat out.txt err.txt)"
  # Literals: one value for every element equals --fill ones.
  "$BIN/poprun-lite" m.popef --input input=4x64xf32=1 --outputs lit.npz || die "literal input refused"
  "$BIN/poprun-lite" m.popef --fill ones --outputs ones.npz || die "--fill ones failed"
  "$BIN/npz-compare" lit.npz ones.npz --rtol 0 --atol 0 > /dev/null || die "literal 1 differs from --fill ones"
  expect_error "--input input=4x64xf32=1,2: 2 values for 256 elements" "$BIN/poprun-lite" m.popef --input input=4x64xf32=1,2
  expect_error "unknown element type 'q8'" "$BIN/poprun-lite" m.popef --input input=4x64xq8=1
  expect_error "input 'input' is given twice" "$BIN/poprun-lite" m.popef --inputs "$SRC/samples/mlp/inputs.npz" --input input=input.npy
  # --fill random is the same for a seed on every run, and differs between seeds.
  "$BIN/poprun-lite" m.popef --fill random --seed 7 --outputs r1.npz || die "--fill random failed"
  "$BIN/poprun-lite" m.popef --fill random --seed 7 --outputs r2.npz || die "--fill random failed"
  "$BIN/poprun-lite" m.popef --fill random --seed 8 --outputs r3.npz || die "--fill random failed"
  cmp -s r1.npz r2.npz || die "--fill random --seed 7 differs between runs"
  cmp -s r1.npz r3.npz && die "--seed 7 and 8 give the same inputs"
  expect_error "the model needs inputs (input float32 [4,64]): pass --inputs FILE.npz, --input NAME=..., or --fill" "$BIN/poprun-lite" m.popef
  # --benchmark N: N timed runs after a warm-up, min <= median <= max.
  "$BIN/poprun-lite" m.popef --fill zeros --benchmark 5 > out.txt || die "--benchmark failed"
  line=$(grep "^benchmark: 5 runs after 1 warm-up, ms per inference: min" out.txt) || die "no benchmark line: $(cat out.txt)"
  set -- $(echo "$line" | sed 's/.*min \([0-9.]*\) median \([0-9.]*\) max \([0-9.]*\).*/\1 \2 \3/')
  awk -v a="$1" -v b="$2" -v c="$3" 'BEGIN { exit !(a <= b && b <= c) }' || die "min/median/max out of order: $line"
  ;;
truncated_popef)
  compile "$SRC/samples/mlp/model.onnx" -o m.popef
  for n in 0 7 100 1000 $(( $(stat -c %s m.popef) / 2 )); do
    head -c $n m.popef > t.popef
    expect_error "t.popef" "$BIN/poprun-lite" t.popef --inputs "$SRC/samples/mlp/inputs.npz"
  done
  ;;
bitflipped_popef)
  compile "$SRC/samples/mlp/model.onnx" -o m.popef
  size=$(stat -c %s m.popef)
  for i in $(seq 1 40); do
    cp m.popef f.popef
    off=$(( (i * 7919 * 104729) % size ))
    printf "$(printf '\\x%02x' $(( (i * 37 + 1) % 256 )))" | dd of=f.popef bs=1 seek=$off conv=notrunc status=none
    cmp -s f.popef m.popef && continue # the byte already had that value
    "$BIN/poprun-lite" f.popef --inputs "$SRC/samples/mlp/inputs.npz" --outputs o.npz >/dev/null 2>err.txt
    rc=$?
    # The file's checksum covers every byte: any change is refused, never run.
    [ $rc -eq 1 ] || { cat err.txt; die "flip at $off: exit $rc, expected 1 (a refused file)"; }
    [ "$(grep -c . err.txt)" -eq 1 ] || die "flip at $off: error not one line"
  done
  ;;
npz_wrong_names|npz_wrong_shape|npz_wrong_dtype)
  compile "$SRC/samples/mlp/model.onnx" -o m.popef
  case $CASE in
  npz_wrong_names) code='np.savez("in.npz", wrong=np.zeros((4,64), np.float32))' ;;
  npz_wrong_shape) code='np.savez("in.npz", input=np.zeros((4,65), np.float32))' ;;
  npz_wrong_dtype) code='np.savez("in.npz", input=np.zeros((4,64), np.float64))' ;;
  esac
  "$PY" -c "import numpy as np; $code" || die "numpy failed"
  expect_error "input float32 [4,64]" "$BIN/poprun-lite" m.popef --inputs in.npz
  ;;
popef_info_text_and_json)
  compile "$SRC/samples/cnn/model.onnx" -o c.popef
  "$BIN/popef-info" c.popef > info.txt || die "popef-info failed"
  for w in ipu2 input output "compute sets" "exchange" ; do
    grep -qi "$w" info.txt || die "popef-info text lacks '$w'"
  done
  [ "$(wc -l < info.txt)" -le 60 ] || die "the default page is $(wc -l < info.txt) lines"
  "$BIN/popef-info" c.popef --json > info.json || die "popef-info --json failed"
  "$PY" - <<'PY' || die "popef-info --json: the page's sections"
import json
d = json.load(open("info.json"))
assert d["model"]["inputs"][0]["name"] == "input" and d["model"]["inputs"][0]["dtype"] == "float32", d["model"]
assert d["contents"]["vertices"] > 0 and d["contents"]["copy_records"] > 0, d["contents"]
assert "tensors" not in d and "exchanges" not in d, sorted(d)
PY
  # --io: one line per input and output, for scripts
  "$BIN/popef-info" c.popef --io > io.txt || die "--io failed"
  [ "$(cat io.txt)" = "$(printf 'input input float32 [2,3,16,16]\noutput output float32 [2,10]')" ] || die "--io: $(cat io.txt)"
  # --tensors FILTER lists matching tensors only; --all lists everything
  "$BIN/popef-info" c.popef --tensors Conv > t.txt || die "--tensors failed"
  grep -q "matching 'Conv'" t.txt && grep -q "/Conv" t.txt || die "--tensors: $(cat t.txt)"
  ! sed -n '/^tensors/,/^$/p' t.txt | tail -n +3 | grep -v Conv | grep -q . || die "--tensors listed a non-matching tensor"
  "$BIN/popef-info" c.popef --all --json > all.json || die "--all failed"
  "$PY" -c "import json; d=json.load(open('all.json')); assert d['tensors'] and d['exchanges'] and d['vertex_types']" \
    || die "--all lacks the lists"
  ;;
summary_without_outputs)
  compile "$SRC/samples/mlp/model.onnx" -o m.popef
  "$BIN/poprun-lite" m.popef --inputs "$SRC/samples/mlp/inputs.npz" > s.txt || die "run failed"
  grep -q "output" s.txt || die "summary lacks the output name"
  ;;
iterations_and_threads)
  compile "$SRC/samples/cnn/model.onnx" -o c.popef
  "$BIN/poprun-lite" c.popef --inputs "$SRC/samples/cnn/inputs.npz" --outputs o1.npz --threads 1 --iterations 3 --report > r.txt || die "run failed"
  grep -qi "cycles" r.txt || die "report lacks cycles"
  # The top compute sets and exchange steps share one name column, however long the names.
  cols=$(grep -E '^    /.* cycles ' r.txt | awk '{ print index($0, " cycles ") }' | sort -u | wc -l)
  [ "$(grep -cE '^    /.* cycles ' r.txt)" -gt 2 ] && [ "$cols" = 1 ] || die "report columns are not aligned: $(cat r.txt)"
  # --iterations 3 runs the program three times: three times one run's cycles.
  "$BIN/poprun-lite" c.popef --inputs "$SRC/samples/cnn/inputs.npz" --outputs o1b.npz --threads 1 --report > r1.txt || die "run failed"
  one=$(sed -n 's/.*cycles total \([0-9]*\) over 1 iteration.*/\1/p' r1.txt)
  three=$(sed -n 's/.*cycles total \([0-9]*\) over 3 iteration.*/\1/p' r.txt)
  [ -n "$one" ] && [ "$three" = "$((3 * one))" ] || die "--iterations 3: $three cycles, one run $one"
  grep -qE "^    /[^ ]+ +[0-9]+ cycles .*\(3 runs" r.txt || die "--iterations 3: compute sets did not run 3 times: $(cat r.txt)"
  "$BIN/poprun-lite" c.popef --inputs "$SRC/samples/cnn/inputs.npz" --outputs o2.npz --threads 2 || die "run failed"
  "$BIN/npz-compare" o1.npz o2.npz --rtol 0 --atol 0 || die "results depend on threads"
  # --report-sort host orders the tables by host time; --report-top sets their rows.
  "$BIN/poprun-lite" c.popef --inputs "$SRC/samples/cnn/inputs.npz" --outputs o3.npz --report --report-sort host \
    --report-top 2 > r3.txt || die "run failed"
  grep -q "top compute sets by host time:" r3.txt && grep -q "top exchange steps by host time:" r3.txt ||
    die "--report-sort host: $(cat r3.txt)"
  [ "$(grep -cE '^    /.* cycles ' r3.txt)" = 4 ] || die "--report-top 2: $(cat r3.txt)"
  ms=$(grep -oE '[0-9.]+ ms wall\)' r3.txt | head -2 | grep -oE '^[0-9.]+')
  [ "$(printf '%s\n' $ms | sort -gr | tr '\n' ' ')" = "$(printf '%s\n' $ms | tr '\n' ' ')" ] ||
    die "--report-sort host: not in descending host time: $ms"
  expect_error "--report-sort" "$BIN/poprun-lite" c.popef --inputs "$SRC/samples/cnn/inputs.npz" --report --report-sort speed
  ;;
dump_ir_and_dot)
  compile "$SRC/samples/cnn/model.onnx" -o c.popef --dump-ir ir --dump-dot dot
  for cp in FWD0 FWD1 PREALIAS MAINLOOPS FINAL; do
    ls ir | grep -q "$cp" || die "no IR dump for $cp"
    ls dot | grep -q "$cp" || die "no DOT dump for $cp"
  done
  grep -q "= BatchNormalization\[" ir/*FWD0* || die "FWD0 lacks BatchNormalization"
  ! grep -q "= BatchNormalization\[" ir/*FINAL* || die "BatchNormalization not folded by FINAL"
  ;;
input_shape_errors)
  expect_error "nosuch" "$BIN/popc-onnx" "$SRC/samples/mlp/model.onnx" -o m.popef --input-shape nosuch=1,2
  expect_error "input-shape" "$BIN/popc-onnx" "$SRC/samples/mlp/model.onnx" -o m.popef --input-shape garbage
  ;;
sequence_input_matches_numpy)
  # A sequence input xs of 3 tensors [n,3] (n differs per element) and a tensor w:
  # y = Concat(xs) * w and the sequence output ys = [Relu(x - w) for x in xs].
  "$PY" - <<'PY' || die "could not build model"
import onnx, numpy as np
from onnx import helper, TensorProto as T
seq = helper.make_tensor_sequence_value_info("xs", T.FLOAT, ["n", 3])
w = helper.make_tensor_value_info("w", T.FLOAT, [3])
y = helper.make_tensor_value_info("y", T.FLOAT, ["rows", 3])
ys = helper.make_tensor_sequence_value_info("ys", T.FLOAT, ["n", 3])
body = helper.make_graph(
    [helper.make_node("Sub", ["a", "b"], ["d"]), helper.make_node("Relu", ["d"], ["r"])], "body",
    [helper.make_tensor_value_info("a", T.FLOAT, ["n", 3]), helper.make_tensor_value_info("b", T.FLOAT, [3])],
    [helper.make_tensor_value_info("r", T.FLOAT, ["n", 3])])
nodes = [helper.make_node("ConcatFromSequence", ["xs"], ["cat"], axis=0, name="concat"),
         helper.make_node("Mul", ["cat", "w"], ["y"], name="mul"),
         helper.make_node("SequenceMap", ["xs", "w"], ["ys"], body=body, name="map")]
m = helper.make_model(helper.make_graph(nodes, "g", [seq, w], [y, ys]), opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(m)
onnx.save(m, "seq.onnx")
rng = np.random.default_rng(0)
xs = [rng.standard_normal((r, 3)).astype(np.float32) for r in (2, 1, 4)]
wv = np.array([0.5, -1.0, 0.25], np.float32)
np.savez("in.npz", **{f"xs.{i}": x for i, x in enumerate(xs)}, w=wv)
expected = {"y": np.concatenate(xs) * wv}
expected.update({f"ys.{i}": np.maximum(x - wv, 0) for i, x in enumerate(xs)})
np.savez("expected.npz", **expected)
PY
  expect_error "--sequence-input xs=N" "$BIN/popc-onnx" seq.onnx -o s.popef
  expect_error "input 'w' is a tensor, not a sequence" "$BIN/popc-onnx" seq.onnx -o s.popef --sequence-input w=2
  compile seq.onnx -o s.popef --sequence-input xs=3 --input-shape xs.0=2,3 --input-shape xs.1=1,3 \
    --input-shape xs.2=4,3
  "$BIN/poprun-lite" s.popef --inputs in.npz --outputs out.npz || die "poprun-lite failed"
  "$BIN/npz-compare" out.npz expected.npz --rtol 1e-6 --atol 1e-6 || die "outputs differ from numpy"
  "$PY" -c "import numpy as np; f = sorted(np.load('out.npz').files); assert f == ['y', 'ys.0', 'ys.1', 'ys.2'], f" \
    || die "outputs are not y, ys.0, ys.1, ys.2"
  "$BIN/popef-info" s.popef > info.txt || die "popef-info failed"
  grep -q "xs.2 float32 \[4,3\]" info.txt || die "popef-info lacks input xs.2: $(cat info.txt)"
  grep -q "ys.1 float32 \[1,3\]" info.txt || die "popef-info lacks output ys.1"
  grep -q "sequence-input:xs=3" info.txt || die "popef-info lacks the sequence-input option"
  ;;
einsum_matches_numpy)
  # Equations numpy.einsum answers: three operands, '...', implicit output,
  # a diagonal, a full contraction to a scalar; opset 12 (ReduceSum axes as an
  # attribute) and 13 (as an input).
  for opset in 12 13; do
    "$PY" - "$opset" <<'PY' || die "could not build the model"
import sys, onnx, numpy as np
from onnx import helper, TensorProto as T
opset = int(sys.argv[1])
rng = np.random.default_rng(opset)
cases = {"three": ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
         "ellipsis": ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),
         "implicit": ("ba,ac", [(3, 4), (4, 2)]),
         "diagonal": ("bii->bi", [(2, 3, 3)]),
         "scalar": ("ij,ij", [(3, 4), (3, 4)]),
         "scalar_explicit": ("ij,ij->", [(3, 4), (3, 4)]),
         "outer_sum": ("i,jk->kj", [(5,), (2, 3)])}
inputs, outputs, nodes, feeds, expected = [], [], [], {}, {}
for name, (eq, shapes) in cases.items():
    names = [f"{name}_{k}" for k in range(len(shapes))]
    for n, s in zip(names, shapes):
        inputs.append(helper.make_tensor_value_info(n, T.FLOAT, list(s)))
        feeds[n] = rng.standard_normal(s).astype(np.float32)
    expected[name] = np.array(np.einsum(eq, *[feeds[n] for n in names]), np.float32, order="C")
    outputs.append(helper.make_tensor_value_info(name, T.FLOAT, list(expected[name].shape)))
    nodes.append(helper.make_node("Einsum", names, [name], equation=eq, name=name))
m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs), opset_imports=[helper.make_opsetid("", opset)])
onnx.checker.check_model(m)
onnx.save(m, "einsum.onnx")
np.savez("in.npz", **feeds)
np.savez("expected.npz", **expected)
PY
    compile einsum.onnx -o e.popef
    "$BIN/poprun-lite" e.popef --inputs in.npz --outputs out.npz || die "opset $opset: poprun-lite failed"
    "$BIN/npz-compare" out.npz expected.npz --rtol 1e-5 --atol 1e-5 || die "opset $opset: outputs differ from numpy"
  done
  ;;
*) die "unknown case $CASE" ;;
esac
echo "PASS: $CASE"
