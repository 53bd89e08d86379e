// Step programs: batches per step (a Repeat), pipelining (ramp-up, main,
// ramp-down cycles interleaving micro-batches over the stages' IPUs) and the
// host data layout of anchors and replicas (docs/multi-ipu.md).
//
// Why one memory plan serves the pipelined program: a tile on stage s's IPU
// is written only by stage s and read only by stages s and s+1. A pipeline
// cycle runs the active stages last-to-first, so stage s+1 reads micro-batch
// m-1's values before stage s overwrites them with micro-batch m. Seen from
// any one tile, the events therefore come in the same order as in the plain
// sequential program (stage 0, 1, ..., S-1 per micro-batch) repeated, and a
// liveness plan of that sequential program is valid for the pipeline.
//
// A training pipeline has two stages on each IPU but the last (forward stage
// s and its backward stage 2S-2-s), so that order argument no longer holds:
// between forward stage s writing a boundary value and stage s+1 reading it,
// the IPU runs its backward stage. The plan is then made safe differently:
// every tensor touched by two stages is pinned (persistent, live throughout),
// so only a stage's own temporaries share bytes. A stage's programs run
// whole, one stage after another, and write a temporary before reading it, so
// two temporaries sharing bytes are never live at once, whatever the order of
// the stages. A pinned value written by stage w and read by stage w+1 is read
// before w overwrites it (last-to-first); one read by stage w+2 or later goes
// through the stash slots lower_graph.cpp chains, one stage apart each.
#include "compiler/lib/step.h"

#include "support/error.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace popc::lib {

