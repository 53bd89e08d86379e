// Batched matrix multiply: out = alpha * A·B + beta * C.
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/codegen/elementwise_math.h"
#include "compiler/codegen/kinds.h"
#include "compiler/codegen/operand.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

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

// How a MatMul vertex reads A, B and C, and accumulates (operand.h).
struct Reads {
  DType t; // compute type
  Operand a, b, c;
  Accumulator acc;
  explicit Reads(const MatMulSpec &s)
      : t(computeDType(s.dtype)), a(Operand::of(s.dtype, s.integer, false)), b(Operand::of(s.dtype, s.integer, true)),
        c(Operand::of(s.dtype)), acc{t, s.halfPartials} {}
};

} // namespace

KernelDesc describe(const MatMulSpec &s) {
  if (s.integer) {
    validateIntegerOperands("MatMul", s.dtype, *s.integer);
    if (s.hasC || s.alpha != 1.0f)
      fail("codegen: integer MatMul has no C and no alpha");
  } else if (s.dtype != DType::F32 && s.dtype != DType::F64 && s.dtype != DType::F16) {
    unsupported("MatMul", s.dtype);
  }
  if (s.halfPartials && s.dtype != DType::F16)
    fail("codegen: half partials are for float16 MatMul, not {}", dtypeName(s.dtype));
  const DType aType = s.integer ? s.integer->a : s.dtype, bType = s.integer ? s.integer->b : s.dtype;
  KernelDesc d;
  d.kind = "matmul";
  d.name = fmt::format("MatMul_b{}_m{}_n{}_k{}_{}", s.batch, s.m, s.n, s.k, dtypeName(s.dtype));
  if (s.integer)
    d.name += integerSuffix(*s.integer);
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
  if (s.halfPartials)
    d.name += "_halfPartials";
  d.fields.push_back({"A", fieldBytes("A", {s.batch, s.m, s.k}, aType), FieldAccess::Input});
  d.fields.push_back({"B", fieldBytes("B", {s.broadcastB ? 1u : s.batch, s.k, s.n}, bType), FieldAccess::Input});
  if (s.hasC)
    d.fields.push_back({"C", fieldBytes("C", {s.batch, s.m, s.n}, s.dtype), FieldAccess::Input});
  d.fields.push_back({"out", fieldBytes("out", {s.batch, s.m, s.n}, s.dtype), FieldAccess::Output});
  d.cycles = cycles::matmul(uint64_t(s.batch) * s.m * s.n, s.k, s.hasC, s.dtype == DType::F64, s.integer.has_value(),
                            s.halfPartials);
  return d;
}

