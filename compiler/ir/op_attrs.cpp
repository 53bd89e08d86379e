#include "compiler/ir/op_attrs.h"

#include "compiler/ir/op_helpers.h"

#include <algorithm>

namespace popc::ir {

using detail::failOp;
using detail::inputInfo;

int64_t normalizeAxis(const Op &op, int64_t axis, int64_t rank, bool inclusive) {
  const int64_t hi = inclusive ? rank : rank - 1;
  if (axis < -rank || axis > hi)
    failOp(op, "axis {} is out of range [{}, {}] for rank {}", axis, -rank, hi, rank);
  return axis < 0 ? axis + rank : axis;
}

namespace {
std::vector<int64_t> perDim(const Op &op, const char *name, size_t n, int64_t fallback) {
  auto v = op.attrs.getInts(name, std::vector<int64_t>(n, fallback));
  if (v.size() != n)
    failOp(op, "attribute '{}' has {} values, expected {} (one per spatial dim)", name, v.size(), n);
  for (int64_t x : v)
    if (x < 1)
      failOp(op, "attribute '{}' values must be >= 1, got {}", name, shapeToString(v));
  return v;
}

// Fills pads and output dims from kernel/strides/dilations and auto_pad.
void resolveWindow(const Op &op, const Shape &inSpatial, WindowParams &p) {
  const size_t nd = inSpatial.size();
  const std::string autoPad = op.attrs.getString("auto_pad", "NOTSET");
  p.padsBegin.assign(nd, 0);
  p.padsEnd.assign(nd, 0);
  if (autoPad == "NOTSET") {
    auto pads = op.attrs.getInts("pads", std::vector<int64_t>(2 * nd, 0));
    if (pads.size() != 2 * nd)
      failOp(op, "attribute 'pads' has {} values, expected {} (begin and end per spatial dim)",
             pads.size(), 2 * nd);
    for (int64_t x : pads)
      if (x < 0)
        failOp(op, "attribute 'pads' must be >= 0, got {}", shapeToString(pads));
    for (size_t i = 0; i < nd; ++i) {
      p.padsBegin[i] = pads[i];
      p.padsEnd[i] = pads[i + nd];
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" || autoPad == "VALID") {
    if (op.attrs.has("pads"))
      failOp(op, "attribute 'pads' cannot be used together with auto_pad={}", autoPad);
    if (autoPad != "VALID") {
      for (size_t i = 0; i < nd; ++i) {
        const int64_t dk = (p.kernel[i] - 1) * p.dilations[i] + 1;
        const int64_t out = (inSpatial[i] + p.strides[i] - 1) / p.strides[i];
        const int64_t total = std::max<int64_t>(0, (out - 1) * p.strides[i] + dk - inSpatial[i]);
        const int64_t small = total / 2, big = total - small;
        p.padsBegin[i] = autoPad == "SAME_UPPER" ? small : big;
        p.padsEnd[i] = autoPad == "SAME_UPPER" ? big : small;
      }
    }
  } else {
    failOp(op, "attribute 'auto_pad' is '{}', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID",
           autoPad);
  }
  p.outSpatial.resize(nd);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t dk = (p.kernel[i] - 1) * p.dilations[i] + 1;
    const int64_t span = inSpatial[i] + p.padsBegin[i] + p.padsEnd[i] - dk;
    if (span < 0)
      failOp(op, "kernel (dilated size {}) is larger than the padded input ({}) in spatial dim {}",
             dk, inSpatial[i] + p.padsBegin[i] + p.padsEnd[i], i);
    // Same rule as ONNX shape inference, so our shapes agree with ONNX's.
    p.outSpatial[i] = 1 + (p.ceilMode ? (span + p.strides[i] - 1) / p.strides[i] : span / p.strides[i]);
  }
}
} // namespace

// Spatial dims of a Conv/ConvTranspose input X (1 to 3) with weights W of the same rank.
static size_t convSpatialDims(const Op &op, const TensorInfo &x, const TensorInfo &w, const char *weightLayout) {
  if (x.shape.size() < 3 || x.shape.size() > 5)
    failOp(op, "input X must have 1 to 3 spatial dims [N,C,D...], got {}", shapeToString(x.shape));
  if (w.shape.size() != x.shape.size())
    failOp(op, "weights W must have rank {} [{}], got {}", x.shape.size(), weightLayout, shapeToString(w.shape));
  return x.shape.size() - 2;
}

WindowParams convParams(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const TensorInfo &w = inputInfo(op, graph, 1);
  const size_t nd = convSpatialDims(op, x, w, "M,C/group,k...");
  WindowParams p;
  p.kernel = Shape(w.shape.begin() + 2, w.shape.end());
  if (op.attrs.has("kernel_shape") && op.attrs.getInts("kernel_shape") != p.kernel)
    failOp(op, "attribute 'kernel_shape' {} does not match the weights' spatial dims {}",
           shapeToString(op.attrs.getInts("kernel_shape")), shapeToString(p.kernel));
  p.strides = perDim(op, "strides", nd, 1);
  p.dilations = perDim(op, "dilations", nd, 1);
  p.group = op.attrs.getInt("group", 1);
  if (p.group < 1)
    failOp(op, "attribute 'group' must be >= 1, got {}", p.group);
  resolveWindow(op, Shape(x.shape.begin() + 2, x.shape.end()), p);
  return p;
}

bool indicesShareOtherDims(const Shape &data, const Shape &indices, int64_t axis) {
  if (data.size() != indices.size())
    return false;
  for (size_t d = 0; d < data.size(); ++d)
    if (int64_t(d) != axis && data[d] != indices[d])
      return false;
  return true;
}

std::vector<int64_t> windowPadding(const WindowParams &p, const Shape &x, const Shape &outSpatial) {
  std::vector<int64_t> pads(2 * x.size(), 0);
  for (size_t i = 0; i + 2 < x.size(); ++i) {
    const int64_t need = (outSpatial[i] - 1) * p.strides[i] + (p.kernel[i] - 1) * p.dilations[i] + 1;
    pads[i + 2] = p.padsBegin[i];
    pads[x.size() + i + 2] = std::max<int64_t>(0, need - p.padsBegin[i] - x[i + 2]);
  }
  return pads;
}

std::vector<int64_t> windowOffsetStarts(const WindowParams &p, int64_t flat) {
  std::vector<int64_t> s(p.kernel.size());
  for (size_t i = s.size(), rest = size_t(flat); i-- > 0; rest /= size_t(p.kernel[i]))
    s[i] = int64_t(rest % size_t(p.kernel[i])) * p.dilations[i];
  return s;
}

SwappedWeightRoles swapWeightRoles(const Shape &w, int64_t group) {
  const int64_t A = w[0] / group, B = w[1];
  SwappedWeightRoles r{{group, A, B}, {group * B, A}, {0, 2, 1}};
  for (size_t i = 2; i < w.size(); ++i) {
    r.split.push_back(w[i]);
    r.swapped.push_back(w[i]);
    r.perm.push_back(int64_t(i + 1));
  }
  return r;
}

WindowParams convTransposeParams(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const TensorInfo &w = inputInfo(op, graph, 1);
  const size_t nd = convSpatialDims(op, x, w, "C,M/group,k...");
  WindowParams p;
  p.group = op.attrs.getInt("group", 1);
  if (p.group < 1 || x.shape[1] % p.group != 0 || w.shape[0] != x.shape[1])
    failOp(op, "input channels {} must equal W's first dim {} and be divisible by group {}", x.shape[1],
           w.shape[0], p.group);
  p.kernel = Shape(w.shape.begin() + 2, w.shape.end());
  if (op.attrs.has("kernel_shape") && op.attrs.getInts("kernel_shape") != p.kernel)
    failOp(op, "kernel_shape {} does not match W {}", shapeToString(op.attrs.getInts("kernel_shape")),
           shapeToString(w.shape));
  p.strides = perDim(op, "strides", nd, 1);
  p.dilations = perDim(op, "dilations", nd, 1);
  auto outputPadding = op.attrs.getInts("output_padding", std::vector<int64_t>(nd, 0));
  if (outputPadding.size() != nd)
    failOp(op, "attribute 'output_padding' has {} values, expected {}", outputPadding.size(), nd);
  const std::string autoPad = op.attrs.getString("auto_pad", "NOTSET");
  p.padsBegin.assign(nd, 0);
  p.padsEnd.assign(nd, 0);
  std::vector<int64_t> outputShape;
  if (op.attrs.has("output_shape")) {
    outputShape = op.attrs.getInts("output_shape");
    if (outputShape.size() == nd + 2)
      outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
    if (outputShape.size() != nd)
      failOp(op, "attribute 'output_shape' has {} values, expected {}", outputShape.size(), nd);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < nd; ++i)
      outputShape.push_back(x.shape[i + 2] * p.strides[i]);
  }
  for (size_t i = 0; i < nd; ++i) {
    const int64_t full = p.strides[i] * (x.shape[i + 2] - 1) + outputPadding[i] + (p.kernel[i] - 1) * p.dilations[i] + 1;
    if (!outputShape.empty()) {
      // A negative total (output_shape beyond the natural size) extends the end,
      // like output_padding.
      const int64_t total = full - outputShape[i];
      const bool upper = autoPad == "SAME_UPPER" || total < 0;
      p.padsBegin[i] = upper ? total / 2 : total - total / 2;
      p.padsEnd[i] = upper ? total - total / 2 : total / 2;
    } else if (autoPad == "NOTSET") {
      auto pads = op.attrs.getInts("pads", std::vector<int64_t>(2 * nd, 0));
      if (pads.size() != 2 * nd)
        failOp(op, "attribute 'pads' has {} values, expected {}", pads.size(), 2 * nd);
      p.padsBegin[i] = pads[i];
      p.padsEnd[i] = pads[i + nd];
    }
    p.outSpatial.push_back(full - p.padsBegin[i] - p.padsEnd[i]);
    if (p.outSpatial.back() < 1)
      failOp(op, "output dim {} would be {}", i, p.outSpatial.back());
  }
  return p;
}

