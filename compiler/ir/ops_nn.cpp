// Neural-network ops: convolution, pooling, normalisation, softmax, dropout.
#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include <algorithm>
#include <numeric>

namespace popc::ir::detail {

namespace {
// Conv/ConvTranspose output [N, M, spatial...], after checking the optional bias B [M].
TensorInfo convOutput(const Op &op, const Graph &graph, const TensorInfo &x, int64_t M, const WindowParams &p) {
  if (op.hasInput(2)) {
    const TensorInfo &b = inputInfo(op, graph, 2);
    requireSameDType(op, x, b, "input X", "bias B");
    if (b.shape != Shape{M})
      failOp(op, "bias B must have shape [{}], got {}", M, shapeToString(b.shape));
  }
  Shape out{x.shape[0], M};
  out.insert(out.end(), p.outSpatial.begin(), p.outSpatial.end());
  return TensorInfo{x.dtype, out};
}

std::vector<TensorInfo> inferConv(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const TensorInfo &w = inputInfo(op, graph, 1);
  requireFloat(op, x, "input X");
  requireSameDType(op, x, w, "input X", "weights W");
  WindowParams p = convParams(op, graph);
  const int64_t C = x.shape[1], M = w.shape[0];
  if (C != w.shape[1] * p.group)
    failOp(op, "input channels {} != weights' channels per group {} x group {}", C, w.shape[1],
           p.group);
  if (M % p.group != 0)
    failOp(op, "output channels {} are not divisible by group {}", M, p.group);
  return {convOutput(op, graph, x, M, p)};
}

std::vector<TensorInfo> inferConvTranspose(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const TensorInfo &w = inputInfo(op, graph, 1);
  if (x.dtype != DType::F32 && x.dtype != DType::F64)
    failOp(op, "input X dtype {} is not supported (float32, float64)", dtypeName(x.dtype));
  requireSameDType(op, x, w, "input X", "weights W");
  const WindowParams p = convTransposeParams(op, graph);
  const int64_t M = w.shape[1] * p.group;
  return {convOutput(op, graph, x, M, p)};
}

std::vector<TensorInfo> inferPool(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const bool intOk = op.type == "MaxPool" && (x.dtype == DType::I8 || x.dtype == DType::U8 ||
                                              x.dtype == DType::I32 || x.dtype == DType::I64);
  if (!intOk)
    requireFloat(op, x, "input X");
  if (x.shape.size() < 3 || x.shape.size() > 5)
    failOp(op, "input X must have 1 to 3 spatial dims [N,C,D...], got {}", shapeToString(x.shape));
  WindowParams p = poolParams(op, graph);
  Shape out{x.shape[0], x.shape[1]};
  out.insert(out.end(), p.outSpatial.begin(), p.outSpatial.end());
  std::vector<TensorInfo> result{TensorInfo{x.dtype, out}};
  if (op.outputs.size() == 2) {
    if (op.type != "MaxPool")
      failOp(op, "has 1 output, got 2");
    result.push_back(TensorInfo{DType::I64, out}); // Indices
  } else if (op.outputs.size() > 2) {
    failOp(op, "has at most {} outputs, got {}", op.type == "MaxPool" ? 2 : 1, op.outputs.size());
  }
  return result;
}

std::vector<TensorInfo> inferGlobalPool(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input X");
  if (x.shape.size() < 3)
    failOp(op, "input X must have rank >= 3 [N,C,spatial...], got {}", shapeToString(x.shape));
  Shape out = x.shape;
  for (size_t i = 2; i < out.size(); ++i)
    out[i] = 1;
  return {TensorInfo{x.dtype, out}};
}

std::vector<TensorInfo> inferBatchNorm(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input X");
  if (x.shape.size() < 2)
    failOp(op, "input X must have rank >= 2 [N,C,...], got {}", shapeToString(x.shape));
  size_t requested = 0;
  for (size_t i = 1; i < op.outputs.size(); ++i)
    requested += op.outputs[i].empty() ? 0 : 1;
  // Training mode (opset 14+): batch statistics, plus the running mean/var
  // outputs; the bn-decomposition pass rewrites it into reductions.
  const bool training = op.attrs.getInt("training_mode", 0) != 0;
  if (training && (graph.opset < 14 || op.outputs.size() > 3))
    failOp(op, "training mode is supported from opset 14 with at most 3 outputs (Y, running_mean, running_var)");
  if (!training && requested > 0)
    failOp(op, "running mean/var or saved statistics outputs need training_mode=1 (opset 14+); "
               "export the model in inference mode (1 output)");
  if (op.attrs.getInt("spatial", 1) != 1)
    failOp(op, "spatial=0 (per-activation statistics) is not supported");
  const int64_t C = x.shape[1];
  const char *names[] = {"", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    const TensorInfo &t = inputInfo(op, graph, i);
    requireFloat(op, t, names[i]);
    if (t.shape != Shape{C})
      failOp(op, "{} must have shape [{}] (channels), got {}", names[i], C, shapeToString(t.shape));
  }
  std::vector<TensorInfo> result(op.outputs.size(), TensorInfo{x.dtype, {C}}); // unrequested outputs are ""
  result[0] = x;
  return result;
}

std::vector<TensorInfo> inferSoftmax(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input");
  softmaxAxis(op, graph); // validates
  return {x};
}

std::vector<TensorInfo> inferDropout(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input");
  if (graph.opset < 12 && op.inputs.size() > 1)
    failOp(op, "takes 1 input before opset 12 (ratio is an attribute), got {}", op.inputs.size());
  if (op.hasInput(2)) { // training_mode
    auto value = constantValue(graph, op.inputs[2]);
    if (!value)
      failNotConstant(op, graph, 2, "training_mode");
    auto v = value->toInt64s();
    if (v.size() != 1)
      failOp(op, "training_mode must be a scalar");
    // Training-mode Dropout is the identity only with ratio 0; otherwise it
    // draws random masks, which an inference compiler does not reproduce.
    if (v[0] != 0) {
      auto ratio = op.hasInput(1) ? constantValue(graph, op.inputs[1]) : std::nullopt;
      if (op.hasInput(1) && !ratio)
        failNotConstant(op, graph, 1, "ratio");
      if (!ratio || ratio->toDoubles().size() != 1 || ratio->toDoubles()[0] != 0.0)
        failOp(op, "training_mode=true with a ratio other than 0 drops random elements; popc compiles inference "
                   "graphs (export the model in eval mode)");
    }
  }
  if (op.outputs.size() > 2)
    failOp(op, "has at most 2 outputs (output, mask), got {}", op.outputs.size());
  std::vector<TensorInfo> result{x};
  if (op.outputs.size() == 2) // mask: bool since opset 10, input type before
    result.push_back(TensorInfo{graph.opset >= 10 ? DType::Bool : x.dtype, x.shape});
  return result;
}

// Gradient rules (autodiff.h).

// The axes a softmax normalises over: its axis, or (before opset 13) every axis from it on.
std::vector<int64_t> softmaxAxes(GradContext &c) {
  const int64_t axis = softmaxAxis(c.op, c.graph());
  const int64_t rank = int64_t(c.inputInfo(0).shape.size());
  std::vector<int64_t> axes{axis};
  if (softmaxCoerces2D(c.graph()))
    for (int64_t a = axis + 1; a < rank; ++a)
      axes.push_back(a);
  return axes;
}

void gradSoftmax(GradContext &c) { // dX = Y (g - sum(g Y))
  if (!c.wantsGrad(0))
    return;
  const std::string g = c.outputGrad(0), &y = c.op.outputs[0];
  const std::string dot = c.reduceSum(c.emit("Mul", {g, y}), softmaxAxes(c), true);
  c.addGrad(0, c.emit("Mul", {y, c.emit("Sub", {g, dot})}));
}

void gradLogSoftmax(GradContext &c) { // dX = g - exp(Y) sum(g)
  if (!c.wantsGrad(0))
    return;
  const std::string g = c.outputGrad(0);
  const std::string sum = c.reduceSum(g, softmaxAxes(c), true);
  c.addGrad(0, c.emit("Sub", {g, c.emit("Mul", {c.emit("Exp", {c.op.outputs[0]}), sum})}));
}

// ConvTranspose attributes that invert a window op of geometry `p` back to
// spatial size `inSpatial` (output_padding makes up the rows a stride skipped).
Attributes transposedWindow(const WindowParams &p, const Shape &inSpatial, const Shape &outSpatial) {
  std::vector<int64_t> pads = p.padsBegin, outputPadding;
  pads.insert(pads.end(), p.padsEnd.begin(), p.padsEnd.end());
  for (size_t i = 0; i < inSpatial.size(); ++i) {
    const int64_t d = i < p.dilations.size() ? p.dilations[i] : 1;
    const int64_t covered = (outSpatial[i] - 1) * p.strides[i] + (p.kernel[i] - 1) * d + 1;
    outputPadding.push_back(inSpatial[i] + p.padsBegin[i] + p.padsEnd[i] - covered);
  }
  Attributes a;
  a.set("strides", p.strides);
  a.set("pads", pads);
  a.set("output_padding", outputPadding);
  return a;
}

// Y = conv(X, W) + B. dX is the transposed convolution of g with W; dW
// correlates X with g (a Conv with batch and channels swapped, strides and
// dilations exchanged), cropped to the kernel; dB sums g over all but channels.
void gradConv(GradContext &c) {
  const WindowParams p = convParams(c.op, c.graph());
  const Shape &x = c.inputInfo(0).shape;
  const Shape spatial(x.begin() + 2, x.end());
  const Shape outSpatial(c.outputInfo(0).shape.begin() + 2, c.outputInfo(0).shape.end());
  const std::string g = c.outputGrad(0);
  if (c.wantsGrad(0)) {
    Attributes a = transposedWindow(p, spatial, outSpatial);
    a.set("dilations", p.dilations);
    a.set("group", p.group);
    c.addGrad(0, c.emit("ConvTranspose", {g, c.op.inputs[1]}, a));
  }
  if (c.wantsGrad(1)) {
    if (p.group != 1)
      c.unsupported(fmt::format("the weight gradient of a grouped convolution (group {}) is not implemented yet", p.group));
    std::vector<int64_t> swap(x.size());
    std::iota(swap.begin(), swap.end(), 0);
    std::swap(swap[0], swap[1]);
    std::vector<int64_t> pads = p.padsBegin;
    pads.insert(pads.end(), p.padsEnd.begin(), p.padsEnd.end());
    Attributes a;
    a.set("strides", p.dilations);
    a.set("dilations", p.strides);
    a.set("pads", pads);
    std::string dw = c.transpose(c.emit("Conv", {c.transpose(c.op.inputs[0], swap), c.transpose(g, swap)}, a), swap);
    for (size_t i = 0; i < p.kernel.size(); ++i)
      if (c.info(dw).shape[i + 2] != p.kernel[i])
        dw = c.slice(dw, int64_t(i + 2), 0, p.kernel[i]);
    c.addGrad(1, dw);
  }
  if (c.wantsGrad(2)) {
    std::vector<int64_t> axes{0};
    for (size_t i = 2; i < x.size(); ++i)
      axes.push_back(int64_t(i));
    c.addGrad(2, c.reduceSum(g, axes, false));
  }
}

// Each window's maximum gets the window's gradient: the pool runs again with
// Indices (flat positions in X) and g is scatter-added to them.
void gradMaxPool(GradContext &c) {
  if (!c.wantsGrad(0))
    return;
  const TensorInfo &x = c.inputInfo(0);
  Attributes attrs = c.op.attrs;
  attrs.erase("storage_order");
  const std::string indices = c.emitMulti("MaxPool", {c.op.inputs[0]}, 2, attrs)[1];
  Attributes a;
  a.set("axis", int64_t(0));
  a.set("reduction", std::string("add"));
  const std::string flat = c.emit("ScatterElements", {c.filled(0.0, TensorInfo{x.dtype, {x.elements()}}),
                                                      c.reshape(indices, {c.outputInfo(0).elements()}),
                                                      c.reshape(c.outputGrad(0), {c.outputInfo(0).elements()})},
                                  a);
  c.addGrad(0, c.reshape(flat, x.shape));
}

// Each window spreads g / (window size) evenly: a transposed convolution of
// every channel with a constant kernel.
void gradAveragePool(GradContext &c) {
  if (!c.wantsGrad(0))
    return;
  const WindowParams p = poolParams(c.op, c.graph());
  const TensorInfo &x = c.inputInfo(0);
  const Shape &y = c.outputInfo(0).shape;
  const bool padded = std::any_of(p.padsBegin.begin(), p.padsBegin.end(), [](int64_t v) { return v != 0; }) ||
                      std::any_of(p.padsEnd.begin(), p.padsEnd.end(), [](int64_t v) { return v != 0; });
  if ((padded && !p.countIncludePad) || p.ceilMode)
    c.unsupported("AveragePool with pads that are not counted (count_include_pad=0) or ceil_mode has no "
                  "gradient rule yet");
  int64_t window = 1;
  Shape kernelShape{1, 1};
  for (int64_t k : p.kernel) {
    window *= k;
    kernelShape.push_back(k);
  }
  const Shape spatial(x.shape.begin() + 2, x.shape.end()), outSpatial(y.begin() + 2, y.end());
  Shape gShape{y[0] * y[1], 1}, xShape{x.shape[0] * x.shape[1], 1};
  gShape.insert(gShape.end(), outSpatial.begin(), outSpatial.end());
  xShape.insert(xShape.end(), spatial.begin(), spatial.end());
  const std::string kernel = c.filled(1.0 / double(window), TensorInfo{x.dtype, kernelShape});
  const std::string dx =
      c.emit("ConvTranspose", {c.reshape(c.outputGrad(0), gShape), kernel}, transposedWindow(p, spatial, outSpatial));
  c.addGrad(0, c.reshape(dx, x.shape));
}

void gradGlobalAveragePool(GradContext &c) {
  if (!c.wantsGrad(0))
    return;
  const TensorInfo &x = c.inputInfo(0);
  const double window = double(x.elements()) / double(x.shape[0] * x.shape[1]);
  c.addGrad(0, c.expand(c.emit("Div", {c.outputGrad(0), c.scalar(window, x.dtype)}), x.shape));
}

// Inference Dropout is the identity (training-mode Dropout with a ratio is refused by inference).
void gradDropout(GradContext &c) {
  if (c.wantsGrad(0))
    c.addGrad(0, c.outputGrad(0));
}

} // namespace

void registerNnOps(OpRegistry &reg) {
  reg.add({"Conv", 2, 3, inferConv, gradConv});
  reg.add({"ConvTranspose", 2, 3, inferConvTranspose});
  reg.add({"MaxPool", 1, 1, inferPool, gradMaxPool});
  reg.add({"AveragePool", 1, 1, inferPool, gradAveragePool});
  reg.add({"GlobalAveragePool", 1, 1, inferGlobalPool, gradGlobalAveragePool});
  reg.add({"GlobalMaxPool", 1, 1, inferGlobalPool});
  reg.add({"LogSoftmax", 1, 1, inferSoftmax, gradLogSoftmax});
  reg.add({"BatchNormalization", 5, 5, inferBatchNorm});
  reg.add({"Softmax", 1, 1, inferSoftmax, gradSoftmax});
  reg.add({"Dropout", 1, 3, inferDropout, gradDropout});
}

} // namespace popc::ir::detail
