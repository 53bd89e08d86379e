#!/usr/bin/env bash
# Resource-limit cases through the tools: limits.sh CASE BIN_DIR SOURCE_DIR SCRATCH_DIR
# Each hostile input must be refused quickly (bounded wall time, so nothing was
# inflated or allocated first) with exit 1 and one line naming the limit.
set -uo pipefail
CASE=$1 BIN=$2 SRC=$3 TMP=$4
rm -rf "$TMP" && mkdir -p "$TMP" && cd "$TMP" || exit 1
PY=${POPC_PYTHON:-/usr/bin/python3}
die() { echo "FAIL: $*" >&2; exit 1; }

# refused SECONDS "substring" cmd...: exit 1, one line containing substring, within SECONDS.
refused() {
  local secs=$1 want=$2; shift 2
  timeout -s KILL "$secs" "$@" >out.txt 2>err.txt
  local rc=$?
  [ "$rc" -eq 1 ] || { cat err.txt; die "expected exit 1 from '$*' within ${secs}s, got $rc"; }
  grep -qF -- "$want" err.txt || { cat err.txt; die "error of '$*' lacks '$want'"; }
  [ "$(grep -c . err.txt)" -eq 1 ] || { cat err.txt; die "error of '$*' is not one line"; }
  echo "ok: $(cat err.txt)"
}

sample() { "$BIN/make_hostile" corpus >/dev/null || die "make_hostile failed"; }

case $CASE in
npz_bomb_honest)
  # 1 GiB of zeros deflated to ~1 MB, sizes recorded truthfully.
  sample
  "$PY" - <<'PY' || die "could not build the archive"
import zipfile, numpy as np
hdr = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.float32))
hdr['shape'] = (1 << 28,)
import io
b = io.BytesIO(); np.lib.format.write_array_header_1_0(b, hdr)
with zipfile.ZipFile('bomb.npz', 'w', zipfile.ZIP_DEFLATED) as z:
    with z.open('a.npy', 'w', force_zip64=True) as f:
        f.write(b.getvalue())
        chunk = bytes(1 << 24)
        for _ in range(64):
            f.write(chunk)
PY
  [ "$(stat -c %s bomb.npz)" -lt 4000000 ] || die "bomb.npz is not small"
  refused 20 "exceeds the limit of 268435456 bytes (a zip bomb?)" \
    "$BIN/poprun-lite" corpus/valid_sample.popef --inputs bomb.npz --max-memory 256M
  ;;
npz_bomb_lying)
  # A member that records 4096 uncompressed bytes but inflates to 1 GiB: reading
  # stops at the recorded size (plus one 1 MiB chunk).
  sample
  "$PY" - <<'PY' || die "could not build the archive"
import zipfile, struct
with zipfile.ZipFile('liar.npz', 'w', zipfile.ZIP_DEFLATED) as z:
    with z.open('a.npy', 'w', force_zip64=False) as f:
        chunk = bytes(1 << 24)
        for _ in range(64):
            f.write(chunk)
data = bytearray(open('liar.npz', 'rb').read())
# Patch the uncompressed size in the local header (offset 22) and the central directory entry (offset 24).
struct.pack_into('<I', data, 22, 4096)
cd = data.rfind(b'PK\x01\x02')
struct.pack_into('<I', data, cd + 24, 4096)
open('liar.npz', 'wb').write(data)
PY
  refused 20 "liar.npz: member 'a.npy'" "$BIN/poprun-lite" corpus/valid_sample.popef --inputs liar.npz
  ;;
max_memory_run)
  sample
  # The 16-byte sample runs under a 1 MiB budget, and is refused under 4 KiB.
  "$BIN/poprun-lite" corpus/valid_sample.popef --inputs corpus/inputs.npz --max-memory 1M >/dev/null ||
    die "the sample does not run under --max-memory 1M"
  refused 20 "more than --max-memory" "$BIN/poprun-lite" corpus/valid_sample.popef --inputs corpus/inputs.npz \
    --max-memory 4K
  POPC_MAX_MEMORY=4K refused 20 "more than --max-memory" "$BIN/poprun-lite" corpus/valid_sample.popef \
    --inputs corpus/inputs.npz
  refused 20 "--max-memory" "$BIN/poprun-lite" corpus/valid_sample.popef --max-memory lots
  ;;
onnx_huge_constant)
  # ConstantOfShape([2^16, 2^16]) float32 = 16 GiB, folded at compile time unless refused first
  # (beyond 2^32 elements the op's own shape check refuses it).
  "$PY" - <<'PY' || die "could not build the model"
