// Max and average pooling of a band of output rows.
#include "compiler/codegen/kinds.h"
#include "compiler/codegen/window.h"
#include "support/error.h"

#include <fmt/format.h>

#include <limits>

namespace popc::codegen::detail {

using namespace llvm;

namespace {

Window windowOf(const PoolSpec &s) {
  return {s.inHeight, s.inWidth,   s.inRowBegin, s.inRows,    s.outRowBegin, s.outRows, s.outWidth, s.kernelH,
          s.kernelW,  s.strideH,   s.strideW,    s.dilationH, s.dilationW,   s.padTop,  s.padLeft};
}

} // namespace

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
  // One compare/add per window element, a few cycles per output for setup and
  // (average) the divide.
  uint64_t outputs = uint64_t(s.channels) * s.outRows * s.outWidth;
  d.cycles = 10 + outputs * (3 + uint64_t(s.kernelH) * s.kernelW);
  if (s.dtype == DType::F64)
    d.cycles *= 2;
  return d;
}

void emit(Emitter &em, const PoolSpec &s) {
  IRBuilder<> &b = em.b();
  DType t = s.dtype;
  Window w = windowOf(s);
  Value *in = em.field(0), *out = em.field(1);
  const int64_t OW = s.outWidth;
  // Padding never contributes: max starts at -inf, average sums in-image values.
  Value *init = em.fconst(t, s.max ? -std::numeric_limits<double>::infinity() : 0.0);

  em.forLoop(s.channels, [&](Value *c) {
    em.forLoop(s.outRows, [&](Value *ohl) {
      Value *oh = b.CreateAdd(ohl, em.i64(s.outRowBegin));
      Value *outRow = b.CreateMul(b.CreateAdd(b.CreateMul(c, em.i64(s.outRows)), ohl), em.i64(OW));
      em.forLoop(OW, [&](Value *ow) { em.store(t, init, out, b.CreateAdd(outRow, ow)); });
      em.forLoop(s.kernelH, [&](Value *kh) {
        Value *ih = w.inputRow(em, oh, kh);
        em.ifThen(w.rowInImage(em, ih), [&] {
          Value *inRow = b.CreateMul(
              b.CreateAdd(b.CreateMul(c, em.i64(s.inRows)), b.CreateSub(ih, em.i64(s.inRowBegin))),
              em.i64(s.inWidth));
          em.forLoop(s.kernelW, [&](Value *kw) {
            Window::Columns cols = w.columns(em, kw);
            Value *inBase = b.CreateAdd(inRow, cols.offset);
            em.forLoop(cols.lo, cols.hi, [&](Value *ow) {
              Value *x = em.load(t, in, b.CreateAdd(inBase, b.CreateMul(ow, em.i64(s.strideW))));
              Value *idx = b.CreateAdd(outRow, ow);
              Value *acc = em.load(t, out, idx);
              em.store(t, s.max ? em.fmax(acc, x) : b.CreateFAdd(acc, x), out, idx);
            });
          });
        });
      });
      if (s.max)
        return;
      if (s.countIncludePad) {
        Value *scale = em.fconst(t, 1.0 / (double(s.kernelH) * s.kernelW));
        em.forLoop(OW, [&](Value *ow) {
          Value *idx = b.CreateAdd(outRow, ow);
          em.store(t, b.CreateFMul(em.load(t, out, idx), scale), out, idx);
        });
        return;
      }
      // Divide by the number of in-image window elements: rows valid for this
      // output row times columns valid for each output column.
      Value *rows = em.forLoop(s.kernelH, {em.i64(0)}, [&](Value *kh, const Emitter::Carried &n) {
        return Emitter::Carried{b.CreateAdd(n[0], b.CreateZExt(w.rowInImage(em, w.inputRow(em, oh, kh)),
                                                                b.getInt64Ty()))};
      })[0];
      em.forLoop(OW, [&](Value *ow) {
        Value *colsValid = em.forLoop(s.kernelW, {em.i64(0)}, [&](Value *kw, const Emitter::Carried &n) {
          Window::Columns cols = w.columns(em, kw);
          Value *inside = b.CreateAnd(b.CreateICmpSGE(ow, cols.lo), b.CreateICmpSLT(ow, cols.hi));
          return Emitter::Carried{b.CreateAdd(n[0], b.CreateZExt(inside, b.getInt64Ty()))};
        })[0];
        Value *count = b.CreateMul(rows, colsValid);
        Value *idx = b.CreateAdd(outRow, ow);
        Value *avg = b.CreateFDiv(em.load(t, out, idx), b.CreateSIToFP(count, em.type(t)));
        // A window entirely in the padding averages nothing: 0.
        em.store(t, b.CreateSelect(b.CreateICmpEQ(count, em.i64(0)), em.fconst(t, 0), avg), out, idx);
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
