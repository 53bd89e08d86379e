// Data-movement ops. Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
// inference Dropout) share their input's device tensor; Transpose and Concat
// are pure exchange: copies into a linearly mapped output, no vertices.
#include "compiler/lib/ops.h"

#include "compiler/ir/op_attrs.h"

#include "support/error.h"

namespace popc::lib {

namespace {

void lowerView(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  // Inference Dropout keeps everything: its optional mask is all true.
  if (op.type == "Dropout" && op.outputs.size() > 1 && !op.outputs[1].empty()) {
    const ir::TensorInfo &maskInfo = g.tensor(op.outputs[1]).info;
    Value mask = L.newValue(op.outputs[1], maskInfo, graph::TensorRole::Constant);
    L.graph.tensor(mask.tensor).constData.assign(maskInfo.bytes(), 1);
    L.mapLinearly(mask);
    L.bind(op.outputs[1], mask);
  }
  Value v = L.value(op.inputs[0]);
  v.info = g.tensor(op.outputs[0]).info;
  L.bind(op.outputs[0], v);
}

// Copies `runs` of src, in order, to dst starting at byte `dstByte`.
void copyRuns(OpBuilder &b, graph::TensorId src, const RunList &runs, graph::TensorId dst, uint64_t dstByte) {
  auto &copies = b.lowering.graph.exchange(b.preExchange()).copies;
  for (const Run &r : runs.runs()) {
    copies.push_back({src, r.byte, dst, dstByte, r.bytes});
    dstByte += r.bytes;
  }
}

void lowerTranspose(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const Value x = L.value(op.inputs[0]);
  const Shape &shape = x.info.shape;
  const std::vector<int64_t> perm = ir::transposePerm(op, g);
  Value out = L.newValue(op.outputs[0], g.tensor(op.outputs[0]).info);
  L.mapLinearly(out);
  L.bind(op.outputs[0], out);
  OpBuilder b(L, op.name);
  const uint64_t es = x.elemSize();
  for (const graph::Interval &iv : L.graph.tensor(out.tensor).mapping) {
    RunList runs;
    addTransposeRuns(runs, shape, perm, iv.begin / es, iv.end / es, es);
    copyRuns(b, x.tensor, runs, out.tensor, iv.begin);
  }
}

void lowerConcat(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const ir::TensorInfo &info = g.tensor(op.outputs[0]).info;
  const int64_t axis = ir::concatAxis(op, g);
  Value out = L.newValue(op.outputs[0], info);
  L.mapLinearly(out);
  L.bind(op.outputs[0], out);
  OpBuilder b(L, op.name);
  const uint64_t es = dtypeSize(info.dtype);
  uint64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= uint64_t(info.shape[d]);
  for (size_t d = size_t(axis) + 1; d < info.shape.size(); ++d)
    inner *= uint64_t(info.shape[d]);
  const uint64_t outRow = uint64_t(info.shape[axis]) * inner * es;
  uint64_t offset = 0; // bytes into each output row
  for (const std::string &name : op.inputs) {
    const Value in = L.value(name);
    const uint64_t row = uint64_t(in.info.shape[axis]) * inner * es;
    for (uint64_t o = 0; o < outer && row > 0; ++o) {
      RunList runs;
      runs.add(o * row, row);
      copyRuns(b, in.tensor, runs, out.tensor, o * outRow + offset);
    }
    offset += row;
  }
}

} // namespace

void registerRearrangeLowerings(LoweringTable &t) {
  for (const char *op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
    t[op] = lowerView;
  t["Transpose"] = lowerTranspose;
  t["Concat"] = lowerConcat;
}

} // namespace popc::lib
