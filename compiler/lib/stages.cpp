// Sharding and pipeline stages (PopART virtual graphs and pipeline stages):
// --auto-shard splits the op list into contiguous stages of balanced cost;
// --pipeline checks and completes the stage annotations.
#include "compiler/lib/lowering.h"
#include "compiler/lib/step.h"

#include "support/error.h"
#include "support/log.h"

#include <algorithm>
#include <map>
#include <set>

namespace popc::lib {

namespace {

// Cost of one op measured by a trial lowering: the busiest tile's compute
// cycles and the bytes of the tensors it is first to touch (weights included).
struct OpCost {
  double cycles = 0, bytes = 0;
};

void measure(const graph::DeviceGraph &g, const codegen::VertexCodegen &cg, const graph::Program &p, OpCost &c,
             std::vector<bool> &seen) {
  auto touch = [&](graph::TensorId t) {
    if (!seen[t]) {
      seen[t] = true;
      c.bytes += double(g.tensor(t).bytes);
    }
  };
  switch (p.kind) {
  case graph::ProgramKind::Sequence:
  case graph::ProgramKind::Repeat:
    for (const auto &ch : p.children)
      measure(g, cg, ch, c, seen);
    break;
  case graph::ProgramKind::Execute: {
    std::map<uint32_t, uint64_t> perTile;
    for (const auto &v : g.computeSets()[p.index].vertices)
      perTile[v.tile] += cg.vertexTypes().at(v.type).cycles;
    uint64_t worst = 0;
    for (const auto &[tile, cycles] : perTile)
      worst = std::max(worst, cycles);
    c.cycles += double(worst); // ~ the busiest context's load x workers (round-robin issue)
    graph::forEachStepTensor(g, p, touch);
    break;
  }
  case graph::ProgramKind::Exchange: graph::forEachStepTensor(g, p, touch); break;
  default: break;
  }
}

// Contiguous split of `w` into exactly `parts` non-empty ranges minimising the
// largest sum (binary search on the bound, then split the widest ranges).
std::vector<uint32_t> balancedSplit(const std::vector<double> &w, uint32_t parts) {
  double lo = 0, hi = 0;
  for (double x : w)
    lo = std::max(lo, x), hi += x;
  auto greedy = [&](double bound) {
    std::vector<uint32_t> starts{0};
    double acc = 0;
    for (uint32_t i = 0; i < w.size(); ++i) {
      if (acc + w[i] > bound && acc > 0) {
        starts.push_back(i);
        acc = 0;
      }
      acc += w[i];
    }
    return starts;
  };
  for (int it = 0; it < 60; ++it) {
    const double mid = (lo + hi) / 2;
    (greedy(mid).size() <= parts ? hi : lo) = mid;
  }
  std::vector<uint32_t> starts = greedy(hi * (1 + 1e-12));
  // Fewer ranges than stages (tiny ops at the end): split the longest ones.
  while (starts.size() < parts) {
    size_t best = 0, bestLen = 0;
    for (size_t k = 0; k < starts.size(); ++k) {
      const size_t end = k + 1 < starts.size() ? starts[k + 1] : w.size();
      if (end - starts[k] > bestLen)
        best = k, bestLen = end - starts[k];
    }
    starts.insert(starts.begin() + best + 1, starts[best] + uint32_t(bestLen / 2));
  }
  return starts;
}

// Training: ops that autodiff and the optimizer added. A backward op is
// named after the forward op it differentiates ("X/grad3", and "X/grad3_Mul"
// for what later passes make of it); the optimizer's ops after the weight
// ("W/update_Mul"), its accumulators and step count ("Accum___W", "Step___").
bool trainingOnly(const ir::Op &op) {
  return op.name.find("/grad") != std::string::npos || op.name.find("/update") != std::string::npos ||
         op.name.rfind("Accum___", 0) == 0 || op.name.rfind("Step___", 0) == 0;
}

std::string forwardOpName(const std::string &name) {
  const size_t at = name.find("/grad");
  return at == std::string::npos ? std::string() : name.substr(0, at);
}

} // namespace

void placeTrainingOps(ir::Ir &ir) {
  if (!ir.training)
    return;
  const ir::Graph &g = ir.main;
  std::map<std::string, int64_t> forwardIpu, weightIpu, producerIpu, variableIpu;
  for (const auto &op : g.ops())
    if (!trainingOnly(*op)) {
      forwardIpu.emplace(op->name, op->ipu);
      for (const std::string &in : op->inputs)
        if (ir.gradients.count(in))
          weightIpu.emplace(in, op->ipu);
    }
  std::map<std::string, std::string> updates; // new value -> the variable it replaces
  for (const ir::VariableUpdate &u : g.updates)
    updates.emplace(u.value, u.variable);
  for (const auto &op : g.ops()) {
    if (trainingOnly(*op)) {
      int64_t ipu = -1;
      if (auto it = forwardIpu.find(forwardOpName(op->name)); it != forwardIpu.end())
        ipu = it->second; // the op it differentiates
      for (const std::string &in : op->inputs)
        if (auto it = weightIpu.find(in); ipu < 0 && it != weightIpu.end())
          ipu = it->second; // a weight's update: where the weight is used
      for (const std::string &in : op->inputs)
        if (auto it = variableIpu.find(in); ipu < 0 && it != variableIpu.end())
          ipu = it->second; // optimizer state and accumulators: where they are first used
      if (ipu < 0)
        for (const std::string &in : op->inputs)
          if (auto it = producerIpu.find(in); it != producerIpu.end())
            ipu = std::max(ipu, it->second); // after its latest input
      for (const std::string &out : op->outputs) // from constants alone: where its variable is used
        if (auto u = updates.find(out); ipu < 0 && u != updates.end())
          if (auto it = variableIpu.find(u->second); it != variableIpu.end())
            ipu = it->second;
      op->ipu = std::max<int64_t>(ipu, 0);
    }
    for (const std::string &in : op->inputs)
      if (g.hasTensor(in) && g.tensor(in).kind == ir::TensorKind::Variable)
        variableIpu.emplace(in, op->ipu);
    for (const std::string &out : op->outputs)
      producerIpu[out] = op->ipu;
  }
}

void autoShard(ir::Ir &ir, const graph::Target &target, uint32_t stages) {
  auto &ops = ir.main.ops();
  // Training: the forward ops are split; each carries the cost of its backward
  // ops, which go with it (placeTrainingOps).
  std::vector<size_t> forward;
  std::map<std::string, size_t> forwardIndex;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!ir.training || !trainingOnly(*ops[i])) {
      forwardIndex.emplace(ops[i]->name, forward.size());
      forward.push_back(i);
    }
  if (forward.size() < stages)
    fail("--auto-shard {}: the model has only {} {}op(s) after optimisation; use at most that many stages", stages,
         forward.size(), ir.training ? "forward " : "");
  // Trial lowering on one IPU of the target, one segment per op.
  std::vector<int64_t> savedStage, savedIpu;
  for (size_t i = 0; i < ops.size(); ++i) {
    savedStage.push_back(ops[i]->pipelineStage);
    savedIpu.push_back(ops[i]->ipu);
    ops[i]->pipelineStage = int64_t(i);
    ops[i]->ipu = 0;
  }
  graph::Target one = target;
  one.numIpus = 1;
  graph::DeviceGraph g(one);
  codegen::VertexCodegen cg;
  LowerOptions lo;
  lo.pipeline = true;
  std::vector<Segment> segments = lowerIrSegments(ir, g, cg, lo);
  std::vector<OpCost> cost(ops.size());
  std::vector<bool> seen(g.tensors().size(), false);
  for (const Segment &s : segments)
    if (s.stage >= 0 && size_t(s.stage) < ops.size())
      for (const auto &p : s.programs)
        measure(g, cg, p, cost[s.stage], seen);
  std::vector<OpCost> owned(forward.size()); // a forward op's cost with its backward ops'
  for (size_t i = 0; i < ops.size(); ++i) {
    auto it = forwardIndex.find(ops[i]->name);
    if (it == forwardIndex.end())
      it = forwardIndex.find(forwardOpName(ops[i]->name));
    if (it != forwardIndex.end())
      owned[it->second].cycles += cost[i].cycles, owned[it->second].bytes += cost[i].bytes;
  }
  double cycles = 0, bytes = 0;
  for (const OpCost &c : owned)
    cycles += c.cycles, bytes += c.bytes;
  std::vector<double> w;
  for (const OpCost &c : owned)
    w.push_back((cycles > 0 ? c.cycles / cycles : 0) + (bytes > 0 ? c.bytes / bytes : 0) + 1e-9);
  const std::vector<uint32_t> starts = balancedSplit(w, stages);
  auto log = log::get("lib");
  for (uint32_t s = 0; s < stages; ++s) {
    const uint32_t end = s + 1 < stages ? starts[s + 1] : uint32_t(forward.size());
    OpCost sum;
    for (uint32_t i = starts[s]; i < end; ++i) {
      ops[forward[i]]->ipu = s;
      sum.cycles += owned[i].cycles, sum.bytes += owned[i].bytes;
    }
    log->info("auto-shard: stage {} = ops {}..{} ({} .. {}), ~{:.0f} cycles, ~{:.0f} bytes", s, forward[starts[s]],
              forward[end - 1], ops[forward[starts[s]]]->name, ops[forward[end - 1]]->name, sum.cycles, sum.bytes);
  }
  for (size_t i = 0; i < ops.size(); ++i)
    ops[i]->pipelineStage = savedStage[i];
  (void)savedIpu; // --auto-shard replaces any __ipu_number annotations
  placeTrainingOps(ir);
}

