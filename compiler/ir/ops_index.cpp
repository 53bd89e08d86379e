// Ops driven by run-time indices: ScatterElements (and its opset-9 name
// Scatter), OneHot, TopK; GridSample, RoiAlign and TfIdfVectorizer (decomposed by
// passes). Gather/GatherElements are registered with the
// data-movement ops (ops_movement.cpp); compiler/lib lowers them here when
// their indices are only known at run time.
#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"
#include "compiler/ir/op_registry.h"

#include <fmt/ranges.h>

#include <algorithm>

namespace popc::ir {

namespace {
void requireIndices(const Op &op, const TensorInfo &info, const char *what) {
  if (info.dtype != DType::I32 && info.dtype != DType::I64)
    detail::failOp(op, "{} must be int32 or int64, got {}", what, dtypeName(info.dtype));
}
} // namespace

int64_t topKCount(const Op &op, const Graph &graph) {
  int64_t k = 0;
  if (graph.opset >= 10) {
    const auto values = detail::constantInputInts(op, graph, 1, "K");
    if (values.size() != 1)
      detail::failOp(op, "K must hold exactly one value, got {}", values.size());
    k = values[0];
  } else {
    k = op.attrs.getInt("k");
  }
  const TensorInfo &x = detail::inputInfo(op, graph, 0);
  const int64_t axis = normalizeAxis(op, op.attrs.getInt("axis", -1), int64_t(x.shape.size()));
  if (k < 0 || k > x.shape[size_t(axis)])
    detail::failOp(op, "K = {} must be in [0, {}] (the size of axis {})", k, x.shape[size_t(axis)], axis);
  return k;
}

int64_t oneHotDepth(const Op &op, const Graph &graph) {
  auto value = constantValue(graph, op.inputs[1]);
  if (!value)
    detail::failNotConstant(op, graph, 1, "depth");
  if (value->info.elements() != 1)
    detail::failOp(op, "depth must hold one value, got shape {}", shapeToString(value->info.shape));
  const DType t = value->info.dtype;
  if (t != DType::F32 && t != DType::F64 && t != DType::I8 && t != DType::I16 && t != DType::I32 &&
      t != DType::I64 && t != DType::U8)
    detail::failOp(op, "depth has unsupported dtype {}", dtypeName(t));
  const double depth = value->toDoubles()[0];
  if (!(depth >= 1 && depth <= double(1 << 24)))
    detail::failOp(op, "depth {} must be between 1 and 2^24", depth);
  return int64_t(depth);
}

namespace detail {
namespace {

// The `reduction` attribute of ScatterElements and ScatterND.
void checkScatterReduction(const Op &op, const TensorInfo &data) {
  const std::string reduction = op.attrs.getString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min")
    failOp(op, "reduction '{}' must be none, add, mul, max or min", reduction);
  if (reduction != "none" && data.dtype == DType::F16)
    failOp(op, "reduction '{}' is not supported for float16", reduction);
}

std::vector<TensorInfo> inferScatterElements(const Op &op, const Graph &graph) {
  const TensorInfo &data = inputInfo(op, graph, 0);
  const TensorInfo &idx = inputInfo(op, graph, 1);
  const TensorInfo &updates = inputInfo(op, graph, 2);
  requireIndices(op, idx, "indices");
  requireSameDType(op, data, updates, "data", "updates");
  if (idx.shape != updates.shape)
    failOp(op, "indices {} and updates {} must have the same shape", shapeToString(idx.shape),
           shapeToString(updates.shape));
  if (data.shape.size() != idx.shape.size() || data.shape.empty() || data.shape.size() > 8)
    failOp(op, "data {} and indices {} must have the same rank (1 to 8)", shapeToString(data.shape),
           shapeToString(idx.shape));
  for (size_t d = 0; d < data.shape.size(); ++d)
    if (idx.shape[d] > data.shape[d])
      failOp(op, "indices {} exceed data {} in dim {}", shapeToString(idx.shape), shapeToString(data.shape), d);
  normalizeAxis(op, op.attrs.getInt("axis", 0), int64_t(data.shape.size()));
  checkScatterReduction(op, data);
  return {data};
}

std::vector<TensorInfo> inferOneHot(const Op &op, const Graph &graph) {
  const TensorInfo &idx = inputInfo(op, graph, 0);
  const TensorInfo &values = inputInfo(op, graph, 2);
  if (idx.dtype == DType::F16 || idx.dtype == DType::Bool)
    failOp(op, "indices dtype {} is not supported", dtypeName(idx.dtype));
  if (values.elements() != 2)
    failOp(op, "values must hold 2 elements [off, on], got shape {}", shapeToString(values.shape));
  const int64_t depth = oneHotDepth(op, graph);
  const int64_t outRank = int64_t(idx.shape.size()) + 1;
  const int64_t axis = normalizeAxis(op, op.attrs.getInt("axis", -1), outRank);
  Shape out = idx.shape;
  out.insert(out.begin() + axis, depth);
  return {TensorInfo{values.dtype, out}};
}

std::vector<TensorInfo> inferTopK(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (x.shape.empty())
    failOp(op, "input must have rank >= 1");
  if (x.dtype == DType::Bool)
    failOp(op, "bool input is not supported");
  if (op.outputs.size() != 2)
    failOp(op, "has 2 outputs (Values, Indices), got {}", op.outputs.size());
  const int64_t axis = normalizeAxis(op, op.attrs.getInt("axis", -1), int64_t(x.shape.size()));
  Shape out = x.shape;
  out[size_t(axis)] = topKCount(op, graph);
  return {TensorInfo{x.dtype, out}, TensorInfo{DType::I64, out}};
}

// ScatterND (decomposed into ScatterElements on a [rows, row elements] view by
// compiler/passes/index_decompose.cpp).
std::vector<TensorInfo> inferScatterND(const Op &op, const Graph &graph) {
  const TensorInfo &data = inputInfo(op, graph, 0);
  const TensorInfo &idx = inputInfo(op, graph, 1);
  const TensorInfo &updates = inputInfo(op, graph, 2);
  requireIndices(op, idx, "indices");
  requireSameDType(op, data, updates, "data", "updates");
  if (idx.shape.empty() || idx.shape.back() < 1 || idx.shape.back() > int64_t(data.shape.size()))
    failOp(op, "indices {} must end in a dimension from 1 to data's rank {}", shapeToString(idx.shape),
           data.shape.size());
  Shape want(idx.shape.begin(), idx.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + idx.shape.back(), data.shape.end());
  if (updates.shape != want)
    failOp(op, "updates {} must have shape {} (indices' leading dims, then data's trailing ones)",
           shapeToString(updates.shape), shapeToString(want));
  checkScatterReduction(op, data);
  return {data};
}

// MaxUnpool: X's values at MaxPool's flat Indices of a zero tensor (decomposed
// like ScatterND). Output [N, C, spatial] from output_shape, else the pool's inverse.
std::vector<TensorInfo> inferMaxUnpool(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireIndices(op, inputInfo(op, graph, 1), "indices");
  if (inputInfo(op, graph, 1).shape != x.shape)
    failOp(op, "indices {} must have X's shape {}", shapeToString(inputInfo(op, graph, 1).shape),
           shapeToString(x.shape));
  if (op.hasInput(2)) {
    const std::vector<int64_t> shape = constantInputInts(op, graph, 2, "output_shape");
    if (shape.size() != x.shape.size())
      failOp(op, "output_shape has {} dims, X has {}", shape.size(), x.shape.size());
  }
  const std::vector<int64_t> kernel = op.attrs.getInts("kernel_shape");
  const size_t spatial = x.shape.size() - 2;
  if (x.shape.size() < 3 || kernel.size() != spatial)
    failOp(op, "kernel_shape {} does not match X {}", fmt::join(kernel, ","), shapeToString(x.shape));
  std::vector<int64_t> strides = op.attrs.getInts("strides"), pads = op.attrs.getInts("pads");
  strides.resize(spatial, 1);
  pads.resize(2 * spatial, 0);
  Shape out{x.shape[0], x.shape[1]};
  for (size_t d = 0; d < spatial; ++d)
    out.push_back((x.shape[d + 2] - 1) * strides[d] - pads[d] - pads[d + spatial] + kernel[d]);
  if (op.hasInput(2)) { // at least the unpooled shape (it is padded at the end)
    const std::vector<int64_t> shape = constantInputInts(op, graph, 2, "output_shape");
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < out[d])
        failOp(op, "output_shape {} is smaller than the unpooled shape {}", fmt::join(shape, ","), shapeToString(out));
    out.assign(shape.begin(), shape.end());
  }
  return {TensorInfo{x.dtype, out}};
}

// GridSample (decomposed by compiler/passes/grid_sample_decompose.cpp).
std::vector<TensorInfo> inferGridSample(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0), &grid = inputInfo(op, graph, 1);
  if (x.dtype != DType::F32 || grid.dtype != DType::F32)
    failOp(op, "X and grid are {} and {}; popc's GridSample takes float32", dtypeName(x.dtype), dtypeName(grid.dtype));
  if (x.shape.size() != 4 || grid.shape.size() != 4 || grid.shape[3] != 2 || grid.shape[0] != x.shape[0])
    failOp(op, "X {} must be [N, C, H, W] and grid {} [N, H_out, W_out, 2]", shapeToString(x.shape),
           shapeToString(grid.shape));
  const std::string mode = op.attrs.getString("mode", "bilinear"), padding = op.attrs.getString("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    failOp(op, "mode '{}' must be bilinear, nearest or bicubic", mode);
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    failOp(op, "padding_mode '{}' must be zeros, border or reflection", padding);
  return {TensorInfo{x.dtype, {x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]}}};
}

// RoiAlign (opset 10/16; decomposed by compiler/passes/roi_align_decompose.cpp).
std::vector<TensorInfo> inferRoiAlign(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0), &rois = inputInfo(op, graph, 1), &batch = inputInfo(op, graph, 2);
  if (x.dtype != DType::F32 || rois.dtype != DType::F32)
    failOp(op, "X and rois are {} and {}; popc's RoiAlign takes float32", dtypeName(x.dtype), dtypeName(rois.dtype));
  if (x.shape.size() != 4 || rois.shape.size() != 2 || rois.shape[1] != 4)
    failOp(op, "X {} must be [N, C, H, W] and rois {} [num_rois, 4]", shapeToString(x.shape), shapeToString(rois.shape));
  if (batch.shape != Shape{rois.shape[0]} || (batch.dtype != DType::I64 && batch.dtype != DType::I32))
    failOp(op, "batch_indices {} {} must be int64 [num_rois] = [{}]", dtypeName(batch.dtype), shapeToString(batch.shape),
           rois.shape[0]);
  const std::string mode = op.attrs.getString("mode", "avg");
  if (mode != "avg" && mode != "max")
    failOp(op, "mode '{}' must be avg or max", mode);
  const std::string transform = op.attrs.getString("coordinate_transformation_mode", "half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    failOp(op, "coordinate_transformation_mode '{}' must be half_pixel or output_half_pixel", transform);
  const int64_t h = op.attrs.getInt("output_height", 1), w = op.attrs.getInt("output_width", 1);
  if (h < 1 || w < 1 || op.attrs.getInt("sampling_ratio", 0) < 0)
    failOp(op, "output_height {}, output_width {} must be >= 1 and sampling_ratio >= 0", h, w);
  return {TensorInfo{x.dtype, {rois.shape[0], x.shape[1], h, w}}};
}

// TfIdfVectorizer (decomposed by compiler/passes/tfidf_decompose.cpp): integer
// pools only (popc has no string type).
std::vector<TensorInfo> inferTfIdfVectorizer(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if ((x.dtype != DType::I32 && x.dtype != DType::I64) || x.shape.empty() || x.shape.size() > 2)
    failOp(op, "X is {} {}; expected int32 or int64 [T] or [B, T]", dtypeName(x.dtype), shapeToString(x.shape));
  if (op.attrs.has("pool_strings"))
    failOp(op, "pool_strings: popc (like PopART) has no string type; use pool_int64s");
  const std::string mode = op.attrs.getString("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    failOp(op, "mode '{}' must be TF, IDF or TFIDF", mode);
  const int64_t lo = op.attrs.getInt("min_gram_length", 0), hi = op.attrs.getInt("max_gram_length", 0);
  const std::vector<int64_t> counts = op.attrs.getInts("ngram_counts"), indexes = op.attrs.getInts("ngram_indexes");
  if (lo < 1 || hi < lo || int64_t(counts.size()) < hi || op.attrs.getInt("max_skip_count", 0) < 0)
    failOp(op, "min_gram_length {} and max_gram_length {} must satisfy 1 <= min <= max <= ngram_counts' {} entries, "
           "max_skip_count >= 0", lo, hi, counts.size());
  if (indexes.empty() || *std::min_element(indexes.begin(), indexes.end()) < 0)
    failOp(op, "ngram_indexes must list an output column (>= 0) per pool n-gram");
  const int64_t columns = *std::max_element(indexes.begin(), indexes.end()) + 1;
  return {TensorInfo{DType::F32, x.shape.size() == 1 ? Shape{columns} : Shape{x.shape[0], columns}}};
}

} // namespace

void registerIndexOps(OpRegistry &reg) {
  reg.add({"ScatterElements", 3, 3, inferScatterElements});
  reg.add({"ScatterND", 3, 3, inferScatterND});
  reg.add({"MaxUnpool", 2, 3, inferMaxUnpool});
  reg.add({"GridSample", 2, 2, inferGridSample});
  reg.add({"RoiAlign", 3, 3, inferRoiAlign});
  reg.add({"Scatter", 3, 3, inferScatterElements});
  reg.add({"OneHot", 3, 3, inferOneHot});
  reg.add({"TopK", 1, 2, inferTopK});
  reg.add({"TfIdfVectorizer", 1, 1, inferTfIdfVectorizer});
}

} // namespace detail
} // namespace popc::ir
