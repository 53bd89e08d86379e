// Every convolution as a 2-D Conv, so that one planner (compiler/lib/conv.cpp:
// output, channel and row blocks over all tiles, register-tiled vertices, half
// partials) runs them all, and no convolution keeps a whole operand on one
// tile (the N-D codelets gave every tile all of x and w).
// - 1-D Conv: a 2-D one over a height of 1 (Reshapes are views).
// - 3-D Conv: the depth taps stacked as input channels, the output depths as
//   batch: X gathered at depths od*s + j*d (after the depth padding) is
//   [N, C, kd, OD, H, W] -> [N*OD, group, kd, C/group, H, W], W [M, C/g, kd, ..]
//   -> [M, kd*C/g, kh, kw], one grouped 2-D Conv, the output back to
//   [N, M, OD, OH, OW]. The stacked input is kd/s times X.
// - ConvTranspose (1 to 3 dims): as Poplar's poplin and TVM do, a stride-1
//   Conv over X with s-1 zeros inserted between its elements, padded by
//   d(k-1) - pads_begin before (a negative amount crops), with W's channel
//   roles swapped per group and flipped in space; then the rules above. It
//   multiplies the zeros too (s^dims the MACs of the scatter form) on vertices
//   that are vectorised and tiled, where the codelet was neither.
// The arithmetic is the same sums in another order: outputs match the
// codelets' within float rounding (the codelets accumulated in double).
#include "compiler/ir/op_attrs.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <algorithm>
#include <numeric>

namespace popc::passes {

namespace {

class ConvRewriter {
public:
  ConvRewriter(ir::Graph &g, size_t at, const ir::Op &op) : g_(g), op_(op), ops_(g, at, op.name, op.ipu) {}

