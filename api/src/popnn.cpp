// popnn on the lowerings of compiler/lib (elementwise, softmax, pooling).
#include "popc/popnn.hpp"

#include "lower_op.h"

#include "support/error.h"

namespace popc::api::popnn {

namespace {
const char *opOf(NonLinearityType t) {
  switch (t) {
  case NonLinearityType::RELU: return "Relu";
  case NonLinearityType::SIGMOID: return "Sigmoid";
  case NonLinearityType::TANH: return "Tanh";
  case NonLinearityType::SOFTMAX: return "Softmax";
  case NonLinearityType::LOG_SOFTMAX: return "LogSoftmax";
  }
  return "Relu";
}

Tensor pool(Graph &g, const char *op, const Tensor &in, const PoolParams &p, program::Sequence &prog,
            const std::string &name) {
  if (in.rank() != 4 || p.kernel.size() != 2 || p.stride.size() != 2 || p.padding.size() != 4)
    fail("{}: needs an NCHW tensor and 2-D kernel, stride and 4 paddings; got {}", op, in.shapeString());
  detail::OpCall call(g, prog, name, op);
  ir::Attributes attrs;
  attrs.set("kernel_shape", std::vector<int64_t>(p.kernel.begin(), p.kernel.end()));
  attrs.set("strides", std::vector<int64_t>(p.stride.begin(), p.stride.end()));
  attrs.set("pads", std::vector<int64_t>(p.padding.begin(), p.padding.end()));
  return call.op(op, {in}, attrs).at(0);
}
} // namespace

Tensor nonLinearity(Graph &g, NonLinearityType type, const Tensor &t, program::Sequence &prog,
                    const std::string &name) {
  detail::OpCall call(g, prog, name, opOf(type));
  ir::Attributes attrs;
  if (type == NonLinearityType::SOFTMAX || type == NonLinearityType::LOG_SOFTMAX)
    attrs.set("axis", int64_t(-1));
  return call.op(opOf(type), {t}, attrs).at(0);
}

void nonLinearityInPlace(Graph &g, NonLinearityType type, const Tensor &t, program::Sequence &prog,
                         const std::string &name) {
  detail::OpCall call(g, prog, name, opOf(type));
  ir::Attributes attrs;
  if (type == NonLinearityType::SOFTMAX || type == NonLinearityType::LOG_SOFTMAX)
    attrs.set("axis", int64_t(-1));
  call.copy(call.op(opOf(type), {t}, attrs).at(0), t);
}

Tensor maxPool(Graph &g, const Tensor &in, const PoolParams &p, program::Sequence &prog, const std::string &name) {
  return pool(g, "MaxPool", in, p, prog, name);
}
Tensor avgPool(Graph &g, const Tensor &in, const PoolParams &p, program::Sequence &prog, const std::string &name) {
  return pool(g, "AveragePool", in, p, prog, name);
}

} // namespace popc::api::popnn
