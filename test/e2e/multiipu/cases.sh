#!/usr/bin/env bash
# Multi-IPU test cases: cases.sh CASE BIN_DIR SOURCE_DIR SCRATCH_DIR
# Models and references come from models.py (numpy/torch per micro-batch).
. "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
M="$SRC/test/e2e/multiipu/models.py"

py() { "$PY" "$M" "$@" || die "models.py $* failed"; }
compile() { "$BIN/popc-onnx" "$@" || die "popc-onnx $* failed"; }
run() { "$BIN/poprun-lite" "$@" || die "poprun-lite $* failed"; }
same() { "$BIN/npz-compare" "$1" "$2" --rtol 1e-4 --atol 1e-5 || die "$1 differs from $2"; }
exact() { "$BIN/npz-compare" "$1" "$2" --rtol 0 --atol 0 || die "$1 is not bit-identical to $2"; }
json() { "$BIN/popef-info" "$1" --json --all > info.json || die "popef-info $1 failed"; "$PY" -c "import json,sys; j=json.load(open('info.json')); $2" || die "popef-info $1: check failed: $2"; }

T="--tiles-per-ipu 16"

# Peak-RSS bounds check that simulated tile memory is touched lazily. A
# sanitizer build's shadow memory multiplies RSS, so there they are skipped.
rss_below() {
  if ldd "$BIN/poprun-lite" | grep -Eq 'lib(a|t)san'; then
    echo "peak RSS $1 KiB: bound $2 KiB not checked in a sanitizer build"
    return
  fi
  [ "$1" -lt "$2" ] || die "peak RSS $1 KiB (bound $2 KiB)${3:+: $3}"
}

case $CASE in
sharded_mlp_2ipu)
  py model mlp one.onnx && py model mlp two.onnx --ipus 2
  py inputs mlp in.npz && py expect mlp in.npz expect.npz
  compile one.onnx -o one.popef $T
  compile two.onnx -o two.popef $T --num-ipus 2
  run one.popef --inputs in.npz --outputs one.npz
  run two.popef --inputs in.npz --outputs two.npz --report > report.txt
  same one.npz expect.npz && same two.npz expect.npz && exact two.npz one.npz
  # Both IPUs hold memory; activations cross from IPU 0 to IPU 1 only.
  json two.popef "p=j['memory']['per_ipu']; assert len(p)==2 and all(i['total_bytes']>0 for i in p), p; \
assert p[0]['inter_ipu_bytes_sent']>0 and p[1]['inter_ipu_bytes_received']==p[0]['inter_ipu_bytes_sent'], p; \
assert any(e['inter_ipu_bytes']>0 for e in j['exchanges'])"
  json one.popef "assert 'per_ipu' not in j['memory']"
  "$BIN/popef-info" two.popef | grep -q "IPU   1: .*receives" || die "popef-info text lacks per-IPU memory"
  grep -q "inter-IPU exchange [1-9][0-9]* bytes" report.txt || die "report lacks inter-IPU bytes: $(cat report.txt)"
  grep -q "inter-IPU," report.txt || die "report lacks an inter-IPU exchange step"
  grep -q "IPU   0: compute *[1-9][0-9]* cycles, link bytes sent *[1-9]" report.txt || die "report lacks per-IPU lines"
  grep -q "IPU   1: compute *[1-9][0-9]* cycles, link bytes sent *0, received *[1-9]" report.txt || die "report lacks IPU 1"
  ;;
auto_shard_mlp)
  py model mlp m.onnx && py inputs mlp in.npz && py expect mlp in.npz expect.npz
  compile m.onnx -o a.popef $T --auto-shard 2
  run a.popef --inputs in.npz --outputs a.npz
  same a.npz expect.npz
  json a.popef "p=j['memory']['per_ipu']; assert j['target']['num_ipus']==2 and all(i['used_tiles']>0 for i in p), p; \
assert p[0]['inter_ipu_bytes_sent']>0, p"
  compile m.onnx -o a4.popef $T --auto-shard 4
  run a4.popef --inputs in.npz --outputs a4.npz
  same a4.npz expect.npz
  json a4.popef "assert all(i['used_tiles']>0 for i in j['memory']['per_ipu'])"
  ;;
