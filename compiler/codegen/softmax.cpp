// Numerically stable (log-)softmax of each row: exp(x - max) / sum.
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/codegen/kinds.h"
#include "support/error.h"

#include <fmt/format.h>

#include <limits>

namespace popc::codegen::detail {

using namespace llvm;

KernelDesc describe(const SoftmaxSpec &s) {
  const char *op = s.log ? "LogSoftmax" : "Softmax";
  if (s.dtype != DType::F32 && s.dtype != DType::F64)
    unsupported(op, s.dtype);
  KernelDesc d;
  d.kind = s.log ? "logsoftmax" : "softmax";
  d.name = fmt::format("{}_r{}_c{}_{}", op, s.rows, s.cols, dtypeName(s.dtype));
  d.fields.push_back({"in", fieldBytes("in", {s.rows, s.cols}, s.dtype), FieldAccess::Input});
  d.fields.push_back({"out", fieldBytes("out", {s.rows, s.cols}, s.dtype), FieldAccess::Output});
  d.cycles = cycles::softmax(s.rows, s.cols, s.dtype == DType::F64);
  return d;
}

void emit(Emitter &em, const SoftmaxSpec &s) {
  IRBuilder<> &b = em.b();
  DType t = s.dtype;
  Value *in = em.field(0), *out = em.field(1);
  const int64_t cols = s.cols;
  em.forLoop(s.rows, [&](Value *r) {
    Value *rowBase = b.CreateMul(r, em.i64(cols));
    auto at = [&](Value *c) { return b.CreateAdd(rowBase, c); };
    Value *m = em.forLoop(cols, {em.fconst(t, -std::numeric_limits<double>::infinity())},
                          [&](Value *c, const Emitter::Carried &acc) {
                            return Emitter::Carried{em.fmax(acc[0], em.load(t, in, at(c)))};
                          })[0];
    // exp(x - max) is stored in out (softmax) so the last pass only scales it.
    Value *sum = em.forLoop(cols, {em.fconst(t, 0)}, [&](Value *c, const Emitter::Carried &acc) {
      Value *e = em.exp(b.CreateFSub(em.load(t, in, at(c)), m));
      if (!s.log)
        em.store(t, e, out, at(c));
      return Emitter::Carried{em.accAdd(acc[0], e)};
    })[0];
    if (s.log) {
      // out = (x - max) - log(sum): subtracting max first keeps the result exact
      // for large inputs, where max + log(sum) would round away log(sum)'s bits.
      Value *logSum = em.log(sum);
      em.forLoop(cols, [&](Value *c) {
        em.store(t, b.CreateFSub(b.CreateFSub(em.load(t, in, at(c)), m), logSum), out, at(c));
      });
    } else {
      Value *inv = b.CreateFDiv(em.fconst(t, 1), sum);
      em.forLoop(cols, [&](Value *c) { em.store(t, b.CreateFMul(em.load(t, out, at(c)), inv), out, at(c)); });
    }
  });
}

std::string key(const SoftmaxSpec &s) {
  return fmt::format("softmax:dtype={},log={:d},rows={},cols={}", dtypeName(s.dtype), s.log, s.rows, s.cols);
}

} // namespace popc::codegen::detail
