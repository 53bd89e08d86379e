// Internal pieces of the ONNX importer (one file each).
#pragma once
#include "compiler/ir/ir.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace popc::onnx::detail {

// model_file.cpp: parse the file; inline external-data tensors (checked to stay
// inside the model's directory) as raw_data.
::onnx::ModelProto readModel(const std::string &path);

// Resource limits (resource_limits.cpp, constants in support/limits.h).
void checkSubgraphDepth(const ::onnx::ModelProto &model, const std::string &path);
void checkExpandedSize(int64_t nodes, const std::string &what, const std::string &path);
void checkDeclaredSizes(const ir::Graph &g, const std::string &path);
void loadExternalData(::onnx::ModelProto &model, const std::string &path);

// tensor_proto.cpp
DType dtypeFromOnnx(int32_t elemType, const std::string &context);
int32_t dtypeToOnnx(DType dtype); // TensorProto::DataType
ir::Tensor tensorFromProto(const ::onnx::TensorProto &proto, const std::string &context);
std::string shapeProtoToString(const ::onnx::TensorShapeProto &shape); // "[batch,3,224,224]"

// unsupported_ops.cpp: node names (given or `<OpType>_<index>`, made unique)
// and the one-error-listing-everything check.
std::vector<std::string> nodeNames(const ::onnx::GraphProto &graph);
// The tensor names `graph` itself defines: inputs, initializers, node outputs
// (anything else a node reads comes from an enclosing scope).
std::set<std::string> definedNames(const ::onnx::GraphProto &graph);
// 0 when the model imports no ai.onnx opset (requireAiOnnxOpset then fails).
int64_t aiOnnxOpset(const ::onnx::ModelProto &model, const std::string &path);
void requireAiOnnxOpset(int64_t opset, const std::string &path);
void checkSupportedOps(const ::onnx::ModelProto &model, const std::vector<std::string> &names,
                       int64_t opset, const std::string &path);

// function_expansion.cpp: replaces ops without a native lowering that ONNX
// defines as functions by their bodies. Returns how many nodes were expanded.
int expandFunctionOps(::onnx::ModelProto &model, int64_t opset, const std::string &path);

// control_flow.cpp: If with a compile-time condition → its branch; Loop with a
// compile-time trip count and a constant condition → unrolled. Others are
// refused (the error carries a graph input to freeze when that would help).
// `evaluate(name, nodes)` computes tensor `name` from `nodes` (the nodes before
// the If/Loop, those expanded already in their expanded form) at compile time,
// or returns nullopt.
using ControlValueEvaluator =
    std::function<std::optional<ir::Tensor>(const std::string &name, const ::onnx::GraphProto &nodes)>;
int expandStaticControlFlow(::onnx::ModelProto &model, int64_t opset,
                            const std::map<std::string, ir::Tensor> &frozen, const ControlValueEvaluator &evaluate,
                            const std::string &path);

// sequences.cpp: sequence ops resolved at compile time into the tensor ops
// they amount to (SequenceAt → Identity, ConcatFromSequence → Concat, ...).
// `evaluate(model, name)` imports `model` (whose output is `name`) and returns
// the tensor's type and shape, and its value when it is constant.
struct StaticTensor {
  ir::TensorInfo info;
  std::optional<ir::Tensor> value;
};
using StaticTensorEvaluator =
    std::function<std::optional<StaticTensor>(const ::onnx::ModelProto &model, const std::string &name)>;
int resolveStaticSequences(::onnx::ModelProto &model, int64_t opset, const std::map<std::string, ir::Tensor> &frozen,
                           const StaticTensorEvaluator &evaluate, const std::string &path);
// True for the sequence and optional ops the resolver handles (function
// expansion leaves them alone).
bool resolvedAtImport(const ::onnx::NodeProto &node);

// sequence_io.cpp: sequence graph inputs → N tensor inputs name.i + a
// SequenceConstruct; optional inputs → absent (an empty Optional node) or
// their value. Runs before --input-shape is applied. Returns how many were lowered.
int lowerSequenceAndOptionalInputs(::onnx::ModelProto &model, const std::map<std::string, int64_t> &lengths,
                                   const std::set<std::string> &absent, const std::string &path);

// node_build.cpp: the nodes import-time rewrites emit.
::onnx::NodeProto &appendNode(::onnx::GraphProto &graph, const std::string &type, const std::string &name,
                              const std::vector<std::string> &inputs, const std::vector<std::string> &outputs);
void addIntAttr(::onnx::NodeProto &n, const char *name, int64_t value);
void addIntsAttr(::onnx::NodeProto &n, const char *name, const std::vector<int64_t> &values);
// A Constant node named "<output>/Constant"; returns its (empty) value tensor to fill.
::onnx::TensorProto &appendConstant(::onnx::GraphProto &graph, const std::string &output);
// An int64 Constant: a scalar (one value) or a 1-D tensor of `values`.
::onnx::TensorProto &appendIntConstant(::onnx::GraphProto &graph, const std::string &output,
                                       const std::vector<int64_t> &values, bool scalar = false);

// optimizer_ops.cpp: ai.onnx.preview.training Adagrad, Momentum and Adam nodes
// replaced by the ai.onnx nodes of their update formulas (adds an ai.onnx
// opset import when the model has none). Returns how many were expanded.
int expandOptimizerOps(::onnx::ModelProto &model, const std::string &path);

// gradient.cpp: each ai.onnx.preview.training Gradient node replaced by the
// nodes of its reverse-mode derivative (seed: ones), built by the IR's
// autodiff on `importForward(model)` (the forward nodes y needs, output y).
// Returns how many Gradient nodes were expanded.
using ForwardImporter = std::function<ir::Ir(const ::onnx::ModelProto &model)>;
int expandGradients(::onnx::ModelProto &model, const ForwardImporter &importForward, const std::string &path);

// input_shapes.cpp
// Names of the graph inputs that are not initializers, in order.
std::vector<std::string> realInputNames(const ::onnx::GraphProto &graph);
void applyInputShapes(::onnx::GraphProto &graph, const std::map<std::string, Shape> &shapes,
                      const std::string &path);
// Fails naming the input and suggesting --input-shape when a dim is not fixed.
Shape staticInputShape(const ::onnx::ValueInfoProto &input, const std::string &path);

} // namespace popc::onnx::detail

namespace popc::onnx::detail {
// ONNX exception texts span lines; errors must be one line.
std::string oneLine(const std::string &text);
} // namespace popc::onnx::detail
