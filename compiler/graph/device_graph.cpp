#include "compiler/graph/device_graph.h"

#include "support/error.h"

#include <algorithm>
#include <map>

namespace popc::graph {

TensorId DeviceGraph::addTensor(std::string name, DType dtype, Shape shape, TensorRole role) {
  DeviceTensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.bytes = uint64_t(numElements(shape)) * dtypeSize(dtype);
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
  std::map<uint32_t, uint64_t> blockSize;
  t.blockOffsets.clear();
  for (const Interval &iv : merged) {
    uint64_t &size = blockSize[iv.tile];
    t.blockOffsets.push_back(size);
    size += iv.size();
  }
  t.mapping = std::move(merged);
}

void DeviceGraph::mapToTile(TensorId id, uint32_t tile) {
  setMapping(id, {Interval{0, tensors_.at(id).bytes, tile}});
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
  std::map<uint32_t, uint64_t> sizes;
  for (const Interval &iv : tensors_.at(id).mapping)
    sizes[iv.tile] += iv.size();
  return {sizes.begin(), sizes.end()};
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
