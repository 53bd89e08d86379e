// Pooling (popnn-like). Windows: the output [N, C, OH, OW] is split into
// per-tile blocks of (planes = n*C+c, row band), each gathering the input rows
// its band needs. Global pooling reduces each plane with a reduce vertex.
#include "compiler/lib/ops.h"
#include "compiler/lib/planner.h"
#include "compiler/lib/window.h"

#include "support/error.h"

#include <algorithm>

namespace popc::lib {

namespace {

struct PoolPlan {
  int64_t pb = 1, ohb = 1, owb = 1; // planes, output rows and output columns per tile
};

// Planes x output row bands per tile, the cheapest that fits half a tile.
// When planes x rows are fewer than the tiles, or no such plan fits, the
// output columns split too (each tile then gathers the input columns its
// band's windows read); when nothing fits at all, the plan needing the least
// memory, as conv and matmul do, never everything on one tile.
PoolPlan planPool(int64_t planes, int64_t oh, int64_t ow, int64_t inW, const Window2d &w,
                  uint64_t es, const Lowering &L) {
  const auto &t = L.graph.target();
  const uint64_t tiles = L.numTiles(), workers = L.workers();
  PoolPlan best{planes, oh, ow}, smallest{planes, oh, ow};
  uint64_t bestCost = UINT64_MAX, smallestMemory = UINT64_MAX;
  auto search = [&](const std::vector<uint64_t> &widths) {
    for (uint64_t owb : widths) {
      const uint64_t slabCols =
          std::min<uint64_t>(inW, (owb - 1) * w.strideW + (w.kernelW - 1) * w.dilationW + 1);
      const uint64_t colBlocks = ceilDiv(ow, owb);
      for (uint64_t pb : blockSizeCandidates(planes, tiles / colBlocks))
        for (uint64_t ohb : blockSizeCandidates(oh, tiles / (colBlocks * ceilDiv(planes, pb)))) {
          if (colBlocks * ceilDiv(planes, pb) * ceilDiv(oh, ohb) > tiles)
            continue;
          const uint64_t slabRows = (ohb - 1) * w.strideH + (w.kernelH - 1) * w.dilationH + 1;
          const uint64_t inBytes = pb * slabRows * (owb == uint64_t(ow) ? inW : slabCols) * es;
          const uint64_t compute = tileCycles(t, ceilDiv(pb, workers) * ohb * owb * (w.kernelH * w.kernelW + 2));
          const uint64_t cost = compute + exchangeCycles(t, inBytes), memory = inBytes + pb * ohb * owb * es;
          const PoolPlan plan{int64_t(pb), int64_t(ohb), int64_t(owb)};
          if (memory < smallestMemory) {
            smallestMemory = memory;
            smallest = plan;
          }
          if (memory <= t.bytesPerTile / 2 && cost < bestCost) {
            bestCost = cost;
            best = plan;
          }
        }
    }
  };
  search({uint64_t(ow)});
  // Column bands (an interval per row each) when whole rows cannot occupy
  // the tiles and a row is long work (a 1-D pool is one row per plane), or
  // when nothing fits; each band at least kMinMacsPerTile window taps.
  const uint64_t taps = uint64_t(w.kernelH * w.kernelW);
  const bool fewLongRows = uint64_t(planes) * uint64_t(oh) < tiles && uint64_t(ow) * taps >= 2 * kMinMacsPerTile;
  if ((bestCost == UINT64_MAX || fewLongRows) && ow > 1) {
    std::vector<uint64_t> widths;
    for (uint64_t owb : blockSizeCandidates(ow, tiles))
      if (owb * taps >= kMinMacsPerTile || bestCost == UINT64_MAX)
        widths.push_back(owb);
    search(widths);
  }
  return bestCost == UINT64_MAX ? smallest : best;
}

void lowerWindowPool(const ir::Op &op, const ir::Graph &g, Lowering &L, bool isMax) {
  auto &dg = L.graph;
  const Value x = L.value(op.inputs[0]);
  const bool wantIndices = op.outputs.size() > 1 && !op.outputs[1].empty();
  const bool floatData = x.info.dtype == DType::F32 || x.info.dtype == DType::F64;
  if (wantIndices || x.info.shape.size() != 4 || !floatData)
    return lowerPoolNd(op, g, L, isMax); // 1-D/3-D windows, Indices, integers: the codelet
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  const int64_t n = x.info.shape[0], c = x.info.shape[1], h = x.info.shape[2], wd = x.info.shape[3];
  const int64_t oh = outInfo.shape[2], ow = outInfo.shape[3];
  const Window2d w = window2d(op, g);
  const bool countIncludePad = ir::poolParams(op, g).countIncludePad;
  const uint64_t es = x.elemSize();
  const int64_t planes = n * c;

  Value out = L.newValue(op.outputs[0], outInfo);
  L.bind(op.outputs[0], out);
  if (outInfo.elements() == 0)
    return;
  const PoolPlan plan = planPool(planes, oh, ow, wd, w, es, L);

  OpBuilder builder(L, op.name);
  std::vector<graph::Interval> mapping;
  struct Block {
    int64_t p0, p1, oh0, oh1, ow0, ow1;
    uint32_t tile;
  };
  std::vector<Block> blocks;
  uint32_t tile = L.allocTiles(ceilDiv(planes, plan.pb) * ceilDiv(oh, plan.ohb) * ceilDiv(ow, plan.owb));
  for (int64_t p0 = 0; p0 < planes; p0 += plan.pb)
    for (int64_t oh0 = 0; oh0 < oh; oh0 += plan.ohb)
      for (int64_t ow0 = 0; ow0 < ow; ow0 += plan.owb) {
        Block b{p0, std::min(planes, p0 + plan.pb), oh0, std::min(oh, oh0 + plan.ohb),
                ow0, std::min(ow, ow0 + plan.owb), tile++};
        // Whole rows: one interval per plane; a column band: one per row (back to back on the tile).
        for (int64_t p = b.p0; p < b.p1; ++p)
          if (b.ow1 - b.ow0 == ow)
            mapping.push_back({uint64_t((p * oh + b.oh0) * ow) * es, uint64_t((p * oh + b.oh1) * ow) * es, b.tile});
          else
            for (int64_t r = b.oh0; r < b.oh1; ++r)
              mapping.push_back(
                  {uint64_t((p * oh + r) * ow + b.ow0) * es, uint64_t((p * oh + r) * ow + b.ow1) * es, b.tile});
        blocks.push_back(b);
      }
  dg.setMapping(out.tensor, mapping);

  // The column band as a window of its own: the input columns it reads, seen
  // from their first as column 0 (a transposed row slab).
  Window2d across = w;
  std::swap(across.kernelH, across.kernelW);
  std::swap(across.strideH, across.strideW);
  std::swap(across.dilationH, across.dilationW);
  std::swap(across.padTop, across.padLeft);
  for (const Block &b : blocks) {
    const RowSlab slab = rowSlab(w, h, b.oh0, b.oh1);
    const bool band = b.ow1 - b.ow0 != ow;
    const RowSlab cols = band ? rowSlab(across, wd, b.ow0, b.ow1) : RowSlab{0, wd, w.padLeft};
    const int64_t ohb = b.oh1 - b.oh0, owb = b.ow1 - b.ow0;
    const auto bounds = splitEvenly(b.p1 - b.p0, L.workers());
    for (size_t v = 0; v + 1 < bounds.size(); ++v) {
      const int64_t p0 = b.p0 + int64_t(bounds[v]), p1 = b.p0 + int64_t(bounds[v + 1]);
      RunList runs;
      for (int64_t p = p0; p < p1; ++p)
        if (band)
          for (int64_t r = slab.lo; r < slab.lo + slab.rows; ++r)
            runs.add(uint64_t((p * h + r) * wd + cols.lo) * es, uint64_t(cols.rows) * es);
        else
          runs.add(uint64_t((p * h + slab.lo) * wd) * es, uint64_t(slab.rows * wd) * es);
      std::vector<graph::FieldRef> fields{builder.gather(x.tensor, runs, b.tile, "x")};
      fields.push_back(
          {out.tensor, b.tile, uint64_t((p0 - b.p0) * ohb * owb) * es, uint64_t((p1 - p0) * ohb * owb) * es});
      codegen::PoolSpec spec;
      spec.dtype = x.info.dtype;
      spec.max = isMax;
      spec.countIncludePad = countIncludePad;
      spec.channels = uint32_t(p1 - p0);
      setSlabGeometry(spec, w, slab.rows, cols.rows, ohb, owb, slab.padTopLocal);
      spec.padLeft = int32_t(cols.padTopLocal);
      builder.addVertex(spec, b.tile, std::move(fields));
    }
  }
}

// GlobalAveragePool / GlobalMaxPool: one reduce row per (n, c) plane.
void lowerGlobalPool(const ir::Op &op, const ir::Graph &g, Lowering &L, const std::string &reduceOp) {
  auto &dg = L.graph;
  const Value x = L.value(op.inputs[0]);
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  const int64_t planes = x.info.shape.size() >= 2 ? x.info.shape[0] * x.info.shape[1] : 1;
  const int64_t cols = planes ? x.info.elements() / planes : 0;
  const uint64_t es = x.elemSize();
  Value out = L.newValue(op.outputs[0], outInfo);
  L.bind(op.outputs[0], out);
  if (planes == 0)
    return;
  // Enough planes per tile that each tile reads at least a few KiB.
  const uint64_t perTile = std::max<uint64_t>(ceilDiv(planes, L.numTiles()), ceilDiv(1024, std::max<int64_t>(cols, 1)));
  std::vector<graph::Interval> mapping;
  OpBuilder builder(L, op.name);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  uint32_t tile = L.allocTiles(ceilDiv(planes, perTile));
  for (int64_t p0 = 0; p0 < planes; p0 += int64_t(perTile)) {
    const int64_t p1 = std::min<int64_t>(planes, p0 + int64_t(perTile));
    mapping.push_back({uint64_t(p0) * es, uint64_t(p1) * es, tile});
    ranges.push_back({p0, p1});
    ++tile;
  }
  dg.setMapping(out.tensor, mapping);
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto [p0, p1] = ranges[i];
    const uint32_t t = mapping[i].tile;
    const auto bounds = splitEvenly(uint64_t(p1 - p0), L.workers());
    for (size_t v = 0; v + 1 < bounds.size(); ++v) {
      const int64_t a = p0 + int64_t(bounds[v]), z = p0 + int64_t(bounds[v + 1]);
      RunList runs;
      runs.add(uint64_t(a * cols) * es, uint64_t((z - a) * cols) * es);
      std::vector<graph::FieldRef> fields{builder.gather(x.tensor, runs, t, "x")};
      fields.push_back({out.tensor, t, uint64_t(a - p0) * es, uint64_t(z - a) * es});
      codegen::ReduceSpec spec{reduceOp, x.info.dtype, uint32_t(z - a), uint32_t(cols)};
      builder.addVertex(spec, t, std::move(fields));
    }
  }
}

} // namespace

void registerPoolLowerings(LoweringTable &t) {
  t["MaxPool"] = [](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerWindowPool(op, g, L, true); };
  t["AveragePool"] = [](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerWindowPool(op, g, L, false); };
  t["GlobalAveragePool"] = [](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerGlobalPool(op, g, L, "Mean"); };
  t["GlobalMaxPool"] = [](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerGlobalPool(op, g, L, "Max"); };
}

} // namespace popc::lib
