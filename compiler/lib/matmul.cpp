// MatMul and Gemm (poplin-like). The planner splits the output [batch, M, N]
// into blocks and, for long products, K into slices: each (block, slice) tile
// computes a partial product and the block's first tile sums them (partials.h).
// It picks the split that minimises the estimated compute cycles of the
// busiest tile plus the cycles to exchange its operands. Splitting K keeps a
// wide layer from copying all of A's rows to every column block of B.
// Each tile's block is computed by up to one vertex per worker.
// MatMulInteger is the same problem on int8/uint8 operands with an int32
// output; its zero points (constants) are compiled into the vertices.
#include "compiler/lib/ops.h"
#include "compiler/lib/partials.h"
#include "compiler/lib/planner.h"

#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_registry.h"

#include "support/error.h"
#include "support/log.h"

#include <algorithm>

namespace popc::lib {

namespace {

struct Problem {
  std::string name;
  Value a, b, out;
  std::optional<Value> c; // Gemm bias, broadcast to [M, N]
  uint64_t batch = 1, m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  bool broadcastB = false; // one B matrix for all batches
  float alpha = 1, beta = 1;
  std::vector<uint64_t> aMatrix, bMatrix; // per batch: matrix index into A / B
  std::optional<codegen::IntegerOperands> integer; // MatMulInteger (A and B then int8/uint8)
};

struct Plan {
  uint64_t bb = 1, mb = 1, nb = 1, kb = 0; // block sizes (kb: K per slice)
  uint64_t cost = UINT64_MAX;
};

Plan choosePlan(const Problem &p, const Lowering &L) {
  const auto &t = L.graph.target();
  const uint64_t es = p.out.elemSize(), aEs = p.a.elemSize(), bEs = p.b.elemSize();
  const uint64_t tiles = L.numTiles(), workers = L.workers();
  uint64_t bestMemory = UINT64_MAX;
  Plan smallest; // fallback when nothing fits: least memory per tile
  PlanChooser<Plan> chooser;
  // Constant operands are laid out once at load; only the others travel per run.
  const bool constB = L.graph.tensor(p.b.tensor).role == graph::TensorRole::Constant;
  const bool constC = p.c && L.graph.tensor(p.c->tensor).role == graph::TensorRole::Constant;
  for (uint64_t bb : blockSizeCandidates(p.batch, tiles))
    for (uint64_t mb : blockSizeCandidates(p.m, tiles / ceilDiv(p.batch, bb)))
      for (uint64_t nb : blockSizeCandidates(p.n, tiles / (ceilDiv(p.batch, bb) * ceilDiv(p.m, mb)))) {
        const uint64_t blocks = ceilDiv(p.batch, bb) * ceilDiv(p.m, mb) * ceilDiv(p.n, nb);
        if (blocks > tiles)
          continue;
        for (uint64_t kb : blockSizeCandidates(p.k, tiles / blocks)) {
          const uint64_t slices = ceilDiv(p.k, kb), used = blocks * slices;
          if (used > tiles || (used > 1 && bb * mb * nb * kb < kMinMacsPerTile))
            continue;
          const uint64_t rowsPerWorker = bb > 1 ? ceilDiv(bb, workers) * mb : ceilDiv(mb, workers);
          const uint64_t compute = tileCycles(t, dotCycles(rowsPerWorker * nb, kb));
          const uint64_t aBytes = bb * mb * kb * aEs, bBytes = (p.broadcastB ? 1 : bb) * kb * nb * bEs;
          const uint64_t cBytes = p.c ? mb * nb * es : 0, outputs = bb * mb * nb;
          uint64_t memory = aBytes + bBytes + cBytes + outputs * es;
          // A constant B (or C) laid out at load is not exchanged in a run.
          const bool bAtLoad = constB && L.likelyLaidOutAtLoad(p.b, bBytes, used * bBytes);
          const bool cAtLoad = constC && L.likelyLaidOutAtLoad(*p.c, cBytes, blocks * cBytes);
          uint64_t cost = compute + exchangeCycles(t, aBytes + (bAtLoad ? 0 : bBytes) + (cAtLoad ? 0 : cBytes));
          // A constant B is laid out once at load, but its replicas use up the
          // tiles' budget for laid-out constants; any other B travels every run.
          const uint64_t allB = (p.broadcastB ? 1 : p.batch) * p.k * p.n * bEs;
          const uint64_t bTravel = constB ? (used * bBytes > allB ? used * bBytes - allB : 0) : used * bBytes;
          uint64_t bytesMoved = used * aBytes + blocks * (p.c && !constC ? cBytes : 0) + bTravel;
          if (slices > 1) { // the reduce: partials move to the block's first tile and are summed
            const uint64_t partialBytes = (slices - 1) * outputs * es;
            cost += partialReduceCycles(t, outputs, slices, es);
            memory += partialBytes;
            bytesMoved += blocks * partialBytes;
          }
          const Plan plan{bb, mb, nb, kb, cost};
          if (memory < bestMemory) {
            bestMemory = memory;
            smallest = plan;
          }
          if (memory <= t.bytesPerTile / 2)
            chooser.add(plan, cost, bytesMoved);
        }
      }
  return chooser.empty() ? smallest : chooser.best();
}

// Element offset of A[batch b][row][col] in stored layout.
uint64_t aOffset(const Problem &p, uint64_t b, uint64_t row, uint64_t col) {
  const uint64_t base = p.aMatrix[b] * p.m * p.k;
  return p.transA ? base + col * p.m + row : base + row * p.k + col;
}

// Vertices of one output block [b0,b1) x [m0,m1) x [n0,n1) for K slice [k0,k1)
// on `tile`, writing `dst` (the output, or the slice's partials). Only the first
// slice adds beta * C, so the slices sum to the whole product.
void addMatMulVertices(const Problem &p, uint64_t b0, uint64_t b1, uint64_t m0, uint64_t m1, uint64_t n0,
                       uint64_t n1, uint64_t k0, uint64_t k1, uint32_t tile, graph::TensorId dst,
                       OpBuilder &builder, Lowering &L) {
  const uint64_t es = p.out.elemSize(), aEs = p.a.elemSize(), bEs = p.b.elemSize();
  const uint64_t nb = n1 - n0, bb = b1 - b0, mb = m1 - m0, kb = k1 - k0;
  const bool withC = p.c.has_value() && k0 == 0;
  // B block: shared by every vertex on the tile.
  RunList bRuns;
  for (uint64_t b = b0; b < (p.broadcastB ? b0 + 1 : b1); ++b) {
    const uint64_t base = p.bMatrix[b] * p.k * p.n;
    if (p.transB)
      for (uint64_t n = n0; n < n1; ++n)
        bRuns.add((base + n * p.k + k0) * bEs, kb * bEs);
    else
      for (uint64_t kk = k0; kk < k1; ++kk)
        bRuns.add((base + kk * p.n + n0) * bEs, nb * bEs);
  }
  const graph::FieldRef bField = builder.gather(p.b.tensor, bRuns, tile, "B");

  // Vertices: split over batches when the block has several, else over rows.
  const bool splitBatch = bb > 1;
  const auto bounds = splitEvenly(splitBatch ? bb : mb, L.workers());
  for (size_t v = 0; v + 1 < bounds.size(); ++v) {
    const uint64_t vb0 = splitBatch ? b0 + bounds[v] : b0;
    const uint64_t vb1 = splitBatch ? b0 + bounds[v + 1] : b1;
    const uint64_t vm0 = splitBatch ? m0 : m0 + bounds[v];
    const uint64_t vm1 = splitBatch ? m1 : m0 + bounds[v + 1];
    const uint64_t rows = vm1 - vm0, vbatch = vb1 - vb0;

    RunList aRuns;
    for (uint64_t b = vb0; b < vb1; ++b) {
      if (p.transA)
        for (uint64_t kk = k0; kk < k1; ++kk)
          aRuns.add(aOffset(p, b, vm0, kk) * aEs, rows * aEs);
      else
        for (uint64_t m = vm0; m < vm1; ++m)
          aRuns.add(aOffset(p, b, m, k0) * aEs, kb * aEs);
    }
    std::vector<graph::FieldRef> fields{builder.gather(p.a.tensor, aRuns, tile, "A")};

    graph::FieldRef bf = bField;
    if (!p.broadcastB) {
      bf.blockOffset += (vb0 - b0) * kb * nb * bEs;
      bf.bytes = vbatch * kb * nb * bEs;
    }
    fields.push_back(bf);
    if (withC) {
      RunList cRuns;
      for (uint64_t m = vm0; m < vm1; ++m)
        addBroadcastRuns(cRuns, {int64_t(p.m), int64_t(p.n)}, p.c->info.shape, m * p.n + n0, m * p.n + n1, es);
      fields.push_back(builder.gather(p.c->tensor, cRuns, tile, "C"));
    }
    // Output rows of this vertex inside the tile block [bb][mb][nb].
    const uint64_t outOffset = ((vb0 - b0) * mb + (vm0 - m0)) * nb * es;
    fields.push_back({dst, tile, outOffset, vbatch * rows * nb * es});

    codegen::MatMulSpec spec;
    spec.dtype = p.out.info.dtype;
    spec.integer = p.integer;
    spec.halfPartials = L.halfPartials && spec.dtype == DType::F16;
    spec.batch = uint32_t(vbatch);
    spec.m = uint32_t(rows);
    spec.n = uint32_t(nb);
    spec.k = uint32_t(kb);
    spec.transA = p.transA;
    spec.transB = p.transB;
    spec.broadcastB = p.broadcastB || vbatch == 1;
    spec.hasC = withC;
    spec.alpha = p.alpha;
    spec.beta = p.beta;
    builder.addVertex(spec, tile, std::move(fields));
  }
}

void lowerProblem(const Problem &p, Lowering &L) {
  auto &g = L.graph;
  Plan plan = choosePlan(p, L);
  if (plan.kb == 0)
    plan.kb = p.k;
  const uint64_t es = p.out.elemSize();
  const uint64_t slices = std::max<uint64_t>(1, ceilDiv(p.k, plan.kb));
  log::get("lib")->debug("{}: matmul b={} m={} n={} k={} plan blocks {}x{}x{} k slices {}x{} cost {}", p.name,
                         p.batch, p.m, p.n, p.k, plan.bb, plan.mb, plan.nb, slices, plan.kb, plan.cost);

  struct Block {
    uint64_t b0, b1, m0, m1, n0, n1;
    uint32_t tile; // slice j of K is on tile + j
  };
  std::vector<Block> blocks;
  std::vector<PartialBlock> partialBlocks;
  std::vector<graph::Interval> mapping;
  uint32_t tile =
      L.allocTiles(ceilDiv(p.batch, plan.bb) * ceilDiv(p.m, plan.mb) * ceilDiv(p.n, plan.nb) * slices);
  for (uint64_t b0 = 0; b0 < p.batch; b0 += plan.bb)
    for (uint64_t m0 = 0; m0 < p.m; m0 += plan.mb)
      for (uint64_t n0 = 0; n0 < p.n; n0 += plan.nb) {
        Block blk{b0, std::min(p.batch, b0 + plan.bb), m0, std::min(p.m, m0 + plan.mb),
                  n0, std::min(p.n, n0 + plan.nb), tile};
        tile += uint32_t(slices);
        PartialBlock pb{blk.tile, {}};
        for (uint64_t b = blk.b0; b < blk.b1; ++b)
          for (uint64_t m = blk.m0; m < blk.m1; ++m) {
            const uint64_t e = (b * p.m + m) * p.n;
            pb.out.push_back({(e + blk.n0) * es, (e + blk.n1) * es, blk.tile});
          }
        mapping.insert(mapping.end(), pb.out.begin(), pb.out.end());
        partialBlocks.push_back(std::move(pb));
        blocks.push_back(blk);
      }
  g.setMapping(p.out.tensor, mapping);
  std::optional<Value> partials;
  if (slices > 1)
    partials = newPartials(L, p.name + "/partials", p.out.info, int64_t(slices), partialBlocks);

  {
    OpBuilder builder(L, p.name);
    for (const Block &blk : blocks)
      for (uint64_t j = 0; j < slices; ++j)
        addMatMulVertices(p, blk.b0, blk.b1, blk.m0, blk.m1, blk.n0, blk.n1, j * plan.kb,
                          std::min(p.k, (j + 1) * plan.kb), blk.tile + uint32_t(j),
                          partials ? partials->tensor : p.out.tensor, builder, L);
  }
  if (partials)
    reducePartials(L, p.name + "/reduce", *partials, p.out, int64_t(slices), partialBlocks);
}

// Index of each output batch's matrix in an operand with batch dims `dims`
// (numpy broadcasting against `outDims`).
std::vector<uint64_t> batchIndices(const Shape &outDims, const Shape &dims) {
  RunList runs;
  const uint64_t count = uint64_t(numElements(outDims));
  std::vector<uint64_t> index;
  if (outDims.empty())
    return {0};
  addBroadcastRuns(runs, outDims, dims, 0, count, 1);
  for (const Run &r : runs.runs())
    for (uint64_t i = 0; i < r.bytes; ++i)
      index.push_back(r.byte + i);
  return index;
}

void lowerMatMul(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  Problem p;
  p.name = op.name;
  p.a = L.value(op.inputs[0]);
  p.b = L.value(op.inputs[1]);
  Shape as = p.a.info.shape, bs = p.b.info.shape;
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  p.m = uint64_t(as[as.size() - 2]);
  p.k = uint64_t(as.back());
  p.n = uint64_t(bs.back());
  const Shape aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
  const Shape outBatch = ir::broadcastShapes(aBatch, bBatch);
  p.aMatrix = batchIndices(outBatch, aBatch);
  p.bMatrix = batchIndices(outBatch, bBatch);
  p.batch = p.aMatrix.size();
  p.broadcastB = numElements(bBatch) == 1;
  if (p.broadcastB && numElements(aBatch) == int64_t(p.batch)) {
    // [batch, M, K] x [K, N] is one [batch*M, K] x [K, N] product.
    p.m *= p.batch;
    p.batch = 1;
    p.aMatrix = {0};
    p.bMatrix = {0};
  }
  if (op.type == "MatMulInteger")
    p.integer = codegen::IntegerOperands{p.a.info.dtype, p.b.info.dtype, constantZeroPoint(op, g, 2),
                                         constantZeroPoint(op, g, 3)};
  p.out = L.newValue(op.outputs[0], g.tensor(op.outputs[0]).info);
  if (p.out.info.elements() > 0)
    lowerProblem(p, L);
  L.bind(op.outputs[0], p.out);
}

void lowerGemm(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  Problem p;
  p.name = op.name;
  p.a = L.value(op.inputs[0]);
  p.b = L.value(op.inputs[1]);
  const ir::GemmParams gp = ir::gemmParams(op, g);
  p.transA = gp.transA;
  p.transB = gp.transB;
  p.alpha = float(gp.alpha);
  p.beta = float(gp.beta);
  p.m = uint64_t(gp.M);
  p.k = uint64_t(gp.K);
  p.n = uint64_t(gp.N);
  p.aMatrix = p.bMatrix = {0};
  p.broadcastB = true;
  if (op.hasInput(2) && p.beta != 0.0f)
    p.c = L.value(op.inputs[2]);
  p.out = L.newValue(op.outputs[0], g.tensor(op.outputs[0]).info);
  if (p.out.info.elements() > 0)
    lowerProblem(p, L);
  L.bind(op.outputs[0], p.out);
}

} // namespace

int32_t constantZeroPoint(const ir::Op &op, const ir::Graph &g, size_t i) {
  if (!op.hasInput(i))
    return 0;
  const ir::Tensor &t = g.tensor(op.inputs[i]);
  if (t.kind != ir::TensorKind::Constant || t.info.elements() != 1)
    fail("{} '{}': zero point '{}' must be a scalar constant here (run the quantize-decomposition pass)", op.type,
         op.name, t.name);
  return int32_t(t.toInt64s()[0]);
}

void registerMatMulLowerings(LoweringTable &t) {
  t["MatMul"] = lowerMatMul;
  t["MatMulInteger"] = lowerMatMul;
  t["Gemm"] = lowerGemm;
}

} // namespace popc::lib
