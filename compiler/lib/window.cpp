#include "compiler/lib/window.h"

#include "support/error.h"

#include <algorithm>

namespace popc::lib {

Window2d windowFromAttrs(const ir::Op &op, int64_t inH, int64_t inW, int64_t kernelH, int64_t kernelW) {
  Window2d w;
  const auto kernel = op.attrs.getInts("kernel_shape", {kernelH, kernelW});
  if (kernel.size() != 2)
    fail("{} '{}': only 2-D windows are supported (kernel_shape has {} dims)", op.type, op.name, kernel.size());
  w.kernelH = kernel[0];
  w.kernelW = kernel[1];
  const auto strides = op.attrs.getInts("strides", {1, 1});
  const auto dilations = op.attrs.getInts("dilations", {1, 1});
  w.strideH = strides.at(0);
  w.strideW = strides.at(1);
  w.dilationH = dilations.at(0);
  w.dilationW = dilations.at(1);
  const std::string autoPad = op.attrs.getString("auto_pad", "NOTSET");
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    auto same = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t &lo, int64_t &hi) {
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in);
      lo = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      hi = total - lo;
    };
    same(inH, w.kernelH, w.strideH, w.dilationH, w.padTop, w.padBottom);
    same(inW, w.kernelW, w.strideW, w.dilationW, w.padLeft, w.padRight);
  } else if (autoPad == "NOTSET") {
    const auto pads = op.attrs.getInts("pads", {0, 0, 0, 0});
    if (pads.size() != 4)
      fail("{} '{}': pads must have 4 values for 2-D, got {}", op.type, op.name, pads.size());
    w.padTop = pads[0];
    w.padLeft = pads[1];
    w.padBottom = pads[2];
    w.padRight = pads[3];
  } // VALID: no padding
  return w;
}

RowSlab rowSlab(const Window2d &w, int64_t inH, int64_t oh0, int64_t oh1) {
  int64_t lo = oh0 * w.strideH - w.padTop;
  int64_t hi = (oh1 - 1) * w.strideH - w.padTop + (w.kernelH - 1) * w.dilationH + 1;
  lo = std::clamp<int64_t>(lo, 0, inH - 1);
  hi = std::clamp<int64_t>(hi, lo + 1, inH);
  return {lo, hi - lo, w.padTop + lo - oh0 * w.strideH};
}

} // namespace popc::lib
