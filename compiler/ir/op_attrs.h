// Resolved attributes of ops whose ONNX attributes need interpretation
// (defaults, auto_pad, negative axes, opset differences). Inference uses them
// and so do the lowerings in compiler/lib, so both agree on the semantics.
// All functions throw popc::Error naming the op when an attribute is invalid.
#pragma once
#include "compiler/ir/ir.h"

namespace popc::ir {

// Geometry of Conv / MaxPool / AveragePool over the spatial dims (2-D for Conv).
struct WindowParams {
  Shape kernel;                     // kernel size per spatial dim
  std::vector<int64_t> strides;     // per spatial dim
  std::vector<int64_t> dilations;   // per spatial dim (1 for AveragePool)
  std::vector<int64_t> padsBegin;   // auto_pad resolved into explicit pads
  std::vector<int64_t> padsEnd;
  Shape outSpatial;                 // output spatial dims
  int64_t group = 1;                // Conv only
  bool ceilMode = false;            // pools only
  bool countIncludePad = false;     // AveragePool only
};
// Conv: X [N,C,H,W], W [M,C/group,kH,kW]; kernel from W (kernel_shape checked against it).
WindowParams convParams(const Op &op, const Graph &graph);
// MaxPool / AveragePool: kernel_shape required.
WindowParams poolParams(const Op &op, const Graph &graph);

// `axis` in [-rank, rank) (or [-rank, rank] when inclusive) → [0, rank); error otherwise.
int64_t normalizeAxis(const Op &op, int64_t axis, int64_t rank, bool inclusive = false);
// Softmax axis, normalised. Opset < 13: the input is coerced to 2-D
// [prod(dims[:axis]), prod(dims[axis:])] and softmax runs over the second dim;
// opset >= 13: over this single axis. Use softmaxCoerces2D() to tell.
int64_t softmaxAxis(const Op &op, const Graph &graph);
bool softmaxCoerces2D(const Graph &graph);
// Transpose perm (default: reversed dims), validated.
std::vector<int64_t> transposePerm(const Op &op, const Graph &graph);
// Concat axis, normalised.
int64_t concatAxis(const Op &op, const Graph &graph);
// Flatten axis in [0, rank].
int64_t flattenAxis(const Op &op, const Graph &graph);
// Squeeze / Unsqueeze axes (attribute before opset 13, constant input from 13),
// normalised and sorted. Squeeze without axes → every dim of size 1.
std::vector<int64_t> squeezeAxes(const Op &op, const Graph &graph);
std::vector<int64_t> unsqueezeAxes(const Op &op, const Graph &graph);
// Gemm attributes.
struct GemmParams {
  bool transA = false, transB = false;
  double alpha = 1.0, beta = 1.0;
  int64_t M = 0, N = 0, K = 0;
};
GemmParams gemmParams(const Op &op, const Graph &graph);
// GatherElements/ScatterElements: the indices have the data's dims except
// along `axis`, so row r of the indices (its `axis` line) only reads or writes
// line r of the data (the lowering splits them row-wise; long lines are
// chunked by long-row-decomposition).
bool indicesShareOtherDims(const Shape &data, const Shape &indices, int64_t axis);

// The window offsets of a conv or pool seen from X [N, C, spatial...]: the ONNX
// Pad pads (all begins, then all ends) that put every window of `p` (output
// spatial dims `outSpatial`) inside X, and where window offset `flat`
// (row-major over the kernel) starts in that padded X, per spatial dim.
std::vector<int64_t> windowPadding(const WindowParams &p, const Shape &x, const Shape &outSpatial);
std::vector<int64_t> windowOffsetStarts(const WindowParams &p, int64_t flat);

// A convolution weight W [G*A, B, k...] with its channel roles swapped per
// group: viewed `split` [G, A, B, k...], transposed by `perm` to [G, B, A, k...],
// viewed `swapped` [G*B, A, k...]. Conv <-> ConvTranspose weights (a
// ConvTranspose as a Conv, a Conv's input gradient).
struct SwappedWeightRoles {
  Shape split, swapped;
  std::vector<int64_t> perm;
};
SwappedWeightRoles swapWeightRoles(const Shape &w, int64_t group);

// ConvTranspose: X [N,C,D...] (1 to 3 spatial dims), W [C, M/group, k...].
// Pads resolved from pads / auto_pad / output_shape as the ONNX spec says.
WindowParams convTransposeParams(const Op &op, const Graph &graph);

// Reduce* (axes from the attribute or, from ReduceSum-13, the constant input 1;
// no axes = all unless noop_with_empty_axes) and ArgMax/ArgMin (one axis).
struct ReduceParams {
  std::vector<int64_t> axes; // normalised, sorted
  bool keepDims = true;
  bool selectLast = false;   // ArgMax/ArgMin select_last_index
  Shape outShape;
};
ReduceParams reduceParams(const Op &op, const Graph &graph);
ReduceParams argReduceParams(const Op &op, const Graph &graph);
// RNN / GRU / LSTM geometry and attributes, validated (default activations only).
struct RecurrentParams {
  int64_t gates = 1; // RNN 1, GRU 3 (z r h), LSTM 4 (i o f c)
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  int64_t dirMode = 0; // 0 forward, 1 reverse, 2 bidirectional
  int64_t layout = 0;  // 1: batch-major X/Y/states
  double clip = 0;     // 0 = none
  bool linearBeforeReset = false;
};
RecurrentParams recurrentParams(const Op &op, const Graph &graph);
// CumSum's axis (constant input 1), normalised.
int64_t cumSumAxis(const Op &op, const Graph &graph);
// TopK's k (constant input 1 from opset 10, attribute before), validated.
int64_t topKCount(const Op &op, const Graph &graph);
// OneHot's depth (constant input 1, any numeric type), validated.
int64_t oneHotDepth(const Op &op, const Graph &graph);

} // namespace popc::ir
