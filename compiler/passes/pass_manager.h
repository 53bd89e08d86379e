// The pass manager: runs named IR passes in a fixed order, grouped between
// named checkpoints (defaultPipeline(); as PopART's POPART_DOT_CHECKS /
// POPART_IR_DUMP). At each checkpoint the IR can be dumped
// as text and as Graphviz DOT. After every pass the main graph is re-inferred
// and verified, so a pass that breaks the IR is caught and named.
#pragma once
#include "compiler/ir/ir.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace popc::passes {

struct PassOptions {
  // Write <dir>/<NN>_<CHECKPOINT>.ir.txt (ir::printIr) at each checkpoint; "" = off.
  std::string dumpIrDir;
  // Write <dir>/<NN>_<CHECKPOINT>.dot (ir::graphToDot of the main graph, and
  // <NN>_<CHECKPOINT>.<subgraph>.dot per subgraph) at each checkpoint; "" = off.
  std::string dumpDotDir;
  // Pass names to skip (every instance of the name); unknown names are an error.
  std::vector<std::string> disabledPasses;
  // Checkpoints dumpDotDir writes (POPC_DOT_CHECKS); empty = every checkpoint.
  std::vector<std::string> dotCheckpoints;
};

// Rewrites the IR in place; returns the number of rewrites (for logging).
using PassFn = std::function<size_t(ir::Ir &)>;

// One step of the standard pipeline: a pass (fn set) or a checkpoint (fn null).
struct PipelineStep {
  const char *name;
  size_t (*fn)(ir::Ir &);
  const char *purpose;
  bool trainingOnly = false; // only in a --train compile (docs/training.md)
};
// The standard pipeline, in order (pass_manager.cpp declares it, once).
const std::vector<PipelineStep> &defaultPipeline();

// The pass of the standard pipeline called `name` (nullptr: none).
const PipelineStep *findPass(const std::string &name);

// The checkpoint names of the standard pipeline, in order.
const std::vector<std::string> &checkpointNames();

class PassManager {
public:
  explicit PassManager(PassOptions options = {});
  void addPass(std::string name, PassFn fn);
  void addCheckpoint(std::string name);

  // Runs every step in the order added. Throws popc::Error: "pass <name>: ..."
  // when a pass throws, or naming a dump file/dir that cannot be written;
  // popc::InternalError "after pass <name>: the IR no longer verifies: ..."
  // when the IR no longer infers/verifies after a pass (a popc bug).
  void run(ir::Ir &ir);

  // Distinct pass names in order of first appearance.
  std::vector<std::string> passNames() const;
  // What the last run() did, in order: "FWD0", "pass constant-folding", ...
  // (disabled passes are absent).
  const std::vector<std::string> &executed() const { return executed_; }

private:
  struct Step {
    bool checkpoint = false;
    std::string name;
    PassFn fn;
  };
  void checkpoint(const ir::Ir &ir, const std::string &name, size_t index);

  PassOptions options_;
  std::vector<Step> steps_;
  std::vector<std::string> executed_;
};

// A PassManager with defaultPipeline()'s steps (`popc-onnx --list-passes` prints
// them); the training steps only when `training`.
PassManager makeDefaultPipeline(const PassOptions &options, bool training = false);

// Runs the standard pipeline on `ir` (with the training steps when ir.training is set).
void runPasses(ir::Ir &ir, const PassOptions &options);

} // namespace popc::passes
