// 2-D convolution (poplin-like planner). The output [N, M, OH, OW] is split
// into per-tile blocks of (batch items, groups, output channels, row band) and,
// for wide layers, the input channels of a group into slices: each (block,
// slice) tile gathers the input rows and weights of its slice and computes a
// partial sum; a reduce step then adds the partials on the block's first tile
// (Poplibs' input-channel split). Splitting the input channels keeps wide
// layers from replicating their whole input onto every tile.
// ConvInteger is the same on int8/uint8 input and weights with an int32
// output; its zero points (constants) are compiled into the vertices.
#include "compiler/lib/ops.h"
#include "compiler/lib/partials.h"
#include "compiler/lib/planner.h"
#include "compiler/lib/window.h"

#include "support/error.h"
#include "support/log.h"

#include <algorithm>

namespace popc::lib {

namespace {

struct ConvShape {
  int64_t n, c, h, w;     // input
  int64_t m, oh, ow;      // output channels and size
  int64_t groups, cg, mg; // groups, in/out channels per group
};

// Block sizes per tile: batch items, groups, output channels of a group, rows,
// input channels of a group. Several groups per tile only with whole groups
// (ocb == channels per group, no input split), so a tile's output channels
// stay one contiguous range.
struct ConvPlan {
  int64_t nb = 1, gb = 1, ocb = 1, ohb = 1, icb = 1;
  uint64_t cost = UINT64_MAX;
};

// Elements each vertex of the conv's reduce sums at least (as first chosen; the
// matmul's reduce uses partials.h's smaller default).
constexpr uint64_t kConvReduceChunk = 64;

// The smallest plan by memory, kept in case no plan fits half a tile.
struct SmallestPlan {
  ConvPlan plan;
  uint64_t memory = UINT64_MAX;
};

// Element bytes of the input, the weights (and bias) and the output.
struct ElementSizes {
  uint64_t x = 4, w = 4, out = 4;
};

ConvPlan planConv(const ConvShape &s, const Window2d &w, const ElementSizes &es, const Lowering &L) {
  PlanChooser<ConvPlan> chooser;
  SmallestPlan smallest;
  const auto &t = L.graph.target();
  const uint64_t tiles = L.numTiles(), workers = L.workers();
  const uint64_t window = uint64_t(w.kernelH * w.kernelW);
  for (uint64_t nb : blockSizeCandidates(s.n, tiles))
    for (uint64_t gb : blockSizeCandidates(s.groups, tiles / ceilDiv(s.n, nb))) {
      const uint64_t outerBlocks = ceilDiv(s.n, nb) * ceilDiv(s.groups, gb);
      if (outerBlocks > tiles)
        continue;
      for (uint64_t ocb : blockSizeCandidates(s.mg, gb > 1 ? 1 : tiles / outerBlocks))
        for (uint64_t ohb : blockSizeCandidates(s.oh, tiles / (outerBlocks * ceilDiv(s.mg, ocb)))) {
          const uint64_t blocks = outerBlocks * ceilDiv(s.mg, ocb) * ceilDiv(s.oh, ohb);
          for (uint64_t icb : blockSizeCandidates(s.cg, gb > 1 ? 1 : tiles / blocks)) {
            const uint64_t slices = ceilDiv(s.cg, icb);
            const uint64_t used = blocks * slices;
            const uint64_t outputs = nb * gb * ocb * ohb * s.ow;
            if (used > tiles || (used > 1 && outputs * icb * window < kMinMacsPerTile))
              continue;
            const uint64_t vertices = nb * gb * std::min<uint64_t>(ocb, workers);
            const uint64_t compute = tileCycles(t, ceilDiv(vertices, workers) * dotCycles(outputs / vertices, icb * window));
            const uint64_t slabRows =
                std::min<uint64_t>(s.h, (ohb - 1) * w.strideH + (w.kernelH - 1) * w.dilationH + 1);
            const uint64_t slabBytes = nb * gb * icb * slabRows * s.w * es.x;
            const uint64_t weightBytes = gb * ocb * (icb * window + 1) * es.w;
            uint64_t inBytes = slabBytes + weightBytes;
            uint64_t memory = inBytes + outputs * es.out;
            uint64_t cost = compute + exchangeCycles(t, inBytes);
            // Per run the host copies every tile's input slab and the partial
            // sums of a split reduction. The weights are laid out once at load,
            // but each replica beyond the first uses up the tiles' budget for
            // laid-out constants (then later layers' weights travel every run).
            const uint64_t allWeights = uint64_t(s.m) * (uint64_t(s.cg) * window + 1) * es.w;
            uint64_t bytesMoved = used * slabBytes + (used * weightBytes > allWeights ? used * weightBytes - allWeights : 0);
            if (slices > 1) { // the reduce: partials move to the block's first tile and are summed
              const uint64_t partialBytes = (slices - 1) * outputs * es.out;
              // (The reduce's cycles as first estimated, below what the cycle model
              // charges; the exact partialReduceCycles moved ResNet-50 towards
              // replicated activations: 2 % fewer cycles, 15 % more host time.)
              cost += exchangeCycles(t, partialBytes) + 10 + ceilDiv(outputs, workers) * slices;
              memory += partialBytes;
              bytesMoved += blocks * partialBytes;
            }
            const ConvPlan plan{int64_t(nb), int64_t(gb), int64_t(ocb), int64_t(ohb), int64_t(icb), cost};
            if (memory < smallest.memory)
              smallest = {plan, memory};
            if (memory <= t.bytesPerTile / 2)
              chooser.add(plan, cost, bytesMoved);
          }
        }
    }
  return chooser.empty() ? smallest.plan : chooser.best();
}

// A block's output channels are the contiguous range of groups g0..g1-1 and,
// within each group, channels oc0..oc1-1; its first tile owns its output.
struct Block {
  int64_t n0, n1, g0, g1, oc0, oc1, oh0, oh1;
  uint32_t tile; // tile of input slice 0; slice j is on tile + j
  std::vector<graph::Interval> out; // output intervals (on `tile`), tensor order
};

struct ConvOp {
  const ir::Op &op;
  ConvShape s{};
  Window2d w;
  ConvPlan plan{};
  Value x, weights, out{};
  std::optional<Value> bias{};
  ElementSizes es{};
  int64_t slices = 1;
  std::optional<codegen::IntegerOperands> integer{}; // ConvInteger
};

std::vector<Block> mapOutput(const ConvOp &c, Lowering &L) {
  const ConvShape &s = c.s;
  const ConvPlan &p = c.plan;
  std::vector<Block> blocks;
  const uint64_t count = ceilDiv(s.n, p.nb) * ceilDiv(s.groups, p.gb) * ceilDiv(s.mg, p.ocb) * ceilDiv(s.oh, p.ohb);
  uint32_t tile = L.allocTiles(count * uint64_t(c.slices));
  const uint64_t plane = uint64_t(s.oh * s.ow), es = c.es.out;
  std::vector<graph::Interval> mapping;
  for (int64_t n0 = 0; n0 < s.n; n0 += p.nb)
    for (int64_t g0 = 0; g0 < s.groups; g0 += p.gb)
      for (int64_t oc0 = 0; oc0 < s.mg; oc0 += p.ocb)
        for (int64_t oh0 = 0; oh0 < s.oh; oh0 += p.ohb) {
          Block b{n0, std::min(s.n, n0 + p.nb), g0, std::min(s.groups, g0 + p.gb), oc0, std::min(s.mg, oc0 + p.ocb),
                  oh0, std::min(s.oh, oh0 + p.ohb), tile, {}};
          tile += uint32_t(c.slices);
          for (int64_t n = b.n0; n < b.n1; ++n)
            for (int64_t g = b.g0; g < b.g1; ++g)
              for (int64_t oc = b.oc0; oc < b.oc1; ++oc) {
                const uint64_t base = uint64_t(n * s.m + g * s.mg + oc) * plane;
                b.out.push_back({(base + b.oh0 * s.ow) * es, (base + b.oh1 * s.ow) * es, b.tile});
              }
          mapping.insert(mapping.end(), b.out.begin(), b.out.end());
          blocks.push_back(std::move(b));
        }
  L.graph.setMapping(c.out.tensor, mapping);
  return blocks;
}

// Convolution vertices of one block for input channels [ic0, ic1) of each
// group, writing `dst` (the output, or the partial-sum slice) on `tile`.
void addConvVertices(const ConvOp &c, const Block &b, int64_t ic0, int64_t ic1, uint32_t tile,
                     graph::TensorId dst, bool withBias, bool relu, OpBuilder &builder, Lowering &L) {
  const ConvShape &s = c.s;
  const Window2d &w = c.w;
  const uint64_t xEs = c.es.x, wEs = c.es.w, es = c.es.out;
  const uint64_t window = uint64_t(w.kernelH * w.kernelW);
  const int64_t icn = ic1 - ic0;
  const int64_t ocb = b.oc1 - b.oc0, ohb = b.oh1 - b.oh0;
  const int64_t blockChannels = (b.g1 - b.g0) * ocb;
  const RowSlab slab = rowSlab(w, s.h, b.oh0, b.oh1);
  // Vertex slices: over output channels, or over rows for a single channel.
  const bool splitRows = ocb == 1;
  const auto bounds = splitEvenly(splitRows ? ohb : ocb, L.workers());
  for (int64_t g = b.g0; g < b.g1; ++g) {
    // Weights and bias of each vertex slice, gathered once for all batch items.
    std::vector<graph::FieldRef> weightFields, biasFields;
    for (size_t v = 0; v + 1 < bounds.size(); ++v) {
      const int64_t oc0 = splitRows ? b.oc0 : b.oc0 + int64_t(bounds[v]);
      const int64_t oc1 = splitRows ? b.oc1 : b.oc0 + int64_t(bounds[v + 1]);
      RunList wRuns; // [oc][ic0:ic1][kh][kw]: one run per output channel (merged when whole)
      for (int64_t oc = oc0; oc < oc1; ++oc)
        wRuns.add((uint64_t((g * s.mg + oc) * s.cg + ic0) * window) * wEs, uint64_t(icn) * window * wEs);
      weightFields.push_back(builder.gather(c.weights.tensor, wRuns, tile, "w"));
      if (withBias) {
        RunList bRuns;
        bRuns.add(uint64_t(g * s.mg + oc0) * wEs, uint64_t(oc1 - oc0) * wEs);
        graph::FieldRef bias = builder.gather(c.bias->tensor, bRuns, tile, "b");
        // The bias is an optional field, present when its offset differs from
        // the weights' (below): bias and weights that are one tensor's same
        // bytes (views of it) would read as "no bias", so the bias gets a copy.
        if (bias.tensor == weightFields.back().tensor && bias.blockOffset == weightFields.back().blockOffset)
          bias = builder.gatherCopy(c.bias->tensor, bRuns, tile, "b");
        biasFields.push_back(bias);
      }
    }
    for (int64_t n = b.n0; n < b.n1; ++n) {
      RunList slabRuns;
      for (int64_t ic = ic0; ic < ic1; ++ic) {
        const uint64_t base = uint64_t((n * s.c + g * s.cg + ic) * s.h + slab.lo) * s.w;
        slabRuns.add(base * xEs, uint64_t(slab.rows * s.w) * xEs);
      }
      const graph::FieldRef slabField = builder.gather(c.x.tensor, slabRuns, tile, fmt::format("x{}g{}", n, g));
      for (size_t v = 0; v + 1 < bounds.size(); ++v) {
        const int64_t oc0 = splitRows ? b.oc0 : b.oc0 + int64_t(bounds[v]);
        const int64_t oc1 = splitRows ? b.oc1 : b.oc0 + int64_t(bounds[v + 1]);
        const int64_t oh0 = splitRows ? b.oh0 + int64_t(bounds[v]) : b.oh0;
        const int64_t oh1 = splitRows ? b.oh0 + int64_t(bounds[v + 1]) : b.oh1;
        const RowSlab vslab = rowSlab(w, s.h, oh0, oh1);
        // A row slice with one input channel reads just its own sub-slab
        // (contiguous); otherwise it reads the tile's slab from its own offset.
        const bool subSlab = splitRows && icn == 1;
        const RowSlab &used = subSlab ? vslab : slab;
        const int64_t padTopLocal = used.padTopLocal - (subSlab ? 0 : (oh0 - b.oh0) * w.strideH);
        graph::FieldRef in = slabField;
        if (subSlab) {
          in.blockOffset += uint64_t(vslab.lo - slab.lo) * s.w * xEs;
          in.bytes = uint64_t(vslab.rows * s.w) * xEs;
        }
        std::vector<graph::FieldRef> fields{in, weightFields[v]};
        if (withBias) {
          fields.push_back(biasFields[v]);
        } else if (c.bias) {
          // A slice that adds no bias passes its weights as the vertex's
          // optional bias field: the first slice's type serves it too (one
          // JIT-compiled function fewer per layer).
          graph::FieldRef standIn = weightFields[v];
          standIn.bytes = uint64_t(oc1 - oc0) * wEs;
          fields.push_back(standIn);
        }
        // Output slice inside the tile block [nb][channels][ohb][OW].
        const int64_t channel = (g - b.g0) * ocb + (oc0 - b.oc0);
        const uint64_t outOffset =
            (uint64_t((n - b.n0) * blockChannels + channel) * ohb + uint64_t(oh0 - b.oh0)) * s.ow * es;
        fields.push_back({dst, tile, outOffset, uint64_t((oc1 - oc0) * (oh1 - oh0) * s.ow) * es});

        codegen::ConvSpec spec;
        spec.dtype = c.out.info.dtype;
        spec.integer = c.integer;
        spec.halfPartials = L.halfPartials && spec.dtype == DType::F16;
        spec.inChannels = uint32_t(icn);
        spec.outChannels = uint32_t(oc1 - oc0);
        setSlabGeometry(spec, w, used.rows, s.w, oh1 - oh0, s.ow, padTopLocal);
        spec.hasBias = c.bias.has_value();
        spec.relu = relu;
        builder.addVertex(spec, tile, std::move(fields));
      }
    }
  }
}

// The output of the Relu that is the only consumer of `op`'s output (and that
// output is not a graph output), or nullptr. Its result is then the conv's.
const std::string *fusableRelu(const ir::Op &op, const ir::Graph &g) {
  const std::string &out = op.outputs[0];
  const std::vector<size_t> readers = g.consumers(out);
  if (readers.size() != 1 || std::count(g.outputs.begin(), g.outputs.end(), out))
    return nullptr;
  const ir::Op &reader = *g.ops()[readers[0]];
  if (reader.type != "Relu" || reader.ipu != op.ipu)
    return nullptr;
  return &reader.outputs[0];
}

void lowerConv(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  if (L.value(op.inputs[0]).info.shape.size() != 4) {
    if (op.type == "ConvInteger") // the pass decomposes these
      fail("ConvInteger '{}': only 2-D integer convolution has vertices", op.name);
    return lowerConvNd(op, g, L); // 1-D and 3-D: the codelet
  }
  ConvOp c{.op = op, .w = window2d(op, g), .x = L.value(op.inputs[0]), .weights = L.value(op.inputs[1])};
  if (op.type == "ConvInteger")
    c.integer = codegen::IntegerOperands{c.x.info.dtype, c.weights.info.dtype, constantZeroPoint(op, g, 2),
                                         constantZeroPoint(op, g, 3)};
  else if (op.hasInput(2))
    c.bias = L.value(op.inputs[2]);
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  const Shape &xs = c.x.info.shape;
  if (xs.size() != 4)
    fail("Conv '{}': only 2-D convolution (4-D input) is supported, input has rank {}", op.name, xs.size());
  ConvShape &s = c.s;
  s = {xs[0], xs[1], xs[2], xs[3], outInfo.shape[1], outInfo.shape[2], outInfo.shape[3],
       op.attrs.getInt("group", 1), 0, 0};
  s.cg = s.c / s.groups;
  s.mg = s.m / s.groups;
  c.out = L.newValue(op.outputs[0], outInfo);
  c.es = {c.x.elemSize(), c.weights.elemSize(), c.out.elemSize()};
  L.bind(op.outputs[0], c.out);
  if (outInfo.elements() == 0)
    return;
  c.plan = planConv(s, c.w, c.es, L);
  c.slices = int64_t(ceilDiv(uint64_t(s.cg), uint64_t(c.plan.icb)));
  log::get("lib")->debug("{}: conv plan nb={} gb={} ocb={} ohb={} icb={} cost={}", op.name, c.plan.nb, c.plan.gb,
                         c.plan.ocb, c.plan.ohb, c.plan.icb, c.plan.cost);
  const std::vector<Block> blocks = mapOutput(c, L);

  if (c.slices == 1) {
    // A Relu that is the only reader of this output runs inside the conv vertices.
    const std::string *relu = c.integer ? nullptr : fusableRelu(op, g);
    OpBuilder builder(L, op.name);
    for (const Block &b : blocks)
      addConvVertices(c, b, 0, s.cg, b.tile, c.out.tensor, c.bias.has_value(), relu != nullptr, builder, L);
    if (relu)
      L.bind(*relu, Value{c.out.tensor, g.tensor(*relu).info});
    return;
  }

  // Partial sums [slices][N, M, OH, OW]; slice j of a block sits on tile + j
  // with the same layout as the block's output.
  std::vector<PartialBlock> partialBlocks;
  for (const Block &b : blocks)
    partialBlocks.push_back({b.tile, b.out});
  const Value partials = newPartials(L, op.name + "/partials", outInfo, c.slices, partialBlocks);
  {
    OpBuilder builder(L, op.name);
    for (const Block &b : blocks)
      for (int64_t j = 0; j < c.slices; ++j)
        addConvVertices(c, b, j * c.plan.icb, std::min(s.cg, (j + 1) * c.plan.icb), b.tile + uint32_t(j),
                        partials.tensor, c.bias.has_value() && j == 0, false, builder, L);
  }
  reducePartials(L, op.name + "/reduce", partials, c.out, c.slices, partialBlocks, kConvReduceChunk);
}

} // namespace

void registerConvLowerings(LoweringTable &t) {
  t["Conv"] = lowerConv;
  t["ConvInteger"] = lowerConv;
  t["ConvTranspose"] = lowerConvTranspose;
}

} // namespace popc::lib
