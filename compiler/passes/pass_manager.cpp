#include "compiler/passes/pass_manager.h"

#include "compiler/ir/op_registry.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/passes.h"
#include "support/error.h"
#include "support/log.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace popc::passes {

namespace fs = std::filesystem;

namespace {

void writeFile(const fs::path &dir, const std::string &fileName, const std::string &text) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    fail("{}: cannot create the dump directory: {}: choose a writable directory", dir.string(),
         ec.message());
  fs::path path = dir / fileName;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out)
    fail("{}: cannot write the dump file in directory {}: choose a writable directory",
         path.string(), dir.string());
}

// Subgraph ids come from the model: keep file names to a safe alphabet.
std::string safeFilePart(const std::string &s) {
  std::string r = s;
  for (char &c : r)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
      c = '_';
  return r;
}

void inferAndVerify(ir::Ir &ir) {
  ir::inferGraph(ir.main);
  ir::verifyGraph(ir.main);
}

} // namespace

// The standard pipeline, declared once: makeDefaultPipeline, checkpointNames,
// the valid pass names and `popc-onnx --list-passes` (the docs' table) come from it.
const std::vector<PipelineStep> &defaultPipeline() {
  static const std::vector<PipelineStep> steps = {
      {"FWD0", nullptr, "the imported IR"},
      {"training-setup", setUpTraining,
       "--train: add a built-in loss; trainable initializers become variables, which no pass folds", true},
      {"dropout-training", trainDropouts,
       "--train: each Dropout keeps elements by a counter-based random mask, new every micro-batch", true},
      {"resize-decomposition", decomposeResize,
       "linear/cubic Resize and Upsample as Gather taps times constant weights; before folding, so constant images fold too"},
      {"einsum-decomposition", decomposeEinsum, "Einsum as Transpose, ReduceSum, Reshape and MatMul"},
      {"rnn-decomposition", decomposeRecurrent,
       "RNN/GRU/LSTM unrolled over time (MatMul, gates) when training or too big for the one-tile codelet"},
      {"qdq-fusion", fuseQdq,
       "QuantizeLinear(Conv/MatMul(DequantizeLinear ...)) as QLinearConv/QLinearMatMul (int8 vertices), as ORT's QDQ transformer"},
      {"quantize-decomposition", decomposeQuantized,
       "QuantizeLinear/DequantizeLinear/QLinearConv/... as casts, float arithmetic and MatMulInteger/ConvInteger (int8 vertices)"},
      {"index-decomposition", decomposeIndexOps,
       "ScatterND, MaxUnpool and run-time-index GatherND as ScatterElements/Gather on a flat view"},
      {"linalg-decomposition", decomposeLinalg, "Det as Leibniz's sum of products, DFT/STFT as MatMuls by cos/sin matrices, MelWeightMatrix as a constant"},
      {"grid-sample-decomposition", decomposeGridSample,
       "GridSample as coordinate arithmetic and GatherElements of the image: 4 taps (bilinear), 16 (bicubic) or 1 (nearest)"},
      {"roi-align-decomposition", decomposeRoiAlign,
       "RoiAlign as per-axis sample coordinates and four GatherElements of each roi's image (the corners of every bilinear sample)"},
      {"tfidf-decomposition", decomposeTfIdf,
       "TfIdfVectorizer as Equal/And of shifted Slices per n-gram length and skip, ReduceSum, a one-hot MatMul"},
      {"maxpool-rewrites", rewriteMaxPools,
       "MaxPool: 8/16-bit integers in float32 between Casts; Slice every d-th element when strides and pads are "
       "multiples of the dilation; a large kernel as one pool per dimension"},
      {"window-canonicalization", canonicalizeWindowOps,
       "Conv over 1/3 dims and ConvTranspose as 2-D Convs (height-1 views, depth taps as channels, zero-inserted input, "
       "flipped kernel); 1-D/3-D MaxPool/AveragePool as 2-D pools"},
      {"long-row-decomposition", decomposeLongRows,
       "Softmax/LogSoftmax and InstanceNormalization rows over 64 KiB as Reduce* (two-stage over tiles) and elementwise ops; "
       "GatherElements of longer lines in chunks and index bands; TopK (small k), ArgMax/ArgMin and CumSum in two stages; "
       "TopK with a large k as a merge sort (sorted chunks, bitonic merges); "
       "Hardmax as an Equal with the two-stage ArgMax; LRN over many channels with its window sums as a Conv of ones; "
       "MaxPool with Indices of large planes as a running max over window slices; large or flat ScatterElements in "
       "chunks with a trash slot"},
      {"float16-promotion", promoteFloat16,
       "float16 MatMul/Gemm/Conv/pooling/reductions/normalisations accumulate in float32: Cast, the op, Cast back "
       "(each output: BN's training statistics, MaxPool's Indices, LayerNorm's Mean) "
       "(with --partials-type half, MatMul/Gemm/Conv stay float16)"},
      {"constant-folding", foldConstants, "evaluate ops whose inputs are all constants (and Shape) on the host"},
      {"square-rewrite", rewriteSquares,
       "Pow(x, 2) with a constant exponent as Mul(x, x): the same rounded square without a pow per element (LayerNorm's variance)"},
      {"noop-removal", removeNoOps, "drop Identity, inference Dropout, reshapes to the same shape, identity Transposes"},
      {"conv-bn-fold", foldConvBatchNorm, "fold a constant BatchNormalization (or per-channel Mul/Add) into the Conv before it"},
      {"batchnorm-decomposition", decomposeBatchNorm, "the other inference BatchNormalizations as per-channel Mul + Add"},
      {"constant-folding", foldConstants, "again: the new BN constants, Shape chains freed by no-op removal"},
      {"dead-code-elimination", eliminateDeadCode, "last: ops and tensors no graph output needs"},
      {"FWD1", nullptr, "after the forward passes"},
      {"autodiff", buildBackward, "--train: the backward pass, from each op's gradient rule", true},
      {"BWD0", nullptr, "--train: after the backward pass", true},
      {"window-canonicalization", canonicalizeWindowOps,
       "--train: again, for the gradients' ConvTransposes and 1-D/3-D Convs", true},
      {"float16-promotion", promoteFloat16, "--train: again, for the backward pass's float16 ops", true},
      {"optimizer", buildOptimizer,
       "--train: each weight's update and optimizer state, as variable updates; then folding and dead code again",
       true},
      // Empty, as in PopART's order: aliasing/inplacing and main-loop transforms go here.
      {"PREALIAS", nullptr, "before aliasing (no pass yet)"},
      {"MAINLOOPS", nullptr, "before main-loop transforms (no pass yet)"},
      {"FINAL", nullptr, "what lowering receives"},
  };
  return steps;
}

