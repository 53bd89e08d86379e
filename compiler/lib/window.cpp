#include "compiler/lib/window.h"

#include "support/error.h"

#include <algorithm>

namespace popc::lib {

Window2d window2d(const ir::Op &op, const ir::Graph &g) {
  const bool conv = op.type == "Conv" || op.type == "ConvInteger";
  const ir::WindowParams p = conv ? ir::convParams(op, g) : ir::poolParams(op, g);
  if (p.kernel.size() != 2)
    fail("{} '{}': only 2-D windows are supported (kernel has {} dims)", op.type, op.name, p.kernel.size());
  Window2d w;
  w.kernelH = p.kernel[0];
  w.kernelW = p.kernel[1];
  w.strideH = p.strides[0];
  w.strideW = p.strides[1];
  w.dilationH = p.dilations[0];
  w.dilationW = p.dilations[1];
  w.padTop = p.padsBegin[0];
  w.padLeft = p.padsBegin[1];
  w.padBottom = p.padsEnd[0];
  w.padRight = p.padsEnd[1];
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
