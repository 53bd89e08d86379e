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

Window::ConstColumns Window::columns(int64_t kw) const {
  int64_t offset = kw * dilationW - padLeft;
  int64_t lo = (std::max<int64_t>(-offset, 0) + strideW - 1) / strideW;
  int64_t num = int64_t(inWidth) - 1 - offset;
  int64_t hi = num < 0 ? 0 : std::min<int64_t>(num / strideW + 1, outWidth);
  return {lo, std::max(lo, hi), offset};
}

Window::ConstRows Window::rows(int64_t kh) const {
  int64_t base = int64_t(outRowBegin) * strideH - padTop + kh * dilationH;
  int64_t lo = (std::max<int64_t>(-base, 0) + strideH - 1) / strideH;
  int64_t num = int64_t(inHeight) - 1 - base;
  int64_t hi = num < 0 ? 0 : std::min<int64_t>(num / strideH + 1, outRows);
  return {lo, std::max(lo, hi), base};
}

namespace {
constexpr int64_t kRowBaseBias = 8;
} // namespace

std::optional<uint32_t> Window::oneRowImmediate() const {
  if (kernelH < 2 || kernelH > 16 || outRows != 1 || inRows > 0xfff)
    return std::nullopt;
  const int64_t rowBase = rows(0).base - inRowBegin;
  if (rowBase < -kRowBaseBias || rowBase >= 16 - kRowBaseBias)
    return std::nullopt;
  uint32_t mask = 0;
  for (int64_t kh = 0; kh < kernelH; ++kh) {
    const ConstRows r = rows(kh);
    if (r.lo == 0 && r.hi == 1)
      mask |= 1u << kh;
  }
  return mask | inRows << 16 | uint32_t(rowBase + kRowBaseBias) << 28;
}

Window::OneRow Window::decodeOneRow(Emitter &em, Value *immediate) const {
  IRBuilder<> &b = em.b();
  OneRow r;
  for (uint32_t kh = 0; kh < kernelH; ++kh)
    r.inImage.push_back(oneRowInImage(em, immediate, em.i64(kh)));
  r.inRows = b.CreateAnd(b.CreateLShr(immediate, 16), em.i64(0xfff));
  r.rowBase = b.CreateSub(b.CreateLShr(immediate, 28), em.i64(kRowBaseBias));
  return r;
}

Value *Window::oneRowInImage(Emitter &em, Value *immediate, Value *kh) {
  return em.b().CreateTrunc(em.b().CreateLShr(immediate, kh), em.b().getInt1Ty());
}

void Window::forEachTap(Emitter &em, DType t, Value *out, Value *outBase, Value *inBase,
                        const std::function<void(int64_t, int64_t)> &setup,
                        const std::function<void(Value *, Value *)> &update) const {
  IRBuilder<> &b = em.b();
  const int64_t OW = outWidth, W = inWidth;
  bool samePitch = int64_t(strideH) * W == OW * int64_t(strideW);
  constexpr int64_t kMaxSaved = 4096; // elements of stack for saved gap columns
  // One stack buffer for the saved gap columns, sized for the largest tap.
  int64_t maxSaved = 0;
  for (int64_t kh = 0; kh < kernelH; ++kh)
    for (int64_t kw = 0; kw < kernelW; ++kw) {
      ConstRows r = rows(kh);
      ConstColumns c = columns(kw);
      int64_t saved = (r.hi - r.lo - 1) * (OW - (c.hi - c.lo));
      if (r.hi - r.lo > 1 && c.hi > c.lo && saved <= kMaxSaved)
        maxSaved = std::max(maxSaved, saved);
    }
  AllocaInst *tmp = nullptr;
  if (samePitch && maxSaved > 0) {
    BasicBlock &entryBlock = b.GetInsertBlock()->getParent()->getEntryBlock();
    IRBuilder<> entry(&entryBlock, entryBlock.begin());
    tmp = entry.CreateAlloca(em.type(t), entry.getInt64(maxSaved), "gap");
  }
  for (int64_t kh = 0; kh < kernelH; ++kh) {
    ConstRows r = rows(kh);
    if (r.lo == r.hi)
      continue;
    int64_t rowOff = r.base - inRowBegin; // field row of relative output row 0
    for (int64_t kw = 0; kw < kernelW; ++kw) {
      ConstColumns c = columns(kw);
      if (c.lo == c.hi)
        continue;
      setup(kh, kw);
      int64_t gap = OW - (c.hi - c.lo);           // skipped columns between two rows
      int64_t saved = (r.hi - r.lo - 1) * gap;
      if (samePitch && r.hi - r.lo > 1 && saved <= kMaxSaved) {
        // in index = p*strideW + k for flat output position p = ohl*OW + ow.
        int64_t k = rowOff * W + c.offset;
        auto gapStart = [&](Value *row) { return b.CreateAdd(outBase, b.CreateAdd(b.CreateMul(row, em.i64(OW)), em.i64(c.hi))); };
        if (saved > 0)
          em.forLoop(em.i64(r.lo), em.i64(r.hi - 1), [&](Value *row) {
            Value *slot = b.CreateMul(b.CreateSub(row, em.i64(r.lo)), em.i64(gap));
            em.forLoop(gap, [&](Value *j) {
              em.store(t, em.load(t, out, b.CreateAdd(gapStart(row), j)), tmp, b.CreateAdd(slot, j));
            });
          });
        em.forLoop(em.i64(r.lo * OW + c.lo), em.i64((r.hi - 1) * OW + c.hi), [&](Value *p) {
          update(b.CreateAdd(outBase, p), b.CreateAdd(inBase, b.CreateAdd(b.CreateMul(p, em.i64(strideW)), em.i64(k))));
        });
        em.foldLastLoopTail(); // lane-wise: one masked vector loop, no epilogues
        if (saved > 0)
          em.forLoop(em.i64(r.lo), em.i64(r.hi - 1), [&](Value *row) {
            Value *slot = b.CreateMul(b.CreateSub(row, em.i64(r.lo)), em.i64(gap));
            em.forLoop(gap, [&](Value *j) {
              em.store(t, em.load(t, tmp, b.CreateAdd(slot, j)), out, b.CreateAdd(gapStart(row), j));
            });
          });
        continue;
      }
      em.forLoop(em.i64(r.lo), em.i64(r.hi), [&](Value *ohl) {
        Value *outRow = b.CreateAdd(outBase, b.CreateMul(ohl, em.i64(OW)));
        Value *inRow = b.CreateAdd(inBase, b.CreateMul(b.CreateAdd(b.CreateMul(ohl, em.i64(strideH)), em.i64(rowOff)), em.i64(W)));
        em.forLoop(em.i64(c.lo), em.i64(c.hi), [&](Value *ow) {
          update(b.CreateAdd(outRow, ow),
                 b.CreateAdd(inRow, b.CreateAdd(b.CreateMul(ow, em.i64(strideW)), em.i64(c.offset))));
        });
        em.foldLastLoopTail(); // lane-wise: one masked vector loop, no epilogues
      });
    }
  }
}

} // namespace popc::codegen::detail
