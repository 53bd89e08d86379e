// Reductions over axes (Reduce*, ArgMax/ArgMin) and the other ops that work
// along one axis as rows: Hardmax, CumSum, LRN, InstanceNormalization.
#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"
#include "compiler/ir/op_registry.h"

#include <algorithm>

namespace popc::ir {

ReduceParams reduceParams(const Op &op, const Graph &graph) {
  const TensorInfo &x = detail::inputInfo(op, graph, 0);
  const int64_t rank = int64_t(x.shape.size());
  ReduceParams p;
  p.keepDims = op.attrs.getInt("keepdims", 1) != 0;
  // ReduceSum takes axes as input 1 from opset 13 (the others from opset 18).
  const bool axesInput = op.type == "ReduceSum" ? graph.opset >= 13 : graph.opset >= 18;
  std::vector<int64_t> axes;
  if (axesInput) {
    if (op.attrs.has("axes"))
      detail::failOp(op, "'axes' is an input in opset {}, not an attribute", graph.opset);
    if (op.hasInput(1)) {
      axes = detail::constantInputInts(op, graph, 1, "axes");
    }
  } else {
    if (op.inputs.size() > 1)
      detail::failOp(op, "takes 1 input in opset {} (axes is an attribute), got {}", graph.opset,
                     op.inputs.size());
    axes = op.attrs.getInts("axes");
  }
  const bool noop = op.attrs.getInt("noop_with_empty_axes", 0) != 0;
  if (axes.empty() && !noop)
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  for (int64_t a : axes)
    p.axes.push_back(normalizeAxis(op, a, rank));
  std::sort(p.axes.begin(), p.axes.end());
  if (std::adjacent_find(p.axes.begin(), p.axes.end()) != p.axes.end())
    detail::failOp(op, "axes list a dimension twice");
  for (int64_t d = 0; d < rank; ++d) {
    const bool reduced = std::binary_search(p.axes.begin(), p.axes.end(), d);
    if (!reduced)
      p.outShape.push_back(x.shape[size_t(d)]);
    else if (p.keepDims)
      p.outShape.push_back(1);
  }
  return p;
}

ReduceParams argReduceParams(const Op &op, const Graph &graph) {
  const TensorInfo &x = detail::inputInfo(op, graph, 0);
  const int64_t rank = int64_t(x.shape.size());
  if (rank == 0)
    detail::failOp(op, "input must have rank >= 1");
  ReduceParams p;
  p.keepDims = op.attrs.getInt("keepdims", 1) != 0;
  p.selectLast = op.attrs.getInt("select_last_index", 0) != 0;
  p.axes = {normalizeAxis(op, op.attrs.getInt("axis", 0), rank)};
  for (int64_t d = 0; d < rank; ++d) {
    if (d != p.axes[0])
      p.outShape.push_back(x.shape[size_t(d)]);
    else if (p.keepDims)
      p.outShape.push_back(1);
  }
  if (x.shape[size_t(p.axes[0])] == 0)
    detail::failOp(op, "cannot take {} over an empty axis {}", op.type, p.axes[0]);
  return p;
}

int64_t cumSumAxis(const Op &op, const Graph &graph) {
  const auto axis = detail::constantInputInts(op, graph, 1, "axis");
  if (axis.size() != 1)
    detail::failOp(op, "axis must hold one value, got {}", axis.size());
  return normalizeAxis(op, axis[0], int64_t(detail::inputInfo(op, graph, 0).shape.size()));
}

namespace detail {

namespace {

std::vector<TensorInfo> inferReduce(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const bool intOk = op.type == "ReduceSum" || op.type == "ReduceMax" || op.type == "ReduceMin" ||
                     op.type == "ReduceProd";
  if (!isFloat(x.dtype) && !(intOk && (x.dtype == DType::I32 || x.dtype == DType::I64)))
    failOp(op, "input dtype {} is not supported (float types{})", dtypeName(x.dtype),
           intOk ? ", int32 or int64" : "");
  return {TensorInfo{x.dtype, reduceParams(op, graph).outShape}};
}

std::vector<TensorInfo> inferArgReduce(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (!isFloat(x.dtype) && !isInteger(x.dtype))
    failOp(op, "input dtype {} is not supported", dtypeName(x.dtype));
  return {TensorInfo{DType::I64, argReduceParams(op, graph).outShape}};
}

std::vector<TensorInfo> inferHardmax(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input");
  softmaxAxis(op, graph);
  return {x};
}

std::vector<TensorInfo> inferCumSum(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (x.dtype != DType::F32 && x.dtype != DType::F64 && x.dtype != DType::I32 && x.dtype != DType::I64)
    failOp(op, "input dtype {} is not supported (float32, float64, int32, int64)", dtypeName(x.dtype));
  cumSumAxis(op, graph);
  return {x};
}

std::vector<TensorInfo> inferLrn(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (x.dtype != DType::F32 && x.dtype != DType::F64)
    failOp(op, "input dtype {} is not supported (float32, float64)", dtypeName(x.dtype));
  if (x.shape.size() < 2)
    failOp(op, "input must have rank >= 2 [N,C,...], got {}", shapeToString(x.shape));
  if (op.attrs.getInt("size") < 1)
    failOp(op, "size must be >= 1");
  return {x};
}

std::vector<TensorInfo> inferInstanceNorm(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (x.dtype != DType::F32 && x.dtype != DType::F64)
    failOp(op, "input dtype {} is not supported (float32, float64)", dtypeName(x.dtype));
  if (x.shape.size() < 3)
    failOp(op, "input must have rank >= 3 [N,C,spatial...], got {}", shapeToString(x.shape));
  for (size_t i : {1, 2}) {
    const TensorInfo &p = inputInfo(op, graph, i);
    requireSameDType(op, x, p, "input", i == 1 ? "scale" : "B");
    if (p.shape != Shape{x.shape[1]})
      failOp(op, "{} must have shape [{}], got {}", i == 1 ? "scale" : "B", x.shape[1], shapeToString(p.shape));
  }
  return {x};
}

// Gradient rule (autodiff.h): g, reshaped with the reduced axes kept and
// broadcast back over them, times the reduction's local derivative: 1 (Sum),
// 1/count (Mean), 2X (SumSquare), sign(X) (L1), X/Y (L2), 1/exp(Y) (LogSum),
// exp(X - Y) (LogSumExp); Max/Min send it to the elements equal to the
// result, split evenly among ties (as torch.amax/amin); Prod: the product of
// the other elements (Y/X without zeros; with one zero, the product of the
// rest at the zero and 0 elsewhere; with more, 0), as torch.prod.
void gradReduce(GradContext &c) {
  if (!c.wantsGrad(0))
    return;
  const TensorInfo &x = c.inputInfo(0);
  const ReduceParams p = reduceParams(c.op, c.graph());
  if (p.axes.empty()) { // noop_with_empty_axes: the identity
    c.addGrad(0, c.outputGrad(0));
    return;
  }
  Shape kept = x.shape;
  int64_t count = 1;
  for (int64_t a : p.axes) {
    count *= kept[size_t(a)];
    kept[size_t(a)] = 1;
  }
  auto broadcast = [&](const std::string &t) { return c.expand(c.reshape(t, kept), x.shape); };
  const std::string g = broadcast(c.outputGrad(0)), &in = c.op.inputs[0], &type = c.op.type;
  auto y = [&] { return broadcast(c.op.outputs[0]); };
  if (type == "ReduceMean") {
    c.addGrad(0, c.emit("Div", {g, c.scalar(double(count), x.dtype)}));
    return;
  }
  std::string local;
  if (type == "ReduceSumSquare") {
    local = c.emit("Mul", {in, c.scalar(2.0, x.dtype)});
  } else if (type == "ReduceMax" || type == "ReduceMin") {
    local = c.extremeShare(in, y(), p.axes);
  } else if (type == "ReduceL1") {
    local = c.emit("Sign", {in});
  } else if (type == "ReduceL2") {
    local = c.emit("Div", {in, y()});
  } else if (type == "ReduceLogSum") {
    local = c.emit("Reciprocal", {c.emit("Exp", {y()})});
  } else if (type == "ReduceLogSumExp") {
    local = c.emit("Exp", {c.emit("Sub", {in, y()})});
  } else if (type == "ReduceProd") {
    const std::string zero = c.scalar(0.0, x.dtype), one = c.scalar(1.0, x.dtype);
    const std::string isZero = c.emit("Equal", {in, zero}), nonZero = c.emit("Where", {isZero, one, in});
    Attributes keep, to;
    keep.set("keepdims", int64_t(1));
    keep.set("axes", p.axes); // ReduceProd's axes are an attribute up to opset 17
    to.set("to", onnxElementType(x.dtype));
    const std::string rest = c.expand(c.emit("ReduceProd", {nonZero}, keep), x.shape); // product of the non-zeros
    const std::string zeros = c.expand(c.reduceSum(c.emit("Cast", {isZero}, to), p.axes, true), x.shape);
    const std::string oneZero = c.emit("And", {isZero, c.emit("Equal", {zeros, one})});
    local = c.emit("Where", {c.emit("Equal", {zeros, zero}), c.emit("Div", {rest, nonZero}),
                             c.emit("Where", {oneZero, rest, zero})});
  }
  c.addGrad(0, local.empty() ? g : c.emit("Mul", {g, local}));
}

// Output i of CumSum sums the inputs j <= i (j < i when exclusive; the other
// way round when reverse), so input j gets g_i of every such i: the
// cumulative sum of g in the other direction, with the same exclusivity.
void gradCumSum(GradContext &c) {
  const std::string g = c.outputGrad(0);
  if (g.empty() || !c.wantsGrad(0))
    return;
  Attributes a;
  a.set("exclusive", c.op.attrs.getInt("exclusive", 0));
  a.set("reverse", int64_t(c.op.attrs.getInt("reverse", 0) == 0));
  c.addGrad(0, c.emit("CumSum", {g, c.op.inputs[1]}, a));
}

} // namespace

void registerReduceOps(OpRegistry &reg) {
  reg.add({"Hardmax", 1, 1, inferHardmax});
  reg.add({"CumSum", 2, 2, inferCumSum, gradCumSum});
  reg.add({"LRN", 1, 1, inferLrn});
  reg.add({"InstanceNormalization", 3, 3, inferInstanceNorm});
  for (const char *t : {"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
                        "ReduceLogSum", "ReduceLogSumExp", "ReduceProd"})
    reg.add({t, 1, 2, inferReduce, gradReduce});
  reg.add({"ArgMax", 1, 1, inferArgReduce});
  reg.add({"ArgMin", 1, 1, inferArgReduce});
}

} // namespace detail
} // namespace popc::ir
