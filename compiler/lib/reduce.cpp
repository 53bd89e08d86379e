// Lowerings of reductions (Reduce*, ArgMax/ArgMin): the reduced axes become
// the innermost dims of rows; one vertex reduces a block of rows (generated
// reduce kernels; ArgMax/ArgMin are codelets).
#include "compiler/lib/ops.h"
#include "compiler/lib/rows.h"

#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include <fmt/format.h>

namespace popc::lib {

namespace {

void lowerReduce(const ir::Op &op, const ir::Graph &g, Lowering &L, const std::string &kernelOp) {
  const Value x = L.value(op.inputs[0]);
  const ir::ReduceParams p = ir::reduceParams(op, g);
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  Value out = L.newValue(op.outputs[0], outInfo);
  L.bind(op.outputs[0], out);
  const uint64_t rows = uint64_t(outInfo.elements());
  const uint64_t cols = rows ? uint64_t(x.info.elements()) / rows : 0;
  const RowOperand in{x, axesLastPerm(x.info.shape.size(), p.axes), cols};
  lowerRowWise(L, op.name, {in}, {RowOperand{out, {}, 1}}, rows, [&](uint32_t n) {
    return codegen::KernelSpec{codegen::ReduceSpec{kernelOp, x.info.dtype, n, uint32_t(cols)}};
  });
}

void lowerArgReduce(const ir::Op &op, const ir::Graph &g, Lowering &L, bool isMax) {
  const Value x = L.value(op.inputs[0]);
  const ir::ReduceParams p = ir::argReduceParams(op, g);
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  Value out = L.newValue(op.outputs[0], outInfo);
  L.bind(op.outputs[0], out);
  const uint64_t rows = uint64_t(outInfo.elements());
  const uint64_t cols = uint64_t(x.info.shape[size_t(p.axes[0])]);
  const DType t = x.info.dtype;
  const RowOperand in{x, axesLastPerm(x.info.shape.size(), p.axes), cols};
  lowerRowWise(L, op.name, {in}, {RowOperand{out, {}, 1}}, rows, [&](uint32_t n) {
    codegen::CodeletSpec spec;
    spec.function = "popc_argreduce_" + ir::detail::shortDType(t);
    spec.name = fmt::format("{}_r{}_c{}_{}", op.type, n, cols, ir::detail::shortDType(t));
    spec.fields = {codeletField("in", n * cols, t, codegen::FieldAccess::Input),
                   codeletField("out", n, DType::I64, codegen::FieldAccess::Output)};
    spec.args = {int64_t(n), int64_t(cols), isMax ? 1 : 0, p.selectLast ? 1 : 0};
    spec.cycles = 10 + uint64_t(n) * (4 + 2 * cols);
    return codegen::KernelSpec{spec};
  });
}

} // namespace

void registerReduceLowerings(LoweringTable &t) {
  const std::pair<const char *, const char *> ops[] = {
      {"ReduceSum", "Sum"},   {"ReduceMean", "Mean"},           {"ReduceMax", "Max"},
      {"ReduceMin", "Min"},   {"ReduceProd", "Prod"},           {"ReduceSumSquare", "SumSquare"},
      {"ReduceL1", "L1"},     {"ReduceL2", "L2"},               {"ReduceLogSum", "LogSum"},
      {"ReduceLogSumExp", "LogSumExp"}};
  t["ArgMax"] = [](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerArgReduce(op, g, L, true); };
  t["ArgMin"] = [](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerArgReduce(op, g, L, false); };
  for (auto [type, kernel] : ops)
    t[type] = [k = std::string(kernel)](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerReduce(op, g, L, k); };
}

} // namespace popc::lib
