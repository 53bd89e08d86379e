// InferenceSession / TrainingSession: façades over the sessions the CLIs use
// too (session/): the cached compile of popc-onnx, then the run session of
// poprun-lite, in one process.
#include "popc/Session.hpp"

#include "cache/tiered_store.h"
#include "formats/popef/popef.h"
#include "runtime/thread_pool.h"
#include "session/compile_session.h"
#include "session/object_cache.h"
#include "session/run_session.h"
#include "support/dtype.h"
#include "support/error.h"
#include "support/log.h"

#include <cstdlib>
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

// The environment the CLIs read too: logging once per process, then the
// options' cache (else $POPC_CACHE_DIR's), also the JIT's.
std::shared_ptr<cache::Store> openCache(const SessionOptions &o) {
  static const bool logging = (log::configureFromEnvironment(), true);
  (void)logging;
  std::string dir = o.cacheDir;
  if (dir.empty())
    if (const char *env = std::getenv("POPC_CACHE_DIR"))
      dir = env;
  if (dir.empty())
    return nullptr;
  cache::StoreOptions options;
  options.dir = dir;
  options.linkOutputs = false;
  auto store = cache::openStore(options);
  session::useObjectCache(store);
  return store;
}

runtime::HostTensorMap toHost(const ArrayMap &arrays, const char *what) {
  runtime::HostTensorMap out;
  for (const auto &[name, a] : arrays)
    out[name] = {dtypeOf(a.dtype, std::string(what) + " '" + name + "'"), Shape(a.shape.begin(), a.shape.end()),
                 a.data};
  return out;
}

ArrayMap toArrays(runtime::HostTensorMap tensors) {
  ArrayMap out;
  for (auto &[name, t] : tensors)
    out[name] = {std::string(dtypeName(t.dtype)), {t.shape.begin(), t.shape.end()}, std::move(t.data)};
  return out;
}

} // namespace

struct InferenceSession::Impl {
  std::unique_ptr<session::RunSession> run;

  Impl(std::shared_ptr<const popef::Executable> executable, const SessionOptions &o, const std::string &label) {
    runtime::EngineOptions e;
    e.threads = o.threads;
    run = std::make_unique<session::RunSession>(std::move(executable), e, label);
  }
  // An executable popc-onnx wrote, opened and verified on the options' threads.
  static std::unique_ptr<Impl> open(const std::string &popefPath, const SessionOptions &o) {
    openCache(o);
    return std::make_unique<Impl>(
        popef::Executable::open(popefPath, o.threads ? o.threads : runtime::defaultThreadCount()), o, popefPath);
  }
};

InferenceSession::InferenceSession(const std::string &onnxModel, SessionOptions options)
    : InferenceSession(onnxModel, options, nullptr) {}

InferenceSession::InferenceSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

InferenceSession::InferenceSession(const std::string &onnxModel, const SessionOptions &o,
                                   const TrainingOptions *training) {
  guarded([&] {
    driver::CompileOptions c;
    c.arch = o.arch;
    c.numIpus = o.numIpus;
    if (o.tilesPerIpu)
      c.tilesPerIpu = o.tilesPerIpu;
    c.batchesPerStep = o.batchesPerStep;
    c.accumulationFactor = o.accumulationFactor;
    c.replicationFactor = o.replicationFactor;
    c.pipeline = o.pipeline;
    c.autoShard = o.autoShard;
    if (o.autoShard && o.numIpus == 1)
      c.numIpus = o.autoShard;
    for (const auto &[name, shape] : o.inputShapes)
      c.inputShapes[name] = Shape(shape.begin(), shape.end());
    for (const auto &[name, type] : o.anchors)
      c.anchors.push_back(name + "=" + type);
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
    session::CacheSettings cache;
    cache.store = openCache(o);
    session::CompileResult compiled = session::compileModel(onnxModel, c, cache);
    impl_ = std::make_unique<Impl>(popef::Executable::fromBytes(std::move(compiled.bytes), onnxModel), o, onnxModel);
    return 0;
  });
}

InferenceSession InferenceSession::fromExecutable(const std::string &popefPath, SessionOptions options) {
  return guarded([&] { return InferenceSession(Impl::open(popefPath, options)); });
}

InferenceSession::~InferenceSession() = default;
InferenceSession::InferenceSession(InferenceSession &&) noexcept = default;
InferenceSession &InferenceSession::operator=(InferenceSession &&) noexcept = default;

ArrayMap InferenceSession::run(const ArrayMap &inputs) {
  return guarded([&] { return toArrays(impl_->run->engine().run(toHost(inputs, "input"))); });
}

ArrayMap InferenceSession::run(const ArrayMap &inputs, uint64_t steps) {
  return guarded([&] { return toArrays(impl_->run->runSteps(toHost(inputs, "input"), steps)); });
}

std::vector<std::string> InferenceSession::inputNames() const {
  std::vector<std::string> names;
  for (const auto &io : impl_->run->engine().inputs())
    names.push_back(io.name);
  return names;
}

std::vector<std::string> InferenceSession::outputNames() const {
  std::vector<std::string> names;
  for (const auto &io : impl_->run->engine().outputs())
    names.push_back(io.name);
  return names;
}

void InferenceSession::writeExecutable(const std::string &popefPath) const {
  guarded([&] {
    popef::writeFile(popefPath, impl_->run->executable().bytes());
    return 0;
  });
}

TrainingSession::TrainingSession(const std::string &onnxModel, const TrainingOptions &training, SessionOptions options)
    : InferenceSession(onnxModel, options, &training) {}

TrainingSession::TrainingSession(std::unique_ptr<Impl> impl) : InferenceSession(std::move(impl)) {}

TrainingSession TrainingSession::fromExecutable(const std::string &popefPath, SessionOptions options) {
  return guarded([&] {
    auto impl = Impl::open(popefPath, options);
    impl->run->requireVariables("TrainingSession::fromExecutable");
    return TrainingSession(std::move(impl));
  });
}

ArrayMap TrainingSession::weightsToHost() {
  return guarded([&] { return toArrays(impl_->run->weights()); });
}

void TrainingSession::weightsFromHost(const ArrayMap &weights) {
  guarded([&] {
    impl_->run->setWeights(toHost(weights, "weight"), "weightsFromHost");
    return 0;
  });
}

void TrainingSession::modelToHost(const std::string &onnxPath) {
  guarded([&] {
    impl_->run->writeModel(onnxPath, impl_->run->weights());
    return 0;
  });
}

} // namespace popc