anchors_bps4)
  py model mlp m.onnx && py inputs mlp in.npz --lead 4
  for a in ALL EVERYN:2 EVERYN:4 FINAL SUM; do
    compile m.onnx -o a.popef $T --batches-per-step 4 --anchor y=$a
    run a.popef --inputs in.npz --outputs out.npz
    py expect mlp in.npz expect.npz --bps 4 --anchor $a
    same out.npz expect.npz
  done
  json a.popef "assert j['step']['batches_per_step']==4 and j['model']['outputs'][0]['anchor']=='SUM'"
  # Default anchor ALL: [4, 2, 8]; a Repeat x4 in the program.
  compile m.onnx -o d.popef $T --batches-per-step 4
  json d.popef "o=j['model']['outputs'][0]; assert o['host_shape']==[4,2,8] and o['anchor']=='ALL', o; \
assert any(c['kind']=='Repeat' and c['count']==4 for c in j['programs']['main']['children'])"
  # PopART: any input shape with the right number of elements.
  "$PY" -c "import numpy as np; x=np.load('in.npz')['x']; np.savez('flat.npz', x=x.reshape(8,16))"
  run d.popef --inputs flat.npz --outputs flat_out.npz
  py expect mlp in.npz expect.npz --bps 4
  same flat_out.npz expect.npz
  # Accumulation factor: [batches, accumulation, ...] in series.
  py inputs mlp in3.npz --lead 2,3
  compile m.onnx -o acc.popef $T --batches-per-step 2 --accumulation-factor 3
  run acc.popef --inputs in3.npz --outputs acc.npz
  py expect mlp in3.npz expect3.npz --bps 2 --accum 3
  same acc.npz expect3.npz
  ;;
replication_2|replication_4)
  r=${CASE#replication_}
  py model mlp m.onnx --ipus 2 && py inputs mlp in.npz --lead 3,$r
  compile m.onnx -o r.popef $T --num-ipus 2 --batches-per-step 3 --replication-factor $r
  run r.popef --inputs in.npz --outputs out.npz --report > report.txt
  py expect mlp in.npz expect.npz --bps 3 --repl $r
  same out.npz expect.npz
  grep -q "replicas $r" report.txt || die "report lacks replicas: $(cat report.txt)"
  json r.popef "assert j['target']['replication_factor']==$r and j['target']['num_ipus']==2; \
assert j['model']['inputs'][0]['host_shape']==[3,$r,2,16]"
  # SUM per replica: [R, 2, 8].
  compile m.onnx -o s.popef $T --num-ipus 2 --batches-per-step 3 --replication-factor $r --anchor y=SUM
  run s.popef --inputs in.npz --outputs sum.npz
  py expect mlp in.npz expect_sum.npz --bps 3 --repl $r --anchor SUM
  same sum.npz expect_sum.npz
  ;;
pipeline_cnn_4stage)
  py model cnn p.onnx --stages 4 && py inputs cnn in.npz --lead 8
  py expect cnn in.npz expect.npz --bps 8
  compile p.onnx -o p.popef --tiles-per-ipu 32 --num-ipus 4 --batches-per-step 8 --pipeline
  run p.popef --inputs in.npz --outputs p.npz --report > piped.txt
  same p.npz expect.npz
  # The same stages without pipelining: same results, more cycles.
  compile p.onnx -o s.popef --tiles-per-ipu 32 --num-ipus 4 --batches-per-step 8 --auto-shard 4
  run s.popef --inputs in.npz --outputs s.npz --report > seq.txt
  exact s.npz p.npz
  piped=$(sed -n 's/.*cycles total \([0-9]*\).*/\1/p' piped.txt) seq=$(sed -n 's/.*cycles total \([0-9]*\).*/\1/p' seq.txt)
  [ "$piped" -lt "$seq" ] || die "pipelined run costs $piped cycles, not fewer than the sequential $seq"
  json p.popef "c=[x.get('name') for x in j['programs']['main']['children']]; \
assert c==['pipeline ramp-up','pipeline main','pipeline ramp-down'], c; \
m=j['programs']['main']['children'][1]; assert m['kind']=='Repeat' and m['count']==5 and m['children'][0]['parallel'], m; \
assert len(j['programs']['main']['children'][0]['children'])==3 and len(j['programs']['main']['children'][2]['children'])==3; \
assert j['step']['pipeline_stages']==4"
  # Fewer micro-batches than stages still drains the pipeline.
  py inputs cnn in2.npz --lead 2 && py expect cnn in2.npz expect2.npz --bps 2
  compile p.onnx -o p2.popef --tiles-per-ipu 32 --num-ipus 4 --batches-per-step 2 --pipeline --anchor y=ALL
  run p2.popef --inputs in2.npz --outputs p2.npz
  same p2.npz expect2.npz
  ;;