  std::string reshape(const std::string &x, const Shape &shape, std::string out = "") {
    return ops_.reshape(x, shape, std::move(out));
  }
  std::string transpose(const std::string &x, const std::vector<int64_t> &perm) { return ops_.transpose(x, perm); }
  // x[..., indices, ...] along `axis` (indices of any shape, constant).
  std::string gather(const std::string &x, int64_t axis, Shape shape, const std::vector<int64_t> &indices) {
    const std::string idx = addInt64Tensor(g_, op_.name + "_taps", std::move(shape), indices);
    ir::Attributes a;
    a.set("axis", axis);
    return ops_.add("Gather", {x, idx}, "", a);
  }
  // Zero padding (pads: ONNX order, all begins then all ends, non-negative).
  std::string pad(const std::string &x, const std::vector<int64_t> &pads) {
    if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }))
      return x;
    if (g_.opset >= 11)
      return ops_.add("Pad", {x, addInt64Constant(g_, op_.name + "_pads", pads)});
    ir::Attributes a;
    a.set("pads", pads);
    return ops_.add("Pad", {x}, "", a);
  }
  const Shape &shape(const std::string &x) const { return g_.tensor(x).info.shape; }

  // A Conv of any rank with explicit geometry p, written to `out`.
  void conv(std::string x, std::string w, const std::string &bias, const ir::WindowParams &p, const std::string &out) {
    const size_t dims = shape(x).size() - 2;
    if (dims == 1) {
      const Shape xs = shape(x), ws = shape(w);
      ir::WindowParams q = p;
      q.kernel.insert(q.kernel.begin(), 1);
      for (auto *v : {&q.strides, &q.dilations})
        v->insert(v->begin(), 1);
      q.padsBegin.insert(q.padsBegin.begin(), 0);
      q.padsEnd.insert(q.padsEnd.begin(), 0);
      const std::string y = conv2d(reshape(x, {xs[0], xs[1], 1, xs[2]}), reshape(w, {ws[0], ws[1], 1, ws[2]}), bias, q);
      const Shape ys = shape(y);
      reshape(y, {ys[0], ys[1], ys[3]}, out);
      return;
    }
    if (dims == 3)
      return conv3d(x, w, bias, p, out);
    conv2d(x, w, bias, p, out);
  }

  // ConvTranspose with geometry p as a Conv (file comment), written to `out`.
  void convTranspose(const std::string &x0, const std::string &w0, const std::string &bias, const ir::WindowParams &p,
                     const std::string &out) {
    const Shape xs = shape(x0), ws = shape(w0);
    const size_t dims = xs.size() - 2;
    // s-1 zeros after every element of each strided axis: [.., L, ..] -> [.., L, s] -> [.., L*s, ..].
    std::string x = x0;
    std::vector<int64_t> begin(dims), end(dims);
    for (size_t i = 0; i < dims; ++i) {
      const int64_t s = p.strides[i], L = xs[i + 2], k = (p.kernel[i] - 1) * p.dilations[i];
      int64_t length = L;
      if (s > 1) {
        Shape split = shape(x);
        split.insert(split.begin() + int64_t(i) + 3, 1);
        std::vector<int64_t> pads(2 * split.size(), 0);
        pads[split.size() + i + 3] = s - 1;
        Shape merged = shape(x);
        merged[i + 2] *= s;
        x = reshape(pad(reshape(x, split), pads), merged);
        length = L * s;
      }
      // The zero-inserted input has (L-1)s+1 elements; the Conv needs
      // k - pads_begin more before and out - that - (k - pads_begin) + k after.
      begin[i] = k - p.padsBegin[i];
      end[i] = p.outSpatial[i] - ((L - 1) * s + 1) - begin[i] + k - (length - ((L - 1) * s + 1));
    }
    // Negative amounts crop the input, the rest pads inside the Conv.
    for (size_t i = 0; i < dims; ++i) {
      const int64_t length = shape(x)[i + 2];
      const int64_t from = std::max<int64_t>(0, -begin[i]), to = length - std::max<int64_t>(0, -end[i]);
      if (from > 0 || to < length)
        x = ops_.slice(x, int64_t(i + 2), from, to);
      begin[i] = std::max<int64_t>(0, begin[i]);
      end[i] = std::max<int64_t>(0, end[i]);
    }
    // W [G*Cig, Cog, k..] -> [G*Cog, Cig, k..], each spatial axis reversed.
    const int64_t G = p.group;
    const ir::SwappedWeightRoles roles = ir::swapWeightRoles(ws, G);
    std::string w = reshape(transpose(reshape(w0, roles.split), roles.perm), roles.swapped);
    for (size_t i = 0; i < dims; ++i) {
      std::vector<int64_t> reversed(static_cast<size_t>(ws[i + 2]));
      std::iota(reversed.rbegin(), reversed.rend(), 0);
      if (reversed.size() > 1)
        w = gather(w, int64_t(i + 2), {ws[i + 2]}, reversed);
    }
    ir::WindowParams q;
    q.kernel = p.kernel;
    q.strides.assign(dims, 1);
    q.dilations = p.dilations;
    q.padsBegin = begin;
    q.padsEnd = end;
    q.group = G;
    conv(x, w, bias, q, out);
  }

  // A MaxPool/AveragePool over 1 or 3 dims as 2-D pools, written to `out`:
  // 1-D over a height of 1; 3-D as a pool over (H, W) of [N, C*D, H, W] then
  // one over depth of [N, C, D, OH*OW]. Both are separable: max of maxes, and
  // the average's divisor (window elements, or those inside the input) is the
  // product of its per-axis counts, so the mean of means is exact.
  void pool(const std::string &x, const ir::WindowParams &p, const std::string &out) {
    const Shape xs = shape(x);
    if (xs.size() == 3) {
      const std::string y = pool2d(reshape(x, {xs[0], xs[1], 1, xs[2]}), PoolAxis{}, PoolAxis(p, 0));
      const Shape ys = shape(y);
      reshape(y, {ys[0], ys[1], ys[3]}, out);
      return;
    }
    const int64_t N = xs[0], C = xs[1], D = xs[2];
    const std::string plane = pool2d(reshape(x, {N, C * D, xs[3], xs[4]}), PoolAxis(p, 1), PoolAxis(p, 2));
    const Shape ps = shape(plane);
    const std::string depth = pool2d(reshape(plane, {N, C, D, ps[2] * ps[3]}), PoolAxis(p, 0), PoolAxis{});
    reshape(depth, {N, C, shape(depth)[2], ps[2], ps[3]}, out);
  }

  size_t next() const { return ops_.next(); }

