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

  const int64_t plane = int64_t(s.outRows) * OW;
  em.forLoop(s.outChannels, [&](Value *oc) {
    Value *init = bias ? em.load(t, bias, oc) : em.fconst(t, 0);
    Value *outBase = b.CreateMul(oc, em.i64(plane));
    em.forLoop(plane, [&](Value *p) { em.store(t, init, out, b.CreateAdd(outBase, p)); });
    em.forLoop(IC, [&](Value *ic) {
      Value *inBase = b.CreateMul(ic, em.i64(int64_t(s.inRows) * s.inWidth));
      Value *wRow = b.CreateMul(b.CreateAdd(b.CreateMul(oc, em.i64(IC)), ic), em.i64(KH * KW));
      Value *wv = nullptr;
      // Zero padding: each tap only visits outputs whose input is in the image.
      w.forEachTap(
          em, t, out, outBase, inBase,
          [&](int64_t kh, int64_t kw) { wv = em.load(t, weights, b.CreateAdd(wRow, em.i64(kh * KW + kw))); },
          [&](Value *o, Value *i) {
            IRBuilder<>::FastMathFlagGuard guard(b);
            b.setFastMathFlags(contract); // lets the host JIT use FMA
            em.store(t, b.CreateFAdd(em.load(t, out, o), b.CreateFMul(wv, em.load(t, in, i))), out, o);
          });
    });
    if (s.relu)
      em.forLoop(plane, [&](Value *p) {
        Value *idx = b.CreateAdd(outBase, p);
        Value *v = em.load(t, out, idx);
        Value *zero = em.fconst(t, 0);
        em.store(t, b.CreateSelect(b.CreateFCmpOLT(v, zero), zero, v), out, idx);
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
