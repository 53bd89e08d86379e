// Neural-network ops: convolution, pooling, normalisation, softmax, dropout.
#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

namespace popc::ir::detail {

namespace {
// Conv/ConvTranspose output [N, M, spatial...], after checking the optional bias B [M].
TensorInfo convOutput(const Op &op, const Graph &graph, const TensorInfo &x, int64_t M, const WindowParams &p) {
  if (op.hasInput(2)) {
    const TensorInfo &b = inputInfo(op, graph, 2);
    requireSameDType(op, x, b, "input X", "bias B");
    if (b.shape != Shape{M})
      failOp(op, "bias B must have shape [{}], got {}", M, shapeToString(b.shape));
  }
  Shape out{x.shape[0], M};
  out.insert(out.end(), p.outSpatial.begin(), p.outSpatial.end());
  return TensorInfo{x.dtype, out};
}

std::vector<TensorInfo> inferConv(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const TensorInfo &w = inputInfo(op, graph, 1);
  requireFloat(op, x, "input X");
  requireSameDType(op, x, w, "input X", "weights W");
  WindowParams p = convParams(op, graph);
  const int64_t C = x.shape[1], M = w.shape[0];
  if (C != w.shape[1] * p.group)
    failOp(op, "input channels {} != weights' channels per group {} x group {}", C, w.shape[1],
           p.group);
  if (M % p.group != 0)
    failOp(op, "output channels {} are not divisible by group {}", M, p.group);
  return {convOutput(op, graph, x, M, p)};
}

std::vector<TensorInfo> inferConvTranspose(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const TensorInfo &w = inputInfo(op, graph, 1);
  if (x.dtype != DType::F32 && x.dtype != DType::F64)
    failOp(op, "input X dtype {} is not supported (float32, float64)", dtypeName(x.dtype));
  requireSameDType(op, x, w, "input X", "weights W");
  const WindowParams p = convTransposeParams(op, graph);
  const int64_t M = w.shape[1] * p.group;
  return {convOutput(op, graph, x, M, p)};
}

std::vector<TensorInfo> inferPool(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const bool intOk = op.type == "MaxPool" && (x.dtype == DType::I8 || x.dtype == DType::U8 ||
                                              x.dtype == DType::I32 || x.dtype == DType::I64);
  if (!intOk)
    requireFloat(op, x, "input X");
  if (x.shape.size() < 3 || x.shape.size() > 5)
    failOp(op, "input X must have 1 to 3 spatial dims [N,C,D...], got {}", shapeToString(x.shape));
  WindowParams p = poolParams(op, graph);
  Shape out{x.shape[0], x.shape[1]};
  out.insert(out.end(), p.outSpatial.begin(), p.outSpatial.end());
  std::vector<TensorInfo> result{TensorInfo{x.dtype, out}};
  if (op.outputs.size() == 2) {
    if (op.type != "MaxPool")
      failOp(op, "has 1 output, got 2");
    result.push_back(TensorInfo{DType::I64, out}); // Indices
  } else if (op.outputs.size() > 2) {
    failOp(op, "has at most {} outputs, got {}", op.type == "MaxPool" ? 2 : 1, op.outputs.size());
  }
  return result;
}

std::vector<TensorInfo> inferGlobalPool(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input X");
  if (x.shape.size() < 3)
    failOp(op, "input X must have rank >= 3 [N,C,spatial...], got {}", shapeToString(x.shape));
  Shape out = x.shape;
  for (size_t i = 2; i < out.size(); ++i)
    out[i] = 1;
  return {TensorInfo{x.dtype, out}};
}

std::vector<TensorInfo> inferBatchNorm(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input X");
  if (x.shape.size() < 2)
    failOp(op, "input X must have rank >= 2 [N,C,...], got {}", shapeToString(x.shape));
  size_t requested = 0;
  for (size_t i = 1; i < op.outputs.size(); ++i)
    requested += op.outputs[i].empty() ? 0 : 1;
  // Training mode (opset 14+): batch statistics, plus the running mean/var
  // outputs; the bn-decomposition pass rewrites it into reductions.
  const bool training = op.attrs.getInt("training_mode", 0) != 0;
  if (training && (graph.opset < 14 || op.outputs.size() > 3))
    failOp(op, "training mode is supported from opset 14 with at most 3 outputs (Y, running_mean, running_var)");
  if (!training && requested > 0)
    failOp(op, "running mean/var or saved statistics outputs need training_mode=1 (opset 14+); "
               "export the model in inference mode (1 output)");
  if (op.attrs.getInt("spatial", 1) != 1)
    failOp(op, "spatial=0 (per-activation statistics) is not supported");
  const int64_t C = x.shape[1];
  const char *names[] = {"", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    const TensorInfo &t = inputInfo(op, graph, i);
    requireFloat(op, t, names[i]);
    if (t.shape != Shape{C})
      failOp(op, "{} must have shape [{}] (channels), got {}", names[i], C, shapeToString(t.shape));
  }
  std::vector<TensorInfo> result(op.outputs.size(), TensorInfo{x.dtype, {C}}); // unrequested outputs are ""
  result[0] = x;
  return result;
}

std::vector<TensorInfo> inferSoftmax(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input");
  softmaxAxis(op, graph); // validates
  return {x};
}

std::vector<TensorInfo> inferDropout(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input");
  if (graph.opset < 12 && op.inputs.size() > 1)
    failOp(op, "takes 1 input before opset 12 (ratio is an attribute), got {}", op.inputs.size());
  if (op.hasInput(2)) { // training_mode
    auto value = constantValue(graph, op.inputs[2]);
    if (!value)
      failNotConstant(op, graph, 2, "training_mode");
    auto v = value->toInt64s();
    if (v.size() != 1)
      failOp(op, "training_mode must be a scalar");
    // Training-mode Dropout is the identity only with ratio 0; otherwise it
    // draws random masks, which an inference compiler does not reproduce.
    if (v[0] != 0) {
      auto ratio = op.hasInput(1) ? constantValue(graph, op.inputs[1]) : std::nullopt;
      if (op.hasInput(1) && !ratio)
        failNotConstant(op, graph, 1, "ratio");
      if (!ratio || ratio->toDoubles().size() != 1 || ratio->toDoubles()[0] != 0.0)
        failOp(op, "training_mode=true with a ratio other than 0 drops random elements; popc compiles inference "
                   "graphs (export the model in eval mode)");
    }
  }
  if (op.outputs.size() > 2)
    failOp(op, "has at most 2 outputs (output, mask), got {}", op.outputs.size());
  std::vector<TensorInfo> result{x};
  if (op.outputs.size() == 2) // mask: bool since opset 10, input type before
    result.push_back(TensorInfo{graph.opset >= 10 ? DType::Bool : x.dtype, x.shape});
  return result;
}
} // namespace

void registerNnOps(OpRegistry &reg) {
  reg.add({"Conv", 2, 3, inferConv});
  reg.add({"ConvTranspose", 2, 3, inferConvTranspose});
  reg.add({"MaxPool", 1, 1, inferPool});
  reg.add({"AveragePool", 1, 1, inferPool});
  reg.add({"GlobalAveragePool", 1, 1, inferGlobalPool});
  reg.add({"GlobalMaxPool", 1, 1, inferGlobalPool});
  reg.add({"LogSoftmax", 1, 1, inferSoftmax});
  reg.add({"BatchNormalization", 5, 5, inferBatchNorm});
  reg.add({"Softmax", 1, 1, inferSoftmax});
  reg.add({"Dropout", 1, 3, inferDropout});
}

} // namespace popc::ir::detail
