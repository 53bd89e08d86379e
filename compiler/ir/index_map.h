// Data-movement ops (Slice, Split, Pad, Tile, Expand, Gather with constant
// indices, DepthToSpace, Trilu, Resize nearest, ...): every output element is
// an input element (or a fill value) at an index known at compile time. One
// function per op resolves both the output shapes (shape inference) and that
// index map, so the device lowering (exchange copies), the host constant
// folder and inference can never disagree on the semantics.
#pragma once
#include "compiler/ir/ir.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace popc::ir {

// Table entry meaning "this output element is the fill value".
constexpr int64_t kFill = std::numeric_limits<int64_t>::min();

// How one output reads its input. The output's elements, in row-major order,
// are enumerated by the multi-index (i_0 .. i_{r-1}) over `walk` (same element
// count and order as the output shape; often a finer view of it, e.g.
// [r0,d0,r1,d1] for Tile). Element i reads element sum_d table[d][i_d] of op
// input `input`, or the fill value when any of those entries is kFill.
struct IndexMap {
  size_t input = 0;
  Shape walk;
  std::vector<std::vector<int64_t>> table; // one per walk dim, walk[d] entries
  // The fill value: constant bytes (one element of the output dtype), or, when
  // it is only known at run time, element 0 of op input `fillInput`.
  std::vector<uint8_t> fillBytes;
  std::optional<size_t> fillInput;
};

struct MovementResult {
  std::vector<TensorInfo> outputs;
  // One map per op output (empty walk for an empty output); nullopt when maps
  // were not asked for or an index input (Gather indices, ...) is only known
  // at run time.
  std::optional<std::vector<IndexMap>> maps;
};

// True for the op types resolved here.
bool isMovementOp(const std::string &type);
// Output infos and, when `wantMaps`, the index maps. Throws popc::Error naming
// the op on invalid attributes/inputs, or when a shape-like input is only
// known at run time.
MovementResult resolveMovement(const Op &op, const Graph &graph, bool wantMaps);

// Resize / Upsample geometry (ONNX reference semantics, opset 10..13 and
// Upsample 7/9), shared by the nearest lowering here and the linear/cubic
// decomposition pass.
struct ResizeParams {
  std::string mode, transform, nearestMode;
  double cubicA = -0.75, extrapolation = 0.0;
  bool excludeOutside = false;
  Shape in, out;
  std::vector<double> scale; // per dim
  std::vector<double> roi;   // tf_crop_and_resize only
};
ResizeParams resizeParams(const Op &op, const Graph &graph);
// Source coordinate of output index i along dim d; nullopt when it falls
// outside the input (tf_crop_and_resize: the element is extrapolation_value).
std::optional<double> resizeSource(const ResizeParams &p, size_t d, int64_t i);

// Fails naming `op` when `shape` has a negative dim or over 2^32 elements
// (a shape computed from data must not make the compiler allocate blindly).
void checkTensorSize(const Op &op, const Shape &shape);

// Calls fn(int64_t src) for output elements [begin, end) of `map` in order;
// src is the input element or kFill.
template <typename Fn> void forEachSource(const IndexMap &map, uint64_t begin, uint64_t end, Fn &&fn) {
  const size_t r = map.walk.size();
  if (begin >= end)
    return;
  std::vector<int64_t> idx(r, 0);
  uint64_t rem = begin;
  for (size_t d = r; d-- > 0;) {
    idx[d] = int64_t(rem % uint64_t(map.walk[d]));
    rem /= uint64_t(map.walk[d]);
  }
  int64_t sum = 0, fills = 0;
  for (size_t d = 0; d < r; ++d) {
    const int64_t v = map.table[d][size_t(idx[d])];
    v == kFill ? ++fills : sum += v;
  }
  for (uint64_t e = begin; e < end; ++e) {
    fn(fills ? kFill : sum);
    for (size_t d = r; d-- > 0;) { // odometer step, updating the sum incrementally
      const int64_t old = map.table[d][size_t(idx[d])];
      old == kFill ? --fills : sum -= old;
      if (++idx[d] < map.walk[d]) {
        const int64_t v = map.table[d][size_t(idx[d])];
        v == kFill ? ++fills : sum += v;
        break;
      }
      idx[d] = 0;
      const int64_t v = map.table[d][0];
      v == kFill ? ++fills : sum += v;
    }
  }
}

// Applies `map` on the host: `in` is input map.input's data, `fill` one
// element (used only when the map has fill entries). Any dtype: bytes only.
std::vector<uint8_t> applyIndexMap(const IndexMap &map, const std::vector<uint8_t> &in,
                                   const uint8_t *fill, size_t elemSize, size_t outElems);

} // namespace popc::ir
