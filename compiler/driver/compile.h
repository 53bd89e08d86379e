// The compile pipeline behind popc-onnx: ONNX import → IR passes → lowering
// onto the device graph → memory plan → vertex code → popef bytes.
#pragma once
#include "compiler/ir/ir.h"
#include "support/dtype.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace popc::driver {

// A graph input whose value is fixed at compile time (--freeze-input).
struct FrozenInput {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<uint8_t> data;
};

// Parses "name=file.npy" or "name=file.npz" (the member called `name`, or the
// only member) specs. Throws popc::Error naming the spec and file.
std::map<std::string, FrozenInput> loadFrozenInputs(const std::vector<std::string> &specs);

struct CompileOptions {
  std::string arch = "ipu2";
  uint32_t numIpus = 1;
  std::optional<uint32_t> tilesPerIpu;  // shrink the target (tests)
  std::optional<uint32_t> bytesPerTile; // override the memory budget (tests)
  std::map<std::string, Shape> inputShapes;
  std::map<std::string, FrozenInput> frozenInputs; // become constants; no longer inputs
  std::string dumpIrDir, dumpDotDir;
  std::vector<std::string> dotCheckpoints; // with dumpDotDir: only these checkpoints (empty: all)
  std::string irDumpFile; // the IR at the end of the passes, or as far as they got (POPART_IR_DUMP)
  // Multi-IPU (docs/multi-ipu.md).
  uint32_t autoShard = 0;              // --auto-shard N: N balanced contiguous stages, one per IPU
  bool pipeline = false;               // --pipeline
  uint32_t batchesPerStep = 1, accumulationFactor = 1, replicationFactor = 1;
  std::vector<std::string> anchors;    // --anchor NAME=ALL|EVERYN:k|FINAL|SUM
  uint32_t batchSize = 0, stepSize = 0; // --batch-size / --step-size: checked against the rest (0 = unchecked)
  // Sequence/optional graph inputs fixed at compile time (onnx::ImportOptions):
  // --sequence-input NAME=N (inputs NAME.0 ... NAME.N-1), --optional-absent NAME.
  std::map<std::string, int64_t> sequenceLengths;
  std::set<std::string> absentOptionals;
  bool indexChecks = true; // --no-index-checks: Gather does not report out-of-range indices
  bool halfPartials = false; // --partials-type half: float16 MatMul/Gemm/Conv accumulate in float16
  // --compression LEVEL: the popef's schedule as a zstd frame at this level (1-19); 0 stores it as it is.
  int compression = 9; // popef::kDefaultCompressionLevel
  // --train: compile one training step (docs/training.md) instead of inference.
  std::optional<ir::TrainingConfig> training;
  // A model with this many bytes of constants or more keeps them in a
  // temporary file (TMPDIR) while its schedule is packed (graph::ConstantSpill).
  // The executable is the same either way, so describe() leaves it out.
  uint64_t spillConstantsAtBytes = uint64_t(256) << 20;

  // Every option that changes the executable, as stable key/value text. Stored
  // in the popef metadata and part of the cache key.
  std::map<std::string, std::string> describe() const;
};

struct CompileStats {
  double importSeconds = 0, passesSeconds = 0, lowerSeconds = 0, codegenSeconds = 0, writeSeconds = 0;
  size_t irOps = 0, vertexTypes = 0, vertices = 0;
  uint64_t exchangeCopies = 0, exchangeBytes = 0; // as written: split per tile, coalesced
  uint64_t loadCopies = 0, loadBytes = 0;         // constants laid out once at load
};

struct ProfileFacts; // compiler/driver/graph_profile.h

// Optional observers of one compile (popc-onnx: --profile-dir, progress).
struct CompileHooks {
  ProfileFacts *profile = nullptr; // receives the compile-time facts of the graph profile
  // Called as each phase starts: "import", "passes", "lowering", "codegen", "write".
  std::function<void(const char *phase)> phase;
  // The caller exits soon after (popc-onnx): the device graph, its
  // memory plan and the LLVM module are left for the process's exit to
  // reclaim instead of being freed piece by piece (clang's -disable-free;
  // on ResNet-50 that is millions of small blocks, about 0.7 s).
  bool exitSoon = false;
};

// Compiles the ONNX model at `modelPath`. Throws popc::Error for bad models,
// unsupported operators and out-of-memory (with its report).
std::vector<uint8_t> compileOnnx(const std::string &modelPath, const CompileOptions &options,
                                 CompileStats *stats = nullptr, const CompileHooks *hooks = nullptr);

} // namespace popc::driver
