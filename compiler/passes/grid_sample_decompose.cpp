// GridSample (opset 16; every mode and padding mode) as ops popc lowers,
// following PyTorch's grid_sampler (which ONNX's test data comes from):
//   x = unnormalise(grid x) (align_corners: (g + 1)(W - 1)/2, else ((g + 1)W - 1)/2),
//   border: clamp to [0, W-1]; reflection: reflect about the edges, then clamp;
//   nearest: round half to even; bilinear: the 4 corners weighted by distance;
//   bicubic: the 4x4 pixels around floor(x), each coordinate padded on its own,
//   weighted by Keys' cubic convolution (A = -0.75) of the fraction.
// Each tap is a GatherElements of X viewed [N, C, H*W] at y*W + x, times
// its weight and an in-bounds mask (zeros padding: outside reads nothing).
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"

namespace popc::passes {

namespace {

class Sampler {
public:
  Sampler(ir::Graph &g, size_t at, const ir::Op &op) : g_(g), op_(op), ops_(g, at, op.name, op.ipu) {}

  std::string f(double v) { return addFloatConstant(g_, op_.name + "_c", DType::F32, {}, {v}); }
  std::string i64(const std::vector<int64_t> &v) { return addInt64Constant(g_, op_.name + "_c", v); }
  std::string add(const std::string &type, std::vector<std::string> in, ir::Attributes a = {}, std::string out = "") {
    return ops_.add(type, std::move(in), std::move(out), std::move(a));
  }
  std::string clamp(const std::string &x, double lo, double hi) { return add("Max", {add("Min", {x, f(hi)}), f(lo)}); }

  // PyTorch's reflect_coordinates over [twiceLow/2, twiceHigh/2].
  std::string reflect(const std::string &x, double twiceLow, double twiceHigh) {
    if (twiceLow == twiceHigh)
      return add("Mul", {x, f(0.0)});
    const double low = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
    ir::Attributes fmod;
    fmod.set("fmod", int64_t(1));
    const std::string a = add("Abs", {add("Sub", {x, f(low)})});
    const std::string extra = add("Mod", {a, f(span)}, fmod);
    const std::string flips = add("Floor", {add("Div", {a, f(span)})});
    const std::string even = add("Equal", {add("Mod", {flips, f(2.0)}, fmod), f(0.0)});
    return add("Where", {even, add("Add", {extra, f(low)}), add("Sub", {f(span + low), extra})});
  }

  // The pixel coordinate of normalised grid values `g` along an axis of `size`.
  std::string unnormalise(const std::string &g, int64_t size, bool align) {
    const double n = double(size);
    return align ? add("Mul", {add("Add", {g, f(1.0)}), f((n - 1) / 2)})
                 : add("Div", {add("Sub", {add("Mul", {add("Add", {g, f(1.0)}), f(n)}), f(1.0)}), f(2.0)});
  }

  // A coordinate along an axis of `size` under the padding mode.
  std::string pad(std::string x, int64_t size, bool align, const std::string &padding) {
    const double n = double(size);
    if (padding == "border")
      x = clamp(x, 0, n - 1);
    else if (padding == "reflection")
      x = clamp(align ? reflect(x, 0, 2 * (n - 1)) : reflect(x, -1, 2 * n - 1), 0, n - 1);
    return x;
  }

  // Keys' cubic convolution weights of the taps at -1, 0, 1, 2 from floor(x),
  // for the fraction t (PyTorch's get_cubic_upsample_coefficients, A = -0.75).
  std::vector<std::string> cubicWeights(const std::string &t) {
    constexpr double A = -0.75;
    auto near = [&](const std::string &x) { // |x| <= 1: ((A + 2)x - (A + 3))x^2 + 1
      return add("Add", {add("Mul", {add("Mul", {add("Sub", {add("Mul", {x, f(A + 2)}), f(A + 3)}), x}), x}), f(1.0)});
    };
    auto far = [&](const std::string &x) { // 1 < |x| < 2: ((Ax - 5A)x + 8A)x - 4A
      return add("Sub", {add("Mul", {add("Add", {add("Mul", {add("Sub", {add("Mul", {x, f(A)}), f(5 * A)}), x}), f(8 * A)}), x}),
                         f(4 * A)});
    };
    const std::string rest = add("Sub", {f(1.0), t});
    return {far(add("Add", {t, f(1.0)})), near(t), near(rest), far(add("Add", {rest, f(1.0)}))};
  }

