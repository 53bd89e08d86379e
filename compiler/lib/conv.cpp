// 2-D convolution (poplin-like planner). The output [N, M, OH, OW] is split
// into per-tile blocks of (batch items, one group, output channels, row band);
// each tile gathers the input rows its band needs and its weights, and runs
// one vertex per worker over slices of its output channels (or rows).
#include "compiler/lib/ops.h"
#include "compiler/lib/planner.h"
#include "compiler/lib/window.h"

#include "support/error.h"
#include "support/log.h"

#include <algorithm>

namespace popc::lib {

namespace {

struct ConvShape {
  int64_t n, c, h, w;  // input
  int64_t m, oh, ow;   // output channels and size
  int64_t groups, cg, mg; // groups, in/out channels per group
};

// Block sizes per tile: batch items, groups, output channels of a group, rows.
// Several groups per tile only with whole groups (ocb == channels per group),
// so a tile's output channels stay one contiguous range.
struct ConvPlan {
  int64_t nb = 1, gb = 1, ocb = 1, ohb = 1;
  uint64_t cost = UINT64_MAX;
};

ConvPlan planConv(const ConvShape &s, const Window2d &w, uint64_t es, const Lowering &L) {
  const auto &t = L.graph.target();
  const uint64_t tiles = L.numTiles(), workers = L.workers();
  const uint64_t macsPerOutput = uint64_t(s.cg * w.kernelH * w.kernelW);
  ConvPlan best, smallest;
  uint64_t bestMemory = UINT64_MAX;
  for (uint64_t nb : blockSizeCandidates(s.n, tiles))
    for (uint64_t gb : blockSizeCandidates(s.groups, tiles / ceilDiv(s.n, nb))) {
      const uint64_t outerBlocks = ceilDiv(s.n, nb) * ceilDiv(s.groups, gb);
      if (outerBlocks > tiles)
        continue;
      for (uint64_t ocb : blockSizeCandidates(s.mg, gb > 1 ? 1 : tiles / outerBlocks))
        for (uint64_t ohb : blockSizeCandidates(s.oh, tiles / (outerBlocks * ceilDiv(s.mg, ocb)))) {
          const uint64_t used = outerBlocks * ceilDiv(s.mg, ocb) * ceilDiv(s.oh, ohb);
          const uint64_t outputs = nb * gb * ocb * ohb * s.ow;
          if (used > tiles || (used > 1 && outputs * macsPerOutput < kMinMacsPerTile))
            continue;
          const uint64_t vertices = nb * gb * std::min<uint64_t>(ocb, workers);
          const uint64_t outputsPerVertex = outputs / vertices;
          const uint64_t compute = ceilDiv(vertices, workers) * dotCycles(outputsPerVertex, macsPerOutput);
          const uint64_t slabRows =
              std::min<uint64_t>(s.h, (ohb - 1) * w.strideH + (w.kernelH - 1) * w.dilationH + 1);
          const uint64_t inBytes = (nb * gb * s.cg * slabRows * s.w + gb * ocb * (macsPerOutput + 1)) * es;
          const uint64_t memory = inBytes + outputs * es;
          const uint64_t cost = compute + exchangeCycles(t, inBytes);
          const ConvPlan plan{int64_t(nb), int64_t(gb), int64_t(ocb), int64_t(ohb), cost};
          if (memory < bestMemory) {
            bestMemory = memory;
            smallest = plan;
          }
          if (memory <= t.bytesPerTile / 2 && cost < best.cost)
            best = plan;
        }
    }
  return best.cost == UINT64_MAX ? smallest : best;
}

void lowerConv(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  auto &dg = L.graph;
  const Value x = L.value(op.inputs[0]), wv = L.value(op.inputs[1]);
  std::optional<Value> bias;
  if (op.hasInput(2))
    bias = L.value(op.inputs[2]);
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  if (x.info.shape.size() != 4)
    fail("Conv '{}': only 2-D convolution (4-D input) is supported, input has rank {}", op.name,
         x.info.shape.size());
  ConvShape s;
  s.n = x.info.shape[0];
  s.c = x.info.shape[1];
  s.h = x.info.shape[2];
  s.w = x.info.shape[3];
  s.m = outInfo.shape[1];
  s.oh = outInfo.shape[2];
  s.ow = outInfo.shape[3];
  s.groups = op.attrs.getInt("group", 1);
  s.cg = s.c / s.groups;
  s.mg = s.m / s.groups;
  const Window2d w = window2d(op, g);
  const uint64_t es = x.elemSize();

  Value out = L.newValue(op.outputs[0], outInfo);
  L.bind(op.outputs[0], out);
  if (outInfo.elements() == 0)
    return;
  const ConvPlan plan = planConv(s, w, es, L);
  log::get("lib")->debug("{}: conv plan nb={} gb={} ocb={} ohb={} cost={}", op.name, plan.nb, plan.gb, plan.ocb,
                         plan.ohb, plan.cost);

  // A block's output channels are the contiguous range [c0, c1) (groups
  // g0..g1-1, channels oc0..oc1-1 of each group when it holds one group).
  struct Block {
    int64_t n0, n1, g0, g1, oc0, oc1, oh0, oh1;
    uint32_t tile;
  };
  std::vector<Block> blocks;
  std::vector<graph::Interval> mapping;
  uint32_t tile = L.allocTiles(ceilDiv(s.n, plan.nb) * ceilDiv(s.groups, plan.gb) * ceilDiv(s.mg, plan.ocb) *
                               ceilDiv(s.oh, plan.ohb));
  const uint64_t plane = uint64_t(s.oh * s.ow);
  for (int64_t n0 = 0; n0 < s.n; n0 += plan.nb)
    for (int64_t g0 = 0; g0 < s.groups; g0 += plan.gb)
      for (int64_t oc0 = 0; oc0 < s.mg; oc0 += plan.ocb)
        for (int64_t oh0 = 0; oh0 < s.oh; oh0 += plan.ohb) {
          Block b{n0, std::min(s.n, n0 + plan.nb), g0, std::min(s.groups, g0 + plan.gb),
                  oc0, std::min(s.mg, oc0 + plan.ocb), oh0, std::min(s.oh, oh0 + plan.ohb), tile++};
          for (int64_t n = b.n0; n < b.n1; ++n)
            for (int64_t g = b.g0; g < b.g1; ++g)
              for (int64_t oc = b.oc0; oc < b.oc1; ++oc) {
                const uint64_t base = uint64_t(n * s.m + g * s.mg + oc) * plane;
                mapping.push_back({(base + b.oh0 * s.ow) * es, (base + b.oh1 * s.ow) * es, b.tile});
              }
          blocks.push_back(b);
        }
  dg.setMapping(out.tensor, mapping);

  OpBuilder builder(L, op.name);
  const uint64_t filterElems = uint64_t(s.cg * w.kernelH * w.kernelW);
  for (const Block &b : blocks) {
    const int64_t ocb = b.oc1 - b.oc0, ohb = b.oh1 - b.oh0;
    const int64_t blockChannels = (b.g1 - b.g0) * ocb;
    const RowSlab slab = rowSlab(w, s.h, b.oh0, b.oh1);
    // Vertex slices: over output channels, or over rows for a single channel.
    const bool splitRows = ocb == 1;
    const auto bounds = splitEvenly(splitRows ? ohb : ocb, L.workers());
    for (int64_t n = b.n0; n < b.n1; ++n)
      for (int64_t g = b.g0; g < b.g1; ++g) {
        RunList slabRuns;
        for (int64_t c = 0; c < s.cg; ++c) {
          const uint64_t base = uint64_t((n * s.c + g * s.cg + c) * s.h + slab.lo) * s.w;
          slabRuns.add(base * es, uint64_t(slab.rows * s.w) * es);
        }
        const graph::FieldRef slabField =
            builder.gather(x.tensor, slabRuns, b.tile, fmt::format("x{}g{}", n, g));
        for (size_t v = 0; v + 1 < bounds.size(); ++v) {
          const int64_t oc0 = splitRows ? b.oc0 : b.oc0 + int64_t(bounds[v]);
          const int64_t oc1 = splitRows ? b.oc1 : b.oc0 + int64_t(bounds[v + 1]);
          const int64_t oh0 = splitRows ? b.oh0 + int64_t(bounds[v]) : b.oh0;
          const int64_t oh1 = splitRows ? b.oh0 + int64_t(bounds[v + 1]) : b.oh1;
          const RowSlab vslab = rowSlab(w, s.h, oh0, oh1);
          // A row slice with one input channel reads just its own sub-slab
          // (contiguous); otherwise it reads the tile's slab from its own offset.
          const bool subSlab = splitRows && s.cg == 1;
          const RowSlab &used = subSlab ? vslab : slab;
          const int64_t padTopLocal = used.padTopLocal - (subSlab ? 0 : (oh0 - b.oh0) * w.strideH);
          graph::FieldRef in = slabField;
          if (subSlab) {
            in.blockOffset += uint64_t(vslab.lo - slab.lo) * s.w * es;
            in.bytes = uint64_t(vslab.rows * s.w) * es;
          }
          std::vector<graph::FieldRef> fields{in};
          RunList wRuns;
          wRuns.add(uint64_t(g * s.mg + oc0) * filterElems * es, uint64_t(oc1 - oc0) * filterElems * es);
          fields.push_back(builder.gather(wv.tensor, wRuns, b.tile, "w"));
          if (bias) {
            RunList bRuns;
            bRuns.add(uint64_t(g * s.mg + oc0) * es, uint64_t(oc1 - oc0) * es);
            fields.push_back(builder.gather(bias->tensor, bRuns, b.tile, "b"));
          }
          // Output slice inside the tile block [nb][channels][ohb][OW].
          const int64_t channel = (g - b.g0) * ocb + (oc0 - b.oc0);
          const uint64_t outOffset =
              (uint64_t((n - b.n0) * blockChannels + channel) * ohb + uint64_t(oh0 - b.oh0)) * s.ow * es;
          fields.push_back({out.tensor, b.tile, outOffset, uint64_t((oc1 - oc0) * (oh1 - oh0) * s.ow) * es});

          codegen::ConvSpec spec;
          spec.dtype = x.info.dtype;
          spec.inChannels = uint32_t(s.cg);
          spec.outChannels = uint32_t(oc1 - oc0);
          spec.inHeight = uint32_t(used.rows);
          spec.inWidth = uint32_t(s.w);
          spec.inRowBegin = 0;
          spec.inRows = uint32_t(used.rows);
          spec.outRowBegin = 0;
          spec.outRows = uint32_t(oh1 - oh0);
          spec.outWidth = uint32_t(s.ow);
          spec.kernelH = uint32_t(w.kernelH);
          spec.kernelW = uint32_t(w.kernelW);
          spec.strideH = uint32_t(w.strideH);
          spec.strideW = uint32_t(w.strideW);
          spec.dilationH = uint32_t(w.dilationH);
          spec.dilationW = uint32_t(w.dilationW);
          spec.padTop = int32_t(padTopLocal);
          spec.padLeft = int32_t(w.padLeft);
          spec.hasBias = bias.has_value();
          builder.addVertex(spec, b.tile, std::move(fields));
        }
      }
  }
}

} // namespace

void registerConvLowerings(LoweringTable &t) { t["Conv"] = lowerConv; }

} // namespace popc::lib
