// Neural-network ops: convolution, pooling, normalisation, softmax, dropout.
#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

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
  requireFloat(op, x, "input X"); // float16: a float16 Conv (window-canonicalization) or promoted
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

// g with s-1 zeros between its elements along spatial axis `axis` (2..):
// [.., O, ..] -> [.., O, 1, ..] -> padded to s -> [.., O*s, ..] -> the first (O-1)s+1.
std::string insertZeros(GradContext &c, const std::string &g, size_t axis, int64_t s) {
  if (s == 1)
    return g;
  const Shape shape = c.info(g).shape;
  Shape unsq = shape;
  unsq.insert(unsq.begin() + int64_t(axis) + 1, 1);
  std::vector<int64_t> pads(2 * unsq.size(), 0);
  pads[unsq.size() + axis + 1] = s - 1;
  const std::string padded = c.emit("Pad", {c.reshape(g, unsq), c.ints(pads)});
  Shape merged = shape;
  merged[axis] *= s;
  return c.slice(c.reshape(padded, merged), int64_t(axis), 0, (shape[axis] - 1) * s + 1);
}

// dX of a convolution as a convolution (the tiled Conv lowering, where
// ConvTranspose's codelet keeps a whole operand on one tile): g with s-1 zeros
// inserted between its elements along each strided axis, padded by
// d(K-1) - pads_begin before and X + pads_begin - (O-1)s - 1 after, correlated
// (dilation d, stride 1) with W flipped in space and with its channel roles
// swapped per group. nullopt where that padding would be negative or the opset
// lacks the inputs it needs (ConvTranspose then).
std::optional<std::string> convInputGrad(GradContext &c, const WindowParams &p, const std::string &g) {
  const Shape &x = c.inputInfo(0).shape, &w = c.inputInfo(1).shape, &y = c.outputInfo(0).shape;
  const size_t rank = x.size(), dims = rank - 2;
  if (c.opset() < 11)
    return std::nullopt;
  std::vector<int64_t> padsBegin, padsEnd;
  for (size_t i = 0; i < dims; ++i) {
    padsBegin.push_back(p.dilations[i] * (p.kernel[i] - 1) - p.padsBegin[i]);
    padsEnd.push_back(x[i + 2] + p.padsBegin[i] - (y[i + 2] - 1) * p.strides[i] - 1);
    if (padsBegin.back() < 0 || padsEnd.back() < 0)
      return std::nullopt;
  }
  std::string gz = g;
  for (size_t i = 0; i < dims; ++i)
    gz = insertZeros(c, gz, i + 2, p.strides[i]);
  // W [G*Cog, Cig, K..] -> [G*Cig, Cog, K..], flipped in space.
  const int64_t G = p.group;
  const SwappedWeightRoles roles = swapWeightRoles(w, G);
  std::string wt = c.reshape(c.transpose(c.reshape(c.op.inputs[1], roles.split), roles.perm), roles.swapped);
  std::vector<int64_t> starts, ends, axes, steps;
  for (size_t i = 0; i < dims; ++i) {
    starts.push_back(-1);
    ends.push_back(std::numeric_limits<int64_t>::min());
    axes.push_back(int64_t(i + 2));
    steps.push_back(-1);
  }
  wt = c.emit("Slice", {wt, c.ints(starts), c.ints(ends), c.ints(axes), c.ints(steps)});
  std::vector<int64_t> pads = padsBegin;
  pads.insert(pads.end(), padsEnd.begin(), padsEnd.end());
  Attributes a;
  a.set("dilations", p.dilations);
  a.set("pads", pads);
  a.set("group", G);
  return c.emit("Conv", {gz, wt}, a);
}

// The windows of a conv or pool seen from X: X padded (with `fill`) so that
// every window lies inside it, and for each window offset k (row-major over
// the kernel) the strided slice Xp[.., o*s + k*d, ..] of shape [N, C, O..].
struct WindowOffsets {
  WindowOffsets(GradContext &c, const WindowParams &p, double fill) : p(p), y(c.outputInfo(0).shape) {
    const TensorInfo &xi = c.inputInfo(0);
    const Shape &x = xi.shape;
    pads = windowPadding(p, x, Shape(y.begin() + 2, y.end()));
    padded = x;
    for (size_t i = 0; i + 2 < x.size(); ++i) {
      padded[i + 2] = x[i + 2] + pads[i + 2] + pads[x.size() + i + 2];
      count *= p.kernel[i];
    }
    xp = c.emit("Pad", {c.op.inputs[0], c.ints(pads), c.scalar(fill, xi.dtype)});
  }
  // Where offset `flat`'s slice starts in Xp, per spatial dim.
  std::vector<int64_t> starts(int64_t flat) const { return windowOffsetStarts(p, flat); }
  std::string slice(GradContext &c, int64_t flat) const {
    const std::vector<int64_t> begin = starts(flat);
    std::vector<int64_t> ends, axes;
    for (size_t i = 0; i < begin.size(); ++i) {
      ends.push_back(begin[i] + (y[i + 2] - 1) * p.strides[i] + 1);
      axes.push_back(int64_t(i + 2));
    }
    return c.emit("Slice", {xp, c.ints(begin), c.ints(ends), c.ints(axes), c.ints(p.strides)});
  }