import onnx
from onnx import helper, TensorProto as T, numpy_helper
import numpy as np
shape = numpy_helper.from_array(np.array([1 << 16, 1 << 16], np.int64), 'shape')
nodes = [helper.make_node('ConstantOfShape', ['shape'], ['big'], value=helper.make_tensor('v', T.FLOAT, [1], [1.0])),
         helper.make_node('ReduceSum', ['big'], ['s'], keepdims=0),
         helper.make_node('Add', ['x', 's'], ['y'])]
g = helper.make_graph(nodes, 'g', [helper.make_tensor_value_info('x', T.FLOAT, [])],
                      [helper.make_tensor_value_info('y', T.FLOAT, [])], [shape])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), 'huge.onnx')
PY
  refused 60 "tensor 'big' float32 [65536,65536] declares more than --max-memory 1073741824 bytes" \
    "$BIN/popc-onnx" huge.onnx -o huge.popef --max-memory 1G
  [ ! -e huge.popef ] || die "an executable was written"
  ;;
onnx_huge_input_shape)
  refused 60 "declares more than --max-memory" \
    "$BIN/popc-onnx" "$SRC/samples/mlp/model.onnx" -o x.popef --input-shape input=4000000000,64 --max-memory 1G --log-level err
  ;;
onnx_nested_subgraphs)
  "$PY" - <<'PY' || die "could not build the models"
import onnx
from onnx import helper, TensorProto as T
def nested(depth):
    # If(c) { If(c) { ... Identity(x) } } else { Identity(x) }: depth levels of subgraphs.
    def leaf(d):
        return helper.make_graph([helper.make_node('Identity', ['x'], ['y%d' % d])], 'b%d' % d, [],
                                 [helper.make_tensor_value_info('y%d' % d, T.FLOAT, [1])])
    inner = leaf(depth)
    for d in range(depth - 1, -1, -1):
        node = helper.make_node('If', ['c'], ['y%d' % d], then_branch=inner, else_branch=leaf(d + 1))
        inner = helper.make_graph([node], 'b%d' % d, [], [helper.make_tensor_value_info('y%d' % d, T.FLOAT, [1])])
    g = helper.make_graph(inner.node, 'g', [helper.make_tensor_value_info('x', T.FLOAT, [1]),
                                            helper.make_tensor_value_info('c', T.BOOL, [])],
                          [helper.make_tensor_value_info('y0', T.FLOAT, [1])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
onnx.save(nested(20), 'nested20.onnx')
open('nested200.onnx', 'wb').write(nested(200).SerializeToString())
PY
  refused 60 "subgraphs (If/Loop/Scan bodies) nested deeper than 16 levels" "$BIN/popc-onnx" nested20.onnx -o n.popef
  # Past protobuf's own nesting limit (100 messages) the file does not even parse.
  refused 60 "not an ONNX model" "$BIN/popc-onnx" nested200.onnx -o n.popef
  ;;
onnx_loop_bomb)
  # Loop(4096) { Loop(4096) { Loop(4096) { Add } } }: 2^36 nodes once unrolled.
  "$PY" - <<'PY' || die "could not build the model"
import onnx
from onnx import helper, TensorProto as T, numpy_helper
import numpy as np
def vi(n, t=T.FLOAT, s=[1]): return helper.make_tensor_value_info(n, t, s)
def loop_body(level, depth):
    p = 'l%d_' % level
    nodes = [helper.make_node('Identity', [p + 'cin'], [p + 'cout'])]
    if level + 1 < depth:
        nodes.append(helper.make_node('Loop', ['M', '', p + 'xin'], [p + 'xout'], body=loop_body(level + 1, depth)))
    else:
        nodes.append(helper.make_node('Add', [p + 'xin', 'one'], [p + 'xout']))
    return helper.make_graph(nodes, p + 'body', [vi(p + 'i', T.INT64, []), vi(p + 'cin', T.BOOL, []), vi(p + 'xin')],
                             [vi(p + 'cout', T.BOOL, []), vi(p + 'xout')])
inits = [numpy_helper.from_array(np.array(4096, np.int64), 'M'), numpy_helper.from_array(np.ones(1, np.float32), 'one')]
g = helper.make_graph([helper.make_node('Loop', ['M', '', 'x'], ['y'], body=loop_body(0, 3))], 'g', [vi('x')], [vi('y')], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), 'loops.onnx')
PY
  refused 120 "more than the limit of 1048576" "$BIN/popc-onnx" loops.onnx -o l.popef
  ;;
*) die "unknown case $CASE" ;;
esac
