// Elementwise ops: numpy-broadcasting arithmetic, activations, comparisons,
// logical ops, Where and Cast.
#include "compiler/ir/elementwise_shapes.h"
#include "compiler/ir/op_helpers.h"

#include <functional>
#include <variant>

namespace popc::ir::detail {

namespace {

bool isNumeric(DType t) { return t != DType::Bool; }
bool isUnsigned(DType t) { return dtypeName(t).substr(0, 4) == "uint"; } // uint8 .. uint64

void requireNumeric(const Op &op, const TensorInfo &info, const char *what) {
  if (!isNumeric(info.dtype))
    failOp(op, "{} must be numeric, got {}", what, dtypeName(info.dtype));
}

void requireBool(const Op &op, const TensorInfo &info, const char *what) {
  if (info.dtype != DType::Bool)
    failOp(op, "{} must be bool, got {}", what, dtypeName(info.dtype));
}

// Two inputs of one type, broadcast together; `numeric` refuses bool.
TensorInfo broadcastPair(const Op &op, const Graph &graph, bool numeric) {
  const TensorInfo &a = inputInfo(op, graph, 0);
  const TensorInfo &b = inputInfo(op, graph, 1);
  requireSameDType(op, a, b, "input A", "input B");
  if (numeric && !isNumeric(a.dtype))
    failOp(op, "bool inputs are not supported");
  return TensorInfo{a.dtype, broadcastShapes(elementwiseOperandShape(op, graph, 0), elementwiseOperandShape(op, graph, 1))};
}

std::vector<TensorInfo> inferBinary(const Op &op, const Graph &graph) { return {broadcastPair(op, graph, true)}; }

// RandomBits(index, counter): int32 indices and a scalar int32 counter.
std::vector<TensorInfo> inferRandomBits(const Op &op, const Graph &graph) {
  const TensorInfo &index = inputInfo(op, graph, 0), &counter = inputInfo(op, graph, 1);
  if (index.dtype != DType::I32 || counter.dtype != DType::I32 || counter.elements() != 1)
    failOp(op, "takes int32 indices and a scalar int32 counter, got {} and {} {}", dtypeName(index.dtype),
           dtypeName(counter.dtype), shapeToString(counter.shape));
  return {index};
}

std::vector<TensorInfo> inferMod(const Op &op, const Graph &graph) {
  const int64_t fmod = op.attrs.getInt("fmod", 0);
  if (fmod != 0 && fmod != 1)
    failOp(op, "attribute 'fmod' must be 0 or 1, got {}", fmod);
  return {broadcastPair(op, graph, true)};
}

std::vector<TensorInfo> inferBitShift(const Op &op, const Graph &graph) {
  TensorInfo out = broadcastPair(op, graph, true);
  if (!isInteger(out.dtype))
    failOp(op, "inputs must be integers, got {}", dtypeName(out.dtype));
  const std::string dir = op.attrs.getString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    failOp(op, "attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"{}\"", dir);
  return {out};
}

// Pow: the base type is the output type; the exponent may be any numeric type.
std::vector<TensorInfo> inferPow(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const TensorInfo &y = inputInfo(op, graph, 1);
  requireNumeric(op, x, "base (input 0)");
  requireNumeric(op, y, "exponent (input 1)");
  return {TensorInfo{x.dtype, broadcastShapes(x.shape, y.shape)}};
}

// PRelu: slope broadcasts to X's shape (unidirectionally).
std::vector<TensorInfo> inferPRelu(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const TensorInfo &slope = inputInfo(op, graph, 1);
  requireSameDType(op, x, slope, "X", "slope");
  if (!isFloat(x.dtype) && !(isInteger(x.dtype) && !isUnsigned(x.dtype)))
    failOp(op, "input type {} is not supported (float or signed integer)", dtypeName(x.dtype));
  if (broadcastShapes(x.shape, elementwiseOperandShape(op, graph, 1)) != x.shape)
    failOp(op, "slope shape {} does not broadcast to X shape {}", shapeToString(slope.shape),
           shapeToString(x.shape));
  return {x};
}

std::vector<TensorInfo> inferLogical(const Op &op, const Graph &graph) {
  TensorInfo out = broadcastPair(op, graph, false);
  requireBool(op, out, "inputs");
  return {out};
}

std::vector<TensorInfo> inferNot(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireBool(op, x, "input");
  return {x};
}

// Equal (any type) and the ordered comparisons (numeric): bool output.
std::vector<TensorInfo> inferCompare(const Op &op, const Graph &graph) {
  TensorInfo out = broadcastPair(op, graph, op.type != "Equal");
  out.dtype = DType::Bool;
  return {out};
}

std::vector<TensorInfo> inferFloatPredicate(const Op &op, const Graph &graph) {
  TensorInfo x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input");
  x.dtype = DType::Bool;
  return {x};
}

std::vector<TensorInfo> inferWhere(const Op &op, const Graph &graph) {
  const TensorInfo &c = inputInfo(op, graph, 0);
  const TensorInfo &x = inputInfo(op, graph, 1);
  const TensorInfo &y = inputInfo(op, graph, 2);
  requireBool(op, c, "condition (input 0)");
  requireSameDType(op, x, y, "X", "Y");
  return {TensorInfo{x.dtype, broadcastShapes(c.shape, broadcastShapes(x.shape, y.shape))}};
}

// ONNX TensorProto.DataType numbers and Cast-1's type names.
struct OnnxType {
  int64_t number;
  const char *name;
  std::optional<DType> dtype;
};
const OnnxType kOnnxTypes[] = {
    {1, "FLOAT", DType::F32},
    {2, "UINT8", DType::U8},
    {3, "INT8", DType::I8},
    {4, "UINT16", dtypeFromName("uint16")}, // by name: nullopt where the type is not built in
    {5, "INT16", DType::I16},
    {6, "INT32", DType::I32},
    {7, "INT64", DType::I64},
    {8, "STRING", std::nullopt},
    {9, "BOOL", DType::Bool},
    {10, "FLOAT16", DType::F16},
    {11, "DOUBLE", DType::F64},
    {12, "UINT32", dtypeFromName("uint32")},
    {13, "UINT64", dtypeFromName("uint64")},
    {14, "COMPLEX64", std::nullopt},
    {15, "COMPLEX128", std::nullopt},
    {16, "BFLOAT16", DType::BF16},
};

DType castTarget(const Op &op) {
  if (!op.attrs.has("to"))
    failOp(op, "attribute 'to' is missing");
  const AttrValue &v = op.attrs.all().at("to");
  const auto *name = std::get_if<std::string>(&v);
  const int64_t number = name ? 0 : op.attrs.getInt("to");
  for (const OnnxType &e : kOnnxTypes)
    if (name ? *name == e.name : number == e.number) {
      if (!e.dtype)
        failOp(op, "casting to {} is not supported (supported: float, float16, double, int8, int16, int32, "
                   "int64, uint8, uint16, uint32, uint64, bool)",
               e.name);
      return *e.dtype;
    }
  failOp(op, "attribute 'to' = {} is not an ONNX element type", name ? *name : std::to_string(number));
}

std::vector<TensorInfo> inferCast(const Op &op, const Graph &graph) {
  TensorInfo x = inputInfo(op, graph, 0);
  x.dtype = castTarget(op);
  return {x};
}

std::vector<TensorInfo> inferCastLike(const Op &op, const Graph &graph) {
  TensorInfo x = inputInfo(op, graph, 0);
  x.dtype = inputInfo(op, graph, 1).dtype;
  return {x};
}

std::vector<TensorInfo> inferFloatUnary(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input");
  return {x};
}

std::vector<TensorInfo> inferRelu(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  // Relu-14 added signed integer types.
  bool ok = isFloat(x.dtype) || (graph.opset >= 14 && x.dtype != DType::U8 && x.dtype != DType::Bool);
  if (!ok)
    failOp(op, "input type {} is not supported at opset {}", dtypeName(x.dtype), graph.opset);
  return {x};
}

std::vector<TensorInfo> inferIdentity(const Op &op, const Graph &graph) { return {inputInfo(op, graph, 0)}; }

// Abs, Neg, Sign: numeric types (integers included), not bool.
std::vector<TensorInfo> inferNumericUnary(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (x.dtype == DType::Bool)
    failOp(op, "bool input is not supported");
  return {x};
}

// Sum, Mean, Max, Min: any number of inputs of one type, broadcast together.
std::vector<TensorInfo> inferVariadic(const Op &op, const Graph &graph) {
  TensorInfo out = inputInfo(op, graph, 0);
  if (out.dtype == DType::Bool)
    failOp(op, "bool inputs are not supported");
  if (op.type == "Mean")
    requireFloat(op, out, "input 0");
  for (size_t i = 1; i < op.inputs.size(); ++i) {
    const TensorInfo &in = inputInfo(op, graph, i);
    requireSameDType(op, out, in, "input 0", fmt::format("input {}", i).c_str());
    out.shape = broadcastShapes(out.shape, in.shape);
  }
  return {out};
}

// Clip: min/max are attributes before opset 11, optional scalar inputs after.
std::vector<TensorInfo> inferClip(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (x.dtype == DType::Bool)
    failOp(op, "bool input is not supported");
  for (size_t i = 1; i < op.inputs.size(); ++i)
    if (op.hasInput(i)) {
      const TensorInfo &bound = inputInfo(op, graph, i);
      if (bound.elements() != 1)
        failOp(op, "input {} must be a scalar", i);
      requireSameDType(op, x, bound, "input", i == 1 ? "min" : "max");
    }
  return {x};
}

// Gradient rules (autodiff.h). g is dLoss/dOutput; X the input, Y the output.

// Input i's share of a broadcast op's gradient, summed back to its shape.
void addBroadcastGrad(GradContext &c, size_t i, const std::string &grad) {
  c.addGrad(i, c.sumToShape(grad, c.inputInfo(i).shape));
}

void gradAdd(GradContext &c) {
  const std::string g = c.outputGrad(0);
  for (size_t i : {0, 1})
    if (c.wantsGrad(i))
      addBroadcastGrad(c, i, g);
}

void gradSub(GradContext &c) {
  const std::string g = c.outputGrad(0);
  if (c.wantsGrad(0))
    addBroadcastGrad(c, 0, g);
  if (c.wantsGrad(1))
    addBroadcastGrad(c, 1, c.emit("Neg", {g}));
}

void gradMul(GradContext &c) {
  const std::string g = c.outputGrad(0);
  if (c.wantsGrad(0))
    addBroadcastGrad(c, 0, c.emit("Mul", {g, c.op.inputs[1]}));
  if (c.wantsGrad(1))
    addBroadcastGrad(c, 1, c.emit("Mul", {g, c.op.inputs[0]}));
}

void gradDiv(GradContext &c) { // Y = A / B: dA = g / B, dB = -g * Y / B
  const std::string g = c.outputGrad(0), &b = c.op.inputs[1];
  if (c.wantsGrad(0))
    addBroadcastGrad(c, 0, c.emit("Div", {g, b}));
  if (c.wantsGrad(1))
    addBroadcastGrad(c, 1, c.emit("Neg", {c.emit("Div", {c.emit("Mul", {g, c.op.outputs[0]}), b})}));
}

void gradPow(GradContext &c) { // Y = X^E: dX = g * E * X^(E-1), dE = g * Y * log(X)
  const std::string g = c.outputGrad(0), &x = c.op.inputs[0];
  const DType t = c.inputInfo(0).dtype;
  std::string e = c.op.inputs[1];
  if (c.inputInfo(1).dtype != t) {
    Attributes to;
    to.set("to", onnxElementType(t));
    e = c.emit("Cast", {e}, to);
  }
  if (c.wantsGrad(0)) {
    const std::string xPow = c.emit("Pow", {x, c.emit("Sub", {e, c.scalar(1.0, t)})});
    addBroadcastGrad(c, 0, c.emit("Mul", {g, c.emit("Mul", {e, xPow})}));
  }
  if (c.wantsGrad(1))
    addBroadcastGrad(c, 1, c.emit("Mul", {g, c.emit("Mul", {c.op.outputs[0], c.emit("Log", {x})})}));
}

// dX = g * f'(X, Y) for a unary op; `derivative` builds f' from X and Y.
GradFn unaryGrad(std::function<std::string(GradContext &, const std::string &x, const std::string &y)> derivative) {
  return [derivative](GradContext &c) {
    if (c.wantsGrad(0))
      c.addGrad(0, c.emit("Mul", {c.outputGrad(0), derivative(c, c.op.inputs[0], c.op.outputs[0])}));
  };
}

// dX = Where(mask, g, 0).
void addMaskedGrad(GradContext &c, const std::string &mask) {
  const std::string zero = c.scalar(0.0, c.inputInfo(0).dtype);
  c.addGrad(0, c.emit("Where", {mask, c.outputGrad(0), zero}));
}

void gradRelu(GradContext &c) {
  if (c.wantsGrad(0))
    addMaskedGrad(c, c.emit("Greater", {c.op.inputs[0], c.scalar(0.0, c.inputInfo(0).dtype)}));
}

void gradClip(GradContext &c) { // passes g where min <= X <= max
  if (!c.wantsGrad(0))
    return;
  const DType t = c.inputInfo(0).dtype;
  auto bound = [&](size_t i, const char *attr) -> std::string {
    if (c.op.hasInput(i))
      return c.op.inputs[i];
    if (c.op.attrs.has(attr))
      return c.scalar(c.op.attrs.getFloat(attr, 0.0), t);
    return "";
  };
  std::string mask;
  for (auto [b, cmp] : {std::pair(bound(1, "min"), "GreaterOrEqual"), std::pair(bound(2, "max"), "LessOrEqual")})
    if (!b.empty()) {
      const std::string m = c.emit(cmp, {c.op.inputs[0], b});
      mask = mask.empty() ? m : c.emit("And", {mask, m});
    }
  if (mask.empty())
    c.addGrad(0, c.outputGrad(0));
  else
    addMaskedGrad(c, mask);
}

void gradLeakyRelu(GradContext &c) { // slope alpha below 0
  if (!c.wantsGrad(0))
    return;
  const DType t = c.inputInfo(0).dtype;
  const std::string slope = c.emit("Where", {c.emit("Greater", {c.op.inputs[0], c.scalar(0.0, t)}), c.scalar(1.0, t),
                                             c.scalar(c.op.attrs.getFloat("alpha", 0.01), t)});
  c.addGrad(0, c.emit("Mul", {c.outputGrad(0), slope}));
}

using S = std::string;
std::string one(GradContext &c) { return c.scalar(1.0, c.inputInfo(0).dtype); }

const GradFn gradSigmoid = // Y (1 - Y)
    unaryGrad([](GradContext &c, const S &, const S &y) { return c.emit("Mul", {y, c.emit("Sub", {one(c), y})}); });
const GradFn gradTanh = // 1 - Y^2
    unaryGrad([](GradContext &c, const S &, const S &y) { return c.emit("Sub", {one(c), c.emit("Mul", {y, y})}); });
const GradFn gradExp = unaryGrad([](GradContext &, const S &, const S &y) { return y; });
const GradFn gradLog = unaryGrad([](GradContext &c, const S &x, const S &) { return c.emit("Div", {one(c), x}); });
const GradFn gradSqrt = // 1 / (2 Y)
    unaryGrad([](GradContext &c, const S &, const S &y) { return c.emit("Div", {c.scalar(0.5, c.inputInfo(0).dtype), y}); });
const GradFn gradReciprocal = // -Y^2
    unaryGrad([](GradContext &c, const S &, const S &y) { return c.emit("Neg", {c.emit("Mul", {y, y})}); });
const GradFn gradSin = unaryGrad([](GradContext &c, const S &x, const S &) { return c.emit("Cos", {x}); });
const GradFn gradCos =
    unaryGrad([](GradContext &c, const S &x, const S &) { return c.emit("Neg", {c.emit("Sin", {x})}); });
const GradFn gradErf = // 2/sqrt(pi) exp(-X^2): exact GELU
    unaryGrad([](GradContext &c, const S &x, const S &) {
      return c.emit("Mul", {c.scalar(1.1283791670955126, c.inputInfo(0).dtype),
                            c.emit("Exp", {c.emit("Neg", {c.emit("Mul", {x, x})})})});
    });
const GradFn gradSoftplus = // sigmoid(X)
    unaryGrad([](GradContext &c, const S &x, const S &) { return c.emit("Sigmoid", {x}); });
const GradFn gradAbs = unaryGrad([](GradContext &c, const S &x, const S &) { return c.emit("Sign", {x}); });

void gradNeg(GradContext &c) {
  if (c.wantsGrad(0))
    c.addGrad(0, c.emit("Neg", {c.outputGrad(0)}));
}

void gradIdentity(GradContext &c) {
  if (c.wantsGrad(0))
    c.addGrad(0, c.outputGrad(0));
}

void gradZero(GradContext &) {} // piecewise constant (Floor, Ceil, Round, Sign): zero gradient
const GradFn noGrad = {};       // not differentiable

void gradWhere(GradContext &c) {
  const std::string g = c.outputGrad(0), &cond = c.op.inputs[0];
  for (size_t i : {1, 2})
    if (c.wantsGrad(i)) {
      const std::string zero = c.scalar(0.0, c.inputInfo(i).dtype);
      addBroadcastGrad(c, i, c.emit("Where", {cond, i == 1 ? g : zero, i == 1 ? zero : g}));
    }
}

void gradCast(GradContext &c) {
  if (!c.wantsGrad(0))
    return;
  Attributes to;
  to.set("to", onnxElementType(c.inputInfo(0).dtype));
  c.addGrad(0, c.emit("Cast", {c.outputGrad(0)}, to));
}

void gradSumMean(GradContext &c) {
  std::string g = c.outputGrad(0);
  if (c.op.type == "Mean")
    g = c.emit("Div", {g, c.scalar(double(c.op.inputs.size()), c.outputInfo(0).dtype)});
  for (size_t i = 0; i < c.op.inputs.size(); ++i)
    if (c.wantsGrad(i))
      addBroadcastGrad(c, i, g);
}

// Ops elementwise.def declares as kernels only; never registered.
std::vector<TensorInfo> kernelOnly(const Op &op, const Graph &) { failOp(op, "not an ONNX op"); }

} // namespace

int64_t onnxElementType(DType t) {
  for (const OnnxType &e : kOnnxTypes)
    if (e.dtype == t)
      return e.number;
  POPC_ASSERT(false && "every DType has an ONNX number");
  return 0;
}

void registerElementwiseOps(OpRegistry &reg) {
  // Every ONNX elementwise op, from its one line in compiler/ops/elementwise.def.
#define POPC_ELEMENTWISE(Name, Arity, Types, Sig, Cost, Params, Infer, MinIn, MaxIn, Grad, Host, Lower)             \
  if ((MinIn) > 0)                                                                                                     \
    reg.add({#Name, MinIn, MaxIn, Infer, Grad});
#include "compiler/ops/elementwise.def"
  reg.add({"Identity", 1, 1, inferIdentity, gradIdentity});
  // ai.graphcore: the sum of x over the replicas (replicated training's gradients).
  reg.add({"ReplicatedAllReduce", 1, 1, inferIdentity, {}, true});
}

} // namespace popc::ir::detail

namespace popc::ir {

Shape elementwiseOperandShape(const Op &op, const Graph &graph, size_t i) {
  using detail::failOp;
  const Shape &shape = detail::inputInfo(op, graph, i).shape;
  const bool arith = op.type == "Add" || op.type == "Sub" || op.type == "Mul" || op.type == "Div";
  if (arith && i == 1 && op.attrs.getInt("broadcast", 0) != 0) {
    const Shape &a = detail::inputInfo(op, graph, 0).shape;
    const int64_t rank = int64_t(a.size()), brank = int64_t(shape.size());
    const int64_t axis = op.attrs.getInt("axis", rank - brank);
    if (brank > rank || axis < 0 || axis + brank > rank)
      failOp(op, "legacy broadcast of B {} into A {} at axis {} does not fit", shapeToString(shape),
             shapeToString(a), axis);
    Shape out(size_t(rank), 1);
    std::copy(shape.begin(), shape.end(), out.begin() + axis);
    for (size_t d = 0; d < out.size(); ++d)
      if (out[d] != 1 && out[d] != a[d])
        failOp(op, "legacy broadcast: B {} at axis {} does not broadcast to A {}", shapeToString(shape), axis,
               shapeToString(a));
    return out;
  }
  if (arith && op.attrs.has("axis") && op.attrs.getInt("broadcast", 0) == 0)
    failOp(op, "attribute 'axis' needs broadcast=1 (opset < 7)");
  if (op.type == "PRelu" && i == 1) {
    // Also at later opsets when numpy broadcasting cannot apply: the ONNX
    // version converter upgrades PRelu-6 models without reshaping the slope.
    const Shape &x = detail::inputInfo(op, graph, 0).shape;
    const bool perChannel = shape.size() == 1 && x.size() > 2 && shape[0] == x[1] && shape[0] != 1;
    if (perChannel && (graph.opset < 7 || shape[0] != x.back())) {
      Shape out(x.size() - 1, 1);
      out[0] = shape[0];
      return out;
    }
  }
  return shape;
}

} // namespace popc::ir