WindowParams poolParams(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (x.shape.size() < 3)
    failOp(op, "input X must have rank >= 3 [N,C,spatial...], got {}", shapeToString(x.shape));
  const size_t nd = x.shape.size() - 2;
  WindowParams p;
  if (!op.attrs.has("kernel_shape"))
    failOp(op, "required attribute 'kernel_shape' is missing");
  p.kernel = perDim(op, "kernel_shape", nd, 1);
  p.strides = perDim(op, "strides", nd, 1);
  if (op.type == "AveragePool" && op.attrs.has("dilations"))
    failOp(op, "attribute 'dilations' is not supported for AveragePool");
  p.dilations = perDim(op, "dilations", nd, 1);
  p.ceilMode = op.attrs.getInt("ceil_mode", 0) != 0;
  p.countIncludePad = op.attrs.getInt("count_include_pad", 0) != 0;
  const int64_t storageOrder = op.type == "MaxPool" ? op.attrs.getInt("storage_order", 0) : 0;
  if (storageOrder != 0 && storageOrder != 1)
    failOp(op, "storage_order must be 0 (row-major) or 1 (column-major), got {}", storageOrder);
  resolveWindow(op, Shape(x.shape.begin() + 2, x.shape.end()), p);
  return p;
}

bool softmaxCoerces2D(const Graph &graph) { return graph.opset < 13; }

