// Pooling the generated 2-D kernels do not cover — 1-D and 3-D windows,
// MaxPool's Indices output, integer inputs — as a codelet over (n, c) planes.
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/lib/ops.h"
#include "compiler/lib/rows.h"

#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include <fmt/format.h>

namespace popc::lib {

void lowerPoolNd(const ir::Op &op, const ir::Graph &g, Lowering &L, bool isMax) {
  const Value x = L.value(op.inputs[0]);
  const ir::WindowParams p = ir::poolParams(op, g);
  const Shape &shape = x.info.shape;
  const size_t nd = shape.size() - 2;
  if (nd < 1 || nd > 3)
    fail("{} '{}': pooling over {} spatial dims is not supported (1 to 3)", op.type, op.name, nd);
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  Value out = L.newValue(op.outputs[0], outInfo);
  L.bind(op.outputs[0], out);
  const bool wantIndices = isMax && op.outputs.size() > 1 && !op.outputs[1].empty();
  // The codelet always has an indices field; unwanted indices go to a temporary.
  Value indices = L.newValue(wantIndices ? op.outputs[1] : op.name + "/indices", ir::TensorInfo{DType::I64, outInfo.shape});
  if (wantIndices)
    L.bind(op.outputs[1], indices);
  const uint64_t rows = uint64_t(shape[0] * shape[1]);
  const uint64_t inPlane = rows ? uint64_t(x.info.elements()) / rows : 0;
  const uint64_t outPlane = rows ? uint64_t(outInfo.elements()) / rows : 0;
  if (outInfo.elements() == 0)
    return;
  uint64_t kernelVolume = 1;
  const std::vector<int64_t> geometry = windowArgs3(Shape(shape.begin() + 2, shape.end()), p, kernelVolume);
  const int64_t storageOrder = op.attrs.getInt("storage_order", 0);
  const DType t = x.info.dtype;
  lowerRowWiseAt(L, op.name, {RowOperand{x, {}, inPlane}}, {RowOperand{out, {}, outPlane}, RowOperand{indices, {}, outPlane}}, rows, [&](uint64_t first, uint32_t n) {
    codegen::CodeletSpec spec;
    spec.function = "popc_pool_nd_" + ir::detail::shortDType(t);
    spec.name = fmt::format("{}{}d_r{}_{}", op.type, nd, n, ir::detail::shortDType(t));
    spec.fields = {codeletField("in", n * inPlane, t, codegen::FieldAccess::Input),
                   codeletField("out", n * outPlane, t, codegen::FieldAccess::Output),
                   codeletField("indices", n * outPlane, DType::I64, codegen::FieldAccess::Output)};
    spec.args = {int64_t(n), int64_t(first), isMax ? 1 : 0, p.countIncludePad ? 1 : 0, storageOrder,
                 wantIndices ? 1 : 0};
    spec.args.insert(spec.args.end(), geometry.begin(), geometry.end());
    spec.cycles = codegen::cycles::poolNd(uint64_t(n) * outPlane, kernelVolume);
    return codegen::KernelSpec{spec};
  });
}

} // namespace popc::lib
