#include "compiler/ir/autodiff.h"

#include "compiler/ir/op_helpers.h"
#include "compiler/ir/op_registry.h"
#include "support/error.h"
#include "support/float16.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

namespace popc::ir {

class GradientBuilder {
public:
  GradientBuilder(Graph &g, const std::set<std::string> &dependent) : g(g), dependent(dependent) {
    for (const auto &op : g.ops())
      opNames.insert(op->name);
  }

  Graph &g;
  const std::set<std::string> &dependent; // float tensors computed from a variable
  std::map<std::string, std::string> grads;
  std::set<std::string> opNames;
  const Op *current = nullptr;
  size_t counter = 0;

  std::string freshOpName(const std::string &base) {
    std::string name;
    do
      name = fmt::format("{}/grad{}", base, counter++);
    while (opNames.count(name));
    opNames.insert(name);
    return name;
  }

  std::vector<std::string> emit(const std::string &type, std::vector<std::string> inputs, size_t outputs,
                                Attributes attrs) {
    Op op;
    op.type = type;
    op.name = freshOpName(current ? current->name : "loss");
    op.inputs = std::move(inputs);
    op.attrs = std::move(attrs);
    op.ipu = current ? current->ipu : 0;
    for (size_t i = 0; i < outputs; ++i)
      op.outputs.push_back(g.uniqueName(op.name + (outputs > 1 ? fmt::format(":{}", i) : "")));
    Op &added = g.appendOp(std::move(op));
    inferAndSetOutputs(added, g);
    return added.outputs;
  }

  std::string constant(TensorInfo info, std::vector<uint8_t> data, const std::string &base) {
    Tensor t;
    t.name = g.uniqueName(base);
    t.info = std::move(info);
    t.kind = TensorKind::Constant;
    t.data = std::move(data);
    return g.addTensor(std::move(t)).name;
  }

  std::string scalar(double value, DType dtype) {
    std::vector<uint8_t> bytes(dtypeSize(dtype));
    if (dtype == DType::F32) {
      const float f = float(value);
      std::memcpy(bytes.data(), &f, 4);
    } else if (dtype == DType::F64) {
      std::memcpy(bytes.data(), &value, 8);
    } else if (dtype == DType::F16) {
      const uint16_t h = floatToHalf(float(value));
      std::memcpy(bytes.data(), &h, 2);
    } else if (dtype == DType::I64) {
      const int64_t i = int64_t(value);
      std::memcpy(bytes.data(), &i, 8);
    } else {
      fail("autodiff: {} constants are not supported (train in float32, float64 or float16)", dtypeName(dtype));
    }
    return constant({dtype, {}}, std::move(bytes), fmt::format("grad/const{}", counter++));
  }

  std::string ints(const std::vector<int64_t> &values) {
    std::vector<uint8_t> bytes(values.size() * 8);
    if (!values.empty())
      std::memcpy(bytes.data(), values.data(), bytes.size());
    return constant({DType::I64, {int64_t(values.size())}}, std::move(bytes), fmt::format("grad/ints{}", counter++));
  }

  // A tensor of `info` filled with `value`.
  std::string filled(double value, const TensorInfo &info) {
    return emit("Expand", {scalar(value, info.dtype), ints(info.shape)}, 1, {})[0];
  }

