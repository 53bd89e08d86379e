#include "compiler/graph/memory_plan.h"

#include "support/error.h"
#include "support/parallel.h"
#include "support/log.h"

#include <algorithm>
#include <map>

namespace popc::graph {

namespace {

constexpr uint64_t kAlign = 8;
uint64_t alignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

struct LiveRange {
  uint32_t first = UINT32_MAX, last = 0;
  void touch(uint32_t step) {
    first = std::min(first, step);
    last = std::max(last, step);
  }
  bool used() const { return first != UINT32_MAX; }
};

// Numbers every step of the program tree in execution order and records the
// steps at which each tensor is touched. Tensors touched inside a Repeat stay
// live for the whole Repeat.
class LivenessWalker {
public:
  explicit LivenessWalker(const DeviceGraph &g) : g_(g), ranges_(g.tensors().size()) {}

  // Main's steps are numbered first, then the load program's: the interval
  // order does not matter to the allocator, only which ranges overlap.
  std::vector<LiveRange> run() {
    walk(g_.main());
    mainSteps_ = step_;
    walk(g_.load());
    for (size_t t = 0; t < ranges_.size(); ++t) {
      const DeviceTensor &dt = g_.tensors()[t];
      if (dt.role == TensorRole::Constant && !dt.filledAtLoad && ranges_[t].used() &&
          ranges_[t].first >= mainSteps_) {
        // Read only while loading (laid out elsewhere for its consumers): its
        // bytes are free for main's values afterwards. All such constants are
        // written before the load program runs, so they live through all of it.
        ranges_[t] = {mainSteps_, step_};
      } else if (dt.role == TensorRole::Constant || dt.persistent || !ranges_[t].used()) {
        // Constants are loaded before the program and live throughout.
        ranges_[t] = {0, step_};
      }
    }
    return ranges_;
  }
  uint32_t steps() const { return mainSteps_; }

private:
  void walk(const Program &p) {
    switch (p.kind) {
    case ProgramKind::Sequence:
      for (const Program &c : p.children)
        walk(c);
      break;
    case ProgramKind::Repeat:
    case ProgramKind::If:
    case ProgramKind::RepeatWhileTrue:
    case ProgramKind::Switch: {
      // Control flow: everything touched inside stays live over the whole
      // construct (a loop body runs again; branches are numbered one after another).
      const uint32_t start = step_;
      std::vector<LiveRange> before = ranges_;
      for (const Program &c : p.children)
        walk(c);
      for (size_t t = 0; t < ranges_.size(); ++t)
        if (ranges_[t].used() && (!before[t].used() || ranges_[t].last != before[t].last)) {
          ranges_[t].touch(start);
          ranges_[t].touch(step_);
        }
      if (p.kind != ProgramKind::Repeat) { // the predicate is read at both ends
        ranges_[p.tensor].touch(start);
        ranges_[p.tensor].touch(step_);
      }
      break;
    }
    case ProgramKind::Execute:
    case ProgramKind::Exchange:
      forEachStepTensor(g_, p, [&](TensorId t) { ranges_[t].touch(step_); });
      ++step_;
      break;
    case ProgramKind::StreamCopy:
      ranges_[g_.streams()[p.index].tensor].touch(step_);
      ++step_;
      break;
    case ProgramKind::PrintTensor:
      ranges_[p.tensor].touch(step_);
      ++step_;
      break;
    case ProgramKind::Call:
    case ProgramKind::Sync:
      ++step_;
      break;
    }
  }

  const DeviceGraph &g_;
  std::vector<LiveRange> ranges_;
  uint32_t step_ = 0, mainSteps_ = 0;
};

struct Block {
  TensorId tensor;
  uint64_t size;
  LiveRange live;
};

struct Placed {
  uint64_t offset, size;
  uint32_t last;
};

// Greedy first-fit in order of first use (a classic offline interval allocator).
uint64_t placeBlocks(std::vector<Block> &blocks, std::vector<uint64_t> &offsets) {
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Block &x = blocks[a], &y = blocks[b];
    if (x.live.first != y.live.first)
      return x.live.first < y.live.first;
    if (x.size != y.size)
      return x.size > y.size;
    return x.tensor < y.tensor;
  });
  offsets.assign(blocks.size(), 0);
  std::vector<Placed> active; // sorted by offset
  uint64_t peak = 0;
  for (size_t idx : order) {
    const Block &b = blocks[idx];
    std::erase_if(active, [&](const Placed &p) { return p.last < b.live.first; });
    uint64_t candidate = 0;
    auto it = active.begin();
    for (; it != active.end(); ++it) {
      if (it->offset >= candidate + b.size)
        break;
      candidate = std::max(candidate, it->offset + it->size);
    }
    active.insert(it, Placed{candidate, b.size, b.live.last});
    offsets[idx] = candidate;
    peak = std::max(peak, candidate + b.size);
  }
  return peak;
}

