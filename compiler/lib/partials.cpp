#include "compiler/lib/partials.h"
#include "compiler/lib/planner.h"

namespace popc::lib {

uint64_t partialReduceCycles(const graph::Target &t, uint64_t outputs, uint64_t slices, uint64_t es) {
  const uint64_t vertices = std::clamp<uint64_t>(ceilDiv(outputs, kMinReduceChunk), 1, t.workersPerTile);
  return exchangeCycles(t, (slices - 1) * outputs * es) + tileCycles(t, 10 + ceilDiv(outputs, vertices) * slices);
}

Value newPartials(Lowering &L, const std::string &name, const ir::TensorInfo &outInfo, int64_t slices,
                  const std::vector<PartialBlock> &blocks) {
  ir::TensorInfo info{outInfo.dtype, outInfo.shape};
  info.shape.insert(info.shape.begin(), slices);
  Value partials = L.newValue(name, info);
  const uint64_t outBytes = outInfo.bytes();
  std::vector<graph::Interval> mapping;
  for (const PartialBlock &b : blocks)
    for (int64_t j = 0; j < slices; ++j)
      for (const graph::Interval &iv : b.out)
        mapping.push_back({iv.begin + uint64_t(j) * outBytes, iv.end + uint64_t(j) * outBytes, b.tile + uint32_t(j)});
  L.graph.setMapping(partials.tensor, mapping);
  return partials;
}

void reducePartials(Lowering &L, const std::string &name, const Value &partials, const Value &out,
                    int64_t slices, const std::vector<PartialBlock> &blocks, uint64_t minChunk) {
  OpBuilder reduce(L, name);
  const uint64_t outBytes = out.info.bytes(), es = out.elemSize();
  for (const PartialBlock &b : blocks) {
    uint64_t blockBytes = 0;
    std::vector<graph::FieldRef> sliceFields;
    for (int64_t j = 0; j < slices; ++j) {
      RunList runs;
      for (const graph::Interval &iv : b.out)
        runs.add(iv.begin + uint64_t(j) * outBytes, iv.size());
      blockBytes = runs.totalBytes();
      sliceFields.push_back(reduce.gather(partials.tensor, runs, b.tile, "p" + std::to_string(j)));
    }
    const uint64_t elems = blockBytes / es;
    const auto bounds = splitEvenly(elems, L.workers(), minChunk);
    for (size_t v = 0; v + 1 < bounds.size(); ++v) {
      const uint64_t begin = bounds[v] * es, bytes = (bounds[v + 1] - bounds[v]) * es;
      std::vector<graph::FieldRef> fields;
      for (graph::FieldRef f : sliceFields) {
        f.blockOffset += begin;
        f.bytes = bytes;
        fields.push_back(f);
      }
      fields.push_back({out.tensor, b.tile, begin, bytes});
      codegen::ElementwiseSpec spec{ops::Elementwise::Sum, out.info.dtype, uint32_t(bounds[v + 1] - bounds[v]),
                                    std::vector<bool>(size_t(slices), false), {}};
      reduce.addVertex(spec, b.tile, std::move(fields));
    }
  }
}

} // namespace popc::lib
