// Internal to compiler/codegen: sliding-window geometry shared by conv and pool
// (a band of output rows over a band of input rows, zero padding outside the image).
#pragma once
#include "compiler/codegen/emitter.h"

#include <cstdint>
#include <optional>
#include <vector>

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

  // For kernel column kw, output columns [lo, hi) read in-image input columns
  // iw = ow*strideW + offset, offset = kw*dilationW - padLeft. Taps are
  // unrolled at compile time, so loop bounds are constants.
  struct ConstColumns {
    int64_t lo, hi, offset;
  };
  ConstColumns columns(int64_t kw) const;
  // Output rows (relative to outRowBegin) [lo, hi) whose kernel row kh is in
  // the image; base = input row (absolute) of relative output row 0.
  struct ConstRows {
    int64_t lo, hi, base;
  };
  ConstRows rows(int64_t kh) const;

  // A band of one output row under a kernel of 2 to 16 rows, described by one
  // immediate field instead of constants, so that the bands at the image's
  // edges share code with the others: each kernel row is in the image or not
  // (bits 0-15), the input band's rows (bits 16-27: its channel pitch) and
  // the field row the output row reads under kernel row 0, plus 8 (bits
  // 28-31). nullopt when the band does not fit that.
  std::optional<uint32_t> oneRowImmediate() const;
  // That immediate in code (it depends on kernelH alone): per kernel row an
  // i1, true where it is in the image; the band's rows; the field row of
  // kernel row kh is rowBase + kh * dilationH.
  struct OneRow {
    std::vector<Value *> inImage;
    Value *inRows, *rowBase;
  };
  OneRow decodeOneRow(Emitter &em, Value *immediate) const;
  // Whether kernel row `kh` (i64, constant or not) is in the image, from that immediate.
  static Value *oneRowInImage(Emitter &em, Value *immediate, Value *kh);

  // (Pool only; conv has its own register-tiled loops.)
  // Visits every (output, input) element pair of the window: for each kernel
  // tap (kh, kw), unrolled at compile time, setup(kh, kw) runs once and then
  // update(outIndex, inIndex) for every output position of the band whose
  // tap reads an in-image input. Indices are element indices into the
  // out/in fields, offset by outBase/inBase (one channel plane each).
  // When input rows and output rows have the same pitch (stride-1 "same"
  // width), each tap is one loop over the flat output plane, long enough to
  // vectorise well; the few out-of-image columns it then passes over are
  // saved before and restored after, so `update` may be any accumulation.
  void forEachTap(Emitter &em, DType t, Value *out, Value *outBase, Value *inBase,
                  const std::function<void(int64_t kh, int64_t kw)> &setup,
                  const std::function<void(Value *outIndex, Value *inIndex)> &update) const;
};

// The window of a ConvSpec or PoolSpec (they share these geometry fields).
template <typename Spec> Window windowOf(const Spec &s) {
  return {s.inHeight, s.inWidth,   s.inRowBegin, s.inRows,    s.outRowBegin, s.outRows, s.outWidth, s.kernelH,
          s.kernelW,  s.strideH,   s.strideW,    s.dilationH, s.dilationW,   s.padTop,  s.padLeft};
}

// The spec without the row fields Window::oneRowImmediate carries, for the
// code key of a spec that passes them as that immediate.
template <typename Spec> Spec withoutOneRowFields(Spec s) {
  s.inHeight = s.inRows = s.outRowBegin = 0;
  s.inRowBegin = s.padTop = 0;
  return s;
}

} // namespace popc::codegen::detail
