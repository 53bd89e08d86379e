// Runs an operator lowering of compiler/lib — the code the ONNX path uses —
// on graph API tensors and appends its steps to a program sequence.
#pragma once
#include "graph_impl.h"

#include "compiler/ir/ir.h"
#include "compiler/ops/elementwise.h"

#include <string>
#include <vector>

namespace popc::api::detail {

class OpCall {
public:
  OpCall(Graph &graph, program::Sequence &prog, std::string name, const char *fallback);
  ~OpCall() noexcept(false); // appends the collected steps to prog

  // A contiguous device value for a view (a copy when it is not one whole variable).
  lib::Value value(const Tensor &t);
  // Lowers `opType` through the lowering registry; returns its outputs.
  std::vector<Tensor> op(const std::string &opType, const std::vector<Tensor> &inputs, ir::Attributes attrs = {},
                         int64_t opset = 13, size_t numOutputs = 1);
  // Elementwise through lib::lowerElementwise (with kernel params).
  Tensor elementwise(ops::Elementwise kernelOp, const std::vector<Tensor> &inputs, Type outType,
                     const std::vector<std::size_t> &outShape, const std::vector<double> &params = {});
  // A one-element constant.
  Tensor scalarConstant(Type type, double value);
  // dst = src (element copy, any views).
  void copy(const Tensor &src, const Tensor &dst);
  Tensor result(const lib::Value &v);

  GraphImpl &G;
  std::string name;

private:
  void takeMainSteps();
  program::Sequence &prog_;
  std::vector<graph::Program> steps_;
};

} // namespace popc::api::detail
