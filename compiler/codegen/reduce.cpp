// Row reductions: each of `rows` contiguous rows of `cols` elements → one value.
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/codegen/kinds.h"
#include "support/error.h"

#include <fmt/format.h>

#include <limits>
#include <set>

namespace popc::codegen::detail {

using namespace llvm;

namespace {

const std::set<std::string> &reduceOps() {
  static const std::set<std::string> ops = {"Sum", "Mean", "Max", "Min", "Prod", "SumSquare", "L1", "L2", "LogSum", "LogSumExp"};
  return ops;
}

bool intOk(const std::string &op) { return op == "Sum" || op == "Max" || op == "Min" || op == "Prod"; }

} // namespace

KernelDesc describe(const ReduceSpec &s) {
  if (!reduceOps().count(s.op))
    fail("codegen: unknown reduce op '{}': use one of Sum Mean Max Min Prod SumSquare L1 L2 LogSum LogSumExp", s.op);
  bool fp = s.dtype == DType::F32 || s.dtype == DType::F64;
  bool integer = s.dtype == DType::I32 || s.dtype == DType::I64;
  if (!fp && !(integer && intOk(s.op)))
    unsupported("Reduce" + s.op, s.dtype);
  KernelDesc d;
  d.kind = "reduce";
  d.name = fmt::format("Reduce{}_r{}_c{}_{}", s.op, s.rows, s.cols, dtypeName(s.dtype));
  d.fields.push_back({"in", fieldBytes("in", {s.rows, s.cols}, s.dtype), FieldAccess::Input});
  d.fields.push_back({"out", fieldBytes("out", {s.rows}, s.dtype), FieldAccess::Output});
  // Sums run at 2 elements per cycle like the tutorial's dot product; max/min/prod
  // at 1; LogSumExp adds an exp per element.
  uint64_t cols = s.cols;
  uint64_t perRow = 5;
  if (s.op == "Max" || s.op == "Min" || s.op == "Prod")
    perRow += cols;
  else if (s.op == "LogSumExp")
    perRow += cols + 10 * cols + 20;
  else
    perRow += (cols + 1) / 2 + (s.op == "L2" ? 10 : 0);
  d.cycles = cycles::kVertexOverhead + uint64_t(s.rows) * perRow;
  if (dtypeSize(s.dtype) == 8)
    d.cycles *= 2;
  return d;
}

void emit(Emitter &em, const ReduceSpec &s) {
  IRBuilder<> &b = em.b();
  DType t = s.dtype;
  Value *in = em.field(0), *out = em.field(1);
  const std::string &op = s.op;
  const int64_t cols = s.cols;
  double inf = std::numeric_limits<double>::infinity();

  // Fold row r with step(acc, x) from init.
  auto fold = [&](Value *rowBase, Value *init, auto step) {
    return em.forLoop(cols, {init}, [&](Value *ci, const Emitter::Carried &acc) {
      return Emitter::Carried{step(acc[0], em.load(t, in, b.CreateAdd(rowBase, ci)))};
    })[0];
  };
  auto lowest = [&] {
    if (em.isFloat(t))
      return em.fconst(t, -inf);
    return static_cast<Value *>(t == DType::I32 ? b.getInt32(0x80000000u) : b.getInt64(0x8000000000000000ull));
  };
  auto highest = [&] {
    if (em.isFloat(t))
      return em.fconst(t, inf);
    return static_cast<Value *>(t == DType::I32 ? b.getInt32(0x7fffffff) : b.getInt64(0x7fffffffffffffffull));
  };

  em.forLoop(s.rows, [&](Value *r) {
    Value *rowBase = b.CreateMul(r, em.i64(cols));
    Value *result = nullptr;
    if (op == "Sum" || op == "Mean" || op == "LogSum") {
      result = fold(rowBase, em.constant(t, 0), [&](Value *a, Value *x) { return em.accAdd(a, x); });
      if (op == "Mean")
        result = b.CreateFDiv(result, em.fconst(t, double(cols)));
      if (op == "LogSum")
        result = em.log(result);
    } else if (op == "SumSquare" || op == "L2") {
      result = fold(rowBase, em.fconst(t, 0), [&](Value *a, Value *x) { return em.accAdd(a, b.CreateFMul(x, x)); });
      if (op == "L2")
        result = em.unaryIntrinsic(Intrinsic::sqrt, result);
    } else if (op == "L1") {
      result = fold(rowBase, em.fconst(t, 0),
                    [&](Value *a, Value *x) { return em.accAdd(a, em.unaryIntrinsic(Intrinsic::fabs, x)); });
    } else if (op == "Prod") {
      result = fold(rowBase, em.constant(t, 1), [&](Value *a, Value *x) { return em.accMul(a, x); });
    } else if (op == "Max") {
      result = fold(rowBase, lowest(), [&](Value *a, Value *x) { return em.max(t, a, x); });
    } else if (op == "Min") {
      result = fold(rowBase, highest(), [&](Value *a, Value *x) { return em.min(t, a, x); });
    } else if (op == "LogSumExp") {
      // max + log(sum exp(x - max)); a row of -inf (or an empty row) gives -inf.
      Value *m = fold(rowBase, em.fconst(t, -inf), [&](Value *a, Value *x) { return em.fmax(a, x); });
      Value *safeM = b.CreateSelect(b.CreateFCmpOEQ(m, em.fconst(t, -inf)), em.fconst(t, 0), m);
      Value *sum = fold(rowBase, em.fconst(t, 0),
                        [&](Value *a, Value *x) { return em.accAdd(a, em.exp(b.CreateFSub(x, safeM))); });
      result = b.CreateFAdd(safeM, em.log(sum));
    }
    POPC_ASSERT(result);
    em.store(t, result, out, r);
  });
}

std::string key(const ReduceSpec &s) {
  return fmt::format("reduce:op={},dtype={},rows={},cols={}", s.op, dtypeName(s.dtype), s.rows, s.cols);
}

} // namespace popc::codegen::detail