namespace {

// Checks that `op` reads no value of a later stage, then records its outputs' stage.
void followDataFlow(const ir::Op &op, std::map<std::string, int64_t> &stageOfTensor, const char *fix) {
  for (const auto &in : op.inputs)
    if (auto it = stageOfTensor.find(in); it != stageOfTensor.end() && it->second > op.pipelineStage)
      fail("--pipeline: {} '{}' (stage {}) reads '{}' computed in stage {}: {}", op.type, op.name, op.pipelineStage,
           in, it->second, fix);
  for (const auto &o : op.outputs)
    stageOfTensor[o] = op.pipelineStage;
}

// Training: forward stage s's backward ops form stage 2S-2-s on the same IPU
// (PopART's pipeline stages for training; the last forward stage and the first
// backward one are one stage). Other per-micro-batch ops the training passes
// added (sums of gradients, accumulators) follow their latest input, never
// before the first backward stage. Returns the stage count 2S-1.
uint32_t assignBackwardStages(ir::Ir &ir, uint32_t forwardStages) {
  auto &ops = ir.main.ops();
  const int64_t S = forwardStages, last = 2 * S - 2;
  std::map<int64_t, int64_t> ipuOfStage;
  std::map<std::string, int64_t> stageOfOp, stageOfTensor;
  for (const auto &op : ops)
    if (!trainingOnly(*op)) {
      ipuOfStage.emplace(op->pipelineStage, op->ipu);
      stageOfOp.emplace(op->name, op->pipelineStage);
    }
  auto ipuOf = [&](int64_t stage) { return ipuOfStage.at(stage < S ? stage : last - stage); };
  placeTrainingOps(ir); // the optimizer's ops (phase 1) go with their weights
  for (auto &op : ops) {
    if (trainingOnly(*op) && op->phase == 0) {
      int64_t stage = S - 1;
      if (auto it = stageOfOp.find(forwardOpName(op->name)); it != stageOfOp.end())
        stage = last - it->second;
      else
        for (const auto &in : op->inputs)
          if (auto t = stageOfTensor.find(in); t != stageOfTensor.end())
            stage = std::max(stage, t->second);
      op->pipelineStage = stage;
      op->ipu = ipuOf(stage);
    }
    if (op->phase != 0)
      continue;
    followDataFlow(*op, stageOfTensor, "a backward op reads a value of a later stage; annotate the forward ops so "
                                       "that stages follow the data flow");
  }
  // An update computed from variables and constants alone (a Dropout counter's
  // step) runs in the first stage that reads its variable: later stages read
  // a snapshot taken there (lower_graph.cpp), so every stage sees the value of
  // its own micro-batch.
  for (const ir::VariableUpdate &u : ir.main.updates) {
    const auto p = ir.main.producer(u.value);
    if (u.phase != 0 || !p)
      continue;
    ir::Op &update = *ops[*p];
    if (std::any_of(update.inputs.begin(), update.inputs.end(), [&](const std::string &in) {
          return stageOfTensor.count(in) != 0;
        }))
      continue;
    int64_t first = -1;
    for (size_t c : ir.main.consumers(u.variable))
      if (ops[c].get() != &update && ops[c]->phase == 0)
        first = first < 0 ? ops[c]->pipelineStage : std::min(first, ops[c]->pipelineStage);
    if (first >= 0) {
      update.pipelineStage = first;
      update.ipu = ipuOf(first);
    }
  }
  return uint32_t(2 * S - 1);
}

} // namespace

