#include "compiler/driver/graph_profile.h"

#include <algorithm>
#include <map>
#include <set>

namespace popc::driver {

namespace {

using Json = nlohmann::ordered_json;

// Program id of each leaf step, walking main like the memory planner does.
void stepPrograms(const graph::Program &p, uint32_t &nextId, std::vector<uint32_t> &steps) {
  const uint32_t id = nextId++;
  switch (p.kind) {
  case graph::ProgramKind::Sequence:
  case graph::ProgramKind::Repeat:
  case graph::ProgramKind::If:
  case graph::ProgramKind::RepeatWhileTrue:
  case graph::ProgramKind::Switch:
    for (const graph::Program &c : p.children)
      stepPrograms(c, nextId, steps);
    break;
  default: steps.push_back(id); break;
  }
}

} // namespace

Json livenessJson(const graph::DeviceGraph &g, const graph::MemoryPlan &plan) {
  const uint32_t numSteps = plan.numSteps, numTiles = g.target().numTiles();
  std::vector<uint32_t> programOfStep;
  uint32_t nextId = 0;
  stepPrograms(g.main(), nextId, programOfStep);

  struct Block {
    uint32_t first, last;
    uint64_t bytes;
  };
  std::vector<std::vector<Block>> byTile(numTiles);
  std::vector<std::pair<uint64_t, std::string>> alwaysLive;
  struct Var {
    uint64_t bytes;
    std::string name;
    uint32_t first, last;
  };
  std::vector<Var> vars;
  uint64_t alwaysLiveBytes = 0;
  std::vector<int64_t> countDiff(numSteps + 2, 0);
  for (graph::TensorId t = 0; t < g.tensors().size(); ++t) {
    const graph::DeviceTensor &dt = g.tensor(t);
    if (!dt.bytes)
      continue;
    auto [first, last] = plan.liveSteps.at(t);
    if (first >= numSteps && numSteps)
      continue; // read only by the load program: not live while main runs
    if (first == 0 && last >= numSteps) {
      alwaysLive.push_back({dt.bytes, dt.name});
      alwaysLiveBytes += dt.bytes;
      continue;
    }
    last = std::min(last, numSteps ? numSteps - 1 : 0);
    vars.push_back({dt.bytes, dt.name, first, last});
    countDiff[first]++;
    countDiff[last + 1]--;
    for (auto [tile, size] : g.blockSizes(t))
      byTile[tile].push_back({first, last, size});
  }
  std::vector<uint64_t> stepBytes(numSteps, 0), stepMax(numSteps, 0), stepMaxTile(numSteps, 0);
  std::vector<int64_t> diff(numSteps + 1);
  for (uint32_t tile = 0; tile < numTiles; ++tile) {
    if (byTile[tile].empty())
      continue;
    std::fill(diff.begin(), diff.end(), 0);
    for (const Block &b : byTile[tile]) {
      diff[b.first] += b.bytes;
      diff[b.last + 1] -= b.bytes;
    }
    int64_t live = 0;
    for (uint32_t s = 0; s < numSteps; ++s) {
      live += diff[s];
      stepBytes[s] += live;
      if (uint64_t(live) > stepMax[s])
        stepMax[s] = live, stepMaxTile[s] = tile;
    }
  }
  // Live variables by size (largest first, then name), swept over the steps:
  // a variable enters at its first step and leaves after its last.
  std::vector<std::vector<uint32_t>> enter(numSteps + 2), leave(numSteps + 2);
  for (uint32_t i = 0; i < vars.size(); ++i) {
    enter[vars[i].first].push_back(i);
    leave[vars[i].last + 1].push_back(i);
  }
  auto bySize = [&](uint32_t a, uint32_t b) {
    return std::tie(vars[b].bytes, vars[a].name, a) < std::tie(vars[a].bytes, vars[b].name, b);
  };
  std::set<uint32_t, decltype(bySize)> live(bySize);
  std::sort(alwaysLive.begin(), alwaysLive.end(),
            [](const auto &a, const auto &b) { return a.second < b.second; });

  Json j;
  j["numSteps"] = numSteps;
  j["alwaysLiveBytes"] = alwaysLiveBytes;
  j["alwaysLiveVariables"] = Json::array();
  for (const auto &[bytes, name] : alwaysLive)
    j["alwaysLiveVariables"].push_back({{"name", name}, {"bytes", bytes}});
  uint64_t maxLive = 0;
  j["steps"] = Json::array();
  int64_t count = 0;
  for (uint32_t s = 0; s < numSteps; ++s) {
    count += countDiff[s];
    maxLive = std::max(maxLive, stepBytes[s]);
    for (uint32_t i : leave[s])
      live.erase(i);
    for (uint32_t i : enter[s])
      live.insert(i);
    Json largest = Json::array();
    for (auto it = live.begin(); it != live.end() && largest.size() < 5; ++it)
      largest.push_back({{"name", vars[*it].name}, {"bytes", vars[*it].bytes}});
    j["steps"].push_back({{"step", s},
                          {"program", s < programOfStep.size() ? programOfStep[s] : 0},
                          {"liveBytes", stepBytes[s]},
                          {"maxTileLiveBytes", stepMax[s]},
                          {"maxTile", stepMaxTile[s]},
                          {"numLiveVariables", count},
                          {"largestLiveVariables", largest}});
  }
  j["maxLiveBytes"] = alwaysLiveBytes + maxLive;
  return j;
}

Json irJson(const ir::Graph &g) {
  Json j{{"inputs", g.inputs}, {"outputs", g.outputs}, {"ops", Json::array()}};
  for (const auto &op : g.ops())
    j["ops"].push_back({{"name", op->name}, {"type", op->type}, {"inputs", op->inputs}, {"outputs", op->outputs}});
  return j;
}

} // namespace popc::driver
