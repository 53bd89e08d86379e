#include "session/run_session.h"

#include "compiler/onnx/trained_model.h"
#include "session/run_inputs.h"
#include "support/error.h"

namespace popc::session {

RunSession::RunSession(std::shared_ptr<const popef::Executable> executable, runtime::EngineOptions options,
                       std::string label)
    : executable_(executable), engine_(std::make_unique<runtime::Engine>(std::move(executable), options)),
      label_(std::move(label)) {}

runtime::HostTensorMap RunSession::runSteps(const runtime::HostTensorMap &inputs, uint64_t steps,
                                            const RunFn &runOnce, uint64_t *done) {
  auto run = [&](const runtime::HostTensorMap &in) { return runOnce ? runOnce(in) : engine_->run(in); };
  // A data set's inputs get each run's slice; the others are copied once, not per run.
  const std::set<std::string> dataset = datasetInputs(inputs, engine_->inputs(), steps);
  runtime::HostTensorMap step, outputs;
  if (!dataset.empty())
    for (const auto &[name, t] : inputs)
      if (!dataset.count(name))
        step[name] = t;
  for (uint64_t k = 0; k < steps; ++k) {
    if (dataset.empty()) {
      outputs = run(inputs);
    } else {
      selectIteration(inputs, engine_->inputs(), dataset, k, step);
      outputs = run(step);
    }
    if (done)
      *done = k + 1;
  }
  return outputs;
}

void RunSession::requireVariables(const std::string &what) const {
  if (engine_->variables().empty())
    fail("{}: {} has no variables (compile with popc-onnx --train)", what, label_);
}

runtime::HostTensorMap RunSession::weights() {
  runtime::HostTensorMap out;
  for (const runtime::IoDesc &v : engine_->variables())
    out[v.name] = engine_->readVariable(v.name);
  return out;
}

void RunSession::setWeights(const runtime::HostTensorMap &weights, const std::string &what) {
  requireVariables(what);
  for (const auto &[name, t] : weights)
    engine_->writeVariable(name, t);
}

void RunSession::writeModel(const std::string &onnxPath, const runtime::HostTensorMap &weights) const {
  const auto *source = executable_->root().source_model();
  std::map<std::string, onnx::TrainedTensor> values;
  for (const auto &[name, t] : weights)
    values[name] = {t.dtype, t.shape, &t.data};
  onnx::writeTrainedModel(source ? std::vector<uint8_t>(source->begin(), source->end()) : std::vector<uint8_t>{},
                          values, onnxPath);
}

} // namespace popc::session
