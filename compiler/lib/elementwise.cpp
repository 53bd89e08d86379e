// Elementwise ops (popops-like): the output takes the mapping of a same-shape
// operand so most operands need no exchange; each tile's block is split into
// one vertex per worker. Broadcast operands are gathered to the tile, a
// single-element operand is passed as a scalar. Operands may have different
// dtypes (Cast, comparisons, Where, Pow); the vertex spec records them.
#include "compiler/lib/ops.h"

#include "compiler/ir/elementwise_shapes.h"
#include "compiler/ir/op_registry.h"

#include "support/error.h"

#include <algorithm>
#include <limits>

namespace popc::lib {

Value lowerElementwise(Lowering &L, const std::string &name, ops::Elementwise op,
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

  // The vertex's dtype: Where's is that of its values, every other op's that of input 0.
  const DType dtype = op == ops::Elementwise::Where ? inputs.at(1).info.dtype : inputs.at(0).info.dtype;
  std::vector<DType> inputDTypes;
  for (const Value &in : inputs)
    inputDTypes.push_back(in.info.dtype);
  if (std::all_of(inputDTypes.begin(), inputDTypes.end(), [&](DType t) { return t == dtype; }))
    inputDTypes.clear();
  std::optional<DType> outDType;
  if (outInfo.dtype != dtype)
    outDType = outInfo.dtype;

  OpBuilder b(L, name);
  const size_t es = out.elemSize();
  // A copy: gather() adds temporaries to the graph, which may move its tensors.
  // The output's intervals grouped by tile, each tile's in tensor order (a
  // scan of the whole mapping per tile was quadratic in the tiles).
  std::vector<graph::Interval> mapping = g.tensor(out.tensor).mapping;
  std::stable_sort(mapping.begin(), mapping.end(),
                   [](const graph::Interval &a, const graph::Interval &b) { return a.tile < b.tile; });
  for (auto [tile, blockBytes] : g.blockSizes(out.tensor)) {
    const auto tileBegin = std::lower_bound(mapping.begin(), mapping.end(), tile,
                                            [](const graph::Interval &iv, uint32_t t) { return iv.tile < t; });
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
        for (auto iv = tileBegin; iv != mapping.end() && iv->tile == tile; ++iv)
          addBroadcastRuns(runs, outInfo.shape, in.info.shape, iv->begin / es, iv->end / es, in.elemSize());
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
      codegen::ElementwiseSpec spec{op, dtype, uint32_t(n), scalar, params, inputDTypes, outDType};
      b.addVertex(spec, tile, std::move(fields));
    }
  }
  return out;
}

