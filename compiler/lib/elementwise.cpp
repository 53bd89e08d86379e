// Elementwise ops (popops-like): the output takes the mapping of a same-shape
// operand so most operands need no exchange; each tile's block is split into
// one vertex per worker. Broadcast operands are gathered to the tile, a
// single-element operand is passed as a scalar. Operands may have different
// dtypes (Cast, comparisons, Where, Pow); the vertex spec records them.
#include "compiler/lib/ops.h"

#include "compiler/ir/elementwise_shapes.h"
#include "compiler/ir/op_registry.h"

#include "support/error.h"

#include <limits>

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

  // The vertex's dtype: Where's is that of its values, every other op's that of input 0.
  const DType dtype = op == "Where" ? inputs.at(1).info.dtype : inputs.at(0).info.dtype;
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
  const std::vector<graph::Interval> mapping = g.tensor(out.tensor).mapping;
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

LowerFn simple(std::string kernelOp) {
  return [kernelOp](const ir::Op &op, const ir::Graph &g, Lowering &L) {
    L.bind(op.outputs[0], lowerElementwise(L, op.name, kernelOp, operands(op, g, L), outputInfo(op, g)));
  };
}

// An op whose kernel params are attributes: {name, default} in kernel order.
LowerFn withAttrs(std::string kernelOp, std::vector<std::pair<const char *, double>> attrs) {
  return [kernelOp, attrs](const ir::Op &op, const ir::Graph &g, Lowering &L) {
    std::vector<double> params;
    for (const auto &[name, fallback] : attrs)
      params.push_back(op.attrs.getFloat(name, fallback));
    L.bind(op.outputs[0], lowerElementwise(L, op.name, kernelOp, operands(op, g, L), outputInfo(op, g), params));
  };
}

// Sum, Mean, Max, Min: one vertex reads every input (each broadcast to the output).
LowerFn variadic(std::string kernelOp) {
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
  L.bind(op.outputs[0], lowerElementwise(L, op.name, "Cast", {x}, outputInfo(op, g)));
}

void lowerMod(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  L.bind(op.outputs[0], lowerElementwise(L, op.name, "Mod", operands(op, g, L), outputInfo(op, g),
                                         {double(op.attrs.getInt("fmod", 0))}));
}

void lowerIsInf(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  std::vector<double> params = {double(op.attrs.getInt("detect_positive", 1)),
                                double(op.attrs.getInt("detect_negative", 1))};
  L.bind(op.outputs[0], lowerElementwise(L, op.name, "IsInf", operands(op, g, L), outputInfo(op, g), params));
}

void lowerBitShift(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const bool left = op.attrs.getString("direction", "") == "LEFT";
  L.bind(op.outputs[0],
         lowerElementwise(L, op.name, left ? "ShiftLeft" : "ShiftRight", operands(op, g, L), outputInfo(op, g)));
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
    x = lowerElementwise(L, runtime.empty() ? op.name : op.name + "/const", "Clip", {x}, outInfo, {lo, hi});
  for (size_t k = 0; k < runtime.size(); ++k) {
    const size_t i = runtime[k];
    const std::string name = k + 1 == runtime.size() ? op.name : op.name + "/min";
    x = lowerElementwise(L, name, i == 1 ? "ClipLow" : "ClipHigh", {x, L.value(op.inputs[i])}, outInfo);
  }
  L.bind(op.outputs[0], x);
}

} // namespace

void registerElementwiseLowerings(LoweringTable &t) {
  for (const char *op :
       {"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Neg", "Abs", "Sign",
        "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh",
        "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Softsign", "HardSwish", "Not", "And", "Or", "Xor", "Equal",
        "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "IsNaN", "Where"})
    t[op] = simple(op);
  for (const char *op : {"Sum", "Mean", "Max", "Min"})
    t[op] = variadic(op);
  t["LeakyRelu"] = withAttrs("LeakyRelu", {{"alpha", 0.01}});
  t["Elu"] = withAttrs("Elu", {{"alpha", 1.0}});
  t["Celu"] = withAttrs("Celu", {{"alpha", 1.0}});
  t["ThresholdedRelu"] = withAttrs("ThresholdedRelu", {{"alpha", 1.0}});
  t["Selu"] = withAttrs("Selu", {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}});
  t["HardSigmoid"] = withAttrs("HardSigmoid", {{"alpha", 0.2}, {"beta", 0.5}});
  t["Shrink"] = withAttrs("Shrink", {{"bias", 0.0}, {"lambd", 0.5}});
  t["Mod"] = lowerMod;
  t["IsInf"] = lowerIsInf;
  t["BitShift"] = lowerBitShift;
  t["Cast"] = lowerCast;
  t["CastLike"] = lowerCast;
  t["Clip"] = lowerClip;
}

} // namespace popc::lib
