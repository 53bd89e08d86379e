// Direct 2-D convolution of a band of output rows (+bias, optional relu).
#include "compiler/codegen/kinds.h"
#include "compiler/codegen/window.h"
#include "support/error.h"

#include <fmt/format.h>

namespace popc::codegen::detail {

using namespace llvm;

namespace {

Window windowOf(const ConvSpec &s) {
  return {s.inHeight, s.inWidth,   s.inRowBegin, s.inRows,    s.outRowBegin, s.outRows, s.outWidth, s.kernelH,
          s.kernelW,  s.strideH,   s.strideW,    s.dilationH, s.dilationW,   s.padTop,  s.padLeft};
}

} // namespace

KernelDesc describe(const ConvSpec &s) {
  if (s.dtype != DType::F32 && s.dtype != DType::F64)
    unsupported("Conv", s.dtype);
  windowOf(s).validate("Conv");
  KernelDesc d;
  d.kind = "conv";
  d.name = fmt::format("Conv_ic{}_oc{}_in{}x{}_rows{}+{}_out{}+{}x{}_k{}x{}_s{}x{}_d{}x{}_p{}x{}_{}", s.inChannels,
                       s.outChannels, s.inHeight, s.inWidth, s.inRowBegin, s.inRows, s.outRowBegin, s.outRows,
                       s.outWidth, s.kernelH, s.kernelW, s.strideH, s.strideW, s.dilationH, s.dilationW, s.padTop,
                       s.padLeft, dtypeName(s.dtype));
  if (s.hasBias)
    d.name += "_bias";
  if (s.relu)
    d.name += "_relu";
  d.fields.push_back({"in", fieldBytes("in", {s.inChannels, s.inRows, s.inWidth}, s.dtype), FieldAccess::Input});
  d.fields.push_back({"weights", fieldBytes("weights", {s.outChannels, s.inChannels, s.kernelH, s.kernelW}, s.dtype),
                      FieldAccess::Input});
  if (s.hasBias)
    d.fields.push_back({"bias", fieldBytes("bias", {s.outChannels}, s.dtype), FieldAccess::Input});
  d.fields.push_back(
      {"out", fieldBytes("out", {s.outChannels, s.outRows, s.outWidth}, s.dtype), FieldAccess::Output});
  // Each output is a dot product of length inChannels*kernelH*kernelW (the
  // tutorial's 5 + (n+1)/2), plus a cycle per output for the fused relu.
  uint64_t outputs = uint64_t(s.outChannels) * s.outRows * s.outWidth;
  uint64_t n = uint64_t(s.inChannels) * s.kernelH * s.kernelW;
  d.cycles = 10 + outputs * (5 + (n + 1) / 2) + (s.relu ? outputs : 0);
  if (s.dtype == DType::F64)
    d.cycles *= 2;
  return d;
}

void emit(Emitter &em, const ConvSpec &s) {
  IRBuilder<> &b = em.b();
  DType t = s.dtype;
  Window w = windowOf(s);
  Value *in = em.field(0), *weights = em.field(1);
  Value *bias = s.hasBias ? em.field(2) : nullptr;
  Value *out = em.field(s.hasBias ? 3 : 2);
  const int64_t IC = s.inChannels, KH = s.kernelH, KW = s.kernelW, OW = s.outWidth;
  FastMathFlags contract;
  contract.setAllowContract();

  em.forLoop(s.outChannels, [&](Value *oc) {
    Value *init = bias ? em.load(t, bias, oc) : em.fconst(t, 0);
    em.forLoop(s.outRows, [&](Value *ohl) {
      Value *oh = b.CreateAdd(ohl, em.i64(s.outRowBegin));
      Value *outRow = b.CreateMul(b.CreateAdd(b.CreateMul(oc, em.i64(s.outRows)), ohl), em.i64(OW));
      em.forLoop(OW, [&](Value *ow) { em.store(t, init, out, b.CreateAdd(outRow, ow)); });
      em.forLoop(IC, [&](Value *ic) {
        em.forLoop(KH, [&](Value *kh) {
          Value *ih = w.inputRow(em, oh, kh);
          // Zero padding: skip kernel rows outside the image, and clip the
          // output columns per kernel column below, so the inner loop has no tests.
          em.ifThen(w.rowInImage(em, ih), [&] {
            Value *inRow = b.CreateMul(b.CreateAdd(b.CreateMul(ic, em.i64(s.inRows)),
                                                   b.CreateSub(ih, em.i64(s.inRowBegin))),
                                       em.i64(s.inWidth));
            Value *wRow = b.CreateMul(b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(oc, em.i64(IC)), ic),
                                                              em.i64(KH)),
                                                  kh),
                                      em.i64(KW));
            em.forLoop(KW, [&](Value *kw) {
              Value *wv = em.load(t, weights, b.CreateAdd(wRow, kw));
              Window::Columns cols = w.columns(em, kw);
              Value *inBase = b.CreateAdd(inRow, cols.offset);
              em.forLoop(cols.lo, cols.hi, [&](Value *ow) {
                Value *x = em.load(t, in, b.CreateAdd(inBase, b.CreateMul(ow, em.i64(s.strideW))));
                Value *idx = b.CreateAdd(outRow, ow);
                IRBuilder<>::FastMathFlagGuard guard(b);
                b.setFastMathFlags(contract); // lets the host JIT use FMA
                em.store(t, b.CreateFAdd(em.load(t, out, idx), b.CreateFMul(wv, x)), out, idx);
              });
            });
          });
        });
      });
      if (s.relu)
        em.forLoop(OW, [&](Value *ow) {
          Value *idx = b.CreateAdd(outRow, ow);
          Value *v = em.load(t, out, idx);
          Value *zero = em.fconst(t, 0);
          em.store(t, b.CreateSelect(b.CreateFCmpOLT(v, zero), zero, v), out, idx);
        });
    });
  });
}

std::string key(const ConvSpec &s) {
  return fmt::format("conv:dtype={},ic={},oc={},inH={},inW={},inRowBegin={},inRows={},outRowBegin={},outRows={},"
                     "outW={},k={}x{},stride={}x{},dilation={}x{},pad={}x{},bias={:d},relu={:d}",
                     dtypeName(s.dtype), s.inChannels, s.outChannels, s.inHeight, s.inWidth, s.inRowBegin, s.inRows,
                     s.outRowBegin, s.outRows, s.outWidth, s.kernelH, s.kernelW, s.strideH, s.strideW, s.dilationH,
                     s.dilationW, s.padTop, s.padLeft, s.hasBias, s.relu);
}

} // namespace popc::codegen::detail
