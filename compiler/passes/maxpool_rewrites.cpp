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
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

namespace popc::passes {

namespace {

constexpr int64_t kSeparableTaps = 256;

// MaxPool attributes of `n` spatial dims, defaults filled in.
struct PoolAttrs {
  std::vector<int64_t> kernel, strides, dilations, pads;
  explicit PoolAttrs(const ir::Op &op, size_t n)
      : kernel(op.attrs.getInts("kernel_shape")), strides(op.attrs.getInts("strides")),
        dilations(op.attrs.getInts("dilations")), pads(op.attrs.getInts("pads")) {
    strides.resize(n, 1);
    dilations.resize(n, 1);
    pads.resize(2 * n, 0);
  }
};

// One MaxPool per spatial dimension; returns the ops inserted.
size_t separate(ir::Graph &g, size_t i, const ir::Op &op, size_t n) {
  const PoolAttrs a(op, n);
  OpInserter ops(g, i, op.name, op.ipu);
  std::string x = op.inputs[0];
  for (size_t d = 0; d < n; ++d) {
    ir::Attributes attrs = op.attrs;
    std::vector<int64_t> kernel(n, 1), strides(n, 1), dilations(n, 1), pads(2 * n, 0);
    kernel[d] = a.kernel[d];
    strides[d] = a.strides[d];
    dilations[d] = a.dilations[d];
    pads[d] = a.pads[d];
    pads[d + n] = a.pads[d + n];
    attrs.set("kernel_shape", kernel);
    attrs.set("strides", strides);
    attrs.set("dilations", dilations);
    attrs.set("pads", pads);
    x = ops.add("MaxPool", {x}, d + 1 == n ? op.outputs[0] : "", attrs);
  }
  return ops.next() - i;
}

} // namespace

size_t rewriteMaxPools(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  const std::set<std::string> captured = namesUsedBySubgraphs(ir);
  size_t count = 0;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const ir::Op &pool = *g.ops()[i];
    if (!isOnnxOp(pool) || pool.type != "MaxPool" || pool.outputs.size() != 1 || pool.inputs.empty() ||
        !g.hasTensor(pool.inputs[0]) || pool.attrs.getInt("ceil_mode", 0) != 0 ||
        pool.attrs.getString("auto_pad", "NOTSET") != "NOTSET")
      continue;
    const Shape x = g.tensor(pool.inputs[0]).info.shape;
    const size_t n = x.size() < 2 ? 0 : x.size() - 2;
    std::vector<int64_t> dil = pool.attrs.getInts("dilations"), strides = pool.attrs.getInts("strides"),
                         pads = pool.attrs.getInts("pads");
    dil.resize(n, 1);
    strides.resize(n, 1);
    pads.resize(2 * n, 0);
    bool dilated = false, fits = n > 0;
    for (size_t d = 0; d < n; ++d) {
      dilated |= dil[d] > 1;
      fits = fits && dil[d] >= 1 && strides[d] % dil[d] == 0 && pads[d] % dil[d] == 0 && pads[d + n] % dil[d] == 0;
    }
    int64_t taps = 1;
    for (int64_t k : pool.attrs.getInts("kernel_shape"))
      taps *= k;
    if (!(dilated && fits)) {
      if (n >= 2 && taps > kSeparableTaps && int64_t(pool.attrs.getInts("kernel_shape").size()) == int64_t(n)) {
        const ir::Op op = pool;
        removeOpAndDeadOutputs(g, i, captured);
        i += separate(g, i, op, n) - 1;
        ++count;
      }
      continue;
    }
    const ir::Op op = pool;
    std::vector<int64_t> starts(n, 0), ends, axes, newStrides, newPads(2 * n);
    for (size_t d = 0; d < n; ++d) {
      ends.push_back(x[d + 2]);
      axes.push_back(int64_t(d + 2));
      newStrides.push_back(strides[d] / dil[d]);
      newPads[d] = pads[d] / dil[d];
      newPads[d + n] = pads[d + n] / dil[d];
    }
    removeOpAndDeadOutputs(g, i, captured);
    OpInserter ops(g, i, op.name, op.ipu);
    auto c = [&](const std::vector<int64_t> &v) { return addInt64Constant(g, op.name + "_c", v); };
    const std::string sampled = ops.add("Slice", {op.inputs[0], c(starts), c(ends), c(axes), c(dil)});
    ir::Attributes attrs = op.attrs;
    attrs.set("dilations", std::vector<int64_t>(n, 1));
    attrs.set("strides", newStrides);
    attrs.set("pads", newPads);
    ops.add("MaxPool", {sampled}, op.outputs[0], attrs);
    i = ops.next() - 2; // the new MaxPool is visited next: it may still need separating
    ++count;
  }
  if (count)
    log::get("passes")->debug("maxpool-rewrites: {} MaxPools undilated or separated", count);
  return count;
}

} // namespace popc::passes
