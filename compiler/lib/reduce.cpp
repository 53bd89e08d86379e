// Lowerings of reductions (Reduce*, ArgMax/ArgMin): the reduced axes become
// the innermost dims of rows; one vertex reduces a block of rows (generated
// reduce kernels; ArgMax/ArgMin are codelets). Rows too long for a tile's
// share (a full reduction of a large tensor) reduce in two stages: chunks of
// each row spread over tiles, then the chunks' results.
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/lib/ops.h"
#include "compiler/lib/planner.h"
#include "compiler/lib/rows.h"

#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include <fmt/format.h>

#include <bit>

namespace popc::lib {

namespace {

// A reduction as two: each row's `parts` equal chunks first, then their results.
// The kernel ops of the two stages (the second combines the first's results).
std::pair<std::string, std::string> reduceStages(const std::string &op) {
  if (op == "SumSquare" || op == "L1")
    return {op, "Sum"};
  if (op == "LogSum")
    return {"Sum", "LogSum"};
  return {op, op}; // Sum Mean(equal chunks) Max Min Prod L2 LogSumExp
}

// The number of chunks to split each row into when a tile's rows would take
// more than a quarter of its memory (few long rows: a full reduction of a large
// tensor), so that the chunks spread over tiles; 1 when no split is needed or
// no divisor of `cols` helps.
uint64_t rowChunks(const Lowering &L, uint64_t rows, uint64_t cols, uint64_t es) {
  const uint64_t budget = L.graph.target().bytesPerTile / 4, tiles = L.numTiles();
  if (rows == 0 || ceilDiv(rows, tiles) * cols * es <= budget)
    return 1;
  for (uint64_t k = 2; k <= cols && rows * k <= tiles * 64; ++k)
    if (cols % k == 0 && ceilDiv(rows * k, tiles) * (cols / k) * es <= budget && cols / k >= k)
      return k;
  return 1;
}

void lowerReduce(const ir::Op &op, const ir::Graph &g, Lowering &L, const std::string &kernelOp) {
  const Value x = L.value(op.inputs[0]);
  const ir::ReduceParams p = ir::reduceParams(op, g);
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  Value out = L.newValue(op.outputs[0], outInfo);
  L.bind(op.outputs[0], out);
  const uint64_t rows = uint64_t(outInfo.elements());
  const uint64_t cols = rows ? uint64_t(x.info.elements()) / rows : 0;
  const DType t = x.info.dtype;
  const std::vector<int64_t> perm = axesLastPerm(x.info.shape.size(), p.axes);
  auto reduce = [&](const std::string &name, const RowOperand &in, const Value &result, uint64_t count,
                    const std::string &kernel, uint64_t length) {
    lowerRowWise(L, name, {in}, {RowOperand{result, {}, 1}}, count, [&](uint32_t n) {
      return codegen::KernelSpec{codegen::ReduceSpec{kernel, t, n, uint32_t(length)}};
    });
  };
  const uint64_t parts = rowChunks(L, rows, cols, x.elemSize());
  if (parts == 1) {
    reduce(op.name, RowOperand{x, perm, cols}, out, rows, kernelOp, cols);
    return;
  }
  // Each row's chunks are consecutive rows of the permuted input.
  const auto [first, second] = reduceStages(kernelOp);
  const Value partial = L.newValue(op.name + "/chunks", {t, {int64_t(rows * parts)}});
  reduce(op.name + "/chunks", RowOperand{x, perm, cols / parts}, partial, rows * parts, first, cols / parts);
  reduce(op.name, RowOperand{partial, {}, parts}, out, rows, second, parts);
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
