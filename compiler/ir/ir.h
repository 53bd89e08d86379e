// The popc IR: an `Ir` holds a main graph and named subgraphs; a graph holds
// tensors (by unique name) and ops in topological order. Modelled on popart.ir:
// tensors are values, ops consume and produce them, attributes are typed.
#pragma once
#include "support/dtype.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace popc::ir {

enum class TensorKind {
  Input,        // fed by the host at run time (graph input)
  Constant,     // data known at compile time (initializer / Constant op / folded)
  Intermediate, // produced by an op
  // A device variable (a trainable weight, optimizer state): starts with `data`
  // and keeps its bytes across runs; Graph::updates may overwrite it at the end
  // of each run. Passes never fold it: its value is not known at compile time.
  Variable,
};

// Constants and variables both carry data.
inline bool hasData(TensorKind k) { return k == TensorKind::Constant || k == TensorKind::Variable; }

// End of a run: `variable` takes the value of `value` (a training step's
// weight and optimizer-state updates; PopART's VarUpdateOp).
struct VariableUpdate {
  std::string variable, value;
  int64_t phase = 0; // as Op::phase: after every micro-batch (0) or every optimizer step (1)
  bool operator==(const VariableUpdate &) const = default;
};

struct TensorInfo {
  DType dtype = DType::F32;
  Shape shape;
  int64_t elements() const { return numElements(shape); }
  size_t bytes() const { return size_t(elements()) * dtypeSize(dtype); }
  bool operator==(const TensorInfo &) const = default;
};

struct Tensor {
  std::string name;
  TensorInfo info;
  TensorKind kind = TensorKind::Intermediate;
  std::vector<uint8_t> data; // Constant or Variable only: info.bytes() bytes, little-endian, row-major

  template <typename T> const T *dataAs() const { return reinterpret_cast<const T *>(data.data()); }
  // Constant data converted to int64 / double whatever its integer or float dtype.
  std::vector<int64_t> toInt64s() const;
  std::vector<double> toDoubles() const;
};

struct ConstantValue; // an attribute holding a tensor (ONNX TensorProto attribute)

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>,
                               std::shared_ptr<const Tensor>>;

class Attributes {
public:
  bool has(const std::string &name) const { return values_.count(name) != 0; }
  void set(const std::string &name, AttrValue v) { values_[name] = std::move(v); }
  void erase(const std::string &name) { values_.erase(name); }
  const std::map<std::string, AttrValue> &all() const { return values_; }

  // Typed getters: throw popc::Error naming the attribute if the type is wrong.
  int64_t getInt(const std::string &name, int64_t fallback) const;
  int64_t getInt(const std::string &name) const;
  double getFloat(const std::string &name, double fallback) const;
  std::string getString(const std::string &name, const std::string &fallback) const;
  std::vector<int64_t> getInts(const std::string &name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> getFloats(const std::string &name, std::vector<double> fallback = {}) const;
  std::shared_ptr<const Tensor> getTensor(const std::string &name) const;

private:
  std::map<std::string, AttrValue> values_;
};

struct Op {
  std::string type;   // ONNX op type, e.g. "Conv"
  std::string domain; // "" for ai.onnx
  std::string name;   // node name (unique in the graph; generated when empty)
  std::vector<std::string> inputs;  // tensor names; "" = optional input omitted
  std::vector<std::string> outputs; // tensor names
  Attributes attrs;
  int64_t ipu = 0; // virtual graph (multi-IPU), 0 by default
  int64_t pipelineStage = -1; // ONNX `__pipeline_stage`, -1 when not annotated
  // Training with gradient accumulation: 0 runs on every micro-batch, 1 once
  // per optimizer step, after the accumulated micro-batches (it then sees the
  // variables as the phase-0 updates left them).
  int64_t phase = 0;

  bool hasInput(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
};

class Graph {
public:
  explicit Graph(std::string id = "main") : id_(std::move(id)) {}
  const std::string &id() const { return id_; }

  // Tensors
  Tensor &addTensor(Tensor t); // throws if the name exists
  bool hasTensor(const std::string &name) const { return tensors_.count(name) != 0; }
  Tensor &tensor(const std::string &name);
  const Tensor &tensor(const std::string &name) const;
  void removeTensor(const std::string &name);
  const std::map<std::string, Tensor> &tensors() const { return tensors_; }
  std::string uniqueName(const std::string &base) const; // base, base_1, base_2 ...

  // Ops, kept in topological order
  Op &appendOp(Op op);
  Op &insertOpBefore(size_t index, Op op);
  void removeOp(size_t index);
  std::vector<std::unique_ptr<Op>> &ops() { return ops_; }
  const std::vector<std::unique_ptr<Op>> &ops() const { return ops_; }
  // Index of the op producing `tensor`, or nullopt for inputs/constants.
  std::optional<size_t> producer(const std::string &tensor) const;
  // Indices of ops consuming `tensor`, in order.
  std::vector<size_t> consumers(const std::string &tensor) const;
  // Replaces every use of `from` (op inputs and graph outputs) with `to`.
  void replaceAllUses(const std::string &from, const std::string &to);

  std::vector<std::string> inputs;  // graph inputs in order (TensorKind::Input)
  std::vector<std::string> outputs; // graph outputs in order
  // Variable updates, applied in order after every op of a run (like outputs,
  // they keep their values alive).
  std::vector<VariableUpdate> updates;
  // ai.onnx opset whose semantics the ops follow (inference reads it); the
  // importer copies Ir::opsetVersion here.
  int64_t opset = 13;

private:
  std::string id_;
  std::map<std::string, Tensor> tensors_;
  std::vector<std::unique_ptr<Op>> ops_;
};

// A training step to build around the model (popc-onnx --train; docs/training.md).
struct TrainingConfig {
  // A scalar tensor of the model, or a built-in loss added at compile time:
  // "nll:PROBS,LABEL[,mean|sum]" or "l1:X[,scale]" (PopART's NllLoss, L1Loss).
  std::string loss;
  std::vector<std::string> trainable; // empty: every float initializer
  std::string optimizer = "sgd";      // sgd | momentum | adam | adamw
  double learningRate = 0.01, momentum = 0.0, dampening = 0.0, weightDecay = 0.0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double lossScaling = 1.0;
  // --accumulation-factor: micro-batches whose gradients one update combines,
  // averaged unless `sumGradients` (PopART's accumulationAndReplicationReductionType).
  uint32_t accumulationFactor = 1;
  bool sumGradients = false;
  // --replication-factor: replicas all-reduce their gradients before the update
  // (averaged unless `sumGradients`).
  uint32_t replicationFactor = 1;
};

struct Ir {
  Graph main{"main"};
  std::map<std::string, Graph> subgraphs; // called graphs (If/Loop bodies, Call)
  std::string modelName;
  int64_t opsetVersion = 13; // ai.onnx opset the model was imported with
  std::vector<std::string> initializers; // the model's initializers, in file order (trainable by default)
  std::optional<TrainingConfig> training; // set: the passes build a training step
  // float16 MatMul/Gemm/Conv accumulate in float16 (--partials-type half): the
  // float16-promotion pass leaves them in float16.
  bool halfPartials = false;
  // After the training passes: each trainable tensor and its gradient.
  std::map<std::string, std::string> gradients;
};

} // namespace popc::ir