namespace {

void flatten(const std::vector<Segment> &segments, int64_t stage, std::vector<graph::Program> &out) {
  for (const Segment &s : segments)
    if (s.stage == stage)
      out.insert(out.end(), s.programs.begin(), s.programs.end());
}

graph::Program repeat(uint32_t count, std::string name) {
  graph::Program p = graph::Program::sequence(std::move(name));
  p.kind = graph::ProgramKind::Repeat;
  p.count = count;
  return p;
}

uint32_t ipuOfTile(const graph::DeviceGraph &g, uint32_t tile) { return tile / g.target().tilesPerIpu; }

// The tile rule the pipeline's memory plan relies on (see the file comment):
// stage `stage`'s work for IPU `ipu` writes only that IPU and reads only it
// and `prevIpu` (the previous stage's IPU; -1: none, as for a stash).
void checkStageTiles(const graph::DeviceGraph &g, const graph::Program &p, uint32_t stage, int64_t ipu,
                     int64_t prevIpu) {
  auto stageName = [&](uint32_t tile) { return fmt::format("IPU {}", ipuOfTile(g, tile)); };
  auto own = [&](uint32_t tile) { return int64_t(ipuOfTile(g, tile)) == ipu; };
  auto readable = [&](uint32_t tile) { return own(tile) || int64_t(ipuOfTile(g, tile)) == prevIpu; };
  switch (p.kind) {
  case graph::ProgramKind::Sequence:
  case graph::ProgramKind::Repeat:
    for (const auto &c : p.children)
      checkStageTiles(g, c, stage, ipu, prevIpu);
    break;
  case graph::ProgramKind::Execute:
    for (const auto &v : g.computeSets()[p.index].vertices)
      if (!own(v.tile))
        fail("pipeline stage {} (IPU {}): compute set '{}' runs on {}", stage, ipu, g.computeSets()[p.index].name,
             stageName(v.tile));
    break;
  case graph::ProgramKind::Exchange:
    for (const auto &c : g.exchanges()[p.index].copies) {
      const auto &src = g.tensor(c.src), &dst = g.tensor(c.dst);
      for (const auto &iv : dst.mapping)
        if (!own(iv.tile))
          fail("pipeline stage {} (IPU {}): exchange '{}' writes '{}' on {}; a stage may only write its own IPU",
               stage, ipu, g.exchanges()[p.index].name, dst.name, stageName(iv.tile));
      if (src.role != graph::TensorRole::Constant)
        for (const auto &iv : src.mapping)
          if (!readable(iv.tile))
            fail("pipeline stage {} (IPU {}): exchange '{}' reads '{}' from {}: a stage can only use values of "
                 "the stage just before it",
                 stage, ipu, g.exchanges()[p.index].name, src.name, stageName(iv.tile));
    }
    break;
  case graph::ProgramKind::StreamCopy:
    for (const auto &iv : g.tensor(g.streams()[p.index].tensor).mapping)
      if (!own(iv.tile))
        fail("pipeline stage {} (IPU {}): host stream '{}' uses {}: the input is read by more than one stage",
             stage, ipu, g.streams()[p.index].name, stageName(iv.tile));
    break;
  default: break;
  }
}

// Tensors a program touches.
void touched(const graph::DeviceGraph &g, const graph::Program &p, const std::function<void(graph::TensorId)> &fn) {
  switch (p.kind) {
  case graph::ProgramKind::Execute:
  case graph::ProgramKind::Exchange: graph::forEachStepTensor(g, p, fn); break;
  case graph::ProgramKind::StreamCopy: fn(g.streams()[p.index].tensor); break;
  default:
    for (const auto &c : p.children)
      touched(g, c, fn);
  }
}

// The IPU a stage's programs write (its first compute set, exchange or stream).
int64_t firstIpu(const graph::DeviceGraph &g, const graph::Program &p) {
  switch (p.kind) {
  case graph::ProgramKind::Sequence:
  case graph::ProgramKind::Repeat:
    for (const auto &c : p.children)
      if (int64_t ipu = firstIpu(g, c); ipu >= 0)
        return ipu;
    return -1;
  case graph::ProgramKind::Execute: {
    const auto &vs = g.computeSets()[p.index].vertices;
    return vs.empty() ? -1 : ipuOfTile(g, vs.front().tile);
  }
  case graph::ProgramKind::Exchange: {
    const auto &cs = g.exchanges()[p.index].copies;
    for (const auto &c : cs)
      if (!g.tensor(c.dst).mapping.empty())
        return ipuOfTile(g, g.tensor(c.dst).mapping.front().tile);
    return -1;
  }
  case graph::ProgramKind::StreamCopy: {
    const auto &m = g.tensor(g.streams()[p.index].tensor).mapping;
    return m.empty() ? -1 : ipuOfTile(g, m.front().tile);
  }
  default: return -1;
  }
}

} // namespace

std::string Anchor::text() const {
  switch (kind) {
  case Kind::All: return "ALL";
  case Kind::EveryN: return fmt::format("EVERYN:{}", n);
  case Kind::Final: return "FINAL";
  case Kind::Sum: return "SUM";
  }
  return "ALL";
}

std::pair<std::string, Anchor> parseAnchor(const std::string &spec) {
  const size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0)
    fail("--anchor '{}': expected NAME=ALL, NAME=EVERYN:k, NAME=FINAL or NAME=SUM", spec);
  const std::string name = spec.substr(0, eq), mode = spec.substr(eq + 1);
  Anchor a;
  if (mode == "ALL")
    a.kind = Anchor::Kind::All;
  else if (mode == "FINAL")
    a.kind = Anchor::Kind::Final;
  else if (mode == "SUM")
    a.kind = Anchor::Kind::Sum;
  else if (mode.rfind("EVERYN:", 0) == 0) {
    a.kind = Anchor::Kind::EveryN;
    const std::string k = mode.substr(7);
    if (k.empty() || k.size() > 9 || !std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoul(k) == 0)
      fail("--anchor '{}': EVERYN needs a period k >= 1, e.g. {}=EVERYN:2", spec, name);
    a.n = uint32_t(std::stoul(k));
  } else
    fail("--anchor '{}': unknown return type '{}' (use ALL, EVERYN:k, FINAL or SUM)", spec, mode);
  return {name, a};
}