  const WindowParams &p;
  const Shape y;
  std::vector<int64_t> pads; // ONNX Pad pads of X
  Shape padded;              // Xp's shape
  int64_t count = 1;         // window offsets: the product of the kernel dims
  std::string xp;
};

// dW of an ungrouped or depthwise convolution from the K window offsets
// (poplin's weight-update pass as a matrix product): Xk = X padded and
// strided-sliced at offset k, then dW[:, :, k] = g . Xk summed over the batch
// and the output positions: one batched MatMul [K, Co, N*O] x [K, N*O, Ci]
// (depthwise: a Mul and a ReduceSum). Where the correlation as a Conv would use
// g as a kernel of the output's size, this stays a few tiled ops. nullopt for
// other groups.
std::optional<std::string> convWeightGradByOffsets(GradContext &c, const WindowParams &p, const std::string &g) {
  const Shape &x = c.inputInfo(0).shape, &w = c.inputInfo(1).shape, &y = c.outputInfo(0).shape;
  const size_t dims = x.size() - 2;
  const int64_t N = x[0], Ci = x[1], Co = w[0];
  const bool depthwise = p.group == Ci && Co == Ci && p.group > 1;
  if (c.opset() < 11 || (p.group != 1 && !depthwise))
    return std::nullopt;
  int64_t positions = 1;
  for (size_t i = 0; i < dims; ++i)
    positions *= y[i + 2];
  const WindowOffsets windows(c, p, 0.0);
  std::vector<std::string> parts;
  for (int64_t flat = 0; flat < windows.count; ++flat) {
    const std::string xk = windows.slice(c, flat);
    if (depthwise) { // [N, C, O..] * g -> sum over N and O.. -> [C, 1]
      std::vector<int64_t> sumAxes{0};
      for (size_t i = 0; i < dims; ++i)
        sumAxes.push_back(int64_t(i + 2));
      parts.push_back(c.reshape(c.reduceSum(c.emit("Mul", {xk, g}), sumAxes, false), {Ci, 1}));
    } else { // [N, Ci, O..] -> [1, N*O, Ci]
      parts.push_back(c.reshape(c.transpose(c.reshape(xk, {N, Ci, positions}), {0, 2, 1}), {1, N * positions, Ci}));
    }
  }
  Attributes axis;
  Shape kernelDims(p.kernel.begin(), p.kernel.end());
  if (depthwise) { // [C, K] -> [C, 1, k..]
    axis.set("axis", int64_t(1));
    const std::string dw = parts.size() == 1 ? parts[0] : c.emit("Concat", parts, axis);
    Shape out{Co, 1};
    out.insert(out.end(), kernelDims.begin(), kernelDims.end());
    return c.reshape(dw, out);
  }
  axis.set("axis", int64_t(0));
  const std::string patches = parts.size() == 1 ? parts[0] : c.emit("Concat", parts, axis); // [K, N*O, Ci]
  const std::string gm = c.reshape(c.transpose(c.reshape(g, {N, Co, positions}), {1, 0, 2}), {1, Co, N * positions});
  const std::string dw = c.emit("MatMul", {gm, patches}); // [K, Co, Ci]
  Shape out{Co, Ci};
  out.insert(out.end(), kernelDims.begin(), kernelDims.end());
  return c.reshape(c.transpose(dw, {1, 2, 0}), out);
}

// Y = conv(X, W) + B. dX is the transposed convolution of g with W; dW
// correlates X with g: a Conv whose batch is X's channels within a group and
// whose channels are (group, sample) pairs, with g's channels as G groups of
// output channels, strides and dilations exchanged; cropped to the kernel.
// dB sums g over all but channels.
void gradConv(GradContext &c) {
  const WindowParams p = convParams(c.op, c.graph());
  const Shape &x = c.inputInfo(0).shape;
  const Shape spatial(x.begin() + 2, x.end());
  const Shape outSpatial(c.outputInfo(0).shape.begin() + 2, c.outputInfo(0).shape.end());
  const std::string g = c.outputGrad(0);
  if (c.wantsGrad(0)) {
    if (auto dx = convInputGrad(c, p, g)) {
      c.addGrad(0, *dx);
    } else {
      Attributes a = transposedWindow(p, spatial, outSpatial);
      a.set("dilations", p.dilations);
      a.set("group", p.group);
      c.addGrad(0, c.emit("ConvTranspose", {g, c.op.inputs[1]}, a));
    }
  }
  if (c.wantsGrad(1)) {
    if (auto dw = convWeightGradByOffsets(c, p, g)) {
      c.addGrad(1, *dw);
    } else {
      const int64_t G = p.group, N = x[0], Cig = x[1] / G;
      std::vector<int64_t> swap(x.size());
      std::iota(swap.begin(), swap.end(), 0);
      std::swap(swap[0], swap[1]);
      // X [N, G*Cig, S...] -> [Cig, G*N, S...]: batch i, channel (group, sample).
      Shape split{N, G, Cig};
      split.insert(split.end(), spatial.begin(), spatial.end());
      std::vector<int64_t> perm{2, 1, 0};
      for (size_t i = 3; i < split.size(); ++i)
        perm.push_back(int64_t(i));
      Shape merged{Cig, G * N};
      merged.insert(merged.end(), spatial.begin(), spatial.end());
      const std::string xs = c.reshape(c.transpose(c.reshape(c.op.inputs[0], split), perm), merged);
      std::vector<int64_t> pads = p.padsBegin;
      pads.insert(pads.end(), p.padsEnd.begin(), p.padsEnd.end());
      Attributes a;
      a.set("strides", p.dilations);
      a.set("dilations", p.strides);
      a.set("pads", pads);
      a.set("group", G);
      std::string dwConv = c.transpose(c.emit("Conv", {xs, c.transpose(g, swap)}, a), swap);
      for (size_t i = 0; i < p.kernel.size(); ++i)
        if (c.info(dwConv).shape[i + 2] != p.kernel[i])
          dwConv = c.slice(dwConv, int64_t(i + 2), 0, p.kernel[i]);
      c.addGrad(1, dwConv);
    }
  }
  if (c.wantsGrad(2)) {
    std::vector<int64_t> axes{0};
    for (size_t i = 2; i < x.size(); ++i)
      axes.push_back(int64_t(i));
    c.addGrad(2, c.reduceSum(g, axes, false));
  }
}