int64_t softmaxAxis(const Op &op, const Graph &graph) {
  const int64_t rank = int64_t(inputInfo(op, graph, 0).shape.size());
  const int64_t fallback = softmaxCoerces2D(graph) ? 1 : -1;
  if (rank == 0)
    failOp(op, "input must have rank >= 1");
  return normalizeAxis(op, op.attrs.getInt("axis", fallback), rank);
}

std::vector<int64_t> transposePerm(const Op &op, const Graph &graph) {
  const int64_t rank = int64_t(inputInfo(op, graph, 0).shape.size());
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    perm[size_t(i)] = rank - 1 - i;
  perm = op.attrs.getInts("perm", perm);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = int64_t(perm.size()) == rank;
  for (int64_t i = 0; ok && i < rank; ++i)
    ok = sorted[size_t(i)] == i;
  if (!ok)
    failOp(op, "attribute 'perm' {} is not a permutation of the {} input dims", shapeToString(perm),
           rank);
  return perm;
}

int64_t concatAxis(const Op &op, const Graph &graph) {
  const int64_t rank = int64_t(inputInfo(op, graph, 0).shape.size());
  if (!op.attrs.has("axis"))
    failOp(op, "required attribute 'axis' is missing");
  return normalizeAxis(op, op.attrs.getInt("axis"), rank);
}