pipeline_auto_stages)
  py model cnn c.onnx && py inputs cnn in.npz --lead 6,2
  compile c.onnx -o c.popef --tiles-per-ipu 32 --auto-shard 3 --pipeline --batches-per-step 6 \
    --replication-factor 2 --anchor y=EVERYN:3
  run c.popef --inputs in.npz --outputs c.npz
  py expect cnn in.npz expect.npz --bps 6 --repl 2 --anchor EVERYN:3
  same c.npz expect.npz
  compile c.onnx -o sum.popef --tiles-per-ipu 32 --auto-shard 3 --pipeline --batches-per-step 6 \
    --replication-factor 2 --anchor y=SUM
  run sum.popef --inputs in.npz --outputs sum.npz
  py expect cnn in.npz expect_sum.npz --bps 6 --repl 2 --anchor SUM
  same sum.npz expect_sum.npz
  # Deterministic, and --auto-shard's stages replace __pipeline_stage annotations.
  py model cnn annotated.onnx --stages 4
  compile annotated.onnx -o d1.popef --tiles-per-ipu 32 --auto-shard 3 --pipeline --batches-per-step 6 \
    --replication-factor 2 --anchor y=SUM
  compile annotated.onnx -o d2.popef --tiles-per-ipu 32 --auto-shard 3 --pipeline --batches-per-step 6 \
    --replication-factor 2 --anchor y=SUM
  cmp d1.popef d2.popef || die "two compiles differ"
  run d1.popef --inputs in.npz --outputs d1.npz
  same d1.npz expect_sum.npz
  # A value used two and three stages later is forwarded through the stages between (PopART's stash).
  "$PY" - <<'PY' || die "could not build model"
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
rng = np.random.default_rng(3)
w = [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(4)]
n = [helper.make_node("MatMul", ["x", "w0"], ["a"], name="s0", __pipeline_stage=0),
     helper.make_node("MatMul", ["a", "w1"], ["b"], name="s1", __pipeline_stage=1),
     helper.make_node("Add", ["a", "b"], ["c"], name="s2", __pipeline_stage=2),
     helper.make_node("MatMul", ["c", "w2"], ["d"], name="s3a", __pipeline_stage=3),
     helper.make_node("Add", ["d", "a"], ["e"], name="s3b", __pipeline_stage=3),
     helper.make_node("Add", ["e", "x"], ["y"], name="s3c", __pipeline_stage=3)]
g = helper.make_graph(n, "skip", [helper.make_tensor_value_info("x", T.FLOAT, [2, 8])],
                      [helper.make_tensor_value_info("y", T.FLOAT, [2, 8])],
                      [numpy_helper.from_array(w[i], f"w{i}") for i in range(3)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "skip.onnx")
x = rng.standard_normal((5, 2, 8)).astype(np.float32)
a = x @ w[0]; c = a + a @ w[1]; y = c @ w[2] + a + x
np.savez("skip_in.npz", x=x); np.savez("skip_expect.npz", y=y)
PY
  compile skip.onnx -o skip.popef $T --num-ipus 4 --pipeline --batches-per-step 5
  run skip.popef --inputs skip_in.npz --outputs skip.npz
  same skip.npz skip_expect.npz
  "$BIN/popef-info" skip.popef --tensors > skip_info.txt
  grep -q "x/stash1" skip_info.txt && grep -q "x/stash2" skip_info.txt && grep -q "a/ipucopy3" skip_info.txt || die "values are not forwarded stage by stage"
  # __ipu_number alone gives the stages.
  py model mlp m.onnx --ipus 2 && py inputs mlp in4.npz --lead 4 && py expect mlp in4.npz e4.npz --bps 4
  compile m.onnx -o m.popef $T --num-ipus 2 --pipeline --batches-per-step 4
  run m.popef --inputs in4.npz --outputs m.npz
  same m.npz e4.npz
  ;;
glossary_errors)
  py model mlp m.onnx
  expect_error "batch size = micro-batch size 2 (input 'x' dimension 0) x replication factor 2 x accumulation factor 1 = 4" \
    "$BIN/popc-onnx" m.onnx -o x.popef $T --replication-factor 2 --batch-size 6
  expect_error "step size = batch size x batches per step = 4 x 3 = 12" \
    "$BIN/popc-onnx" m.onnx -o x.popef $T --replication-factor 2 --batches-per-step 3 --step-size 8
  compile m.onnx -o ok.popef $T --replication-factor 2 --accumulation-factor 2 --batches-per-step 3 --batch-size 8 --step-size 24
  expect_error "the period must divide --batches-per-step 6" \
    "$BIN/popc-onnx" m.onnx -o x.popef $T --batches-per-step 6 --anchor y=EVERYN:4
  expect_error "has no output 'z'" "$BIN/popc-onnx" m.onnx -o x.popef $T --batches-per-step 2 --anchor z=ALL
  expect_error "unknown return type 'LAST'" "$BIN/popc-onnx" m.onnx -o x.popef $T --anchor y=LAST
  expect_error "--auto-shard 4 needs 4 IPUs but --num-ipus is 2" "$BIN/popc-onnx" m.onnx -o x.popef $T --num-ipus 2 --auto-shard 4
  expect_error "= 80 IPUs" "$BIN/popc-onnx" m.onnx -o x.popef $T --num-ipus 16 --replication-factor 5
  # Bad step input: wrong element count names the step shape.
  compile m.onnx -o b.popef $T --batches-per-step 4
  py inputs mlp in3.npz --lead 3
  expect_error "expected [4,2,16]" "$BIN/poprun-lite" b.popef --inputs in3.npz
  ;;
