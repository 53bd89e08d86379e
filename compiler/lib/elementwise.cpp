// Elementwise ops (popops-like): the output takes the mapping of a same-shape
// operand so most operands need no exchange; each tile's block is split into
// one vertex per worker. Broadcast operands are gathered to the tile, a
// single-element operand is passed as a scalar.
#include "compiler/lib/ops.h"

#include "compiler/ir/op_registry.h"

#include "support/error.h"

namespace popc::lib {

Value lowerElementwise(Lowering &L, const std::string &name, const std::string &op,
                       const std::vector<Value> &inputs, const ir::TensorInfo &outInfo,
                       std::vector<double> params) {
  auto &g = L.graph;
  Value out = L.newValue(name, outInfo);
  const Value *like = nullptr;
  for (const Value &in : inputs)
    if (!like && in.info.shape == outInfo.shape && in.elemSize() == out.elemSize())
      like = &in;
  if (like)
    L.mapLike(out, *like);
  else
    L.mapLinearly(out);
  if (outInfo.elements() == 0)
    return out;

  OpBuilder b(L, name);
  const size_t es = out.elemSize();
  const auto &mapping = g.tensor(out.tensor).mapping;
  for (auto [tile, blockBytes] : g.blockSizes(out.tensor)) {
    const uint64_t elems = blockBytes / es;
    std::vector<graph::FieldRef> inFields;
    std::vector<bool> scalar;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value &in = inputs[i];
      RunList runs;
      const bool isScalar = in.info.elements() == 1 && outInfo.elements() != 1;
      if (isScalar) {
        runs.add(0, in.elemSize());
      } else {
        for (const graph::Interval &iv : mapping)
          if (iv.tile == tile)
            addBroadcastRuns(runs, outInfo.shape, in.info.shape, iv.begin / es, iv.end / es, in.elemSize());
      }
      inFields.push_back(b.gather(in.tensor, runs, tile, "in" + std::to_string(i)));
      scalar.push_back(isScalar);
    }
    const auto bounds = splitEvenly(elems, L.workers(), 64);
    for (size_t c = 0; c + 1 < bounds.size(); ++c) {
      const uint64_t begin = bounds[c], n = bounds[c + 1] - bounds[c];
      std::vector<graph::FieldRef> fields;
      for (size_t i = 0; i < inputs.size(); ++i) {
        graph::FieldRef f = inFields[i];
        if (!scalar[i]) {
          f.blockOffset += begin * inputs[i].elemSize();
          f.bytes = n * inputs[i].elemSize();
        }
        fields.push_back(f);
      }
      fields.push_back({out.tensor, tile, begin * es, n * es});
      codegen::ElementwiseSpec spec{op, inputs[0].info.dtype, uint32_t(n), scalar, params};
      b.addVertex(spec, tile, std::move(fields));
    }
  }
  return out;
}

namespace {

std::vector<Value> operands(const ir::Op &op, Lowering &L) {
  std::vector<Value> values;
  for (const std::string &in : op.inputs)
    if (!in.empty())
      values.push_back(L.value(in));
  return values;
}

LowerFn simple(std::string kernelOp) {
  return [kernelOp](const ir::Op &op, const ir::Graph &g, Lowering &L) {
    const auto &outInfo = g.tensor(op.outputs[0]).info;
    L.bind(op.outputs[0], lowerElementwise(L, op.name, kernelOp, operands(op, L), outInfo));
  };
}

// Variadic ops (Sum, Max, Min with N inputs) as a chain of binary vertices.
LowerFn variadic(std::string kernelOp) {
  return [kernelOp](const ir::Op &op, const ir::Graph &g, Lowering &L) {
    const auto &outInfo = g.tensor(op.outputs[0]).info;
    std::vector<Value> ins = operands(op, L);
    Value acc = ins[0];
    if (ins.size() == 1) {
      acc = lowerElementwise(L, op.name, "Copy", {acc}, outInfo);
    }
    for (size_t i = 1; i < ins.size(); ++i) {
      // Partial results broadcast progressively; the last one has outInfo's shape.
      ir::TensorInfo info = outInfo;
      info.shape = ir::broadcastShapes(acc.info.shape, ins[i].info.shape);
      const std::string name = i + 1 == ins.size() ? op.name : op.name + "/" + std::to_string(i);
      acc = lowerElementwise(L, name, kernelOp, {acc, ins[i]}, info);
    }
    L.bind(op.outputs[0], acc);
  };
}

void lowerLeakyRelu(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const auto &outInfo = g.tensor(op.outputs[0]).info;
  L.bind(op.outputs[0], lowerElementwise(L, op.name, "LeakyRelu", {L.value(op.inputs[0])}, outInfo,
                                         {op.attrs.getFloat("alpha", 0.01)}));
}

// Clip's bounds are attributes (opset < 11) or constant inputs (opset >= 11).
void lowerClip(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const auto &outInfo = g.tensor(op.outputs[0]).info;
  double lo = op.attrs.getFloat("min", -3.4028234663852886e38);
  double hi = op.attrs.getFloat("max", 3.4028234663852886e38);
  auto bound = [&](size_t i, double &v) {
    if (!op.hasInput(i))
      return;
    const ir::Tensor &t = g.tensor(op.inputs[i]);
    if (t.kind != ir::TensorKind::Constant)
      fail("Clip '{}': input {} ('{}') must be a constant", op.name, i, t.name);
    v = t.toDoubles().at(0);
  };
  bound(1, lo);
  bound(2, hi);
  L.bind(op.outputs[0], lowerElementwise(L, op.name, "Clip", {L.value(op.inputs[0])}, outInfo, {lo, hi}));
}

} // namespace

void registerElementwiseLowerings(LoweringTable &t) {
  for (const char *op : {"Add", "Sub", "Mul", "Div", "Pow", "Relu", "Sigmoid", "Tanh", "Exp", "Log",
                         "Neg", "Abs", "Sqrt", "Reciprocal", "Floor", "Ceil", "Erf", "Sin", "Cos"})
    t[op] = simple(op);
  t["Sum"] = variadic("Add");
  t["Max"] = variadic("Max");
  t["Min"] = variadic("Min");
  t["LeakyRelu"] = lowerLeakyRelu;
  t["Clip"] = lowerClip;
}

} // namespace popc::lib
