// RoiAlign (opset 10/16) as ops popc lowers, following ONNX's reference (and
// ORT, Caffe2): each output bin averages (or, mode max, takes the largest of)
// a grid of bilinear samples. A roi's start and size are, in pixels,
//   start = roi * spatial_scale - offset (offset 0.5 for half_pixel, else 0),
//   size = end - start (at least 1 for output_half_pixel),
// and sample (iy, ix) of bin (ph, pw) is at start + bin * (ph + (iy + 0.5) / grid).
// Every coordinate is separable, so each of a sample's 4 corners is one
// GatherElements of the roi's image viewed [R, C, H*W] over all samples at once,
// times the corner's weight (zero for a sample outside [-1, size]).
// sampling_ratio 0 (adaptive: grid = ceil(size / bins) per roi) needs the rois
// at compile time: the grid is the largest any roi needs, the rest masked off.
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/error.h"

#include <cmath>
#include <limits>

namespace popc::passes {

namespace {

// Per-axis sampling of all rois: coordinates [R, bins*grid] and what a bilinear
// sample at each needs along this axis.
struct AxisSamples {
  std::string low, high;        // pixel indices (float, integral)
  std::string wLow, wHigh;      // interpolation weights, zero outside [-1, size]
  std::string inGrid;           // 1 for samples inside the roi's own grid (adaptive), else ""
};

class RoiAligner {
public:
  RoiAligner(ir::Graph &g, size_t at, const ir::Op &op) : g_(g), op_(op), ops_(g, at, op.name, op.ipu) {}

  std::string f(double v) { return addFloatConstant(g_, op_.name + "_c", DType::F32, {}, {v}); }
  std::string floats(Shape shape, const std::vector<double> &v) {
    return addFloatConstant(g_, op_.name + "_c", DType::F32, std::move(shape), v);
  }
  std::string i64(const std::vector<int64_t> &v) { return addInt64Constant(g_, op_.name + "_c", v); }
  std::string add(const std::string &type, std::vector<std::string> in, ir::Attributes a = {}, std::string out = "") {
    return ops_.add(type, std::move(in), std::move(out), std::move(a));
  }
  // Column `c` of rois [R, 4] as [R, 1].
  std::string column(const std::string &rois, int64_t c) {
    ir::Attributes axis;
    axis.set("axis", int64_t(1));
    return add("Gather", {rois, addInt64Constant(g_, op_.name + "_col", {c})}, axis);
  }

  // Samples along one axis of `size` pixels: start, extent [R, 1] (pixels),
  // `bins` bins of `grid` samples (grid [R, 1] when per roi, `maxGrid` columns).
  AxisSamples axis(const std::string &start, const std::string &extent, int64_t bins, int64_t maxGrid,
                   const std::string &grid, int64_t size) {
    // position (ph + (iy + 0.5) / grid) / bins of the extent, per column ph*maxGrid + iy
    std::vector<double> ph, iy;
    for (int64_t b = 0; b < bins; ++b)
      for (int64_t i = 0; i < maxGrid; ++i) {
        ph.push_back(double(b));
        iy.push_back(double(i) + 0.5);
      }
    const Shape row{1, bins * maxGrid};
    const std::string binSize = add("Div", {extent, f(double(bins))});
    const std::string within = add("Div", {floats(row, iy), grid});
    std::string c = add("Add", {start, add("Mul", {binSize, add("Add", {floats(row, ph), within})})});
    AxisSamples a;
    if (maxGrid > 1 && g_.tensor(grid).info.elements() > 1) {
      ir::Attributes toFloat;
      toFloat.set("to", int64_t(1));
      a.inGrid = add("Cast", {add("Less", {floats(row, iy), add("Add", {grid, f(0.5)})})}, toFloat);
    }
    const double n = double(size);
    ir::Attributes toFloat;
    toFloat.set("to", int64_t(1));
    const std::string valid =
        add("Cast", {add("And", {add("GreaterOrEqual", {c, f(-1.0)}), add("LessOrEqual", {c, f(n)})})}, toFloat);
    c = add("Max", {c, f(0.0)});
    a.low = add("Min", {add("Floor", {c}), f(n - 1)});
    a.high = add("Min", {add("Add", {a.low, f(1.0)}), f(n - 1)});
    // At the last pixel the sample sits on it: fraction 0.
    const std::string fraction = add("Min", {add("Sub", {c, a.low}), add("Sub", {f(n - 1), a.low})});
    const std::string frac = add("Max", {fraction, f(0.0)});
    a.wHigh = add("Mul", {frac, valid});
    a.wLow = add("Mul", {add("Sub", {f(1.0), frac}), valid});
    return a;
  }