scale_16ipus)
  # 16 IPUs x 1472 tiles (and 4 replicas of them: 64 IPUs) in one process: only touched tiles cost memory.
  py model mlp m.onnx --ipus 16 && py inputs mlp in.npz --lead 2,4 && py expect mlp in.npz expect.npz --bps 2 --repl 4
  compile m.onnx -o big.popef --num-ipus 16 --batches-per-step 2 --replication-factor 4
  json big.popef "assert j['target']['num_ipus']==16 and j['target']['tiles_per_ipu']==1472 and len(j['memory']['per_ipu'])==16"
  /usr/bin/time -f "%M" -o rss.txt "$BIN/poprun-lite" big.popef --inputs in.npz --outputs out.npz || die "run failed"
  same out.npz expect.npz
  rss=$(tail -1 rss.txt)
  rss_below "$rss" 1000000 "64 simulated IPUs: the arena is not lazy"
  ;;
resnet18_pipeline_16ipus)
  # ResNet-18 (skip connections across stage boundaries) pipelined over 16 full-size IPUs,
  # against the single-IPU executable run per sample.
  "$PY" "$SRC/test/models/export_models.py" . resnet18 >/dev/null || die "export failed"
  "$PY" - <<'PY' || die "could not build inputs"
import numpy as np
x = np.load("resnet18/inputs.npz")["input"]
rng = np.random.default_rng(0)
xs = np.concatenate([x] + [rng.standard_normal(x.shape).astype(np.float32) for _ in range(3)])
np.savez("in4.npz", input=xs.reshape((4,) + x.shape))
for i in range(4):
    np.savez(f"in_{i}.npz", input=xs[i:i + 1])
PY
  compile resnet18/model.onnx -o one.popef
  for i in 0 1 2 3; do run one.popef --inputs in_$i.npz --outputs out_$i.npz; done
  "$PY" -c "import numpy as np; np.savez('expect.npz', output=np.stack([np.load(f'out_{i}.npz')['output'] for i in range(4)]))"
  compile resnet18/model.onnx -o p.popef --auto-shard 16 --pipeline --batches-per-step 4
  /usr/bin/time -f "%M" -o rss.txt "$BIN/poprun-lite" p.popef --inputs in4.npz --outputs p.npz --report > report.txt \
    || die "pipelined run failed"
  "$BIN/npz-compare" p.npz expect.npz --rtol 1e-3 --atol 1e-4 || die "pipelined ResNet-18 differs"
  rss=$(tail -1 rss.txt)
  rss_below "$rss" 3000000
  grep -q "IPU  15: compute *[1-9]" report.txt || die "IPU 15 did no work: $(cat report.txt)"
  ;;
*) die "unknown case $CASE" ;;
esac
echo "PASS $CASE"