std::string outOfMemoryReport(const DeviceGraph &g, const std::vector<uint64_t> &used,
                              const std::vector<std::vector<Block>> &tileBlocks) {
  const uint64_t limit = g.target().bytesPerTile;
  std::vector<uint32_t> over;
  for (uint32_t t = 0; t < used.size(); ++t)
    if (used[t] > limit)
      over.push_back(t);
  std::stable_sort(over.begin(), over.end(), [&](uint32_t a, uint32_t b) { return used[a] > used[b]; });
  std::string report = fmt::format(
      "out of memory: {} of {} tiles exceed the {} bytes per tile of {} (worst tiles below). "
      "Fix: a smaller batch (--input-shape), more tiles (--tiles-per-ipu, if reduced), or more IPUs "
      "(--auto-shard N, or --num-ipus with __ipu_number attributes on the model's nodes)",
      over.size(), used.size(), limit, g.target().arch);
  for (size_t i = 0; i < std::min<size_t>(over.size(), 5); ++i) {
    const uint32_t t = over[i];
    std::vector<Block> blocks = tileBlocks[t];
    std::stable_sort(blocks.begin(), blocks.end(), [](const Block &a, const Block &b) { return a.size > b.size; });
    report += fmt::format("\n  tile {}: {} bytes ({:.0f}% of {}); largest tensors:", t, used[t],
                          100.0 * double(used[t]) / double(limit), limit);
    for (size_t j = 0; j < std::min<size_t>(blocks.size(), 3); ++j)
      report += fmt::format(" {} ({} bytes){}", g.tensor(blocks[j].tensor).name, blocks[j].size,
                            j + 1 < std::min<size_t>(blocks.size(), 3) ? "," : "");
  }
  return report;
}

} // namespace

uint32_t MemoryPlan::base(TensorId tensor, uint32_t tile) const {
  const auto &v = bases.at(tensor);
  auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(tile, uint32_t(0)));
  POPC_ASSERT(it != v.end() && it->first == tile);
  return it->second;
}

std::pair<uint32_t, uint32_t> MemoryPlan::address(const DeviceGraph &g, TensorId tensor,
                                                  uint64_t byte) const {
  auto [tile, blockOffset] = g.locate(tensor, byte);
  return {tile, uint32_t(base(tensor, tile) + blockOffset)};
}

MemoryPlan planMemory(const DeviceGraph &graph) {
  LivenessWalker walker(graph);
  const std::vector<LiveRange> live = walker.run();
  const uint32_t numTiles = graph.target().numTiles();
  std::vector<std::vector<Block>> tileBlocks(numTiles);
  for (TensorId t = 0; t < graph.tensors().size(); ++t) {
    POPC_ASSERT(graph.isMapped(t) || graph.tensor(t).bytes == 0);
    for (auto [tile, size] : graph.blockSizes(t))
      tileBlocks[tile].push_back({t, alignUp(size), live[t]});
  }

  MemoryPlan plan;
  plan.tileBytesUsed.assign(numTiles, 0);
  plan.bases.resize(graph.tensors().size());
  // Tiles are placed independently (on every core), then their bases are
  // recorded in tile order.
  std::vector<std::vector<uint64_t>> offsets(numTiles);
  parallelFor(numTiles, [&](size_t tile) { plan.tileBytesUsed[tile] = placeBlocks(tileBlocks[tile], offsets[tile]); });
  bool overBudget = false;
  for (uint32_t tile = 0; tile < numTiles; ++tile) {
    overBudget |= plan.tileBytesUsed[tile] > graph.target().bytesPerTile;
    for (size_t i = 0; i < offsets[tile].size(); ++i)
      plan.bases[tileBlocks[tile][i].tensor].push_back({tile, uint32_t(offsets[tile][i])});
  }
  if (overBudget)
    throw Error(outOfMemoryReport(graph, plan.tileBytesUsed, tileBlocks));
  for (auto &v : plan.bases)
    std::sort(v.begin(), v.end());
  for (const LiveRange &r : live)
    plan.liveSteps.push_back({r.first, r.last});
  plan.numSteps = walker.steps();
  return plan;
}

} // namespace popc::graph