private:
  // One spatial dim of a window; the default leaves its axis as it is.
  struct PoolAxis {
    int64_t kernel = 1, stride = 1, dilation = 1, padBegin = 0, padEnd = 0;
    PoolAxis() = default;
    PoolAxis(const ir::WindowParams &p, size_t i)
        : kernel(p.kernel[i]), stride(p.strides[i]), dilation(p.dilations[i]), padBegin(p.padsBegin[i]),
          padEnd(p.padsEnd[i]) {}
  };

  // op_'s pool (its other attributes kept) over the two axes of a 4-D x.
  std::string pool2d(const std::string &x, const PoolAxis &h, const PoolAxis &w) {
    ir::Attributes a = op_.attrs;
    a.erase("auto_pad");
    a.set("kernel_shape", std::vector<int64_t>{h.kernel, w.kernel});
    a.set("strides", std::vector<int64_t>{h.stride, w.stride});
    if (op_.type == "MaxPool")
      a.set("dilations", std::vector<int64_t>{h.dilation, w.dilation});
    a.set("pads", std::vector<int64_t>{h.padBegin, w.padBegin, h.padEnd, w.padEnd});
    return ops_.add(op_.type, {x}, "", a);
  }

  std::string conv2d(const std::string &x, const std::string &w, const std::string &bias, const ir::WindowParams &p,
                     std::string out = "") {
    ir::Attributes a;
    a.set("kernel_shape", std::vector<int64_t>(p.kernel.begin(), p.kernel.end()));
    a.set("strides", p.strides);
    a.set("dilations", p.dilations);
    std::vector<int64_t> pads = p.padsBegin;
    pads.insert(pads.end(), p.padsEnd.begin(), p.padsEnd.end());
    a.set("pads", pads);
    a.set("group", p.group);
    std::vector<std::string> inputs{x, w};
    if (!bias.empty())
      inputs.push_back(bias);
    return ops_.add("Conv", std::move(inputs), std::move(out), a);
  }

  void conv3d(const std::string &x0, const std::string &w0, const std::string &bias, const ir::WindowParams &p,
              const std::string &out) {
    const Shape ws = shape(w0);
    const int64_t kd = p.kernel[0], G = p.group, M = ws[0], Cg = ws[1];
    const std::string x = pad(x0, {0, 0, p.padsBegin[0], 0, 0, 0, 0, p.padsEnd[0], 0, 0});
    const Shape xs = shape(x);
    const int64_t N = xs[0], H = xs[3], W = xs[4];
    // Conv output depth from the padded depth.
    const int64_t OD = (xs[2] - (kd - 1) * p.dilations[0] - 1) / p.strides[0] + 1;
    std::vector<int64_t> depths;
    for (int64_t j = 0; j < kd; ++j)
      for (int64_t od = 0; od < OD; ++od)
        depths.push_back(od * p.strides[0] + j * p.dilations[0]);
    // [N, C, kd, OD, H, W] -> [N, G, Cg, kd, OD, HW] -> [N, OD, G, kd, Cg, HW] -> [N*OD, G*kd*Cg, H, W].
    const std::string taps = gather(x, 2, {kd, OD}, depths);
    const std::string stacked = reshape(transpose(reshape(taps, {N, G, Cg, kd, OD, H * W}), {0, 4, 1, 3, 2, 5}),
                                        {N * OD, G * kd * Cg, H, W});
    // W [M, Cg, kd, kh, kw] -> [M, kd, Cg, kh, kw] -> [M, kd*Cg, kh, kw]: the same channel order per group.
    const std::string w = reshape(transpose(w0, {0, 2, 1, 3, 4}), {M, kd * Cg, ws[3], ws[4]});
    ir::WindowParams q;
    q.kernel = Shape(p.kernel.begin() + 1, p.kernel.end());
    q.strides.assign(p.strides.begin() + 1, p.strides.end());
    q.dilations.assign(p.dilations.begin() + 1, p.dilations.end());
    q.padsBegin.assign(p.padsBegin.begin() + 1, p.padsBegin.end());
    q.padsEnd.assign(p.padsEnd.begin() + 1, p.padsEnd.end());
    q.group = G;
    const std::string y = conv2d(stacked, w, bias, q);
    const Shape ys = shape(y); // [N*OD, M, OH, OW]
    reshape(transpose(reshape(y, {N, OD, M, ys[2] * ys[3]}), {0, 2, 1, 3}), {N, M, OD, ys[2], ys[3]}, out);
  }

  ir::Graph &g_;
  const ir::Op &op_;
  OpInserter ops_;
};

