// A run session: an opened, verified executable and the engine that loaded
// and JIT-compiled it, with what poprun-lite and popc::InferenceSession /
// TrainingSession both do with it: steps over a data set, variables (weights
// and optimizer state) in and out, and the trained ONNX model.
#pragma once
#include "formats/popef/popef.h"
#include "runtime/engine.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace popc::session {

class RunSession {
public:
  // Loads and JIT-compiles `executable`; `label` names it in errors (its path).
  RunSession(std::shared_ptr<const popef::Executable> executable, runtime::EngineOptions options, std::string label);

  runtime::Engine &engine() { return *engine_; }
  const runtime::Engine &engine() const { return *engine_; }
  const popef::Executable &executable() const { return *executable_; }

  using RunFn = std::function<runtime::HostTensorMap(const runtime::HostTensorMap &)>;
  // Runs `steps` times and returns the last run's outputs. An input whose
  // leading dimension is `steps` times the model's (a data set) gives run k
  // its k-th slice; other inputs are the same for every run. `runOnce`
  // replaces engine().run (MPI: every instance); `done` counts finished runs
  // as they finish (for a run stopped mid-way).
  runtime::HostTensorMap runSteps(const runtime::HostTensorMap &inputs, uint64_t steps, const RunFn &runOnce = {},
                                  uint64_t *done = nullptr);

  // Every variable: trained initializers by name, optimizer state (Accl___W,
  // Accl1___W, Accl2___W, Accum___W, Step___).
  runtime::HostTensorMap weights();
  // Sets the variables named in `weights`; `what` (e.g. "--load-weights w.npz")
  // names the source in errors.
  void setWeights(const runtime::HostTensorMap &weights, const std::string &what);
  // Writes the ONNX model the executable was compiled from with `weights` as
  // its initializers (PopART's modelToHost).
  void writeModel(const std::string &onnxPath, const runtime::HostTensorMap &weights) const;
  // Fails with "{what}: <label> has no variables (compile with popc-onnx
  // --train)" for an inference executable.
  void requireVariables(const std::string &what) const;

private:
  std::shared_ptr<const popef::Executable> executable_;
  std::unique_ptr<runtime::Engine> engine_;
  std::string label_;
};

} // namespace popc::session
