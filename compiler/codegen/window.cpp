#include "compiler/codegen/window.h"

#include "support/error.h"

#include <algorithm>
#include <limits>

namespace popc::codegen::detail {

using namespace llvm;

void Window::validate(const char *kernel) const {
  if (kernelH == 0 || kernelW == 0 || strideH == 0 || strideW == 0 || dilationH == 0 || dilationW == 0)
    fail("codegen: {} kernel size, strides and dilations must be positive", kernel);
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  auto floorDiv = [](int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); };
  // Per kernel row, ih = oh*strideH + base is an arithmetic progression over the
  // output band: clip it to the image analytically (no loop over rows).
  for (int64_t kh = 0; kh < kernelH; ++kh) {
    int64_t base = kh * dilationH - padTop;
    int64_t first = std::max<int64_t>(outRowBegin, -floorDiv(base, strideH)); // ceil(-base/strideH)
    int64_t last = std::min<int64_t>(int64_t(outRowBegin) + outRows - 1,
                                     floorDiv(int64_t(inHeight) - 1 - base, strideH));
    if (first <= last) {
      lo = std::min(lo, first * strideH + base);
      hi = std::max(hi, last * strideH + base);
    }
  }
  if (lo <= hi && (lo < inRowBegin || hi >= int64_t(inRowBegin) + inRows))
    fail("codegen: {} output rows [{},{}) read input rows [{},{}] but the input field holds rows [{},{}): "
         "widen the input band",
         kernel, outRowBegin, outRowBegin + outRows, lo, hi, inRowBegin, int64_t(inRowBegin) + inRows);
}

Value *Window::inputRow(Emitter &em, Value *oh, Value *kh) const {
  IRBuilder<> &b = em.b();
  return b.CreateAdd(b.CreateSub(b.CreateMul(oh, em.i64(strideH)), em.i64(padTop)),
                     b.CreateMul(kh, em.i64(dilationH)));
}

Value *Window::rowInImage(Emitter &em, Value *ih) const {
  return em.b().CreateICmpULT(ih, em.i64(inHeight)); // unsigned: negative rows fail too
}

Window::Columns Window::columns(Emitter &em, Value *kw) const {
  IRBuilder<> &b = em.b();
  Value *offset = b.CreateSub(b.CreateMul(kw, em.i64(dilationW)), em.i64(padLeft));
  // lo = ceil(max(0, -offset) / strideW)
  Value *negOff = em.max(DType::I64, b.CreateNeg(offset), em.i64(0));
  Value *lo = b.CreateUDiv(b.CreateAdd(negOff, em.i64(strideW - 1)), em.i64(strideW));
  // hi = min(outWidth, floor((inWidth-1-offset) / strideW) + 1), or 0 if that is negative
  Value *num = b.CreateSub(em.i64(int64_t(inWidth) - 1), offset);
  Value *hi = b.CreateSelect(b.CreateICmpSLT(num, em.i64(0)), em.i64(0),
                             b.CreateAdd(b.CreateUDiv(num, em.i64(strideW)), em.i64(1)));
  hi = em.min(DType::I64, hi, em.i64(outWidth));
  return {lo, hi, offset};
}

} // namespace popc::codegen::detail
