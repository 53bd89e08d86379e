// The step structure of a multi-IPU executable (docs/multi-ipu.md), as in
// PopART: a host call runs batches-per-step x accumulation micro-batches per
// replica (a Repeat, or a pipeline of stages over IPUs), outputs come back per
// anchor return type, replicas run the same graph on their slice of the data.
#pragma once
#include "compiler/codegen/kernels.h"
#include "compiler/graph/device_graph.h"
#include "compiler/ir/ir.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace popc::lib {

// PopART AnchorReturnType.
struct Anchor {
  enum class Kind { All, EveryN, Final, Sum } kind = Kind::All;
  uint32_t n = 1; // EveryN
  std::string text() const; // "ALL", "EVERYN:2", "FINAL", "SUM"
};
// "NAME=ALL|EVERYN:k|FINAL|SUM" (popc-onnx --anchor). Throws popc::Error.
std::pair<std::string, Anchor> parseAnchor(const std::string &spec);

struct StepConfig {
  uint32_t batchesPerStep = 1, accumulationFactor = 1, replicationFactor = 1;
  bool pipeline = false;
  std::map<std::string, Anchor> anchors; // by output name; others are ALL
  // Micro-batches each replica runs per host call.
  uint32_t iterations() const { return batchesPerStep * accumulationFactor; }
  bool trivial() const { return iterations() == 1 && replicationFactor == 1 && !pipeline && anchors.empty(); }
};

// A run of main-program steps belonging to one pipeline stage (-1: the step
// prologue, run once before the micro-batches; kOptimizerStage: a training
// step's update, run once after each group of accumulated micro-batches).
constexpr int64_t kOptimizerStage = -2;
// `ipu` >= 0: work a stage does for that IPU (a training pipeline's stash,
// moved along on the IPU that keeps it), run beside the stage's own.
struct Segment {
  int64_t stage = 0;
  std::vector<graph::Program> programs;
  int64_t ipu = -1;
};

struct LowerOptions {
  bool pipeline = false; // segments follow Op::pipelineStage (else all stage 0)
  std::map<std::string, Anchor> anchors;
  uint32_t iterations = 1; // micro-batches per step (SUM/FINAL transfer on the last)
  bool indexChecks = true;  // Lowering::indexChecks
  // A training pipeline (the stages of lowerIrSegments are pipeline stages, not
  // a trial's one per op): stash values read two or more stages after the
  // one writing them, and run per-micro-batch updates in their stage.
  bool trainingPipeline = false;
  // For a caller that drops the IR after lowering: the bytes of weights
  // (constants of kMovedConstantBytes and up that only convolutions and
  // matmuls with a run-time operand consume) move from this graph (the IR's
  // main) into the device graph as they are bound, instead of being copied,
  // so they are held once. Other constants may be read as values by
  // lowerings (shapes, bounds, zero points, Gather's indices, Compress's
  // condition, directly or through a chain of constant ops): copied.
  ir::Graph *moveConstantsFrom = nullptr;
  static constexpr uint64_t kMovedConstantBytes = 64 << 10;
};

// lowerIr with the step options; returns the main program cut into segments
// (their concatenation is the main program lowerIr builds).
std::vector<Segment> lowerIrSegments(const ir::Ir &ir, graph::DeviceGraph &graph, codegen::VertexCodegen &codegen,
                                     const LowerOptions &options);

// Stage (and IPU) assignment before lowering:
// --auto-shard N: N contiguous stages of the op list balancing the compute
// cycles and bytes a trial lowering on one IPU measures; op.ipu = stage.
// Training: the forward ops are split, each weighed with its backward ops.
void autoShard(ir::Ir &ir, const graph::Target &target, uint32_t stages);
// Training on several IPUs: each backward op goes to the IPU of the forward op
// it differentiates, each weight's update to the IPU of the weight's first
// forward consumer, other added ops after their latest input (as PopART
// places gradient and optimizer ops on their forward op's virtual graph).
void placeTrainingOps(ir::Ir &ir);
// --pipeline: op.pipelineStage from `__pipeline_stage` (unannotated ops
// inherit their producers' stage) or else op.ipu. Checks stages are ordered
// along data flow and each stage sits on one IPU. Training: the S forward
// stages' backward ops form stages S..2S-2 (forward stage s's on s's IPU as
// stage 2S-2-s). Returns the stage count (S, or 2S-1 when training).
uint32_t assignPipelineStages(ir::Ir &ir, uint32_t numIpus);

// Programs of one step: `plan` is the sequential order the memory planner
// sees (valid for every tile in the pipelined order, see step_program.cpp),
// `run` the program the executable runs.
struct StepPrograms {
  graph::Program plan, run;
};
StepPrograms buildStepPrograms(const graph::DeviceGraph &graph, const std::vector<Segment> &segments,
                               const StepConfig &config, uint32_t stages);
// Training pipelines: every tensor two stages touch keeps its bytes for the
// whole program (persistent), so that only a stage's own temporaries share
// memory (step_program.cpp says why that plan is valid).
void pinCrossStageTensors(graph::DeviceGraph &graph, const std::vector<Segment> &segments);

// Host shapes (leading [batches_per_step, accumulation, replication] dims
// greater than 1, as PopART's data layout) and stream FIFO rules for every
// input and output; sets graph's step fields.
void applyStepLayout(graph::DeviceGraph &graph, const StepConfig &config, uint32_t stages);

} // namespace popc::lib
