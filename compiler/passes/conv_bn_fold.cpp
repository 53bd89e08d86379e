// Conv + BatchNormalization folding: a BN (or a per-channel Mul / Add) right
// after a Conv is an affine map per output channel, which the Conv can absorb:
//   W'[m] = W[m] * s[m],  b'[m] = b[m] * s[m] + t[m]
// This saves a whole elementwise pass over the activations on the device.
// It must run before BN decomposition, which would otherwise turn the BN into
// Mul + Add first (those are still folded here when they follow a Conv directly).
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

namespace popc::passes {

namespace {

// Per-channel values of a constant `c` combined elementwise with a conv output
// of info `y` without changing its shape: c's shape, right-aligned to y's rank,
// is 1 everywhere except possibly M at the channel axis.
std::optional<std::vector<double>> perChannel(const ir::Graph &g, const std::string &c,
                                              const ir::TensorInfo &y) {
  if (!isConstant(g, c))
    return std::nullopt;
  const ir::Tensor &t = g.tensor(c);
  size_t r = y.shape.size(), k = t.info.shape.size();
  if (t.info.dtype != y.dtype || k > r || r < 2)
    return std::nullopt;
  int64_t m = y.shape[1];
  for (size_t d = 0; d < k; ++d) {
    size_t yd = r - k + d;
    int64_t n = t.info.shape[d];
    if (n != 1 && !(yd == 1 && n == m))
      return std::nullopt;
  }
  std::vector<double> v = constantAsDoubles(t);
  if (v.size() == 1)
    v.assign(size_t(m), v[0]);
  return v;
}

// The affine map applied by `next` to the conv output `y`, or nullopt.
std::optional<ChannelAffine> affineOf(const ir::Graph &g, const ir::Op &next, const std::string &y,
                                      const std::set<std::string> &captured) {
  const ir::TensorInfo &info = g.tensor(y).info;
  size_t m = size_t(info.shape[1]);
  if (!isOnnxOp(next) || next.outputs.empty() || !g.hasTensor(next.outputs[0]))
    return std::nullopt;
  if (next.type == "BatchNormalization") {
    if (next.inputs[0] != y)
      return std::nullopt;
    auto a = constantBatchNormAffine(g, next, captured);
    if (!a || a->scale.size() != m)
      return std::nullopt;
    return a;
  }
  if ((next.type != "Mul" && next.type != "Add") || next.inputs.size() != 2 ||
      g.tensor(next.outputs[0]).info != info)
    return std::nullopt;
  const std::string &other = next.inputs[0] == y ? next.inputs[1] : next.inputs[0];
  if (other == y)
    return std::nullopt;
  auto v = perChannel(g, other, info);
  if (!v)
    return std::nullopt;
  ChannelAffine a;
  if (next.type == "Mul") {
    a.scale = *v;
    a.shift.assign(m, 0.0);
  } else {
    a.scale.assign(m, 1.0);
    a.shift = *v;
  }
  return a;
}

// Tries to merge the single consumer of conv's output into the conv.
bool foldOnce(ir::Graph &g, ir::Op &conv, const std::set<std::string> &captured) {
  if (conv.outputs.size() != 1 || !conv.hasInput(1) || !isConstant(g, conv.inputs[1]) ||
      (conv.hasInput(2) && !isConstant(g, conv.inputs[2])))
    return false;
  const std::string y = conv.outputs[0];
  if (!g.hasTensor(y) || isGraphOutput(g, y) || captured.count(y))
    return false;
  const ir::TensorInfo &yInfo = g.tensor(y).info;
  if ((yInfo.dtype != DType::F32 && yInfo.dtype != DType::F64) || yInfo.shape.size() < 2)
    return false;
  std::vector<size_t> users = g.consumers(y);
  if (users.size() != 1)
    return false;
  ir::Op &next = *g.ops()[users[0]];
  auto affine = affineOf(g, next, y, captured);
  if (!affine)
    return false;

  const ir::Tensor &w = g.tensor(conv.inputs[1]);
  size_t m = size_t(yInfo.shape[1]);
  if (w.info.dtype != yInfo.dtype || w.info.shape.empty() || size_t(w.info.shape[0]) != m)
    return false;
  std::vector<double> wv = constantAsDoubles(w);
  size_t perChannelW = wv.size() / m;
  for (size_t i = 0; i < wv.size(); ++i)
    wv[i] *= affine->scale[i / perChannelW];
  std::vector<double> bv(m, 0.0);
  if (conv.hasInput(2)) {
    const ir::Tensor &b = g.tensor(conv.inputs[2]);
    if (b.info.dtype != yInfo.dtype || b.info.elements() != int64_t(m))
      return false;
    bv = constantAsDoubles(b);
  }
  for (size_t c = 0; c < m; ++c)
    bv[c] = bv[c] * affine->scale[c] + affine->shift[c];

  // New constants: the old weights may be shared with other convs.
  std::string wName = addFloatConstant(g, w.name + "_folded", yInfo.dtype, w.info.shape, wv);
  std::string bName = addFloatConstant(g, conv.name + "_bias_folded", yInfo.dtype,
                                       {int64_t(m)}, bv);
  conv.inputs.resize(3);
  conv.inputs[1] = wName;
  conv.inputs[2] = bName;
  std::string out = next.outputs[0];
  removeOpAndDeadOutputs(g, users[0], captured);
  conv.outputs[0] = out;
  g.removeTensor(y);
  return true;
}

} // namespace

size_t foldConvBatchNorm(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  std::set<std::string> captured = namesUsedBySubgraphs(ir);
  size_t count = 0;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    ir::Op &op = *g.ops()[i];
    if (op.type != "Conv" || !isOnnxOp(op))
      continue;
    // Repeat: Conv → BN → Mul → Add chains fold step by step.
    while (foldOnce(g, op, captured)) {
      log::get("passes")->trace("conv folding: {} absorbed its consumer", op.name);
      ++count;
    }
  }
  return count;
}

} // namespace popc::passes
