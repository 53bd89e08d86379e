// Max and average pooling of a band of output rows.
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/codegen/kinds.h"
#include "compiler/codegen/window.h"
#include "support/error.h"

#include <fmt/format.h>

#include <limits>
#include <optional>

namespace popc::codegen::detail {

using namespace llvm;

KernelDesc describe(const PoolSpec &s) {
  const char *op = s.max ? "MaxPool" : "AveragePool";
  if (s.dtype != DType::F32 && s.dtype != DType::F64)
    unsupported(op, s.dtype);
  windowOf(s).validate(op);
  KernelDesc d;
  d.kind = s.max ? "maxpool" : "avgpool";
  d.name = fmt::format("{}_c{}_in{}x{}_rows{}+{}_out{}+{}x{}_k{}x{}_s{}x{}_d{}x{}_p{}x{}_{}", op, s.channels,
                       s.inHeight, s.inWidth, s.inRowBegin, s.inRows, s.outRowBegin, s.outRows, s.outWidth,
                       s.kernelH, s.kernelW, s.strideH, s.strideW, s.dilationH, s.dilationW, s.padTop, s.padLeft,
                       dtypeName(s.dtype));
  if (!s.max && s.countIncludePad)
    d.name += "_inclpad";
  d.fields.push_back({"in", fieldBytes("in", {s.channels, s.inRows, s.inWidth}, s.dtype), FieldAccess::Input});
  d.fields.push_back({"out", fieldBytes("out", {s.channels, s.outRows, s.outWidth}, s.dtype), FieldAccess::Output});
  const uint64_t outputs = uint64_t(s.channels) * s.outRows * s.outWidth;
  d.cycles = cycles::pool(outputs, uint64_t(s.kernelH) * s.kernelW, s.dtype == DType::F64);
  // A max pool's one-row bands at the image's edges share code with the
  // others (Window::oneRowImmediate; conv does the same).
  if (std::optional<uint32_t> rows = s.max ? windowOf(s).oneRowImmediate() : std::nullopt) {
    d.fields.push_back({"rows", 0, FieldAccess::Immediate, *rows});
    d.codeKey = key(withoutOneRowFields(s)) + ",rows=immediate";
  }
  return d;
}

namespace {

// A max pool of one output row whose rows are an immediate: the taps of
// Window::forEachTap in the same order (kernel rows, columns, outputs), a
// branch around each kernel row's; nothing here reads the spec's row fields.
void emitOneRowMax(Emitter &em, const PoolSpec &s, Value *rowsImmediate) {
  IRBuilder<> &b = em.b();
  const DType t = s.dtype;
  const Window w = windowOf(s);
  const Window::OneRow band = w.decodeOneRow(em, rowsImmediate);
  Value *in = em.field(0), *out = em.field(1);
  const int64_t OW = s.outWidth, W = s.inWidth;
  Value *init = em.fconst(t, -std::numeric_limits<double>::infinity());
  em.forLoop(s.channels, [&](Value *c) {
    Value *outBase = b.CreateMul(c, em.i64(OW));
    Value *inBase = b.CreateMul(c, b.CreateMul(band.inRows, em.i64(W)));
    em.forLoop(OW, [&](Value *p) { em.store(t, init, out, b.CreateAdd(outBase, p)); });
    for (int64_t kh = 0; kh < s.kernelH; ++kh)
      em.ifThen(band.inImage[size_t(kh)], [&] {
        Value *fieldRow = b.CreateAdd(band.rowBase, em.i64(kh * int64_t(s.dilationH)));
        Value *inRow = b.CreateAdd(inBase, b.CreateMul(fieldRow, em.i64(W)));
        for (int64_t kw = 0; kw < s.kernelW; ++kw) {
          const Window::ConstColumns col = w.columns(kw);
          if (col.lo == col.hi)
            continue;
          em.forLoop(em.i64(col.lo), em.i64(col.hi), [&](Value *ow) {
            Value *o = b.CreateAdd(outBase, ow);
            Value *i = b.CreateAdd(inRow, b.CreateAdd(b.CreateMul(ow, em.i64(s.strideW)), em.i64(col.offset)));
            Value *acc = em.load(t, out, o), *x = em.load(t, in, i);
            em.store(t, em.fmax(acc, x), out, o);
          });
          em.foldLastLoopTail(); // lane-wise: one masked vector loop, no epilogues
        }
      });
  });
}

} // namespace

void emit(Emitter &em, const PoolSpec &s) {
  if (s.max && windowOf(s).oneRowImmediate()) {
    emitOneRowMax(em, s, em.immediate(2));
    return;
  }
  IRBuilder<> &b = em.b();
  DType t = s.dtype;
  Window w = windowOf(s);
  Value *in = em.field(0), *out = em.field(1);
  const int64_t OW = s.outWidth;
  // Padding never contributes: max starts at -inf, average sums in-image values.
  Value *init = em.fconst(t, s.max ? -std::numeric_limits<double>::infinity() : 0.0);

  const int64_t plane = int64_t(s.outRows) * OW;
  em.forLoop(s.channels, [&](Value *c) {
    Value *outBase = b.CreateMul(c, em.i64(plane));
    Value *inBase = b.CreateMul(c, em.i64(int64_t(s.inRows) * s.inWidth));
    em.forLoop(plane, [&](Value *p) { em.store(t, init, out, b.CreateAdd(outBase, p)); });
    w.forEachTap(
        em, t, out, outBase, inBase, [](int64_t, int64_t) {},
        [&](Value *o, Value *i) {
          Value *acc = em.load(t, out, o), *x = em.load(t, in, i);
          em.store(t, s.max ? em.fmax(acc, x) : b.CreateFAdd(acc, x), out, o);
        });
    if (s.max)
      return;
    if (s.countIncludePad) {
      Value *scale = em.fconst(t, 1.0 / (double(s.kernelH) * s.kernelW));
      em.forLoop(plane, [&](Value *p) {
        Value *idx = b.CreateAdd(outBase, p);
        em.store(t, b.CreateFMul(em.load(t, out, idx), scale), out, idx);
      });
      return;
    }
    // Divide by the number of in-image window elements: kernel rows valid for
    // the output row times kernel columns valid for the output column.
    auto count = [&](Value *i, int64_t taps, auto range) {
      Value *n = em.i64(0);
      for (int64_t k = 0; k < taps; ++k) {
        auto [lo, hi] = range(k);
        Value *inside = b.CreateAnd(b.CreateICmpSGE(i, em.i64(lo)), b.CreateICmpSLT(i, em.i64(hi)));
        n = b.CreateAdd(n, b.CreateZExt(inside, b.getInt64Ty()));
      }
      return n;
    };
    em.forLoop(s.outRows, [&](Value *ohl) {
      Value *rows = count(ohl, s.kernelH, [&](int64_t kh) {
        Window::ConstRows r = w.rows(kh);
        return std::pair{r.lo, r.hi};
      });
      Value *outRow = b.CreateAdd(outBase, b.CreateMul(ohl, em.i64(OW)));
      em.forLoop(OW, [&](Value *ow) {
        Value *cols = count(ow, s.kernelW, [&](int64_t kw) {
          Window::ConstColumns c = w.columns(kw);
          return std::pair{c.lo, c.hi};
        });
        Value *n = b.CreateMul(rows, cols);
        Value *idx = b.CreateAdd(outRow, ow);
        Value *avg = b.CreateFDiv(em.load(t, out, idx), b.CreateSIToFP(n, em.type(t)));
        // A window entirely in the padding averages nothing: 0.
        em.store(t, b.CreateSelect(b.CreateICmpEQ(n, em.i64(0)), em.fconst(t, 0), avg), out, idx);
      });
    });
  });
}

std::string key(const PoolSpec &s) {
  return fmt::format("pool:dtype={},max={:d},countIncludePad={:d},c={},inH={},inW={},inRowBegin={},inRows={},"
                     "outRowBegin={},outRows={},outW={},k={}x{},stride={}x{},dilation={}x{},pad={}x{}",
                     dtypeName(s.dtype), s.max, !s.max && s.countIncludePad, s.channels, s.inHeight, s.inWidth,
                     s.inRowBegin, s.inRows, s.outRowBegin, s.outRows, s.outWidth, s.kernelH, s.kernelW, s.strideH,
                     s.strideW, s.dilationH, s.dilationW, s.padTop, s.padLeft);
}

} // namespace popc::codegen::detail
