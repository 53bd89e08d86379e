// Geometry shared by convolution and pooling: explicit pads from ONNX
// attributes (pads / auto_pad), and the input rows an output row band needs.
#pragma once
#include "compiler/ir/ir.h"
#include "compiler/ir/op_attrs.h"

#include <cstdint>

namespace popc::lib {

struct Window2d {
  int64_t kernelH = 1, kernelW = 1, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
};

// The 2-D window of a Conv / MaxPool / AveragePool, from the IR's resolved
// attributes (ir::convParams / ir::poolParams: auto_pad already explicit).
Window2d window2d(const ir::Op &op, const ir::Graph &g);

// Input rows [lo, hi) ∩ [0, inH) that output rows [oh0, oh1) read, never empty,
// and the top padding seen from that slab so a vertex can work in slab
// coordinates (rows outside the slab are padding).
struct RowSlab {
  int64_t lo = 0, rows = 0, padTopLocal = 0;
};
RowSlab rowSlab(const Window2d &w, int64_t inH, int64_t oh0, int64_t oh1);

} // namespace popc::lib
