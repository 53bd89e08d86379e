// Internal to compiler/codegen: sliding-window geometry shared by conv and pool
// (a band of output rows over a band of input rows, zero padding outside the image).
#pragma once
#include "compiler/codegen/emitter.h"

#include <cstdint>

namespace popc::codegen::detail {

struct Window {
  uint32_t inHeight, inWidth;
  int32_t inRowBegin;
  uint32_t inRows;
  uint32_t outRowBegin, outRows, outWidth;
  uint32_t kernelH, kernelW, strideH, strideW, dilationH, dilationW;
  int32_t padTop, padLeft;

  // Throws popc::Error unless strides/dilations/kernel are positive and every
  // in-image input row some output row reads lies in the input band.
  void validate(const char *kernel) const;

  // Input row read by output row `oh` (absolute) at kernel row `kh`: oh*strideH - padTop + kh*dilationH.
  Value *inputRow(Emitter &em, Value *oh, Value *kh) const;
  // 0 <= ih < inHeight
  Value *rowInImage(Emitter &em, Value *ih) const;
  // For kernel column kw, output columns [lo, hi) read in-image input columns
  // iw = ow*strideW + offset, offset = kw*dilationW - padLeft.
  struct Columns {
    Value *lo, *hi, *offset;
  };
  Columns columns(Emitter &em, Value *kw) const;
};

} // namespace popc::codegen::detail
