// Quantized ops as float arithmetic, exactly as ONNX defines them:
//   DequantizeLinear   y = (float(x) - float(zp)) * scale
//   QuantizeLinear     y = saturate(round_half_even(x / scale) + zp)
//   DynamicQuantizeLinear  scale = (max(0, max x) - min(0, min x)) / 255, zp and y as above
//   MatMulInteger/ConvInteger  int32((A - a_zp) · (B - b_zp)), the product in float64
//   QLinearMatMul/QLinearConv  saturate(round(float(acc [+ B]) * (a_scale * b_scale / y_scale)) + y_zp)
// Per-axis scales and zero points are reshaped to broadcast along their axis.
// The integer products run as a float64 MatMul/Conv: every int8 x int8 product
// and every sum of up to 2^37 of them is exact in float64, so results equal an
// int32 accumulator bit for bit (the simulated cycles are float64's).
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <cstring>

namespace popc::passes {

namespace {

// ONNX TensorProto data types (Cast's `to`).
constexpr int64_t kFloat = 1, kUint8 = 2, kInt8 = 3, kInt32 = 6, kDouble = 11;

class Decomposer {
public:
  Decomposer(ir::Graph &g, size_t at, const ir::Op &op) : g_(g), op_(op), ops_(g, at, op.name, op.ipu) {}

  std::string cast(const std::string &x, int64_t to) {
    ir::Attributes a;
    a.set("to", to);
    return ops_.add("Cast", {x}, "", a);
  }
  std::string add(const std::string &type, std::vector<std::string> in, std::string out = "",
                  ir::Attributes attrs = {}) {
    return ops_.add(type, std::move(in), std::move(out), std::move(attrs));
  }
  std::string scalar(DType t, double v) { return addFloatConstant(g_, op_.name + "_c", t, {}, {v}); }
  const ir::TensorInfo &info(const std::string &name) const { return g_.tensor(name).info; }

  // A per-axis parameter (1-D of length > 1) of an operand of `rank`, reshaped
  // to [1, .., C at `axis`, .., 1]; a scalar or one-element tensor as it is.
  std::string alongAxis(const std::string &p, size_t rank, int64_t axis) {
    const Shape &s = info(p).shape;
    if (s.size() != 1 || s[0] == 1 || rank == 0)
      return p;
    if (axis < 0)
      axis += int64_t(rank);
    Shape shape(rank, 1);
    shape[size_t(axis)] = s[0];
    std::vector<uint8_t> data(shape.size() * 8);
    std::memcpy(data.data(), shape.data(), data.size());
    return add("Reshape", {p, addConstant(g_, op_.name + "_shape", {DType::I64, {int64_t(shape.size())}}, data)});
  }

  // round-half-even, + zero point, clamp to the zero point's range, cast to it.
  void requantize(std::string v, const std::string &zp, DType zpType, const std::string &out, size_t rank,
                  int64_t axis) {
    v = add("Round", {v});
    if (!zp.empty())
      v = add("Add", {v, cast(alongAxis(zp, rank, axis), kFloat)});
    const bool isSigned = zpType == DType::I8;
    v = add("Max", {add("Min", {v, scalar(DType::F32, isSigned ? 127 : 255)}), scalar(DType::F32, isSigned ? -128 : 0)});
    ir::Attributes a;
    a.set("to", isSigned ? kInt8 : kUint8);
    ops_.add("Cast", {v}, out, a);
  }

  // float64 (x - zp): zp scalar, or per `axis` of x.
  std::string centred(const std::string &x, const std::string &zp, int64_t axis) {
    std::string v = cast(x, kDouble);
    if (!zp.empty())
      v = add("Sub", {v, cast(alongAxis(zp, info(x).shape.size(), axis), kDouble)});
    return v;
  }

  // The exact integer product of MatMul/Conv inputs x, w (zero points xz, wz), float64.
  std::string product(const std::string &type, const std::string &x, const std::string &xz, const std::string &w,
                      const std::string &wz) {
    const size_t xr = info(x).shape.size();
    // MatMul: a's zero point is per row (axis -2 of A: [.., M, 1]), b's per column (last axis);
    // Conv: x's is a scalar, w's per output channel (axis 0).
    const int64_t xAxis = type == "MatMul" ? (xr >= 2 ? int64_t(xr) - 2 : 0) : 1;
    const int64_t wAxis = type == "MatMul" ? int64_t(info(w).shape.size()) - 1 : 0;
    const std::string a = centred(x, xz, xAxis), b = centred(w, wz, wAxis);
    ir::Attributes attrs = type == "Conv" ? op_.attrs : ir::Attributes{};
    return add(type, {a, b}, "", attrs);
  }

