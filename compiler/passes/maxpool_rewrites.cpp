// Two rewrites that keep big MaxPool windows small, each exact:
// - A MaxPool whose stride and pads are multiples of its dilation only ever
//   reads every d-th element: it becomes Slice(step d) and a MaxPool with
//   dilation 1, stride s/d and pads p/d. The pool of a 1000x1000 image with a
//   60x80 kernel dilated by 10 no longer gathers a 591x791 window per output
//   onto one tile.
// - Max is separable: a multi-dimensional MaxPool with a large kernel (over
//   kSeparableTaps elements) becomes one MaxPool per spatial dimension, each
//   with that dimension's kernel, stride, dilation and pads (padding is -inf
//   either way). 60x80 = 4800 taps become 60 + 80, and the vertex code that
//   unrolls each tap stays small.
// And 8/16-bit integer MaxPools pool in float32 between Casts (exact).
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

namespace popc::passes {

namespace {

constexpr int64_t kSeparableTaps = 256;

// MaxPool attributes of `n` spatial dims, defaults filled in.
struct PoolAttrs {
  std::vector<int64_t> kernel, strides, dilations, pads;
  PoolAttrs(const ir::Attributes &a, size_t n)
      : kernel(a.getInts("kernel_shape")), strides(a.getInts("strides")), dilations(a.getInts("dilations")),
        pads(a.getInts("pads")) {
    strides.resize(n, 1);
    dilations.resize(n, 1);
    pads.resize(2 * n, 0);
  }
  void store(ir::Attributes &a) const {
    a.set("kernel_shape", kernel);
    a.set("strides", strides);
    a.set("dilations", dilations);
    a.set("pads", pads);
  }
};

size_t spatialDims(const ir::Graph &g, const ir::Op &op) {
  if (op.inputs.empty() || !g.hasTensor(op.inputs[0]))
    return 0;
  const size_t rank = g.tensor(op.inputs[0]).info.shape.size();
  return rank < 3 || op.attrs.getInts("kernel_shape").size() != rank - 2 ? 0 : rank - 2;
}

// Strides and pads are multiples of a dilation > 1.
bool undilatable(const PoolAttrs &a, size_t n) {
  bool dilated = false;
  for (size_t d = 0; d < n; ++d) {
    if (a.dilations[d] < 1 || a.strides[d] % a.dilations[d] || a.pads[d] % a.dilations[d] ||
        a.pads[d + n] % a.dilations[d])
      return false;
    dilated |= a.dilations[d] > 1;
  }
  return dilated;
}

bool separable(const PoolAttrs &a, size_t n) {
  int64_t taps = 1;
  for (int64_t k : a.kernel)
    taps *= k;
  return n >= 2 && taps > kSeparableTaps;
}

size_t rewrite(ir::Graph &g, size_t index, const ir::Op &op) {
  const size_t n = spatialDims(g, op);
  PoolAttrs a(op.attrs, n);
  OpInserter ops(g, index, op.name, op.ipu);
  std::string x = op.inputs[0];
  if (undilatable(a, n)) {
    const Shape shape = g.tensor(x).info.shape;
    std::vector<int64_t> starts(n, 0), ends, axes;
    for (size_t d = 0; d < n; ++d) {
      ends.push_back(shape[d + 2]);
      axes.push_back(int64_t(d + 2));
      a.strides[d] /= a.dilations[d];
      a.pads[d] /= a.dilations[d];
      a.pads[d + n] /= a.dilations[d];
    }
    auto c = [&](const std::vector<int64_t> &v) { return addInt64Constant(g, op.name + "_c", v); };
    x = ops.add("Slice", {x, c(starts), c(ends), c(axes), c(a.dilations)});
    a.dilations.assign(n, 1);
  }
  // One pool per spatial dimension (max is separable; padding is -inf either way), or one.
  const size_t pools = separable(a, n) ? n : 1;
  for (size_t p = 0; p < pools; ++p) {
    PoolAttrs one = a;
    if (pools > 1)
      for (size_t d = 0; d < n; ++d)
        if (d != p) {
          one.kernel[d] = one.strides[d] = one.dilations[d] = 1;
          one.pads[d] = one.pads[d + n] = 0;
        }
    ir::Attributes attrs = op.attrs;
    one.store(attrs);
    x = ops.add("MaxPool", {x}, p + 1 == pools ? op.outputs[0] : "", attrs);
  }
  return ops.next() - index;
}

// 8- and 16-bit integer MaxPools run on the tiled float pools: every value is
// exact in float32, and so is the max (the codelet for integers holds a whole
// plane per row on one tile).
bool smallIntegerPool(const ir::Graph &g, const ir::Op &op) {
  if (op.type != "MaxPool" || op.outputs.size() != 1 || spatialDims(g, op) == 0)
    return false;
  const DType t = g.tensor(op.inputs[0]).info.dtype;
  return t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::U16;
}

size_t poolInFloat(ir::Graph &g, size_t index, const ir::Op &op) {
  OpInserter ops(g, index, op.name, op.ipu);
  const std::string pooled = ops.add("MaxPool", {ops.cast(op.inputs[0], DType::F32)}, "", op.attrs);
  ops.cast(pooled, g.tensor(op.inputs[0]).info.dtype, op.outputs[0]);
  return ops.next() - index;
}

} // namespace

size_t rewriteMaxPools(ir::Ir &ir) {
  const size_t integer = replaceOps(ir, smallIntegerPool,
                                    [](ir::Graph &g, size_t i, const Replaced &r) { return poolInFloat(g, i, r.op); });
  auto select = [](const ir::Graph &g, const ir::Op &op) {
    if (op.type != "MaxPool" || op.outputs.size() != 1 || op.attrs.getInt("ceil_mode", 0) != 0 ||
        op.attrs.getString("auto_pad", "NOTSET") != "NOTSET")
      return false;
    const size_t n = spatialDims(g, op);
    const PoolAttrs a(op.attrs, n);
    return n > 0 && (undilatable(a, n) || separable(a, n));
  };
  const size_t count =
      replaceOps(ir, select, [](ir::Graph &g, size_t i, const Replaced &r) { return rewrite(g, i, r.op); });
  if (count + integer)
    log::get("passes")->debug("maxpool-rewrites: {} MaxPools undilated or separated, {} integer ones in float32",
                              count, integer);
  return count + integer;
}

} // namespace popc::passes
