// Resize / Upsample with mode linear or cubic: each resized axis becomes a sum
// of taps, Gather(x, constant neighbour indices, axis) * constant weights
// ([out,1,...,1], broadcast over the inner dims), so the device runs exchange
// copies plus elementwise Mul/Add instead of needing its own kernel.
// Neighbours and weights follow the ONNX reference implementation exactly
// (edge padding, exclude_outside, cubic_coeff_a, extrapolation_value).
#include "compiler/ir/index_map.h"
#include "compiler/ir/op_registry.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace popc::passes {

namespace {

struct AxisTaps {
  std::vector<std::vector<int64_t>> index;  // [tap][out]
  std::vector<std::vector<double>> weight;  // [tap][out]
  std::vector<double> bias;                 // [out]: extrapolation_value where outside
  bool anyBias = false;
};

std::vector<double> coefficients(const ir::ResizeParams &p, double ratio) {
  if (p.mode == "linear")
    return {1 - ratio, ratio};
  const double A = p.cubicA, r = ratio, q = 1 - ratio;
  return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
          ((A + 2) * q - (A + 3)) * q * q + 1, ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A};
}

AxisTaps tapsOf(const ir::ResizeParams &p, size_t d) {
  const size_t n = p.mode == "linear" ? 2 : 4;
  const int64_t in = p.in[d], out = p.out[d], pad = int64_t(n + 1) / 2, len = in + 2 * pad;
  AxisTaps t;
  t.index.assign(n, std::vector<int64_t>(size_t(out), 0));
  t.weight.assign(n, std::vector<double>(size_t(out), 0.0));
  t.bias.assign(size_t(out), 0.0);
  for (int64_t i = 0; i < out; ++i) {
    const auto x = ir::resizeSource(p, d, i);
    if (!x) {
      t.bias[size_t(i)] = p.extrapolation;
      t.anyBias = true;
      continue;
    }
    const double x0 = std::floor(*x);
    const double ratio = *x == x0 ? 1.0 : *x - x0;
    std::vector<double> c = coefficients(p, ratio);
    // The n padded positions nearest to x (ties: lower index), in order.
    const double xp = *x + double(pad);
    std::vector<int64_t> cand;
    for (int64_t k = int64_t(std::floor(xp)) - int64_t(n); k <= int64_t(std::floor(xp)) + int64_t(n); ++k)
      if (k >= 0 && k < len)
        cand.push_back(k);
    std::sort(cand.begin(), cand.end(), [&](int64_t a, int64_t b) {
      const double da = std::fabs(xp - double(a)), db = std::fabs(xp - double(b));
      return da != db ? da < db : a < b;
    });
    cand.resize(std::min(cand.size(), n));
    std::sort(cand.begin(), cand.end());
    if (p.excludeOutside) {
      double sum = 0;
      for (size_t k = 0; k < cand.size(); ++k) {
        const int64_t orig = cand[k] - pad;
        if (orig < 0 || orig >= in)
          c[k] = 0;
        sum += c[k];
      }
      for (double &v : c)
        v = sum != 0 ? v / sum : 0;
    }
    for (size_t k = 0; k < cand.size(); ++k) {
      t.index[k][size_t(i)] = std::clamp<int64_t>(cand[k] - pad, 0, in - 1); // edge padding
      t.weight[k][size_t(i)] = c[k];
    }
  }
  return t;
}

} // namespace

size_t decomposeResize(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  std::set<std::string> captured = namesUsedBySubgraphs(ir);
  size_t count = 0;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const ir::Op &op = *g.ops()[i];
    if (!isOnnxOp(op) || (op.type != "Resize" && op.type != "Upsample") || !op.hasInput(0) ||
        op.outputs.size() != 1 || !g.hasTensor(op.inputs[0]))
      continue;
    const ir::TensorInfo x = g.tensor(op.inputs[0]).info;
    if (x.dtype != DType::F32 && x.dtype != DType::F64)
      continue;
    const ir::ResizeParams p = ir::resizeParams(op, g);
    if (p.mode == "nearest" || x.elements() == 0)
      continue;
    std::vector<size_t> dims;
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (p.in[d] != p.out[d] || p.scale[d] != 1.0 || p.transform == "tf_crop_and_resize")
        dims.push_back(d);
    std::string cur = op.inputs[0];
    const std::string out = op.outputs[0], name = op.name;
    const int64_t ipu = op.ipu;
    removeOpAndDeadOutputs(g, i, captured);
    OpInserter ops(g, i, name, ipu);
    if (dims.empty())
      ops.add("Identity", {cur}, out);
    for (size_t k = 0; k < dims.size(); ++k) {
      const size_t d = dims[k];
      const AxisTaps taps = tapsOf(p, d);
      Shape wshape(x.shape.size() - d, 1);
      wshape[0] = p.out[d];
      const std::string result = k + 1 == dims.size() ? out : g.uniqueName(name + "_axis" + std::to_string(d));
      std::string sum;
      for (size_t t = 0; t < taps.index.size(); ++t) {
        const auto &idx = taps.index[t];
        std::vector<uint8_t> bytes(idx.size() * 8);
        std::memcpy(bytes.data(), idx.data(), bytes.size());
        const std::string ind = addConstant(g, name + "_idx", {DType::I64, {p.out[d]}}, std::move(bytes));
        const std::string w = addFloatConstant(g, name + "_w", x.dtype, wshape, taps.weight[t]);
        ir::Attributes axis;
        axis.set("axis", int64_t(d));
        const std::string gathered = g.uniqueName(name + "_tap");
        ops.add("Gather", {cur, ind}, gathered, axis);
        const std::string weighted = g.uniqueName(name + "_tapw");
        const bool last = t + 1 == taps.index.size() && !taps.anyBias;
        ops.add("Mul", {gathered, w}, sum.empty() && last ? result : weighted);
        if (!sum.empty()) {
          const std::string next = last ? result : g.uniqueName(name + "_sum");
          ops.add("Add", {sum, weighted}, next);
          sum = next;
        } else {
          sum = weighted;
        }
      }
      if (taps.anyBias)
        ops.add("Add", {sum, addFloatConstant(g, name + "_extrapolation", x.dtype, wshape, taps.bias)}, result);
      cur = result;
    }
    i = ops.next() - 1;
    log::get("passes")->trace("resize decomposition: {} ({} axes)", name, dims.size());
    ++count;
  }
  return count;
}

} // namespace popc::passes
