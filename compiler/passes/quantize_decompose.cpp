// Quantized ops as integer products and float arithmetic, exactly as ONNX defines them:
//   DequantizeLinear   y = (float(x) - float(zp)) * scale
//   QuantizeLinear     y = saturate(round_half_even(x / scale) + zp)
//   DynamicQuantizeLinear  scale = (max(0, max x) - min(0, min x)) / 255, zp and y as above
//   MatMulInteger/ConvInteger  int32 sum of (A - a_zp) * (B - b_zp)
//   QLinearMatMul/QLinearConv  saturate(round(float(acc [+ B]) * (a_scale * b_scale / y_scale)) + y_zp)
// Per-axis scales and zero points are reshaped to broadcast along their axis.
// The integer products are MatMulInteger/ConvInteger ops, which lower to int8
// vertices with int32 accumulators; those vertices compile a zero point in
// when it is one constant (absent, a scalar, or per-axis with equal values).
// A MatMul's other zero points (computed at run time, as DynamicQuantizeLinear
// gives, or differing per row or column) become int32 corrections:
//   sum (a' - ra)(b' - rb) = sum a'b' - rb sum_k a' - ra sum_k b' + K ra rb.
// A ConvInteger's corrections are window sums, convolutions with ones:
//   sum (x' - rx)(w' - rw) = sum x'w' - rw sum x' - rx sum w' + rx rw sum 1.
// A 1-D ConvInteger runs as a 2-D one over a height of 1; a 3-D one as a float64 Conv:
// every int8 x int8 product and every sum of up to 2^37 of them is exact in
// float64, so results equal an int32 accumulator bit for bit.
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace popc::passes {

namespace {

// ONNX TensorProto data types (Cast's `to`).
constexpr int64_t kFloat = 1, kUint8 = 2, kInt8 = 3, kInt32 = 6, kDouble = 11;

// The value of a zero point the integer vertices can compile in: absent (0),
// or a constant whose elements are all equal.
std::optional<int64_t> uniformZeroPoint(const ir::Graph &g, const std::string &zp) {
  if (zp.empty())
    return 0;
  if (!isConstant(g, zp))
    return std::nullopt;
  const std::vector<int64_t> v = g.tensor(zp).toInt64s();
  if (v.empty() || std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) != v.end())
    return v.empty() ? std::optional<int64_t>(0) : std::nullopt;
  return v[0];
}

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
    return reshaped(p, shape);
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

  // A uniform zero point as the integer op's input: none for 0, else a scalar constant.
  std::string zeroPointInput(const std::string &zp, int64_t value) {
    if (value == 0)
      return "";
    if (info(zp).shape.empty())
      return zp;
    const DType t = info(zp).dtype;
    return addConstant(g_, op_.name + "_zp", {t, {}}, {uint8_t(t == DType::I8 ? int8_t(value) : uint8_t(value))});
  }

  // A uint8 constant of ones shaped like x (one batch item when `image`).
  std::string ones(const std::string &x, bool image) {
    Shape shape = info(x).shape;
    if (image)
      shape[0] = 1;
    return addConstant(g_, op_.name + "_ones", {DType::U8, shape}, std::vector<uint8_t>(size_t(numElements(shape)), 1));
  }

  // int32 Sum over `axis` (kept) of x - zero, x widened to int32.
  std::string centredSum(const std::string &x, const std::string &zero, int64_t axis) {
    std::string v = cast(x, kInt32);
    if (!zero.empty())
      v = add("Sub", {v, cast(zero, kInt32)});
    return ops_.reduce("ReduceSum", v, {axis}, true);
  }

  std::string reshapeTarget(const Shape &shape) { return addInt64Constant(g_, op_.name + "_shape", shape); }
  std::string reshaped(const std::string &x, const Shape &shape) { return add("Reshape", {x, reshapeTarget(shape)}); }

  // A 1-D conv's attributes for the same conv over [N, C, 1, L].
  static ir::Attributes heightOfOne(const ir::Attributes &attrs) {
    ir::Attributes a = attrs;
    for (const char *name : {"kernel_shape", "strides", "dilations"})
      if (attrs.has(name)) {
        std::vector<int64_t> v = attrs.getInts(name);
        v.insert(v.begin(), 1);
        a.set(name, v);
      }
    if (attrs.has("pads")) {
      const std::vector<int64_t> p = attrs.getInts("pads");
      if (p.size() == 2)
        a.set("pads", std::vector<int64_t>{0, p[0], 0, p[1]});
    }
    return a;
  }

  // A 2-D ConvInteger of x, w on the integer vertices, centred on the uniform
  // zero points (cx, cw); the others become window-sum corrections.
  std::string convInteger(const std::string &x, const std::string &xz, const std::string &w, const std::string &wz,
                          const std::optional<int64_t> &cx, const std::optional<int64_t> &cw,
                          const ir::Attributes &attrs, const std::string &output) {
    const std::string bakedX = cx ? zeroPointInput(xz, *cx) : "", bakedW = cw ? zeroPointInput(wz, *cw) : "";
    if (cx && cw)
      return add("ConvInteger", {x, w, bakedX, bakedW}, output, attrs);
    // Sums over each output's in-image window taps (padding contributes 0):
    // of x' (a conv with ones for weights), of w' (ones for the image), of 1.
    const std::string onesX = ones(x, true), onesW = ones(w, false);
    std::string acc = add("ConvInteger", {x, w, bakedX, bakedW}, "", attrs);
    const std::string rx = cx ? "" : cast(xz, kInt32);
    const std::string rw = cw ? "" : cast(alongAxis(wz, 4, 1), kInt32);
    if (!rw.empty())
      acc = add("Sub", {acc, add("Mul", {rw, add("ConvInteger", {x, onesW, bakedX}, "", attrs)})},
                rx.empty() ? output : "");
    if (!rx.empty())
      acc = add("Sub", {acc, add("Mul", {rx, add("ConvInteger", {onesX, w, "", bakedW}, "", attrs)})},
                rw.empty() ? output : "");
    if (!rx.empty() && !rw.empty())
      acc = add("Add", {acc, add("Mul", {add("Mul", {rx, rw}), add("ConvInteger", {onesX, onesW}, "", attrs)})},
                output);
    return acc;
  }

  // The int32 product of MatMulInteger/ConvInteger inputs x, w (zero points xz,
  // wz) on the integer vertices, written to `output` (a fresh name when
  // empty), or "" when they cannot take it.
  std::string integerProduct(const std::string &type, const std::string &x, const std::string &xz,
                             const std::string &w, const std::string &wz, const std::string &output = "") {
    const std::optional<int64_t> cx = uniformZeroPoint(g_, xz), cw = uniformZeroPoint(g_, wz);
    const size_t xr = info(x).shape.size(), wr = info(w).shape.size();
    ir::Attributes attrs = type == "Conv" ? op_.attrs : ir::Attributes{};
    if (type == "Conv") {
      if (xr == 4)
        return convInteger(x, xz, w, wz, cx, cw, attrs, output);
      if (xr != 3)
        return "";
      // 1-D: the 2-D vertices over a height of 1.
      const Shape xs = info(x).shape, ws = info(w).shape;
      const std::string acc = convInteger(reshaped(x, {xs[0], xs[1], 1, xs[2]}), xz,
                                          reshaped(w, {ws[0], ws[1], 1, ws[2]}), wz, cx, cw, heightOfOne(attrs), "");
      const Shape ys = info(acc).shape;
      return add("Reshape", {acc, reshapeTarget({ys[0], ys[1], ys[3]})}, output);
    }
    if ((!cx || !cw) && (xr < 2 || wr < 2))
      return "";
    // The kernel centres on the uniform zero points; ra, rb are the others.
    const std::string bakedX = cx ? zeroPointInput(xz, *cx) : "", bakedW = cw ? zeroPointInput(wz, *cw) : "";
    std::string acc = add("MatMulInteger", {x, w, bakedX, bakedW}, cx && cw ? output : "");
    const std::string ra = cx ? "" : cast(alongAxis(xz, xr, int64_t(xr) - 2), kInt32);
    const std::string rb = cw ? "" : cast(alongAxis(wz, wr, int64_t(wr) - 1), kInt32);
    if (!rb.empty())
      acc = add("Sub", {acc, add("Mul", {rb, centredSum(x, bakedX, -1)})}, ra.empty() ? output : "");
    if (!ra.empty())
      acc = add("Sub", {acc, add("Mul", {ra, centredSum(w, bakedW, -2)})}, rb.empty() ? output : "");
    if (!ra.empty() && !rb.empty()) {
      const auto k = uint32_t(info(x).shape.back());
      const std::string kc = addConstant(g_, op_.name + "_k", {DType::I32, {}},
                                         {uint8_t(k), uint8_t(k >> 8), uint8_t(k >> 16), uint8_t(k >> 24)});
      acc = add("Add", {acc, add("Mul", {kc, add("Mul", {ra, rb})})}, output);
    }
    return acc;
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
    const std::string x = op.inputs[0], xz = inputOrEmpty(op, 2), w = op.inputs[1], wz = inputOrEmpty(op, 3);
    if (d.integerProduct(type, x, xz, w, wz, out).empty()) {
      ir::Attributes toI32;
      toI32.set("to", kInt32);
      d.add("Cast", {d.product(type, x, xz, w, wz)}, out, toI32);
    }
  } else { // QLinearMatMul, QLinearConv
    const bool conv = op.type == "QLinearConv";
    const std::string type = conv ? "Conv" : "MatMul";
    std::string acc = d.integerProduct(type, op.inputs[0], op.inputs[2], op.inputs[3], op.inputs[5]);
    const bool integer = !acc.empty();
    if (!integer)
      acc = d.product(type, op.inputs[0], op.inputs[2], op.inputs[3], op.inputs[5]);
    const size_t rank = types.at(out).shape.size();
    // The output channel axis of w's per-channel scale: 1 for Conv, the last for MatMul.
    const int64_t channel = conv ? 1 : int64_t(rank) - 1;
    if (conv && op.hasInput(8)) {
      const std::string bias = d.alongAxis(op.inputs[8], rank, 1);
      acc = d.add("Add", {acc, integer ? bias : d.cast(bias, kDouble)});
    }
    const std::string multiplier = d.add(
        "Div", {d.add("Mul", {op.inputs[1], d.alongAxis(op.inputs[4], rank, channel)}), op.inputs[6]});
    d.requantize(d.add("Mul", {d.cast(acc, kFloat), multiplier}), op.inputs[7], types.at(out).dtype, out, rank, 1);
  }
  return d.next() - index;
}

// A MatMulInteger/ConvInteger the integer vertices take as it is: zero points
// absent or scalar constants, and a 2-D convolution.
bool onIntegerVertices(const ir::Graph &g, const ir::Op &op) {
  if (op.type != "MatMulInteger" && op.type != "ConvInteger")
    return false;
  for (size_t i : {2, 3})
    if (op.hasInput(i) && !(isConstant(g, op.inputs[i]) && g.tensor(op.inputs[i]).info.shape.empty()))
      return false;
  return op.type == "MatMulInteger" || g.tensor(op.inputs[0]).info.shape.size() == 4;
}

} // namespace

size_t decomposeQuantized(ir::Ir &ir) {
  static const std::set<std::string> types{"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                                           "MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"};
  const size_t count = replaceOps(
      ir, [](const ir::Graph &g, const ir::Op &op) { return types.count(op.type) > 0 && !onIntegerVertices(g, op); },
      [](ir::Graph &g, size_t i, const Replaced &r) { return decompose(g, i, r.op, r.outputs); });
  if (count)
    log::get("passes")->debug("quantize-decomposition: {} quantized ops as float arithmetic", count);
  return count;
}

} // namespace popc::passes
