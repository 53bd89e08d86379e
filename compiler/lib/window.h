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

// Sets the geometry fields ConvSpec and PoolSpec share for a vertex working in
// slab coordinates: its input holds `slabRows` rows (all the image it sees)
// and its output rows start at the slab's local top padding.
template <typename Spec>
void setSlabGeometry(Spec &spec, const Window2d &w, int64_t slabRows, int64_t inWidth, int64_t outRows,
                     int64_t outWidth, int64_t padTopLocal) {
  spec.inHeight = uint32_t(slabRows);
  spec.inWidth = uint32_t(inWidth);
  spec.inRowBegin = 0;
  spec.inRows = uint32_t(slabRows);
  spec.outRowBegin = 0;
  spec.outRows = uint32_t(outRows);
  spec.outWidth = uint32_t(outWidth);
  spec.kernelH = uint32_t(w.kernelH);
  spec.kernelW = uint32_t(w.kernelW);
  spec.strideH = uint32_t(w.strideH);
  spec.strideW = uint32_t(w.strideW);
  spec.dilationH = uint32_t(w.dilationH);
  spec.dilationW = uint32_t(w.dilationW);
  spec.padTop = int32_t(padTopLocal);
  spec.padLeft = int32_t(w.padLeft);
}

} // namespace popc::lib