  void addGrad(const std::string &tensor, const std::string &grad) {
    if (!dependent.count(tensor))
      return;
    if (g.tensor(grad).info != g.tensor(tensor).info)
      fail("internal error: autodiff: gradient '{}' of '{}' has type {} {}, expected {} {} (rule of {})", grad, tensor,
           dtypeName(g.tensor(grad).info.dtype), shapeToString(g.tensor(grad).info.shape),
           dtypeName(g.tensor(tensor).info.dtype), shapeToString(g.tensor(tensor).info.shape),
           current ? describeOp(*current) : "the loss");
    auto [it, added] = grads.emplace(tensor, grad);
    if (!added)
      it->second = emit("Add", {it->second, grad}, 1, {})[0];
  }
};

std::string GradContext::outputGrad(size_t i) const {
  if (i >= op.outputs.size() || op.outputs[i].empty())
    return "";
  auto it = b_.grads.find(op.outputs[i]);
  return it == b_.grads.end() ? "" : it->second;
}

bool GradContext::wantsGrad(size_t i) const { return op.hasInput(i) && b_.dependent.count(op.inputs[i]); }

void GradContext::addGrad(size_t i, const std::string &grad) {
  if (wantsGrad(i))
    b_.addGrad(op.inputs[i], grad);
}

const TensorInfo &GradContext::info(const std::string &tensor) const { return b_.g.tensor(tensor).info; }
int64_t GradContext::opset() const { return b_.g.opset; }
const Graph &GradContext::graph() const { return b_.g; }

std::vector<std::string> GradContext::emitMulti(const std::string &type, std::vector<std::string> inputs,
                                                size_t outputs, Attributes attrs) {
  return b_.emit(type, std::move(inputs), outputs, std::move(attrs));
}

std::string GradContext::emit(const std::string &type, std::vector<std::string> inputs, Attributes attrs) {
  // float16 scatters that add (the gradients of slicing and gathering) run in
  // float32 between Casts: the device has no float16 scatter reductions.
  if ((type == "ScatterElements" || type == "ScatterND") && attrs.getString("reduction", "none") != "none" &&
      inputs.size() == 3 && info(inputs[0]).dtype == DType::F16) {
    auto cast = [&](const std::string &x, DType to) {
      Attributes a;
      a.set("to", detail::onnxElementType(to));
      return b_.emit("Cast", {x}, 1, a)[0];
    };
    inputs[0] = cast(inputs[0], DType::F32);
    inputs[2] = cast(inputs[2], DType::F32);
    return cast(b_.emit(type, std::move(inputs), 1, std::move(attrs))[0], DType::F16);
  }
  return b_.emit(type, std::move(inputs), 1, std::move(attrs))[0];
}

std::string GradContext::scalar(double value, DType dtype) { return b_.scalar(value, dtype); }

std::string GradContext::ints(const std::vector<int64_t> &values) { return b_.ints(values); }

std::string GradContext::reshape(const std::string &x, const Shape &shape) {
  if (info(x).shape == shape)
    return x;
  return emit("Reshape", {x, ints(shape)});
}

std::string GradContext::reduceSum(const std::string &x, const std::vector<int64_t> &axes, bool keepDims) {
  if (axes.empty())
    return x;
  Attributes a;
  a.set("keepdims", int64_t(keepDims ? 1 : 0));
  if (opset() >= 13)
    return emit("ReduceSum", {x, ints(axes)}, a);
  a.set("axes", axes);
  return emit("ReduceSum", {x}, a);
}

std::string GradContext::transpose(const std::string &x, const std::vector<int64_t> &perm) {
  Attributes a;
  a.set("perm", perm);
  return emit("Transpose", {x}, a);
}

std::string GradContext::slice(const std::string &x, int64_t axis, int64_t begin, int64_t end) {
  if (opset() >= 10)
    return emit("Slice", {x, ints({begin}), ints({end}), ints({axis})});
  Attributes a;
  a.set("starts", std::vector<int64_t>{begin});
  a.set("ends", std::vector<int64_t>{end});
  a.set("axes", std::vector<int64_t>{axis});
  return emit("Slice", {x}, a);
}

std::string GradContext::expand(const std::string &x, const Shape &shape) {
  if (info(x).shape == shape)
    return x;
  return emit("Expand", {x, ints(shape)});
}

std::string GradContext::filled(double value, const TensorInfo &info) { return b_.filled(value, info); }

std::string GradContext::sumToShape(const std::string &grad, const Shape &shape) {
  const Shape &from = info(grad).shape;
  if (from == shape)
    return grad;
  const size_t lead = from.size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && from[i] != 1))
      axes.push_back(int64_t(i));
  return reshape(reduceSum(grad, axes, true), shape);
}