std::string inputOrEmpty(const ir::Op &op, size_t i) { return op.hasInput(i) ? op.inputs[i] : ""; }

// float16/32/64 input (bfloat16 has no Conv vertices either way).
bool floatInput(const ir::Graph &g, const ir::Op &op) {
  const DType t = g.tensor(op.inputs[0]).info.dtype;
  return isFloatingPoint(t) && t != DType::BF16;
}

size_t rank(const ir::Graph &g, const ir::Op &op) {
  return op.inputs.empty() || !g.hasTensor(op.inputs[0]) ? 0 : g.tensor(op.inputs[0]).info.shape.size();
}

} // namespace

size_t canonicalizeWindowOps(ir::Ir &ir) {
  // Reshape takes its shape as an input from opset 5 on.
  if (ir.main.opset < 5)
    return 0;
  auto floatConv = [](const ir::Graph &g, const ir::Op &op, const char *type) {
    return op.type == type && op.outputs.size() == 1 && op.inputs.size() >= 2 &&
           floatInput(g, op);
  };
  size_t count = replaceOps(
      ir, [&](const ir::Graph &g, const ir::Op &op) { return floatConv(g, op, "ConvTranspose") && rank(g, op) >= 3; },
      [](ir::Graph &g, size_t at, const Replaced &r) {
        ConvRewriter c(g, at, r.op);
        c.convTranspose(r.op.inputs[0], r.op.inputs[1], inputOrEmpty(r.op, 2), ir::convTransposeParams(r.op, g),
                        r.op.outputs[0]);
        return c.next() - at;
      });
  count += replaceOps(
      ir,
      [&](const ir::Graph &g, const ir::Op &op) {
        return floatConv(g, op, "Conv") && (rank(g, op) == 3 || rank(g, op) == 5);
      },
      [](ir::Graph &g, size_t at, const Replaced &r) {
        ConvRewriter c(g, at, r.op);
        c.conv(r.op.inputs[0], r.op.inputs[1], inputOrEmpty(r.op, 2), ir::convParams(r.op, g), r.op.outputs[0]);
        return c.next() - at;
      });
  // Pools without MaxPool's Indices output (its flat indices would need the
  // 3-D window); integer pools have no 2-D kernels either.
  count += replaceOps(
      ir,
      [](const ir::Graph &g, const ir::Op &op) {
        return (op.type == "MaxPool" || op.type == "AveragePool") && op.outputs.size() == 1 &&
               (rank(g, op) == 3 || rank(g, op) == 5) && floatInput(g, op);
      },
      [](ir::Graph &g, size_t at, const Replaced &r) {
        ConvRewriter c(g, at, r.op);
        c.pool(r.op.inputs[0], ir::poolParams(r.op, g), r.op.outputs[0]);
        return c.next() - at;
      });
  if (count)
    log::get("passes")->debug("window-canonicalization: {} convolutions and pools as 2-D ones", count);
  return count;
}

} // namespace popc::passes