uint32_t assignPipelineStages(ir::Ir &ir, uint32_t numIpus) {
  auto &g = ir.main;
  auto &ops = g.ops();
  const bool annotated = std::any_of(ops.begin(), ops.end(), [](const auto &op) { return op->pipelineStage >= 0; });
  std::map<std::string, int64_t> stageOfTensor;
  // Training: the forward ops are staged here, their backward ops after.
  auto forward = [&](const ir::Op &op) { return !ir.training || !trainingOnly(op); };
  for (auto &op : ops) {
    if (!forward(*op))
      continue;
    int64_t inherited = 0;
    for (const auto &in : op->inputs)
      if (auto it = stageOfTensor.find(in); it != stageOfTensor.end())
        inherited = std::max(inherited, it->second);
    if (!annotated)
      op->pipelineStage = op->ipu;
    else if (op->pipelineStage < 0)
      op->pipelineStage = inherited;
    followDataFlow(*op, stageOfTensor, "stages must follow the data flow (__pipeline_stage / __ipu_number)");
  }
  int64_t maxStage = 0;
  for (const auto &op : ops)
    if (forward(*op))
      maxStage = std::max(maxStage, op->pipelineStage);
  const uint32_t stages = uint32_t(maxStage + 1);
  // Stage s on IPU s unless __ipu_number says otherwise; one IPU per stage.
  const bool ipusGiven = std::any_of(ops.begin(), ops.end(), [](const auto &op) { return op->ipu != 0; });
  std::map<int64_t, int64_t> ipuOfStage;
  std::set<int64_t> used;
  for (auto &op : ops) {
    if (!forward(*op))
      continue;
    if (!ipusGiven)
      op->ipu = op->pipelineStage;
    auto [it, added] = ipuOfStage.emplace(op->pipelineStage, op->ipu);
    if (added && !used.insert(op->ipu).second)
      fail("--pipeline: stage {} is on IPU {}, which another stage uses: give each stage its own IPU",
           op->pipelineStage, op->ipu);
    if (it->second != op->ipu)
      fail("--pipeline: {} '{}' in stage {} is on IPU {} but the stage's other ops are on IPU {}", op->type,
           op->name, op->pipelineStage, op->ipu, it->second);
  }
  for (uint32_t s = 0; s < stages; ++s)
    if (!ipuOfStage.count(s))
      fail("--pipeline: stage {} has no ops (stages must be numbered 0..{} without gaps)", s, stages - 1);
  if (stages > numIpus)
    fail("--pipeline: {} stages need {} IPUs but --num-ipus is {}", stages, stages, numIpus);
  return ir.training ? assignBackwardStages(ir, stages) : stages;
}

} // namespace popc::lib