int64_t flattenAxis(const Op &op, const Graph &graph) {
  const int64_t rank = int64_t(inputInfo(op, graph, 0).shape.size());
  return normalizeAxis(op, op.attrs.getInt("axis", 1), rank, /*inclusive=*/true);
}

namespace {
// Axes from the attribute (opset < 13) or the constant input 1 (opset >= 13).
std::optional<std::vector<int64_t>> axesOf(const Op &op, const Graph &graph) {
  if (graph.opset >= 13) {
    if (op.attrs.has("axes"))
      failOp(op, "'axes' is an input since opset 13, not an attribute");
    if (!op.hasInput(1))
      return std::nullopt;
    return detail::constantInputInts(op, graph, 1, "axes");
  }
  if (op.inputs.size() > 1)
    failOp(op, "takes 1 input before opset 13 (axes is an attribute), got {}", op.inputs.size());
  if (!op.attrs.has("axes"))
    return std::nullopt;
  return op.attrs.getInts("axes");
}

std::vector<int64_t> normalizeAxes(const Op &op, const std::vector<int64_t> &axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes)
    out.push_back(normalizeAxis(op, a, rank));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    failOp(op, "axes {} contain a duplicate", shapeToString(axes));
  return out;
}
} // namespace

std::vector<int64_t> squeezeAxes(const Op &op, const Graph &graph) {
  const Shape &shape = inputInfo(op, graph, 0).shape;
  auto axes = axesOf(op, graph);
  std::vector<int64_t> out;
  if (!axes || axes->empty()) {
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] == 1)
        out.push_back(int64_t(i));
    return out;
  }
  out = normalizeAxes(op, *axes, int64_t(shape.size()));
  for (int64_t a : out)
    if (shape[size_t(a)] != 1)
      failOp(op, "cannot squeeze axis {} of size {} (input {})", a, shape[size_t(a)],
             shapeToString(shape));
  return out;
}

std::vector<int64_t> unsqueezeAxes(const Op &op, const Graph &graph) {
  const Shape &shape = inputInfo(op, graph, 0).shape;
  auto axes = axesOf(op, graph);
  if (!axes || axes->empty())
    failOp(op, "axes are required");
  return normalizeAxes(op, *axes, int64_t(shape.size() + axes->size()));
}

GemmParams gemmParams(const Op &op, const Graph &graph) {
  const TensorInfo &a = inputInfo(op, graph, 0);
  const TensorInfo &b = inputInfo(op, graph, 1);
  detail::requireRank(op, a, 2, "input A");
  detail::requireRank(op, b, 2, "input B");
  if (op.attrs.has("broadcast"))
    failOp(op, "legacy (opset < 7) attribute 'broadcast' is not supported");
  GemmParams p;
  p.transA = op.attrs.getInt("transA", 0) != 0;
  p.transB = op.attrs.getInt("transB", 0) != 0;
  p.alpha = op.attrs.getFloat("alpha", 1.0);
  p.beta = op.attrs.getFloat("beta", 1.0);
  p.M = p.transA ? a.shape[1] : a.shape[0];
  p.K = p.transA ? a.shape[0] : a.shape[1];
  const int64_t kb = p.transB ? b.shape[1] : b.shape[0];
  p.N = p.transB ? b.shape[0] : b.shape[1];
  if (p.K != kb)
    failOp(op, "inner dimensions differ: A {} (transA={}) has K={}, B {} (transB={}) has K={}",
           shapeToString(a.shape), int(p.transA), p.K, shapeToString(b.shape), int(p.transB), kb);
  return p;
}

} // namespace popc::ir