StepPrograms buildStepPrograms(const graph::DeviceGraph &g, const std::vector<Segment> &segments,
                               const StepConfig &config, uint32_t stages) {
  StepPrograms out;
  out.plan = graph::Program::sequence("main");
  flatten(segments, -1, out.plan.children);
  for (uint32_t s = 0; s < std::max(1u, stages); ++s)
    flatten(segments, s, out.plan.children);
  // A training step's update (phase 1): planned after the micro-batch it
  // follows; it reads only variables and constants, so one plan fits both.
  flatten(segments, kOptimizerStage, out.plan.children);
  const uint32_t n = config.iterations();
  const bool optimizer = std::any_of(segments.begin(), segments.end(),
                                     [](const Segment &s) { return s.stage == kOptimizerStage; });
  out.run = graph::Program::sequence("main");
  flatten(segments, -1, out.run.children);
  if (!config.pipeline) {
    if (optimizer) {
      // Repeat(batches per step) { Repeat(accumulation) { micro-batch }; update }
      graph::Program micro = repeat(config.accumulationFactor, "accumulated micro-batches");
      flatten(segments, 0, micro.children);
      graph::Program step = repeat(config.batchesPerStep, "batches per step");
      step.children.push_back(std::move(micro));
      flatten(segments, kOptimizerStage, step.children);
      out.run.children.push_back(std::move(step));
    } else if (n == 1) {
      out.run = out.plan;
    } else {
      graph::Program loop = repeat(n, "batches per step");
      flatten(segments, 0, loop.children);
      out.run.children.push_back(std::move(loop));
    }
    return out;
  }

  // Each stage's own work, and the work it does for other IPUs (a stash).
  std::vector<graph::Program> stageSeq;
  std::vector<std::map<int64_t, graph::Program>> laneSeq(stages);
  std::vector<int64_t> stageIpu;
  for (uint32_t s = 0; s < stages; ++s) {
    stageSeq.push_back(graph::Program::sequence(fmt::format("stage {}", s)));
    for (const Segment &seg : segments)
      if (seg.stage == int64_t(s)) {
        auto &dst = seg.ipu < 0 ? stageSeq.back()
                                : laneSeq[s].try_emplace(seg.ipu, graph::Program::sequence(fmt::format(
                                                                      "stage {} stash on IPU {}", s, seg.ipu)))
                                      .first->second;
        dst.children.insert(dst.children.end(), seg.programs.begin(), seg.programs.end());
      }
    stageIpu.push_back(firstIpu(g, stageSeq[s]));
    if (stageIpu.back() < 0)
      fail("pipeline stage {} has no device work", s);
    stageSeq[s].ipu = int32_t(stageIpu.back());
  }
  for (uint32_t s = 0; s < stages; ++s) {
    checkStageTiles(g, stageSeq[s], s, stageIpu[s], s > 0 ? stageIpu[s - 1] : -1);
    for (auto &[ipu, lane] : laneSeq[s]) {
      checkStageTiles(g, lane, s, ipu, -1);
      lane.ipu = int32_t(ipu);
    }
  }

  // Cycle c runs stage s on micro-batch c - s when 0 <= c - s < m; the active
  // stages run last-to-first (see the file comment). One pipeline of m
  // micro-batches: ramp-up, main (a Repeat), ramp-down.
  auto pipeline = [&](uint32_t m, std::vector<graph::Program> &into) {
    auto cycle = [&](uint32_t c) {
      graph::Program p = graph::Program::sequence(fmt::format("pipeline cycle {}", c));
      p.parallel = true;
      for (int64_t s = int64_t(stages) - 1; s >= 0; --s)
        if (int64_t(c) - s >= 0 && int64_t(c) - s < int64_t(m)) {
          p.children.push_back(stageSeq[s]);
          for (const auto &[ipu, lane] : laneSeq[s])
            p.children.push_back(lane);
        }
      return p;
    };
    graph::Program rampUp = graph::Program::sequence("pipeline ramp-up");
    graph::Program rampDown = graph::Program::sequence("pipeline ramp-down");
    const uint32_t total = m + stages - 1;
    const uint32_t fullBegin = stages - 1, fullEnd = m; // cycles with every stage active: [S-1, m)
    for (uint32_t c = 0; c < std::min(fullBegin, total); ++c)
      rampUp.children.push_back(cycle(c));
    into.push_back(std::move(rampUp));
    if (fullEnd > fullBegin) {
      graph::Program main = repeat(fullEnd - fullBegin, "pipeline main");
      main.children.push_back(cycle(fullBegin));
      main.children.back().name = "pipeline cycle";
      into.push_back(std::move(main));
    }
    for (uint32_t c = std::max(fullBegin, fullEnd); c < total; ++c)
      rampDown.children.push_back(cycle(c));
    into.push_back(std::move(rampDown));
  };
  if (!optimizer) {
    pipeline(n, out.run.children);
    return out;
  }
  // Training: Repeat(batches per step) { pipeline of the accumulated
  // micro-batches; update } (PopART flushes the pipeline before each update).
  graph::Program step = repeat(config.batchesPerStep, "batches per step");
  pipeline(config.accumulationFactor, step.children);
  flatten(segments, kOptimizerStage, step.children);
  out.run.children.push_back(std::move(step));
  return out;
}