const std::vector<std::string> &checkpointNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PipelineStep &s : defaultPipeline())
      if (!s.fn)
        out.push_back(s.name);
    return out;
  }();
  return names;
}

PassManager::PassManager(PassOptions options) : options_(std::move(options)) {}

void PassManager::addPass(std::string name, PassFn fn) {
  steps_.push_back({false, std::move(name), std::move(fn)});
}

void PassManager::addCheckpoint(std::string name) { steps_.push_back({true, std::move(name), {}}); }

const PipelineStep *findPass(const std::string &name) {
  for (const PipelineStep &s : defaultPipeline())
    if (s.fn && name == s.name)
      return &s;
  return nullptr;
}

std::vector<std::string> PassManager::passNames() const {
  std::vector<std::string> names;
  for (const auto &s : steps_)
    if (!s.checkpoint && std::find(names.begin(), names.end(), s.name) == names.end())
      names.push_back(s.name);
  return names;
}

void PassManager::checkpoint(const ir::Ir &ir, const std::string &name, size_t index) {
  log::get("passes")->debug("checkpoint {}: {} ops, {} tensors", name, ir.main.ops().size(),
                            ir.main.tensors().size());
  std::string stem = fmt::format("{:02}_{}", index, name);
  if (!options_.dumpIrDir.empty())
    writeFile(options_.dumpIrDir, stem + ".ir.txt", ir::printIr(ir));
  const auto &dots = options_.dotCheckpoints;
  if (!options_.dumpDotDir.empty() && (dots.empty() || std::find(dots.begin(), dots.end(), name) != dots.end())) {
    writeFile(options_.dumpDotDir, stem + ".dot", ir::graphToDot(ir.main));
    for (const auto &[id, g] : ir.subgraphs)
      writeFile(options_.dumpDotDir, stem + "." + safeFilePart(id) + ".dot", ir::graphToDot(g));
  }
}

void PassManager::run(ir::Ir &ir) {
  std::vector<std::string> known = passNames();
  for (const auto &d : options_.disabledPasses)
    if (std::find(known.begin(), known.end(), d) == known.end())
      fail("disabled pass '{}': no such pass; valid names are {}", d, fmt::join(known, ", "));

  auto logger = log::get("passes");
  executed_.clear();
  // The importer's output is the baseline: if it does not verify, say so
  // before blaming a pass.
  try {
    inferAndVerify(ir);
  } catch (const Error &e) {
    fail("the IR given to the passes does not verify (importer bug?): {}", e.what());
  }
  size_t checkpointIndex = 0;
  for (const Step &step : steps_) {
    if (step.checkpoint) {
      checkpoint(ir, step.name, checkpointIndex++);
      executed_.push_back(step.name);
      continue;
    }
    const auto &disabled = options_.disabledPasses;
    if (std::find(disabled.begin(), disabled.end(), step.name) != disabled.end()) {
      logger->debug("pass {}: disabled", step.name);
      continue;
    }
    size_t before = ir.main.ops().size(), rewrites = 0;
    try {
      rewrites = step.fn(ir);
    } catch (const Error &e) {
      fail("pass {}: {}", step.name, e.what());
    }
    try {
      inferAndVerify(ir);
    } catch (const Error &e) {
      // A pass broke the IR: a popc bug, never a property of the model
      // (tools exit 2; the conformance runner counts it as an error).
      throw InternalError(fmt::format("after pass {}: the IR no longer verifies: {}", step.name, e.what()));
    }
    logger->debug("pass {}: {} rewrites, ops {} -> {}", step.name, rewrites, before,
                  ir.main.ops().size());
    executed_.push_back("pass " + step.name);
  }
}

PassManager makeDefaultPipeline(const PassOptions &options, bool training) {
  PassManager pm(options);
  for (const PipelineStep &step : defaultPipeline()) {
    if (step.trainingOnly && !training)
      continue;
    if (step.fn)
      pm.addPass(step.name, step.fn);
    else
      pm.addCheckpoint(step.name);
  }
  return pm;
}

void runPasses(ir::Ir &ir, const PassOptions &options) {
  makeDefaultPipeline(options, ir.training.has_value()).run(ir);
}

} // namespace popc::passes
