// Batched matrix multiply: out = alpha * A·B + beta * C.
#include "compiler/codegen/kinds.h"
#include "support/error.h"

#include <fmt/format.h>

namespace popc::codegen::detail {

using namespace llvm;

namespace {

// a*b + c with contraction allowed, so the host JIT may fuse it into an FMA.
Value *mulAdd(Emitter &em, Value *a, Value *b, Value *c, bool reassoc) {
  FastMathFlags fmf;
  fmf.setAllowContract();
  fmf.setAllowReassoc(reassoc);
  IRBuilder<>::FastMathFlagGuard guard(em.b());
  em.b().setFastMathFlags(fmf);
  return em.b().CreateFAdd(em.b().CreateFMul(a, b), c);
}

} // namespace

KernelDesc describe(const MatMulSpec &s) {
  if (s.dtype != DType::F32 && s.dtype != DType::F64)
    unsupported("MatMul", s.dtype);
  KernelDesc d;
  d.kind = "matmul";
  d.name = fmt::format("MatMul_b{}_m{}_n{}_k{}_{}", s.batch, s.m, s.n, s.k, dtypeName(s.dtype));
  if (s.transA)
    d.name += "_tA";
  if (s.transB)
    d.name += "_tB";
  if (s.broadcastB)
    d.name += "_bcastB";
  if (s.hasC)
    d.name += fmt::format("_C_beta{}", s.beta);
  if (s.alpha != 1.0f)
    d.name += fmt::format("_alpha{}", s.alpha);
  d.fields.push_back({"A", fieldBytes("A", {s.batch, s.m, s.k}, s.dtype), FieldAccess::Input});
  d.fields.push_back(
      {"B", fieldBytes("B", {s.broadcastB ? 1u : s.batch, s.k, s.n}, s.dtype), FieldAccess::Input});
  if (s.hasC)
    d.fields.push_back({"C", fieldBytes("C", {s.batch, s.m, s.n}, s.dtype), FieldAccess::Input});
  d.fields.push_back({"out", fieldBytes("out", {s.batch, s.m, s.n}, s.dtype), FieldAccess::Output});
  // The Graphcore tutorial's dot-product vertex: 5 + (k+1)/2 cycles per output
  // (2 f32 MACs per cycle), plus one cycle per output to add beta*C.
  uint64_t outputs = uint64_t(s.batch) * s.m * s.n;
  d.cycles = 10 + outputs * (5 + (uint64_t(s.k) + 1) / 2) + (s.hasC ? outputs : 0);
  if (s.dtype == DType::F64)
    d.cycles *= 2;
  return d;
}

void emit(Emitter &em, const MatMulSpec &s) {
  IRBuilder<> &b = em.b();
  DType t = s.dtype;
  Value *A = em.field(0), *B = em.field(1);
  Value *C = s.hasC ? em.field(2) : nullptr;
  Value *out = em.field(s.hasC ? 3 : 2);
  const int64_t M = s.m, N = s.n, K = s.k;
  Value *alpha = em.fconst(t, s.alpha), *beta = em.fconst(t, s.beta);

  // Element index of A[b][m][k] for either storage order.
  auto aIndex = [&](Value *bi, Value *mi, Value *ki) {
    Value *base = b.CreateMul(bi, em.i64(M * K));
    return s.transA ? b.CreateAdd(base, b.CreateAdd(b.CreateMul(ki, em.i64(M)), mi))
                    : b.CreateAdd(base, b.CreateAdd(b.CreateMul(mi, em.i64(K)), ki));
  };
  auto bBase = [&](Value *bi) { return s.broadcastB ? em.i64(0) : b.CreateMul(bi, em.i64(K * N)); };
  // beta*C[idx] (+ acc), or just acc.
  auto withC = [&](Value *acc, Value *idx) -> Value * {
    if (!C)
      return acc;
    Value *c = em.load(t, C, idx);
    if (s.beta != 1.0f)
      c = b.CreateFMul(beta, c);
    return acc ? b.CreateFAdd(acc, c) : c;
  };

  em.forLoop(s.batch, [&](Value *bi) {
    em.forLoop(M, [&](Value *mi) {
      Value *row = b.CreateMul(b.CreateAdd(b.CreateMul(bi, em.i64(M)), mi), em.i64(N));
      if (s.transB) {
        // B[b][n][k]: both operands run along k, so one dot product per output.
        em.forLoop(N, [&](Value *ni) {
          Value *bRow = b.CreateAdd(bBase(bi), b.CreateMul(ni, em.i64(K)));
          Value *acc = em.forLoop(K, {em.fconst(t, 0)}, [&](Value *ki, const Emitter::Carried &c) {
            Value *a = em.load(t, A, aIndex(bi, mi, ki));
            Value *bv = em.load(t, B, b.CreateAdd(bRow, ki));
            return Emitter::Carried{mulAdd(em, a, bv, c[0], true)};
          })[0];
          if (s.alpha != 1.0f)
            acc = b.CreateFMul(alpha, acc);
          Value *idx = b.CreateAdd(row, ni);
          em.store(t, withC(acc, idx), out, idx);
        });
        return;
      }
      // Loop order b, m, k, n: the inner loop streams one row of B into one
      // row of out (contiguous, vectorisable); alpha is folded into A's element.
      em.forLoop(N, [&](Value *ni) {
        Value *idx = b.CreateAdd(row, ni);
        em.store(t, C ? withC(nullptr, idx) : em.fconst(t, 0), out, idx);
      });
      em.forLoop(K, [&](Value *ki) {
        Value *a = em.load(t, A, aIndex(bi, mi, ki));
        if (s.alpha != 1.0f)
          a = b.CreateFMul(alpha, a);
        Value *bRow = b.CreateAdd(bBase(bi), b.CreateMul(ki, em.i64(N)));
        em.forLoop(N, [&](Value *ni) {
          Value *idx = b.CreateAdd(row, ni);
          Value *bv = em.load(t, B, b.CreateAdd(bRow, ni));
          em.store(t, mulAdd(em, a, bv, em.load(t, out, idx), false), out, idx);
        });
      });
    });
  });
}

std::string key(const MatMulSpec &s) {
  // beta only matters with C: specs differing only in an unused beta share a vertex.
  return fmt::format("matmul:dtype={},batch={},m={},n={},k={},transA={:d},transB={:d},broadcastB={:d},"
                     "hasC={:d},alpha={},beta={}",
                     dtypeName(s.dtype), s.batch, s.m, s.n, s.k, s.transA, s.transB, s.broadcastB, s.hasC,
                     s.alpha, s.hasC ? s.beta : 0.0f);
}

} // namespace popc::codegen::detail