  // X [N,C,H,W] at integral float coordinates (cx, cy) [N,Ho,Wo], times `weight`,
  // zero where the coordinate is outside the image.
  std::string tap(const std::string &cx, const std::string &cy, const std::string &weight, const Shape &x,
                  const Shape &out) {
    const int64_t N = x[0], C = x[1], H = x[2], W = x[3], Ho = out[2], Wo = out[3];
    auto inside = [&](const std::string &c, int64_t size) {
      return add("And", {add("GreaterOrEqual", {c, f(0.0)}), add("LessOrEqual", {c, f(double(size - 1))})});
    };
    ir::Attributes toFloat, toInt;
    toFloat.set("to", int64_t(1));
    toInt.set("to", int64_t(7));
    const std::string mask = add("Cast", {add("And", {inside(cx, W), inside(cy, H)})}, toFloat);
    const std::string flat = add("Add", {add("Mul", {clamp(cy, 0, double(H - 1)), f(double(W))}), clamp(cx, 0, double(W - 1))});
    const std::string at =
        add("Expand", {add("Reshape", {add("Cast", {flat}, toInt), i64({N, 1, Ho * Wo})}), i64({N, C, Ho * Wo})});
    ir::Attributes axis2;
    axis2.set("axis", int64_t(2));
    const std::string v = add("GatherElements", {add("Reshape", {op_.inputs[0], i64({N, C, H * W})}), at}, axis2);
    return add("Mul", {add("Reshape", {v, i64({N, C, Ho, Wo})}),
                       add("Reshape", {add("Mul", {mask, weight}), i64({N, 1, Ho, Wo})})});
  }

  size_t next() const { return ops_.next(); }

private:
  ir::Graph &g_;
  const ir::Op &op_;
  OpInserter ops_;
};

size_t decompose(ir::Graph &g, size_t index, const ir::Op &op, const ir::TensorInfo &out) {
  const Shape x = g.tensor(op.inputs[0]).info.shape;
  const bool align = op.attrs.getInt("align_corners", 0) != 0;
  const std::string mode = op.attrs.getString("mode", "bilinear"), padding = op.attrs.getString("padding_mode", "zeros");
  Sampler s(g, index, op);
  ir::Attributes last;
  last.set("axis", int64_t(-1));
  auto coordinate = [&](int64_t which) {
    return s.add("Gather", {op.inputs[1], addInt64Constant(g, op.name + "_xy", {which}, true)}, last);
  };
  if (mode == "bicubic") { // padding applies to each tap's coordinate, not to the sample point
    const std::string ix = s.unnormalise(coordinate(0), x[3], align), iy = s.unnormalise(coordinate(1), x[2], align);
    const std::string x0 = s.add("Floor", {ix}), y0 = s.add("Floor", {iy});
    const std::vector<std::string> wx = s.cubicWeights(s.add("Sub", {ix, x0})), wy = s.cubicWeights(s.add("Sub", {iy, y0}));
    std::vector<std::string> cx, cy;
    for (int k = 0; k < 4; ++k) {
      cx.push_back(s.pad(s.add("Add", {x0, s.f(k - 1)}), x[3], align, padding));
      cy.push_back(s.pad(s.add("Add", {y0, s.f(k - 1)}), x[2], align, padding));
    }
    std::string sum;
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) {
        const std::string t = s.tap(cx[size_t(i)], cy[size_t(j)], s.add("Mul", {wx[size_t(i)], wy[size_t(j)]}), x, out.shape);
        sum = sum.empty() ? t : s.add("Add", {sum, t}, {}, i == 3 && j == 3 ? op.outputs[0] : "");
      }
    return s.next() - index;
  }
  const std::string ix = s.pad(s.unnormalise(coordinate(0), x[3], align), x[3], align, padding);
  const std::string iy = s.pad(s.unnormalise(coordinate(1), x[2], align), x[2], align, padding);
  if (mode == "nearest") {
    s.add("Identity", {s.tap(s.add("Round", {ix}), s.add("Round", {iy}), s.f(1.0), x, out.shape)}, {}, op.outputs[0]);
    return s.next() - index;
  }
  const std::string x0 = s.add("Floor", {ix}), y0 = s.add("Floor", {iy});
  const std::string x1 = s.add("Add", {x0, s.f(1.0)}), y1 = s.add("Add", {y0, s.f(1.0)});
  const std::string wx1 = s.add("Sub", {ix, x0}), wy1 = s.add("Sub", {iy, y0});
  const std::string wx0 = s.add("Sub", {s.f(1.0), wx1}), wy0 = s.add("Sub", {s.f(1.0), wy1});
  std::string sum = s.tap(x0, y0, s.add("Mul", {wx0, wy0}), x, out.shape);
  sum = s.add("Add", {sum, s.tap(x1, y0, s.add("Mul", {wx1, wy0}), x, out.shape)});
  sum = s.add("Add", {sum, s.tap(x0, y1, s.add("Mul", {wx0, wy1}), x, out.shape)});
  s.add("Add", {sum, s.tap(x1, y1, s.add("Mul", {wx1, wy1}), x, out.shape)}, {}, op.outputs[0]);
  return s.next() - index;
}

} // namespace

size_t decomposeGridSample(ir::Ir &ir) { return rewriteOpsOfType(ir, "GridSample", "grid-sample-decomposition", decompose); }

} // namespace popc::passes