std::string GradContext::extremeShare(const std::string &x, const std::string &extreme,
                                      const std::vector<int64_t> &axes) {
  const TensorInfo &xi = info(x);
  Attributes to;
  to.set("to", detail::onnxElementType(xi.dtype));
  const std::string mask = emit("Cast", {emit("Equal", {x, extreme})}, to);
  return emit("Div", {mask, expand(reduceSum(mask, axes, true), xi.shape)});
}

void GradContext::unsupported(const std::string &why) const {
  fail("{}: no gradient: {}", describeOp(op), why);
}

std::map<std::string, std::string> appendGradients(Graph &graph, const GradientOptions &options) {
  if (!graph.hasTensor(options.loss))
    fail("loss '{}' is not a tensor of the model (give a graph output, or nll:PROBS,LABEL / l1:X)", options.loss);
  const TensorInfo &lossInfo = graph.tensor(options.loss).info;
  if (lossInfo.elements() != 1 && !options.anyLossShape)
    fail("loss '{}' is not a scalar: its shape is {} (reduce it to one value, e.g. with ReduceMean)", options.loss,
         shapeToString(lossInfo.shape));
  if (lossInfo.dtype != DType::F32 && lossInfo.dtype != DType::F64 && lossInfo.dtype != DType::F16)
    fail("loss '{}' is {}: training needs a float loss (float32, float64 or float16)", options.loss,
         dtypeName(lossInfo.dtype));

  // Forward: the float tensors computed from a variable.
  std::set<std::string> dependent(options.wrt.begin(), options.wrt.end());
  const size_t forwardOps = graph.ops().size();
  for (const auto &op : graph.ops())
    if (std::any_of(op->inputs.begin(), op->inputs.end(), [&](const std::string &in) { return dependent.count(in); }))
      for (const auto &o : op->outputs)
        if (!o.empty() && detail::isFloat(graph.tensor(o).info.dtype))
          dependent.insert(o);
  if (!dependent.count(options.loss) && !options.zeroForUnreachable)
    fail("loss '{}' does not depend on any trainable tensor (trainable: {})", options.loss,
         options.wrt.empty() ? std::string("none") : fmt::format("{}", fmt::join(options.wrt, ", ")));

  GradientBuilder b(graph, dependent);
  b.grads[options.loss] = b.filled(options.seed, lossInfo);
  for (size_t i = forwardOps; i-- > 0;) {
    const Op &op = *graph.ops()[i];
    bool hasOutputGrad = false, wantsInputGrad = false;
    for (const auto &o : op.outputs)
      hasOutputGrad |= !o.empty() && b.grads.count(o);
    for (const auto &in : op.inputs)
      wantsInputGrad |= !in.empty() && dependent.count(in);
    if (!hasOutputGrad || !wantsInputGrad)
      continue;
    const OpDef *def = op.domain.empty() || op.domain == "ai.onnx" ? OpRegistry::instance().find(op.type) : nullptr;
    if (!def || !def->grad)
      fail("{}: no gradient rule: the loss '{}' depends on its output '{}' through a trainable tensor, and popc "
           "cannot differentiate {} yet (freeze the weights before it with --trainable, or see docs/training.md)",
           describeOp(op), options.loss, op.outputs[0], op.type);
    b.current = graph.ops()[i].get();
    GradContext c(b, op);
    def->grad(c);
    b.current = nullptr;
  }
  std::map<std::string, std::string> result;
  for (const std::string &w : options.wrt) {
    auto it = b.grads.find(w);
    if (it != b.grads.end()) {
      result[w] = it->second;
    } else { // the loss does not reach this variable: its gradient is zero
      result[w] = b.filled(0.0, graph.tensor(w).info);
    }
  }
  return result;
}

} // namespace popc::ir