  // image [R, C, H*W] at pixels (y [R, SY], x [R, SX]) times weight [R, SY, SX]: [R, C, SY*SX].
  std::string corner(const std::string &image, const std::string &y, const std::string &x, const std::string &wy,
                     const std::string &wx, int64_t R, int64_t C, int64_t W, int64_t SY, int64_t SX) {
    ir::Attributes toInt;
    toInt.set("to", int64_t(7));
    const std::string flat = add("Add", {add("Mul", {add("Reshape", {y, i64({R, SY, 1})}), f(double(W))}),
                                         add("Reshape", {x, i64({R, 1, SX})})});
    const std::string at =
        add("Expand", {add("Reshape", {add("Cast", {flat}, toInt), i64({R, 1, SY * SX})}), i64({R, C, SY * SX})});
    ir::Attributes axis2;
    axis2.set("axis", int64_t(2));
    const std::string weight = add("Mul", {add("Reshape", {wy, i64({R, SY, 1})}), add("Reshape", {wx, i64({R, 1, SX})})});
    return add("Mul", {add("GatherElements", {image, at}, axis2), add("Reshape", {weight, i64({R, 1, SY * SX})})});
  }

  // Each bin's samples (axes 3 and 5 of [R, C, PH, gridH, PW, gridW]) reduced.
  std::string overSamples(const std::string &type, const std::string &v, const std::string &output = "") {
    return ops_.reduce(type, v, {3, 5}, false, output);
  }

