// BatchNormalization (inference) whose statistics are not constants (constant
// ones are folded into Mul/Add or into the preceding Conv by compiler/passes):
// y = (x - mean) * scale / sqrt(var + eps) + bias, as elementwise steps with the
// per-channel parameters viewed as [C, 1, ..., 1].
#include "compiler/lib/ops.h"

#include "support/error.h"

#include <cstring>

namespace popc::lib {

namespace {

Value scalarConstant(Lowering &L, const std::string &name, DType dtype, double value) {
  Value v = L.newValue(name, ir::TensorInfo{dtype, {1}}, graph::TensorRole::Constant);
  auto &data = L.graph.tensor(v.tensor).constData;
  data.resize(dtypeSize(dtype));
  if (dtype == DType::F32) {
    const float f = float(value);
    std::memcpy(data.data(), &f, sizeof f);
  } else if (dtype == DType::F64) {
    std::memcpy(data.data(), &value, sizeof value);
  } else {
    fail("{}: scalar constants of type {} are not supported", name, dtypeName(dtype));
  }
  L.mapLinearly(v);
  return v;
}

void lowerBatchNorm(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  if (op.outputs.size() > 1)
    fail("BatchNormalization '{}': training mode (extra outputs) is not supported", op.name);
  const Value x = L.value(op.inputs[0]);
  const ir::TensorInfo &info = g.tensor(op.outputs[0]).info;
  const DType dt = info.dtype;
  const int64_t channels = x.info.shape.at(1);
  ir::TensorInfo param{dt, {channels}};
  auto channelView = [&](Value v) {
    v.info.shape = Shape(x.info.shape.size() - 1, 1);
    v.info.shape[0] = channels;
    return v;
  };
  const std::string &n = op.name;
  Value eps = scalarConstant(L, n + "/eps", dt, op.attrs.getFloat("epsilon", 1e-5));
  Value denom = lowerElementwise(L, n + "/var_eps", ops::Elementwise::Add, {L.value(op.inputs[4]), eps}, param);
  denom = lowerElementwise(L, n + "/sqrt", ops::Elementwise::Sqrt, {denom}, param);
  Value factor = lowerElementwise(L, n + "/factor", ops::Elementwise::Div, {L.value(op.inputs[1]), denom}, param);
  Value centred = lowerElementwise(L, n + "/centre", ops::Elementwise::Sub, {x, channelView(L.value(op.inputs[3]))}, info);
  Value scaled = lowerElementwise(L, n + "/scale", ops::Elementwise::Mul, {centred, channelView(factor)}, info);
  L.bind(op.outputs[0], lowerElementwise(L, n, ops::Elementwise::Add, {scaled, channelView(L.value(op.inputs[2]))}, info));
}

} // namespace

void registerNormLowerings(LoweringTable &t) { t["BatchNormalization"] = lowerBatchNorm; }

} // namespace popc::lib