void pinCrossStageTensors(graph::DeviceGraph &g, const std::vector<Segment> &segments) {
  std::map<graph::TensorId, int64_t> firstStage;
  for (const Segment &seg : segments)
    for (const auto &p : seg.programs)
      touched(g, p, [&](graph::TensorId t) {
        auto [it, added] = firstStage.emplace(t, seg.stage);
        if (!added && it->second != seg.stage)
          g.tensor(t).persistent = true;
      });
}

void applyStepLayout(graph::DeviceGraph &g, const StepConfig &config, uint32_t stages) {
  g.replicationFactor = config.replicationFactor;
  g.batchesPerStep = config.batchesPerStep;
  g.accumulationFactor = config.accumulationFactor;
  g.pipelineStages = config.pipeline ? stages : 0;
  auto lead = [&](uint32_t batches) {
    Shape s;
    for (uint32_t d : {batches, config.accumulationFactor, config.replicationFactor})
      if (d > 1)
        s.push_back(d);
    return s;
  };
  auto join = [](Shape a, const Shape &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  for (auto &io : g.inputs)
    io.hostShape = join(lead(config.batchesPerStep), io.shape);
  std::set<std::string> names;
  for (auto &io : g.outputs) {
    names.insert(io.name);
    auto it = config.anchors.find(io.name);
    const Anchor a = it == config.anchors.end() ? Anchor{} : it->second;
    graph::HostStream &s = g.stream(io.stream);
    io.anchor = a.text();
    switch (a.kind) {
    case Anchor::Kind::All: io.hostShape = join(lead(config.batchesPerStep), io.shape); break;
    case Anchor::Kind::EveryN:
      if (config.batchesPerStep % a.n)
        fail("--anchor {}=EVERYN:{}: the period must divide --batches-per-step {} ({} = {} x {} + {})", io.name,
             a.n, config.batchesPerStep, config.batchesPerStep, a.n, config.batchesPerStep / a.n,
             config.batchesPerStep % a.n);
      io.hostShape = join(lead(config.batchesPerStep / a.n), io.shape);
      s.every = a.n;
      s.group = config.accumulationFactor;
      break;
    case Anchor::Kind::Final:
    case Anchor::Kind::Sum:
      io.hostShape = join(lead(1), io.shape);
      if (config.accumulationFactor > 1)
        io.hostShape.erase(io.hostShape.begin());
      s.every = config.iterations();
      s.group = 1;
      break;
    }
  }
  for (const auto &[name, a] : config.anchors)
    if (!names.count(name)) {
      std::string list;
      for (const auto &o : g.outputs)
        list += (list.empty() ? "" : ", ") + o.name;
      fail("--anchor {}={}: the model has no output '{}' (outputs: {})", name, a.text(), name, list);
    }
}

} // namespace popc::lib