namespace {

// The op's inputs, each viewed with the shape it broadcasts with (legacy
// broadcast attributes, see ir/elementwise_shapes.h).
std::vector<Value> operands(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  std::vector<Value> values;
  for (size_t i = 0; i < op.inputs.size(); ++i)
    if (op.hasInput(i)) {
      Value v = L.value(op.inputs[i]);
      v.info.shape = ir::elementwiseOperandShape(op, g, i);
      values.push_back(v);
    }
  return values;
}

const ir::TensorInfo &outputInfo(const ir::Op &op, const ir::Graph &g) { return g.tensor(op.outputs[0]).info; }

// The output as a view of input 0 (same bytes, no vertex).
void bindView(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  Value v = L.value(op.inputs[0]);
  v.info = outputInfo(op, g);
  L.bind(op.outputs[0], v);
}

// One vertex kind of the op's name; its kernel params are the op's attributes
// (elementwise.def's Params column: names and defaults in kernel order).
LowerFn simple(ops::Elementwise kernelOp) {
  return [kernelOp](const ir::Op &op, const ir::Graph &g, Lowering &L) {
    std::vector<double> params;
    for (const auto &[name, fallback] : ops::info(kernelOp).params)
      params.push_back(op.attrs.getFloat(name, fallback));
    L.bind(op.outputs[0], lowerElementwise(L, op.name, kernelOp, operands(op, g, L), outputInfo(op, g), params));
  };
}

// Sum, Mean, Max, Min: one vertex reads every input (each broadcast to the output).
LowerFn variadic(ops::Elementwise kernelOp) {
  return [kernelOp](const ir::Op &op, const ir::Graph &g, Lowering &L) {
    std::vector<Value> ins = operands(op, g, L);
    if (ins.size() == 1 && ins[0].info.shape == outputInfo(op, g).shape)
      return bindView(op, g, L);
    L.bind(op.outputs[0], lowerElementwise(L, op.name, kernelOp, ins, outputInfo(op, g)));
  };
}

void lowerCast(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const Value &x = L.value(op.inputs[0]);
  if (x.info.dtype == outputInfo(op, g).dtype)
    return bindView(op, g, L);
  L.bind(op.outputs[0], lowerElementwise(L, op.name, ops::Elementwise::Cast, {x}, outputInfo(op, g)));
}

void lowerBitShift(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const bool left = op.attrs.getString("direction", "") == "LEFT";
  L.bind(op.outputs[0],
         lowerElementwise(L, op.name, left ? ops::Elementwise::ShiftLeft : ops::Elementwise::ShiftRight, operands(op, g, L), outputInfo(op, g)));
}

// Clip's bounds are attributes (opset < 11) or optional scalar inputs (opset
// >= 11). Constant bounds become vertex parameters; bounds only known at run
// time are applied by ClipLow/ClipHigh vertices (lower bound first, so
// min > max gives max as numpy.clip does).
void lowerClip(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const auto &outInfo = outputInfo(op, g);
  constexpr double inf = std::numeric_limits<double>::infinity();
  double lo = op.attrs.getFloat("min", -inf);
  double hi = op.attrs.getFloat("max", inf);
  std::vector<size_t> runtime;
  for (size_t i : {1, 2}) {
    if (!op.hasInput(i))
      continue;
    if (auto c = ir::constantValue(g, op.inputs[i]))
      (i == 1 ? lo : hi) = c->toDoubles().at(0);
    else
      runtime.push_back(i);
  }
  Value x = L.value(op.inputs[0]);
  const bool constBounds = lo != -inf || hi != inf;
  if (!constBounds && runtime.empty())
    return bindView(op, g, L);
  if (constBounds)
    x = lowerElementwise(L, runtime.empty() ? op.name : op.name + "/const", ops::Elementwise::Clip, {x}, outInfo,
                         {lo, hi});
  for (size_t k = 0; k < runtime.size(); ++k) {
    const size_t i = runtime[k];
    const std::string name = k + 1 == runtime.size() ? op.name : op.name + "/min";
    x = lowerElementwise(L, name, i == 1 ? ops::Elementwise::ClipLow : ops::Elementwise::ClipHigh, {x, L.value(op.inputs[i])}, outInfo);
  }
  L.bind(op.outputs[0], x);
}

// The ONNX ops elementwise.def lowers with a function of their own.
LowerFn customLowering(ops::Elementwise op) {
  switch (op) {
  case ops::Elementwise::Cast: case ops::Elementwise::CastLike: return lowerCast;
  case ops::Elementwise::Clip: return lowerClip;
  case ops::Elementwise::BitShift: return lowerBitShift;
  default: POPC_ASSERT(false && "elementwise.def: a Custom lowering without a function in lib/elementwise.cpp");
  }
  return {};
}

} // namespace

void registerElementwiseLowerings(LoweringTable &t) {
  for (ops::Elementwise op : ops::allElementwise()) {
    const ops::ElementwiseInfo &info = ops::info(op);
    const std::string name(info.name);
    switch (info.lowering) {
    case ops::Lowering::Simple: t[name] = simple(op); break;
    case ops::Lowering::Variadic: t[name] = variadic(op); break;
    case ops::Lowering::Custom: t[name] = customLowering(op); break;
    case ops::Lowering::None: break;
    }
  }
}

} // namespace popc::lib
