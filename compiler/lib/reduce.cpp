// Lowerings of reductions (Reduce*, ArgMax/ArgMin): the reduced axes become
// the innermost dims of rows; one vertex reduces a block of rows (generated
// reduce kernels; ArgMax/ArgMin are codelets).
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/lib/ops.h"
#include "compiler/lib/rows.h"

#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include <fmt/format.h>

#include <bit>

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
    spec.cycles = codegen::cycles::argReduce(n, cols);
    return codegen::KernelSpec{spec};
  });
}

int64_t bitsOf(double v) { return std::bit_cast<int64_t>(v); }

// One codelet per row block with `args(firstRow, n)` after (rows, cols).
void lowerAlongAxis(const ir::Op &op, Lowering &L, const std::string &function, const std::vector<Value> &whole,
                    uint64_t rows, uint64_t cols, const std::vector<int64_t> &perm, uint64_t cyclesPerElement,
                    const std::function<std::vector<int64_t>(uint64_t firstRow)> &args) {
  const Value x = L.value(op.inputs[0]);
  Value out = L.newValue(op.outputs[0], x.info);
  L.bind(op.outputs[0], out);
  const DType t = x.info.dtype;
  std::vector<RowOperand> ins{RowOperand{x, perm, cols}};
  for (const Value &w : whole)
    ins.push_back(RowOperand{w, {}, 1, true});
  lowerRowWiseAt(L, op.name, ins, {RowOperand{out, perm, cols}}, rows, [&](uint64_t first, uint32_t n) {
    codegen::CodeletSpec spec;
    spec.function = function + "_" + ir::detail::shortDType(t);
    spec.name = fmt::format("{}_r{}_c{}_{}", op.type, n, cols, ir::detail::shortDType(t));
    spec.fields = {codeletField("in", n * cols, t, codegen::FieldAccess::Input)};
    for (const Value &w : whole)
      spec.fields.push_back(codeletField("param", uint64_t(w.info.elements()), t, codegen::FieldAccess::Input));
    spec.fields.push_back(codeletField("out", n * cols, t, codegen::FieldAccess::Output));
    spec.args = {int64_t(n), int64_t(cols)};
    for (int64_t a : args(first))
      spec.args.push_back(a);
    spec.cycles = codegen::cycles::rowWise(n, cols, cyclesPerElement);
    return codegen::KernelSpec{spec};
  });
}

void lowerHardmax(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const Shape &shape = L.value(op.inputs[0]).info.shape;
  const int64_t axis = ir::softmaxAxis(op, g);
  uint64_t cols = 1, total = uint64_t(numElements(shape));
  std::vector<int64_t> perm;
  if (ir::softmaxCoerces2D(g)) { // opset < 13: rows of everything from axis on
    for (size_t d = size_t(axis); d < shape.size(); ++d)
      cols *= uint64_t(shape[d]);
  } else {
    cols = uint64_t(shape[size_t(axis)]);
    perm = axesLastPerm(shape.size(), {axis});
  }
  lowerAlongAxis(op, L, "popc_hardmax", {}, cols ? total / cols : 0, cols, perm, 3,
                 [](uint64_t) { return std::vector<int64_t>{}; });
}

void lowerCumSum(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const Shape &shape = L.value(op.inputs[0]).info.shape;
  const int64_t axis = ir::cumSumAxis(op, g);
  const uint64_t cols = uint64_t(shape[size_t(axis)]);
  const int64_t exclusive = op.attrs.getInt("exclusive", 0) != 0, reverse = op.attrs.getInt("reverse", 0) != 0;
  lowerAlongAxis(op, L, "popc_cumsum", {}, cols ? uint64_t(numElements(shape)) / cols : 0, cols,
                 axesLastPerm(shape.size(), {axis}), 2,
                 [&](uint64_t) { return std::vector<int64_t>{exclusive, reverse}; });
}

void lowerLrn(const ir::Op &op, const ir::Graph &, Lowering &L) {
  const Shape &shape = L.value(op.inputs[0]).info.shape;
  const uint64_t cols = uint64_t(shape[1]);
  const int64_t size = op.attrs.getInt("size");
  const std::vector<int64_t> args{size, bitsOf(op.attrs.getFloat("alpha", 1e-4)),
                                  bitsOf(op.attrs.getFloat("beta", 0.75)), bitsOf(op.attrs.getFloat("bias", 1.0))};
  lowerAlongAxis(op, L, "popc_lrn", {}, cols ? uint64_t(numElements(shape)) / cols : 0, cols,
                 axesLastPerm(shape.size(), {1}), 2 * uint64_t(size) + 30, [&](uint64_t) { return args; });
}

void lowerInstanceNorm(const ir::Op &op, const ir::Graph &, Lowering &L) {
  const Shape &shape = L.value(op.inputs[0]).info.shape;
  const int64_t channels = shape[1];
  const uint64_t rows = uint64_t(shape[0] * channels);
  const uint64_t cols = rows ? uint64_t(numElements(shape)) / rows : 0;
  const int64_t eps = bitsOf(op.attrs.getFloat("epsilon", 1e-5));
  lowerAlongAxis(op, L, "popc_instance_norm", {L.value(op.inputs[1]), L.value(op.inputs[2])}, rows, cols, {}, 4,
                 [&](uint64_t first) { return std::vector<int64_t>{int64_t(first), channels, eps}; });
}

} // namespace

void registerReduceLowerings(LoweringTable &t) {
  const std::pair<const char *, const char *> ops[] = {
      {"ReduceSum", "Sum"},   {"ReduceMean", "Mean"},           {"ReduceMax", "Max"},
      {"ReduceMin", "Min"},   {"ReduceProd", "Prod"},           {"ReduceSumSquare", "SumSquare"},
      {"ReduceL1", "L1"},     {"ReduceL2", "L2"},               {"ReduceLogSum", "LogSum"},
      {"ReduceLogSumExp", "LogSumExp"}};
  t["Hardmax"] = lowerHardmax;
  t["CumSum"] = lowerCumSum;
  t["LRN"] = lowerLrn;
  t["InstanceNormalization"] = lowerInstanceNorm;
  t["ArgMax"] = [](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerArgReduce(op, g, L, true); };
  t["ArgMin"] = [](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerArgReduce(op, g, L, false); };
  for (auto [type, kernel] : ops)
    t[type] = [k = std::string(kernel)](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerReduce(op, g, L, k); };
}

} // namespace popc::lib
