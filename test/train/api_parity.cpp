// The C++ API and the CLIs take one path (session/): a training executable
// popc-onnx wrote, run K steps by TrainingSession::fromExecutable, ends bit for
// bit where poprun-lite --iterations K does; a TrainingSession compiling the
// same model with the same options ends there too, and a second one takes the
// first one's executable from the cache (the caller checks the log: the API's
// entries are keyed by libpopc's build id, popc-onnx's by its own).
//
// Usage: api_parity WORK_DIR STEPS  (WORK_DIR: model.onnx, data.npz,
// train.popef, cli_weights.npz, cache/ from api_parity.sh)
#include <popc/Session.hpp>

#include "formats/npz/npz.h"
#include "support/dtype.h"

#include <cstdio>
#include <iostream>

namespace {

popc::ArrayMap toArrays(const popc::npz::ArrayMap &arrays) {
  popc::ArrayMap out;
  for (const auto &[name, a] : arrays)
    out[name] = {std::string(popc::dtypeName(a.dtype)), {a.shape.begin(), a.shape.end()}, a.data};
  return out;
}

// Every weight of `want` equal, byte for byte, in `got`.
bool sameWeights(const popc::ArrayMap &got, const popc::ArrayMap &want, const char *what) {
  for (const auto &[name, a] : want) {
    auto it = got.find(name);
    if (it == got.end() || it->second.data != a.data || it->second.shape != a.shape) {
      std::cerr << "api_parity: " << what << ": weight '" << name << "' differs from poprun-lite's\n";
      return false;
    }
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: api_parity WORK_DIR STEPS\n";
    return 2;
  }
  const std::string work = argv[1];
  const uint64_t steps = std::stoull(argv[2]);
  try {
    const popc::ArrayMap data = toArrays(popc::npz::readNpz(work + "/data.npz"));
    const popc::ArrayMap cli = toArrays(popc::npz::readNpz(work + "/cli_weights.npz"));

    popc::TrainingSession loaded = popc::TrainingSession::fromExecutable(work + "/train.popef");
    loaded.run(data, steps);
    if (!sameWeights(loaded.weightsToHost(), cli, "fromExecutable"))
      return 1;

    popc::TrainingOptions training; // popc-onnx --train --loss loss --optimizer sgd --learning-rate 0.1
    training.loss = "loss";
    training.optimizer = popc::Optimizer::sgd(0.1);
    popc::SessionOptions options;
    options.cacheDir = work + "/cache";
    popc::TrainingSession compiled(work + "/model.onnx", training, options);
    compiled.run(data, steps);
    if (!sameWeights(compiled.weightsToHost(), cli, "compiled"))
      return 1;
    popc::TrainingSession cached(work + "/model.onnx", training, options);
    cached.run(data, steps);
    if (!sameWeights(cached.weightsToHost(), cli, "cached"))
      return 1;
    // DataFlow anchors: the loss of every micro-batch, or their sum.
    for (const char *anchor : {"ALL", "SUM"}) {
      popc::SessionOptions flow;
      flow.batchesPerStep = 4;
      flow.anchors["loss"] = anchor;
      popc::InferenceSession inference(work + "/model.onnx", flow);
      popc::ArrayMap x;
      x["x"] = data.at("x");
      x["label"] = data.at("label");
      x["x"].shape = {4, 8, 12}; // the data set (4 x 8 samples) as one step of 4 micro-batches
      x["label"].shape = {4, 8};
      const popc::Array loss = inference.run(x).at("loss");
      const std::vector<int64_t> want = std::string(anchor) == "ALL" ? std::vector<int64_t>{4} : std::vector<int64_t>{};
      if (loss.shape != want) {
        std::cerr << "api_parity: anchor loss=" << anchor << " gave a loss of " << loss.shape.size() << " dims\n";
        return 1;
      }
    }
    std::printf("api_parity: %llu steps through the API equal poprun-lite's, bit for bit\n",
                static_cast<unsigned long long>(steps));
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "api_parity: error: " << e.what() << "\n";
    return 1;
  }
}