  size_t next() const { return ops_.next(); }

private:
  ir::Graph &g_;
  const ir::Op &op_;
  OpInserter ops_;
};

std::string inputOrEmpty(const ir::Op &op, size_t i) { return op.hasInput(i) ? op.inputs[i] : ""; }

// Rewrites the op at `index` (already removed from the graph, copied in `op`).
size_t decompose(ir::Graph &g, size_t index, const ir::Op &op, const std::map<std::string, ir::TensorInfo> &types) {
  Decomposer d(g, index, op);
  const int64_t axis = op.attrs.getInt("axis", 1);
  const std::string &out = op.outputs[0];
  if (op.type == "DequantizeLinear") {
    const size_t rank = d.info(op.inputs[0]).shape.size();
    std::string v = d.cast(op.inputs[0], kFloat);
    if (op.hasInput(2))
      v = d.add("Sub", {v, d.cast(d.alongAxis(op.inputs[2], rank, axis), kFloat)});
    d.add("Mul", {v, d.alongAxis(op.inputs[1], rank, axis)}, out);
  } else if (op.type == "QuantizeLinear") {
    const size_t rank = d.info(op.inputs[0]).shape.size();
    std::string x = op.inputs[0];
    if (d.info(x).dtype != DType::F32)
      x = d.cast(x, kFloat);
    std::string scale = d.alongAxis(op.inputs[1], rank, axis);
    if (d.info(scale).dtype != DType::F32)
      scale = d.cast(scale, kFloat);
    d.requantize(d.add("Div", {x, scale}), inputOrEmpty(op, 2), types.at(out).dtype, out, rank, axis);
  } else if (op.type == "DynamicQuantizeLinear") {
    const std::string &x = op.inputs[0];
    ir::Attributes all;
    all.set("keepdims", int64_t(0));
    const std::string zero = d.scalar(DType::F32, 0);
    const std::string lo = d.add("Min", {d.add("ReduceMin", {x}, "", all), zero});
    const std::string hi = d.add("Max", {d.add("ReduceMax", {x}, "", all), zero});
    const std::string scale = d.add("Div", {d.add("Sub", {hi, lo}), d.scalar(DType::F32, 255)}, op.outputs[1]);
    const std::string zpf = d.add(
        "Max", {d.add("Min", {d.add("Round", {d.add("Div", {d.add("Sub", {zero, lo}), scale})}), d.scalar(DType::F32, 255)}),
                zero});
    ir::Attributes toU8;
    toU8.set("to", kUint8);
    d.add("Cast", {zpf}, op.outputs[2], toU8);
    const std::string y = d.add("Add", {d.add("Round", {d.add("Div", {x, scale})}), zpf});
    d.add("Cast", {d.add("Max", {d.add("Min", {y, d.scalar(DType::F32, 255)}), zero})}, out, toU8);
  } else if (op.type == "MatMulInteger" || op.type == "ConvInteger") {
    const std::string type = op.type == "MatMulInteger" ? "MatMul" : "Conv";
    const std::string acc = d.product(type, op.inputs[0], inputOrEmpty(op, 2), op.inputs[1], inputOrEmpty(op, 3));
    ir::Attributes toI32;
    toI32.set("to", kInt32);
    d.add("Cast", {acc}, out, toI32);
  } else { // QLinearMatMul, QLinearConv
    const bool conv = op.type == "QLinearConv";
    std::string acc = d.product(conv ? "Conv" : "MatMul", op.inputs[0], op.inputs[2], op.inputs[3], op.inputs[5]);
    const size_t rank = types.at(out).shape.size();
    // The output channel axis of w's per-channel scale: 1 for Conv, the last for MatMul.
    const int64_t channel = conv ? 1 : int64_t(rank) - 1;
    if (conv && op.hasInput(8))
      acc = d.add("Add", {acc, d.cast(d.alongAxis(op.inputs[8], rank, 1), kDouble)});
    const std::string multiplier = d.add(
        "Div", {d.add("Mul", {op.inputs[1], d.alongAxis(op.inputs[4], rank, channel)}), op.inputs[6]});
    d.requantize(d.add("Mul", {d.cast(acc, kFloat), multiplier}), op.inputs[7], types.at(out).dtype, out, rank, 1);
  }
  return d.next() - index;
}

} // namespace

size_t decomposeQuantized(ir::Ir &ir) {
  static const std::set<std::string> types{"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                                           "MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"};
  const size_t count = replaceOps(
      ir, [](const ir::Graph &, const ir::Op &op) { return types.count(op.type) > 0; },
      [](ir::Graph &g, size_t i, const Replaced &r) { return decompose(g, i, r.op, r.outputs); });
  if (count)
    log::get("passes")->debug("quantize-decomposition: {} quantized ops as float arithmetic", count);
  return count;
}

} // namespace popc::passes