namespace {

// Register-tiled out = alpha*A·B + beta*C for B stored [k][n]: tiles of `mb`
// rows x `nv` vectors of `v` columns stay in registers over the whole k loop;
// each B vector loaded feeds `mb` FMAs and each A element `nv`. Column tails
// are an overlapping last chunk (recomputes identical values) or, for rows
// narrower than one chunk, masked lanes. Accumulator sets over alternating k
// hide the FMA latency when a tile has few chains.
void emitTiled(Emitter &em, const MatMulSpec &s, Value *A, Value *B, Value *C, Value *out) {
  IRBuilder<> &b = em.b();
  const Reads io(s);
  const DType t = io.t;
  const int64_t M = s.m, N = s.n, K = s.k;
  int64_t V = t == DType::F64 ? 8 : 16;
  while (V > 4 && V / 2 >= N)
    V /= 2;
  const int64_t blocks = (M + 7) / 8;
  const int64_t MB = (M + blocks - 1) / blocks;
  const int64_t NV = std::min<int64_t>({(N + V - 1) / V, std::max<int64_t>(1, 16 / MB), 8});
  const int64_t L = NV * V;
  Type *vt = em.vecType(t, unsigned(V));
  Value *alpha = em.constant(t, s.alpha), *beta = em.constant(t, s.beta);

  auto aIndex = [&](Value *bi, Value *mi, Value *ki) {
    Value *base = b.CreateMul(bi, em.i64(M * K));
    return s.transA ? b.CreateAdd(base, b.CreateAdd(b.CreateMul(ki, em.i64(M)), mi))
                    : b.CreateAdd(base, b.CreateAdd(b.CreateMul(mi, em.i64(K)), ki));
  };
  auto tile = [&](Value *bi, Value *m0, int64_t mb, Value *col, std::optional<int64_t> constCol) {
    std::vector<std::vector<bool>> lanes(size_t(NV), std::vector<bool>(size_t(V), true));
    if (constCol)
      for (int64_t v = 0; v < NV; ++v)
        for (int64_t l = 0; l < V; ++l)
          lanes[size_t(v)][size_t(l)] = *constCol + v * V + l < N;
    auto any = [](const std::vector<bool> &on) { return std::find(on.begin(), on.end(), true) != on.end(); };
    const int64_t chains = mb * NV;
    const int64_t kStep = std::min<int64_t>({(8 + chains - 1) / chains, 4, std::max<int64_t>(K, 1)});
    auto slot = [&](int64_t set, int64_t j, int64_t v) { return size_t((set * mb + j) * NV + v); };
    auto outIndex = [&](int64_t j, int64_t v) {
      Value *row = b.CreateMul(b.CreateAdd(b.CreateMul(bi, em.i64(M)), b.CreateAdd(m0, em.i64(j))), em.i64(N));
      return b.CreateAdd(row, b.CreateAdd(col, em.i64(v * V)));
    };
    Emitter::Carried init(size_t(kStep * chains), Constant::getNullValue(vt));
    if (C)
      for (int64_t j = 0; j < mb; ++j)
        for (int64_t v = 0; v < NV; ++v)
          if (any(lanes[size_t(v)])) {
            Value *c = io.c.loadLanes(em, C, outIndex(j, v), lanes[size_t(v)]);
            init[slot(0, j, v)] = s.beta != 1.0f ? b.CreateFMul(em.splat(unsigned(V), beta), c) : c;
          }
    Value *bBase = s.broadcastB ? em.i64(0) : b.CreateMul(bi, em.i64(K * N));
    auto step = [&](Value *ki, Emitter::Carried &acc, int64_t set) {
      Value *bRow = b.CreateAdd(bBase, b.CreateMul(ki, em.i64(N)));
      std::vector<Value *> x(size_t(NV), nullptr);
      for (int64_t v = 0; v < NV; ++v)
        if (any(lanes[size_t(v)]))
          x[size_t(v)] = io.b.loadLanes(em, B, b.CreateAdd(bRow, b.CreateAdd(col, em.i64(v * V))), lanes[size_t(v)]);
      for (int64_t j = 0; j < mb; ++j) {
        Value *a = io.a.load(em, A, aIndex(bi, b.CreateAdd(m0, em.i64(j)), ki));
        if (s.alpha != 1.0f)
          a = b.CreateFMul(alpha, a);
        Value *as = em.splat(unsigned(V), a);
        for (int64_t v = 0; v < NV; ++v)
          if (x[size_t(v)])
            acc[slot(set, j, v)] = io.acc.mulAdd(em, as, x[size_t(v)], acc[slot(set, j, v)]);
      }
    };
    Emitter::Carried sum = em.unrolledLoop(K, kStep, init, step);
    for (int64_t j = 0; j < mb; ++j)
      for (int64_t v = 0; v < NV; ++v) {
        if (!any(lanes[size_t(v)]))
          continue;
        Value *r = sum[slot(0, j, v)];
        for (int64_t set = 1; set < kStep; ++set)
          r = io.acc.add(em, r, sum[slot(set, j, v)]);
        storeResultLanes(em, s.dtype, r, out, outIndex(j, v), lanes[size_t(v)]);
      }
  };
  auto rowBlock = [&](Value *bi, Value *m0, int64_t mb) {
    if (N <= L) {
      tile(bi, m0, mb, em.i64(0), 0);
      return;
    }
    const int64_t full = N / L;
    if (full >= 2)
      em.forLoop(full, [&](Value *c) { tile(bi, m0, mb, b.CreateMul(c, em.i64(L)), std::nullopt); });
    else
      tile(bi, m0, mb, em.i64(0), 0);
    if (N % L)
      tile(bi, m0, mb, em.i64(N - L), N - L); // overlaps the previous chunk
  };
  em.forLoop(s.batch, [&](Value *bi) {
    em.forLoop(M / MB, [&](Value *blk) { rowBlock(bi, b.CreateMul(blk, em.i64(MB)), MB); });
    if (M % MB)
      rowBlock(bi, em.i64(M / MB * MB), M % MB);
  });
}

// out = alpha*A·B + beta*C for A stored [m][k] and B stored [n][k]: both
// run along k, so tiles of `mb` rows x `nb` columns keep one vector
// accumulator per output along k (each A vector feeds `nb` FMAs, each B vector
// `mb`), summed horizontally at the end. The k tail is one masked chunk.
void emitDotTiled(Emitter &em, const MatMulSpec &s, Value *A, Value *B, Value *C, Value *out) {
  IRBuilder<> &b = em.b();
  const Reads io(s);
  const DType t = io.t;
  const int64_t M = s.m, N = s.n, K = s.k;
  int64_t V = t == DType::F64 ? 8 : 16;
  while (V > 4 && V / 2 >= K)
    V /= 2;
  const int64_t MB = std::min<int64_t>(M, 4), NB = std::min<int64_t>(N, 4);
  Type *vt = em.vecType(t, unsigned(V));
  Value *alpha = em.constant(t, s.alpha), *beta = em.constant(t, s.beta);
  auto tile = [&](Value *bi, Value *m0, int64_t mb, Value *n0, int64_t nb) {
    Value *aBase = b.CreateMul(b.CreateAdd(b.CreateMul(bi, em.i64(M)), m0), em.i64(K));
    Value *bBase = b.CreateMul(b.CreateAdd(s.broadcastB ? em.i64(0) : b.CreateMul(bi, em.i64(N)), n0), em.i64(K));
    auto chunk = [&](Value *kc, const std::vector<bool> &lanes, Emitter::Carried &acc) {
      std::vector<Value *> a, bv;
      for (int64_t j = 0; j < mb; ++j)
        a.push_back(io.a.loadLanes(em, A, b.CreateAdd(aBase, b.CreateAdd(em.i64(j * K), kc)), lanes));
      for (int64_t i = 0; i < nb; ++i)
        bv.push_back(io.b.loadLanes(em, B, b.CreateAdd(bBase, b.CreateAdd(em.i64(i * K), kc)), lanes));
      for (int64_t j = 0; j < mb; ++j)
        for (int64_t i = 0; i < nb; ++i)
          acc[size_t(j * nb + i)] = io.acc.mulAdd(em, a[size_t(j)], bv[size_t(i)], acc[size_t(j * nb + i)]);
    };
    Emitter::Carried acc(size_t(mb * nb), Constant::getNullValue(vt));
    const std::vector<bool> all(size_t(V), true);
    acc = em.forLoop(K / V, acc, [&](Value *c, const Emitter::Carried &cur) {
      Emitter::Carried next = cur;
      chunk(b.CreateMul(c, em.i64(V)), all, next);
      return next;
    });
    if (K % V) {
      std::vector<bool> tail(size_t(V), false);
      for (int64_t l = 0; l < K % V; ++l)
        tail[size_t(l)] = true;
      chunk(em.i64(K / V * V), tail, acc);
    }
    FastMathFlags reassoc;
    reassoc.setAllowReassoc();
    for (int64_t j = 0; j < mb; ++j)
      for (int64_t i = 0; i < nb; ++i) {
        Value *r;
        if (em.isFloat(t)) {
          IRBuilder<>::FastMathFlagGuard guard(b);
          b.setFastMathFlags(reassoc); // a tree of vector adds, not a serial chain
          r = b.CreateFAddReduce(em.fconst(t, -0.0), acc[size_t(j * nb + i)]);
        } else {
          r = b.CreateAddReduce(acc[size_t(j * nb + i)]);
        }
        if (s.alpha != 1.0f)
          r = b.CreateFMul(alpha, r);
        Value *idx = b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(bi, em.i64(M)), b.CreateAdd(m0, em.i64(j))), em.i64(N)),
                                 b.CreateAdd(n0, em.i64(i)));
        if (C) {
          Value *c = io.c.load(em, C, idx);
          if (s.beta != 1.0f)
            c = b.CreateFMul(beta, c);
          r = b.CreateFAdd(r, c);
        }
        storeResult(em, s.dtype, r, out, idx);
      }
  };
  auto columns = [&](Value *bi, Value *m0, int64_t mb) {
    em.forLoop(N / NB, [&](Value *c) { tile(bi, m0, mb, b.CreateMul(c, em.i64(NB)), NB); });
    if (N % NB)
      tile(bi, m0, mb, em.i64(N / NB * NB), N % NB);
  };
  em.forLoop(s.batch, [&](Value *bi) {
    em.forLoop(M / MB, [&](Value *r) { columns(bi, b.CreateMul(r, em.i64(MB)), MB); });
    if (M % MB)
      columns(bi, em.i64(M / MB * MB), M % MB);
  });
}

} // namespace

