// QDQ fusion, as ORT's QDQ transformer does for the models its quantizer and
// PyTorch's QDQ export write: a float Conv or MatMul whose inputs are
// DequantizeLinear outputs and whose result is only QuantizeLinear'd,
//   Q(Conv(DQ(x), DQ(w)[, DQ(bias int32)]))  →  QLinearConv(x, w, bias)
//   Q(MatMul(DQ(a), DQ(b)))                  →  QLinearMatMul(a, b)
// runs on the int8 vertices (quantize-decomposition) instead of in float32. A
// Relu between the op and Q goes too when Q's zero point is its type's
// minimum: Q's saturation then clamps exactly as the Relu would.
// Fused only where ONNX's QLinear ops can say the same: x/a and the result
// per tensor, w per output channel (axis 0) or per tensor, b per column or per
// tensor, a bias quantized with scale x_scale * w_scale and zero point 0.
// The result equals the float graph's up to the rounding of the float
// accumulation (at most one output step), as with ORT.
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <cmath>

namespace popc::passes {

namespace {

bool isQuantized(DType t) { return t == DType::I8 || t == DType::U8; }

// A DequantizeLinear producing `name`: (quantized, scale, zero point or "").
struct Dequantized {
  std::string q, scale, zero;
  int64_t axis = 1;
};

std::optional<Dequantized> dequantizedFrom(const ir::Graph &g, const std::string &name) {
  const auto p = g.producer(name);
  if (!p)
    return std::nullopt;
  const ir::Op &op = *g.ops()[*p];
  if (op.type != "DequantizeLinear" || !isOnnxOp(op))
    return std::nullopt;
  return Dequantized{op.inputs[0], op.inputs[1], op.hasInput(2) ? op.inputs[2] : "", op.attrs.getInt("axis", 1)};
}

bool scalar(const ir::Graph &g, const std::string &name) { return g.tensor(name).info.elements() == 1; }

// A per-tensor scale, or per-axis along `axis` (of rank `rank`) with `count` values.
bool scaleFits(const ir::Graph &g, const Dequantized &d, int64_t rank, int64_t axis, int64_t count) {
  if (scalar(g, d.scale))
    return true;
  const int64_t a = d.axis < 0 ? d.axis + rank : d.axis;
  return a == axis && g.tensor(d.scale).info.shape == Shape{count};
}

// The zero point `d.zero`, or a new scalar 0 of the quantized type.
std::string zeroPoint(ir::Graph &g, const Dequantized &d, const std::string &base) {
  if (!d.zero.empty())
    return d.zero;
  return addConstant(g, base + "_zero", {g.tensor(d.q).info.dtype, {}}, {0});
}

// The int32 bias of Conv input `bias` when it is DQ(int32, x_scale * w_scale, 0).
std::optional<std::string> quantizedBias(const ir::Graph &g, const std::string &bias, const Dequantized &x,
                                         const Dequantized &w) {
  const auto b = dequantizedFrom(g, bias);
  if (!b || g.tensor(b->q).info.dtype != DType::I32 || !isConstant(g, b->scale) || !isConstant(g, x.scale) ||
      !isConstant(g, w.scale))
    return std::nullopt;
  if (!b->zero.empty() && (!isConstant(g, b->zero) || constantAsDoubles(g.tensor(b->zero)) !=
                                                           std::vector<double>(size_t(g.tensor(b->zero).info.elements()), 0.0)))
    return std::nullopt;
  const std::vector<double> bs = constantAsDoubles(g.tensor(b->scale)), xs = constantAsDoubles(g.tensor(x.scale)),
                            ws = constantAsDoubles(g.tensor(w.scale));
  const size_t m = size_t(g.tensor(b->q).info.elements());
  for (size_t c = 0; c < m; ++c) {
    const double want = xs[0] * ws[ws.size() == 1 ? 0 : c], got = bs[bs.size() == 1 ? 0 : c];
    if (std::abs(got - want) > 1e-6 * std::abs(want))
      return std::nullopt;
  }
  return b->q;
}

// Tries to fuse the QuantizeLinear at `qIndex`; true when the graph changed.
bool fuseAt(ir::Graph &g, size_t qIndex, const std::set<std::string> &captured) {
  const ir::Op q = *g.ops()[qIndex];
  if (!isOnnxOp(q) || q.type != "QuantizeLinear" || !scalar(g, q.inputs[1]) || (q.hasInput(2) && !scalar(g, q.inputs[2])))
    return false;
  auto singleUse = [&](const std::string &t) {
    return g.consumers(t).size() == 1 && !isGraphOutput(g, t) && !captured.count(t);
  };
  std::string y = q.inputs[0];
  auto producer = g.producer(y);
  std::optional<size_t> reluIndex;
  if (producer && g.ops()[*producer]->type == "Relu" && singleUse(y)) {
    // Relu then Q with zero point at the type's minimum: Q's clamp is the Relu's.
    const DType qt = q.hasInput(2) ? g.tensor(q.inputs[2]).info.dtype : DType::U8;
    const double zero = q.hasInput(2) && isConstant(g, q.inputs[2]) ? constantAsDoubles(g.tensor(q.inputs[2]))[0]
                        : q.hasInput(2)                             ? 1.0 // unknown: keep the Relu
                                                                    : 0.0;
    if (zero == (qt == DType::I8 ? -128.0 : 0.0)) {
      reluIndex = producer;
      y = g.ops()[*producer]->inputs[0];
      producer = g.producer(y);
    }
  }
  if (!producer || !singleUse(y))
    return false;
  const ir::Op op = *g.ops()[*producer];
  const bool conv = op.type == "Conv";
  if (!isOnnxOp(op) || (!conv && op.type != "MatMul") || g.tensor(y).info.dtype != DType::F32)
    return false;
  const auto x = dequantizedFrom(g, op.inputs[0]), w = dequantizedFrom(g, op.inputs[1]);
  if (!x || !w || !isQuantized(g.tensor(x->q).info.dtype) || !isQuantized(g.tensor(w->q).info.dtype) ||
      !scalar(g, x->scale) || (!x->zero.empty() && !scalar(g, x->zero)))
    return false;
  const Shape &ws = g.tensor(w->q).info.shape;
  const int64_t wRank = int64_t(ws.size());
  if (wRank == 0 || (conv ? !scaleFits(g, *w, wRank, 0, ws[0]) : !scaleFits(g, *w, wRank, wRank - 1, ws.back())) ||
      (!conv && wRank > 2 && !scalar(g, w->scale)))
    return false;
  if (!w->zero.empty() && !scalar(g, w->zero) && g.tensor(w->zero).info.shape != g.tensor(w->scale).info.shape)
    return false;
  std::string bias;
  if (conv && op.hasInput(2)) {
    const auto b = quantizedBias(g, op.inputs[2], *x, *w);
    if (!b)
      return false;
    bias = *b;
  }

  ir::Op fused;
  fused.type = conv ? "QLinearConv" : "QLinearMatMul";
  fused.name = uniqueOpName(g, op.name + "_qlinear");
  fused.ipu = op.ipu;
  fused.pipelineStage = op.pipelineStage;
  if (conv)
    fused.attrs = op.attrs;
  const std::string yZero = q.hasInput(2) ? q.inputs[2] : addConstant(g, fused.name + "_zero", {DType::U8, {}}, {0});
  fused.inputs = {x->q,     x->scale,   zeroPoint(g, *x, fused.name + "_x"), w->q, w->scale,
                  zeroPoint(g, *w, fused.name + "_w"), q.inputs[1], yZero};
  if (!bias.empty())
    fused.inputs.push_back(bias);
  fused.outputs = {q.outputs[0]};
  // Q comes after the op and its inputs: the fused op takes Q's place.
  g.removeOp(qIndex);
  g.insertOpBefore(qIndex, fused);
  if (reluIndex)
    removeOpAndDeadOutputs(g, *reluIndex, captured);
  removeOpAndDeadOutputs(g, *g.producer(y), captured);
  return true;
}

} // namespace

size_t fuseQdq(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  const std::set<std::string> captured = namesUsedBySubgraphs(ir);
  size_t fused = 0;
  for (size_t i = 0; i < g.ops().size(); ++i)
    if (fuseAt(g, i, captured)) {
      ++fused;
      i = 0; // indices moved; start over (fusions are few)
    }
  if (fused)
    log::get("passes")->debug("qdq-fusion: {} Conv/MatMul between DequantizeLinear and QuantizeLinear as QLinear ops",
                              fused);
  return fused;
}

} // namespace popc::passes