// MaxPool's gradient with tiled elementwise and data-movement ops only: for
// each kernel offset k (row-major, as the pool scans), the window elements
// X[o*s + k*d] that equal Y[o] and no earlier offset claimed get g[o]; those
// contributions, spread back to their positions, sum to dX. The first maximum
// of a window takes it all, as ONNX's Indices and torch pick it.
std::optional<std::string> maxPoolGradByOffsets(GradContext &c, const WindowParams &p) {
  const TensorInfo &xi = c.inputInfo(0);
  const Shape &x = xi.shape;
  const size_t dims = x.size() - 2;
  if (c.opset() < 11 || !isFloat(xi.dtype))
    return std::nullopt;
  const WindowOffsets windows(c, p, -HUGE_VAL);
  const std::string g = c.outputGrad(0), &yv = c.op.outputs[0], zero = c.scalar(0.0, xi.dtype);
  std::string taken, dxp;
  for (int64_t flat = 0; flat < windows.count; ++flat) {
    const std::vector<int64_t> starts = windows.starts(flat);
    const std::string xk = windows.slice(c, flat);
    std::string hit = c.emit("Equal", {xk, yv});
    if (!taken.empty())
      hit = c.emit("And", {hit, c.emit("Not", {taken})});
    taken = taken.empty() ? hit : c.emit("Or", {taken, hit});
    std::string part = c.emit("Where", {hit, g, zero});
    std::vector<int64_t> place(2 * x.size(), 0);
    for (size_t i = 0; i < dims; ++i) {
      part = insertZeros(c, part, i + 2, p.strides[i]);
      place[i + 2] = starts[i];
      place[x.size() + i + 2] = windows.padded[i + 2] - starts[i] - c.info(part).shape[i + 2];
    }
    part = c.emit("Pad", {part, c.ints(place)});
    dxp = dxp.empty() ? part : c.emit("Add", {dxp, part});
  }
  for (size_t i = 0; i < dims; ++i)
    dxp = c.slice(dxp, int64_t(i + 2), windows.pads[i + 2], windows.pads[i + 2] + x[i + 2]);
  return dxp;
}

// Each window's maximum gets the window's gradient. Fallback: the pool runs
// again with Indices (flat positions in X) and g is scatter-added to them.
void gradMaxPool(GradContext &c) {
  if (!c.wantsGrad(0))
    return;
  if (c.op.attrs.getInt("storage_order", 0) == 0)
    if (auto dx = maxPoolGradByOffsets(c, poolParams(c.op, c.graph()))) {
      c.addGrad(0, *dx);
      return;
    }
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

// Each channel's maximum gets g (ties share it), as ReduceMax over the spatial axes.
void gradGlobalMaxPool(GradContext &c) {
  if (!c.wantsGrad(0))
    return;
  const TensorInfo &x = c.inputInfo(0);
  std::vector<int64_t> spatial;
  for (size_t d = 2; d < x.shape.size(); ++d)
    spatial.push_back(int64_t(d));
  const std::string share = c.extremeShare(c.op.inputs[0], c.expand(c.op.outputs[0], x.shape), spatial);
  c.addGrad(0, c.emit("Mul", {c.expand(c.outputGrad(0), x.shape), share}));
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
  reg.add({"GlobalMaxPool", 1, 1, inferGlobalPool, gradGlobalMaxPool});
  reg.add({"LogSoftmax", 1, 1, inferSoftmax, gradLogSoftmax});
  reg.add({"BatchNormalization", 5, 5, inferBatchNorm});
  reg.add({"Softmax", 1, 1, inferSoftmax, gradSoftmax});
  reg.add({"Dropout", 1, 3, inferDropout, gradDropout});
}

} // namespace popc::ir::detail
