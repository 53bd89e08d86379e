// ConvTranspose (1 to 3 spatial dims, groups, dilations, output_padding /
// output_shape / auto_pad), and Conv over 1 or 3 spatial dims, as codelets
// over (n, output channel) planes. Each tile holds the whole input and
// weights once, so this is only the fallback: the window-canonicalization
// pass (compiler/passes/conv_canonicalize.cpp) turns all of these into 2-D
// Convs for conv.cpp's planner; they reach here only with that pass disabled,
// or from an opset-4 model.
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/lib/ops.h"
#include "compiler/lib/rows.h"

#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include <fmt/format.h>

namespace popc::lib {

namespace {

void lowerWindowCodelet(const ir::Op &op, const ir::Graph &g, Lowering &L, const ir::WindowParams &p,
                        const std::string &function) {
  const Value x = L.value(op.inputs[0]), w = L.value(op.inputs[1]);
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  Value out = L.newValue(op.outputs[0], outInfo);
  L.bind(op.outputs[0], out);
  if (outInfo.elements() == 0)
    return;
  const DType t = x.info.dtype;
  const int64_t channels = x.info.shape[1], outChannels = outInfo.shape[1];
  const Value bias = op.hasInput(2) ? L.value(op.inputs[2])
                                    : constantTensor(L, op.name + "/bias", ir::TensorInfo{t, {outChannels}});
  const size_t nd = x.info.shape.size() - 2;
  uint64_t kernelVolume = 1;
  const std::vector<int64_t> geometry =
      windowArgs3(Shape(x.info.shape.begin() + 2, x.info.shape.end()), p, kernelVolume);
  const uint64_t rows = uint64_t(outInfo.shape[0] * outChannels);
  const uint64_t outPlane = uint64_t(outInfo.elements()) / rows;
  const uint64_t macsPerOutput = uint64_t(op.type == "Conv" ? w.info.shape[1] : channels / p.group) * kernelVolume;
  lowerRowWiseAt(L, op.name, {RowOperand{x, {}, 1, true}, RowOperand{w, {}, 1, true}, RowOperand{bias, {}, 1, true}},
                 {RowOperand{out, {}, outPlane}}, rows, [&](uint64_t first, uint32_t n) {
                   codegen::CodeletSpec spec;
                   spec.function = function + "_" + ir::detail::shortDType(t);
                   spec.name = fmt::format("{}{}d_r{}_{}", op.type, nd, n, ir::detail::shortDType(t));
                   spec.fields = {codeletField("x", uint64_t(x.info.elements()), t, codegen::FieldAccess::Input),
                                  codeletField("w", uint64_t(w.info.elements()), t, codegen::FieldAccess::Input),
                                  codeletField("bias", uint64_t(outChannels), t, codegen::FieldAccess::Input),
                                  codeletField("y", n * outPlane, t, codegen::FieldAccess::Output)};
                   spec.args = {int64_t(n), int64_t(first), channels, outChannels, p.group};
                   spec.args.insert(spec.args.end(), geometry.begin(), geometry.end());
                   spec.cycles = codegen::cycles::convTransposeNd(uint64_t(n) * outPlane, macsPerOutput);
                   return codegen::KernelSpec{spec};
                 });
}

} // namespace

void lowerConvTranspose(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  lowerWindowCodelet(op, g, L, ir::convTransposeParams(op, g), "popc_conv_transpose");
}

void lowerConvNd(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  lowerWindowCodelet(op, g, L, ir::convParams(op, g), "popc_conv_nd");
}

} // namespace popc::lib