void emit(Emitter &em, const MatMulSpec &s) {
  IRBuilder<> &b = em.b();
  const Reads io(s);
  const DType t = io.t;
  Value *A = em.field(0), *B = em.field(1);
  Value *C = s.hasC ? em.field(2) : nullptr;
  Value *out = em.field(s.hasC ? 3 : 2);
  if (s.batch == 0 || s.m == 0 || s.n == 0)
    return; // no outputs
  if (!s.transB) {
    emitTiled(em, s, A, B, C, out);
    return;
  }
  if (!s.transA && s.k > 0) {
    emitDotTiled(em, s, A, B, C, out);
    return;
  }
  const int64_t M = s.m, N = s.n, K = s.k;
  Value *alpha = em.constant(t, s.alpha), *beta = em.constant(t, s.beta);

  // Element index of A[b][m][k] for either storage order.
  auto aIndex = [&](Value *bi, Value *mi, Value *ki) {
    Value *base = b.CreateMul(bi, em.i64(M * K));
    return s.transA ? b.CreateAdd(base, b.CreateAdd(b.CreateMul(ki, em.i64(M)), mi))
                    : b.CreateAdd(base, b.CreateAdd(b.CreateMul(mi, em.i64(K)), ki));
  };
  auto bBase = [&](Value *bi) { return s.broadcastB ? em.i64(0) : b.CreateMul(bi, em.i64(K * N)); };
  // beta*C[idx] + acc, or just acc.
  auto withC = [&](Value *acc, Value *idx) -> Value * {
    if (!C)
      return acc;
    Value *c = io.c.load(em, C, idx);
    if (s.beta != 1.0f)
      c = b.CreateFMul(beta, c);
    return b.CreateFAdd(acc, c);
  };

  // B[b][n][k]: both operands run along k, so one dot product per output
  // (a reassociable reduction the host vectorises along k).
  em.forLoop(s.batch, [&](Value *bi) {
    em.forLoop(M, [&](Value *mi) {
      Value *row = b.CreateMul(b.CreateAdd(b.CreateMul(bi, em.i64(M)), mi), em.i64(N));
      em.forLoop(N, [&](Value *ni) {
        Value *bRow = b.CreateAdd(bBase(bi), b.CreateMul(ni, em.i64(K)));
        Value *acc = em.forLoop(K, {em.constant(t, 0)}, [&](Value *ki, const Emitter::Carried &c) {
          Value *a = io.a.load(em, A, aIndex(bi, mi, ki));
          Value *bv = io.b.load(em, B, b.CreateAdd(bRow, ki));
          if (s.halfPartials || s.integer)
            return Emitter::Carried{io.acc.mulAdd(em, a, bv, c[0])};
          return Emitter::Carried{mulAdd(em, a, bv, c[0], true)};
        })[0];
        if (s.alpha != 1.0f)
          acc = b.CreateFMul(alpha, acc);
        Value *idx = b.CreateAdd(row, ni);
        storeResult(em, s.dtype, withC(acc, idx), out, idx);
      });
    });
  });
}

std::string key(const MatMulSpec &s) {
  // beta only matters with C: specs differing only in an unused beta share a vertex.
  std::string k = fmt::format("matmul:dtype={},batch={},m={},n={},k={},transA={:d},transB={:d},broadcastB={:d},"
                              "hasC={:d},alpha={},beta={}",
                              dtypeName(s.dtype), s.batch, s.m, s.n, s.k, s.transA, s.transB, s.broadcastB, s.hasC,
                              s.alpha, s.hasC ? s.beta : 0.0f);
  if (s.halfPartials)
    k += ",halfPartials=1";
  if (s.integer)
    k += ",integer" + integerSuffix(*s.integer);
  return k;
}

} // namespace popc::codegen::detail
