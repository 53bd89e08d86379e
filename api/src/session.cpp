// InferenceSession / TrainingSession: the driver's compile, then the runtime's
// Engine, in one process (popc-onnx and poprun-lite in one object).
#include "popc/Session.hpp"

#include "compiler/driver/compile.h"
#include "compiler/onnx/trained_model.h"
#include "formats/popef/popef.h"
#include "runtime/engine.h"
#include "support/dtype.h"
#include "support/error.h"

#include <stdexcept>

namespace popc {

namespace {

DType dtypeOf(const std::string &name, const std::string &what) {
  auto t = dtypeFromName(name);
  if (!t)
    throw std::runtime_error(what + ": unknown element type '" + name + "' (use numpy names: float32, int64, ...)");
  return *t;
}

// Runs `fn`, turning popc::Error into std::runtime_error (the public headers know no internal types).
template <typename Fn> auto guarded(Fn &&fn) {
  try {
    return fn();
  } catch (const Error &e) {
    throw std::runtime_error(e.what());
  }
}

} // namespace

struct InferenceSession::Impl {
  std::shared_ptr<const popef::Executable> executable;
  std::unique_ptr<runtime::Engine> engine;
};

InferenceSession::InferenceSession(const std::string &onnxModel, SessionOptions options)
    : InferenceSession(onnxModel, options, nullptr) {}

InferenceSession::InferenceSession(const std::string &onnxModel, const SessionOptions &o,
                                   const TrainingOptions *training)
    : impl_(std::make_unique<Impl>()) {
  guarded([&] {
    driver::CompileOptions c;
    c.arch = o.arch;
    c.numIpus = o.numIpus;
    if (o.tilesPerIpu)
      c.tilesPerIpu = o.tilesPerIpu;
    c.batchesPerStep = o.batchesPerStep;
    c.accumulationFactor = o.accumulationFactor;
    c.replicationFactor = o.replicationFactor;
    for (const auto &[name, shape] : o.inputShapes)
      c.inputShapes[name] = Shape(shape.begin(), shape.end());
    if (training) {
      ir::TrainingConfig t;
      t.loss = training->loss;
      t.trainable = training->trainable;
      t.optimizer = training->optimizer.kind;
      t.learningRate = training->optimizer.learningRate;
      t.momentum = training->optimizer.momentum;
      t.dampening = training->optimizer.dampening;
      t.weightDecay = training->optimizer.weightDecay;
      t.nesterov = training->optimizer.nesterov;
      t.beta1 = training->optimizer.beta1;
      t.beta2 = training->optimizer.beta2;
      t.epsilon = training->optimizer.epsilon;
      t.lossScaling = training->lossScaling;
      t.sumGradients = training->sumGradients;
      if (t.optimizer == "momentum" && t.momentum == 0)
        t.momentum = 0.9;
      c.training = t;
    }
    impl_->executable = popef::Executable::fromBytes(driver::compileOnnx(onnxModel, c), onnxModel);
    runtime::EngineOptions e;
    e.threads = o.threads;
    impl_->engine = std::make_unique<runtime::Engine>(impl_->executable, e);
    return 0;
  });
}

InferenceSession::~InferenceSession() = default;
InferenceSession::InferenceSession(InferenceSession &&) noexcept = default;
InferenceSession &InferenceSession::operator=(InferenceSession &&) noexcept = default;

ArrayMap InferenceSession::run(const ArrayMap &inputs) {
  return guarded([&] {
    runtime::HostTensorMap in;
    for (const auto &[name, a] : inputs)
      in[name] = {dtypeOf(a.dtype, "input '" + name + "'"), Shape(a.shape.begin(), a.shape.end()), a.data};
    ArrayMap out;
    for (auto &[name, t] : impl_->engine->run(in))
      out[name] = {std::string(dtypeName(t.dtype)), {t.shape.begin(), t.shape.end()}, std::move(t.data)};
    return out;
  });
}

std::vector<std::string> InferenceSession::inputNames() const {
  std::vector<std::string> names;
  for (const auto &io : impl_->engine->inputs())
    names.push_back(io.name);
  return names;
}

std::vector<std::string> InferenceSession::outputNames() const {
  std::vector<std::string> names;
  for (const auto &io : impl_->engine->outputs())
    names.push_back(io.name);
  return names;
}

void InferenceSession::writeExecutable(const std::string &popefPath) const {
  guarded([&] {
    popef::writeFile(popefPath, impl_->executable->bytes());
    return 0;
  });
}

TrainingSession::TrainingSession(const std::string &onnxModel, const TrainingOptions &training, SessionOptions options)
    : InferenceSession(onnxModel, options, &training) {}

ArrayMap TrainingSession::weightsToHost() {
  return guarded([&] {
    ArrayMap out;
    for (const auto &v : impl_->engine->variables()) {
      runtime::HostTensor t = impl_->engine->readVariable(v.name);
      out[v.name] = {std::string(dtypeName(t.dtype)), {t.shape.begin(), t.shape.end()}, std::move(t.data)};
    }
    return out;
  });
}

void TrainingSession::weightsFromHost(const ArrayMap &weights) {
  guarded([&] {
    for (const auto &[name, a] : weights)
      impl_->engine->writeVariable(
          name, {dtypeOf(a.dtype, "weight '" + name + "'"), Shape(a.shape.begin(), a.shape.end()), a.data});
    return 0;
  });
}

void TrainingSession::modelToHost(const std::string &onnxPath) {
  const ArrayMap weights = weightsToHost();
  guarded([&] {
    std::map<std::string, onnx::TrainedTensor> values;
    for (const auto &[name, a] : weights)
      values[name] = {*dtypeFromName(a.dtype), Shape(a.shape.begin(), a.shape.end()), &a.data};
    const auto *source = impl_->executable->root().source_model();
    onnx::writeTrainedModel(source ? std::vector<uint8_t>(source->begin(), source->end()) : std::vector<uint8_t>{},
                            values, onnxPath);
    return 0;
  });
}

} // namespace popc