  size_t next() const { return ops_.next(); }

private:
  ir::Graph &g_;
  const ir::Op &op_;
  OpInserter ops_;
};

size_t decompose(ir::Graph &g, size_t index, const ir::Op &op, const ir::TensorInfo &out) {
  const Shape xs = g.tensor(op.inputs[0]).info.shape;
  const int64_t R = out.shape[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t PH = op.attrs.getInt("output_height", 1), PW = op.attrs.getInt("output_width", 1);
  const int64_t ratio = op.attrs.getInt("sampling_ratio", 0);
  const double scale = op.attrs.getFloat("spatial_scale", 1.0);
  // Opset 10 has no attribute and behaves as output_half_pixel; 16 defaults to half_pixel.
  const std::string transform =
      op.attrs.getString("coordinate_transformation_mode", g.opset >= 16 ? "half_pixel" : "output_half_pixel");
  const bool halfPixel = transform == "half_pixel", max = op.attrs.getString("mode", "avg") == "max";
  const std::string &rois = op.inputs[1];

  // Grid per roi: sampling_ratio, or (adaptive) from the constant rois.
  int64_t gridH = ratio, gridW = ratio;
  std::vector<double> perRoiH, perRoiW;
  if (ratio == 0) {
    if (!isConstant(g, rois))
      fail("RoiAlign '{}': sampling_ratio 0 (adaptive) makes the number of samples depend on the rois, which are "
           "computed at run time; set sampling_ratio > 0 or freeze the rois (--freeze-input)",
           op.name);
    const std::vector<double> r = constantAsDoubles(g.tensor(rois));
    for (int64_t i = 0; i < R; ++i) {
      double h = (r[size_t(4 * i + 3)] - r[size_t(4 * i + 1)]) * scale, w = (r[size_t(4 * i + 2)] - r[size_t(4 * i)]) * scale;
      if (!halfPixel) {
        h = std::max(h, 1.0);
        w = std::max(w, 1.0);
      }
      perRoiH.push_back(std::max(1.0, std::ceil(h / double(PH))));
      perRoiW.push_back(std::max(1.0, std::ceil(w / double(PW))));
    }
    gridH = R ? int64_t(*std::max_element(perRoiH.begin(), perRoiH.end())) : 1;
    gridW = R ? int64_t(*std::max_element(perRoiW.begin(), perRoiW.end())) : 1;
    if (gridH * gridW * PH * PW > (int64_t(1) << 20))
      fail("RoiAlign '{}': the rois need {}x{} samples per bin; too many to unroll", op.name, gridH, gridW);
  }
  RoiAligner a(g, index, op);
  const std::string gH = ratio ? a.f(double(ratio)) : a.floats({R, 1}, perRoiH);
  const std::string gW = ratio ? a.f(double(ratio)) : a.floats({R, 1}, perRoiW);

  const double offset = halfPixel ? 0.5 : 0.0;
  auto start = [&](int64_t c) { return a.add("Sub", {a.add("Mul", {a.column(rois, c), a.f(scale)}), a.f(offset)}); };
  const std::string x1 = start(0), y1 = start(1), x2 = start(2), y2 = start(3);
  std::string extentW = a.add("Sub", {x2, x1}), extentH = a.add("Sub", {y2, y1});
  if (!halfPixel) {
    extentW = a.add("Max", {extentW, a.f(1.0)});
    extentH = a.add("Max", {extentH, a.f(1.0)});
  }
  const AxisSamples ys = a.axis(y1, extentH, PH, gridH, gH, H), xs2 = a.axis(x1, extentW, PW, gridW, gW, W);
  const int64_t SY = PH * gridH, SX = PW * gridW;

  ir::Attributes axis0;
  axis0.set("axis", int64_t(0));
  const std::string image = a.add("Reshape", {a.add("Gather", {op.inputs[0], op.inputs[2]}, axis0), a.i64({R, C, H * W})});
  std::vector<std::string> corners;
  for (const auto &[y, wy] : {std::pair{ys.low, ys.wLow}, std::pair{ys.high, ys.wHigh}})
    for (const auto &[x, wx] : {std::pair{xs2.low, xs2.wLow}, std::pair{xs2.high, xs2.wHigh}})
      corners.push_back(a.corner(image, y, x, wy, wx, R, C, W, SY, SX));
  // Samples beyond a roi's own (adaptive) grid take no part.
  std::string inGrid;
  if (!ys.inGrid.empty() || !xs2.inGrid.empty()) {
    const std::string my = ys.inGrid.empty() ? a.f(1.0) : a.add("Reshape", {ys.inGrid, a.i64({R, SY, 1})});
    const std::string mx = xs2.inGrid.empty() ? a.f(1.0) : a.add("Reshape", {xs2.inGrid, a.i64({R, 1, SX})});
    inGrid = a.add("Reshape", {a.add("Mul", {my, mx}), a.i64({R, 1, SY * SX})});
  }
  std::string v = a.add(max ? "Max" : "Sum", corners);
  if (!inGrid.empty())
    v = max ? a.add("Where", {a.add("Greater", {inGrid, a.f(0.5)}), v, a.f(-std::numeric_limits<double>::infinity())})
            : a.add("Mul", {v, inGrid});
  v = a.add("Reshape", {v, a.i64({R, C, PH, gridH, PW, gridW})});
  if (max) {
    a.overSamples("ReduceMax", v, op.outputs[0]);
  } else {
    const std::string count = a.add("Max", {a.add("Mul", {gH, gW}), a.f(1.0)});
    const std::string counts = ratio ? count : a.add("Reshape", {count, a.i64({R, 1, 1, 1})});
    a.add("Div", {a.overSamples("ReduceSum", v), counts}, {}, op.outputs[0]);
  }
  return a.next() - index;
}

} // namespace

size_t decomposeRoiAlign(ir::Ir &ir) { return rewriteOpsOfType(ir, "RoiAlign", "roi-align-decomposition", decompose); }

} // namespace popc::passes
