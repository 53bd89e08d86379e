#include "compiler/graph/device_graph.h"

#include "support/error.h"

#include <algorithm>
#include <numeric>

namespace popc::graph {

TensorId DeviceGraph::addTensor(std::string name, DType dtype, Shape shape, TensorRole role) {
  DeviceTensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.bytes = uint64_t(numElements(shape)) * dtypeSize(dtype);
  if (t.bytes > kMaxTensorBytes)
    fail("tensor '{}' needs {} bytes: a device tensor holds at most 4 GiB (byte offsets are 32-bit; one IPU "
         "has 0.9 GiB of tile memory); split it in the model (e.g. an embedding table into several Gathers)",
         t.name, t.bytes);
  t.shape = std::move(shape);
  t.role = role;
  tensors_.push_back(std::move(t));
  return TensorId(tensors_.size() - 1);
}

void DeviceGraph::setMapping(TensorId id, std::vector<Interval> mapping) {
  DeviceTensor &t = tensors_.at(id);
  std::sort(mapping.begin(), mapping.end(),
            [](const Interval &a, const Interval &b) { return a.begin < b.begin; });
  uint64_t next = 0;
  std::vector<Interval> merged;
  for (const Interval &iv : mapping) {
    POPC_ASSERT(iv.begin == next && iv.end > iv.begin && iv.tile < target_.numTiles());
    next = iv.end;
    if (!merged.empty() && merged.back().tile == iv.tile && merged.back().end == iv.begin)
      merged.back().end = iv.end;
    else
      merged.push_back(iv);
  }
  POPC_ASSERT(next == t.bytes);
  // Interval i's offset in its tile's block: the bytes of the tile's earlier
  // intervals (intervals in tile order, then tensor order; no map per tensor).
  t.blockOffsets.assign(merged.size(), 0);
  if (merged.size() > 1) {
    std::vector<uint32_t> order(merged.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return merged[a].tile < merged[b].tile; });
    uint64_t size = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      if (k > 0 && merged[order[k]].tile != merged[order[k - 1]].tile)
        size = 0;
      t.blockOffsets[order[k]] = size;
      size += merged[order[k]].size();
    }
  }
  t.mapping = std::move(merged);
}

void DeviceGraph::mapToTile(TensorId id, uint32_t tile) {
  // setMapping's result for one interval, without its sorting and merging:
  // a large CNN maps hundreds of thousands of per-tile temporaries this way.
  DeviceTensor &t = tensors_.at(id);
  POPC_ASSERT(t.bytes > 0 && tile < target_.numTiles());
  t.mapping.assign(1, Interval{0, t.bytes, tile});
  t.blockOffsets.assign(1, 0);
}

uint32_t linearTileCount(uint64_t elems, uint32_t numTiles, uint64_t grainElems, uint64_t minElemsPerTile) {
  grainElems = std::max<uint64_t>(grainElems, 1);
  const uint64_t grains = (elems + grainElems - 1) / grainElems;
  const uint64_t minGrains = std::max<uint64_t>(1, (minElemsPerTile + grainElems - 1) / grainElems);
  const uint64_t tiles = std::min<uint64_t>(numTiles, std::max<uint64_t>(1, grains / minGrains));
  // Whole grains per tile may leave the last tiles empty: count the used ones.
  const uint64_t grainsPerTile = (grains + tiles - 1) / std::max<uint64_t>(tiles, 1);
  return uint32_t(std::max<uint64_t>(1, (grains + grainsPerTile - 1) / std::max<uint64_t>(grainsPerTile, 1)));
}

void DeviceGraph::mapLinearly(TensorId id, uint32_t firstTile, uint32_t numTiles,
                              uint64_t grainElems, uint64_t minElemsPerTile) {
  const DeviceTensor &t = tensors_.at(id);
  const uint64_t elemSize = dtypeSize(t.dtype);
  const uint64_t elems = t.bytes / elemSize;
  grainElems = std::max<uint64_t>(grainElems, 1);
  const uint64_t grains = (elems + grainElems - 1) / grainElems;
  const uint64_t minGrains = std::max<uint64_t>(1, (minElemsPerTile + grainElems - 1) / grainElems);
  uint64_t tiles = std::min<uint64_t>(numTiles, std::max<uint64_t>(1, grains / minGrains));
  const uint64_t grainsPerTile = (grains + tiles - 1) / tiles;
  std::vector<Interval> mapping;
  for (uint64_t i = 0, g = 0; g < grains; ++i, g += grainsPerTile) {
    const uint64_t beginElem = g * grainElems;
    const uint64_t endElem = std::min(elems, (g + grainsPerTile) * grainElems);
    mapping.push_back({beginElem * elemSize, endElem * elemSize, uint32_t(firstTile + i)});
  }
  setMapping(id, std::move(mapping));
}

std::pair<uint32_t, uint64_t> DeviceGraph::locate(TensorId id, uint64_t byte) const {
  const DeviceTensor &t = tensors_.at(id);
  auto it = std::upper_bound(t.mapping.begin(), t.mapping.end(), byte,
                             [](uint64_t b, const Interval &iv) { return b < iv.begin; });
  POPC_ASSERT(it != t.mapping.begin());
  --it;
  POPC_ASSERT(byte < it->end);
  return {it->tile, t.blockOffsets[it - t.mapping.begin()] + (byte - it->begin)};
}

std::vector<std::pair<uint32_t, uint64_t>> DeviceGraph::blockSizes(TensorId id) const {
  // A sorted vector, not a map: this runs for every one of a large model's
  // hundreds of thousands of tensors, most of them on one tile.
  std::vector<std::pair<uint32_t, uint64_t>> sizes;
  const std::vector<Interval> &mapping = tensors_.at(id).mapping;
  sizes.reserve(mapping.size());
  for (const Interval &iv : mapping)
    sizes.emplace_back(iv.tile, iv.size());
  std::sort(sizes.begin(), sizes.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
  size_t kept = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (kept > 0 && sizes[kept - 1].first == sizes[i].first)
      sizes[kept - 1].second += sizes[i].second;
    else
      sizes[kept++] = sizes[i];
  }
  sizes.resize(kept);
  return sizes;
}

uint32_t DeviceGraph::addComputeSet(std::string name) {
  computeSets_.push_back({std::move(name), {}});
  return uint32_t(computeSets_.size() - 1);
}

uint32_t DeviceGraph::addExchange(std::string name) {
  exchanges_.push_back({std::move(name), {}});
  return uint32_t(exchanges_.size() - 1);
}

uint32_t DeviceGraph::addStream(std::string name, TensorId tensor, StreamDirection dir) {
  streams_.push_back({std::move(name), tensor, dir});
  return uint32_t(streams_.size() - 1);
}

} // namespace popc::graph
