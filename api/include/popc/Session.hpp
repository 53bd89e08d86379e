// In-process sessions over ONNX models (PopART's InferenceSession and
// TrainingSession): compile the model for the simulated IPU, load it, run it,
// all inside the caller's process. The command-line tools do the same in
// separate steps (popc-onnx, poprun-lite) through the same code (session/):
// the same cache, checks, data set steps and weights; docs/training.md,
// docs/cli.md.
//
//   popc::InferenceSession s("model.onnx");
//   popc::ArrayMap outs = s.run({{"x", popc::Array::of<float>({1, 4}, {1, 2, 3, 4})}});
//
//   popc::TrainingOptions t;
//   t.loss = "loss";
//   t.optimizer = popc::Optimizer::adam(1e-3);
//   popc::TrainingSession train("model.onnx", t);
//   for (auto &batch : batches) train.run(batch);   // one optimizer step each
//   train.modelToHost("trained.onnx");
//
//   // an executable popc-onnx wrote, as poprun-lite runs it
//   auto s2 = popc::InferenceSession::fromExecutable("model.popef");
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace popc {

// A host array: numpy element type name ("float32", "int64", ...), shape and
// little-endian row-major bytes.
struct Array {
  std::string dtype = "float32";
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  template <typename T> static Array of(std::vector<int64_t> shape, const std::vector<T> &values) {
    Array a{typeName<T>(), std::move(shape), std::vector<uint8_t>(values.size() * sizeof(T))};
    if (!values.empty())
      std::memcpy(a.data.data(), values.data(), a.data.size());
    return a;
  }
  template <typename T> std::vector<T> as() const {
    std::vector<T> out(data.size() / sizeof(T));
    if (!out.empty())
      std::memcpy(out.data(), data.data(), out.size() * sizeof(T));
    return out;
  }
  template <typename T> static const char *typeName() {
    if constexpr (std::is_same_v<T, float>) return "float32";
    else if constexpr (std::is_same_v<T, double>) return "float64";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
    else static_assert(sizeof(T) == 0, "popc::Array: use float, double, int64_t, int32_t or uint8_t");
  }
};
using ArrayMap = std::map<std::string, Array>;

// Target and data flow (popc-onnx's options of the same names).
struct SessionOptions {
  std::string arch = "ipu2";      // ipu1 | ipu2
  unsigned numIpus = 1;
  unsigned tilesPerIpu = 0;       // 0: the architecture's
  unsigned batchesPerStep = 1;    // DataFlow: micro-batches (or steps) per run
  unsigned accumulationFactor = 1;
  unsigned replicationFactor = 1;
  // DataFlow anchors: output name -> "ALL" (default), "EVERYN:k", "FINAL" or
  // "SUM" (PopART's AnchorReturnType; popc-onnx --anchor NAME=TYPE).
  std::map<std::string, std::string> anchors;
  std::map<std::string, std::vector<int64_t>> inputShapes; // fix dynamic input dims
  unsigned threads = 0;           // host threads of the simulation (0: all cores)
  bool pipeline = false;          // pipeline the stages (popc-onnx --pipeline)
  unsigned autoShard = 0;         // split the model over N IPUs (popc-onnx --auto-shard N)
  // Content-addressed cache of executables and JIT machine code (popc-onnx
  // and poprun-lite --cache-dir); empty: $POPC_CACHE_DIR, if set.
  std::string cacheDir;
};

// torch.optim's rules (docs/training.md).
struct Optimizer {
  std::string kind = "sgd"; // sgd | momentum | adam | adamw
  double learningRate = 0.01, momentum = 0, dampening = 0, weightDecay = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;

  static Optimizer sgd(double lr, double momentum = 0, double weightDecay = 0) {
    Optimizer o;
    o.kind = momentum ? "momentum" : "sgd";
    o.learningRate = lr, o.momentum = momentum, o.weightDecay = weightDecay;
    return o;
  }
  static Optimizer adam(double lr, double weightDecay = 0, bool decoupled = false) {
    Optimizer o;
    o.kind = decoupled ? "adamw" : "adam";
    o.learningRate = lr, o.weightDecay = weightDecay;
    return o;
  }
};

struct TrainingOptions {
  std::string loss; // a scalar model output, "nll:PROBS,LABEL[,mean|sum]" or "l1:X[,scale]"
  Optimizer optimizer;
  std::vector<std::string> trainable; // empty: every float initializer the loss depends on
  double lossScaling = 1;
  bool sumGradients = false; // --reduction sum
};

class InferenceSession {
public:
  // Compiles `onnxModel` (throws std::runtime_error with popc-onnx's message on failure).
  explicit InferenceSession(const std::string &onnxModel, SessionOptions options = {});
  ~InferenceSession();
  InferenceSession(InferenceSession &&) noexcept;
  InferenceSession &operator=(InferenceSession &&) noexcept;

  // Loads an executable popc-onnx wrote (verified before use); the options'
  // threads and cacheDir apply.
  static InferenceSession fromExecutable(const std::string &popefPath, SessionOptions options = {});

  // One run: `inputs` holds every model input; returns every output.
  ArrayMap run(const ArrayMap &inputs);
  // `steps` runs (poprun-lite --iterations): an input whose leading dimension
  // is `steps` times the model's gives run k its k-th slice. Returns the last
  // run's outputs.
  ArrayMap run(const ArrayMap &inputs, uint64_t steps);
  std::vector<std::string> inputNames() const;
  std::vector<std::string> outputNames() const;
  // The compiled executable, for poprun-lite or a later session.
  void writeExecutable(const std::string &popefPath) const;

protected:
  struct Impl;
  InferenceSession(const std::string &onnxModel, const SessionOptions &options, const TrainingOptions *training);
  explicit InferenceSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class TrainingSession : public InferenceSession {
public:
  TrainingSession(const std::string &onnxModel, const TrainingOptions &training, SessionOptions options = {});
  // Loads a training executable (popc-onnx --train) to go on training it.
  static TrainingSession fromExecutable(const std::string &popefPath, SessionOptions options = {});

  // run(): one optimizer step per batch of the step (batchesPerStep); returns
  // the loss and the model's other outputs.

  // Every variable: trained initializers by name, optimizer state
  // (Accl___W, Accl1___W, Accl2___W, Accum___W, Step___).
  ArrayMap weightsToHost();
  // Sets the variables named in `weights` (any subset).
  void weightsFromHost(const ArrayMap &weights);
  // Writes the ONNX model with the trained initializers.
  void modelToHost(const std::string &onnxPath);

private:
  explicit TrainingSession(std::unique_ptr<Impl> impl);
};

} // namespace popc
