// Softmax / LogSoftmax over one axis. Rows (the softmax axis made innermost)
// are spread over tiles whole; when the axis is not innermost the exchange
// gathers each row from its strided elements and scatters the result back.
#include "compiler/lib/ops.h"
#include "compiler/lib/planner.h"

#include "compiler/ir/op_attrs.h"

#include "support/error.h"

namespace popc::lib {

namespace {

void lowerSoftmax(const ir::Op &op, const ir::Graph &g, Lowering &L, bool log) {
  auto &dg = L.graph;
  const Value x = L.value(op.inputs[0]);
  const ir::TensorInfo &info = g.tensor(op.outputs[0]).info;
  const Shape &shape = x.info.shape;
  const int64_t rank = int64_t(shape.size());
  const bool legacy = ir::softmaxCoerces2D(g); // opset < 13: 2-D [prod(:axis), prod(axis:)]
  const int64_t axis = ir::softmaxAxis(op, g);
  const uint64_t es = x.elemSize();
  uint64_t rows = 1, cols = 1, inner = 1;
  if (legacy) {
    for (int64_t d = 0; d < rank; ++d)
      (d < axis ? rows : cols) *= uint64_t(shape[d]);
  } else {
    cols = uint64_t(shape[axis]);
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= uint64_t(shape[d]);
    rows = uint64_t(info.elements()) / std::max<uint64_t>(cols, 1);
  }
  Value out = L.newValue(op.outputs[0], info);
  L.bind(op.outputs[0], out);
  if (info.elements() == 0)
    return;

  // Row r = (outer o, inner i); its element j sits at (o*cols + j)*inner + i.
  auto rowRuns = [&](RunList &runs, uint64_t r0, uint64_t r1) {
    for (uint64_t r = r0; r < r1; ++r) {
      const uint64_t o = r / inner, i = r % inner;
      if (inner == 1)
        runs.add(o * cols * es, cols * es);
      else
        for (uint64_t j = 0; j < cols; ++j)
          runs.add(((o * cols + j) * inner + i) * es, es);
    }
  };

  const uint64_t rowsPerTile = std::max<uint64_t>(ceilDiv(rows, L.numTiles()), ceilDiv(256, cols));
  OpBuilder builder(L, op.name);
  std::vector<graph::Interval> mapping;
  std::vector<std::pair<uint64_t, uint64_t>> tileRows;
  const uint32_t firstTile = L.allocTiles(ceilDiv(rows, rowsPerTile));
  uint32_t tile = firstTile;
  for (uint64_t r0 = 0; r0 < rows; r0 += rowsPerTile) {
    tileRows.push_back({r0, std::min(rows, r0 + rowsPerTile)});
    if (inner == 1)
      mapping.push_back({r0 * cols * es, tileRows.back().second * cols * es, tile});
    ++tile;
  }
  if (inner == 1)
    dg.setMapping(out.tensor, mapping);
  else
    L.mapLike(out, x);

  tile = firstTile;
  for (auto [r0, r1] : tileRows) {
    const auto bounds = splitEvenly(r1 - r0, L.workers());
    for (size_t v = 0; v + 1 < bounds.size(); ++v) {
      const uint64_t a = r0 + bounds[v], z = r0 + bounds[v + 1];
      RunList runs;
      rowRuns(runs, a, z);
      std::vector<graph::FieldRef> fields{builder.gather(x.tensor, runs, tile, "x")};
      fields.push_back(builder.scatter(out.tensor, runs, tile, "y"));
      codegen::SoftmaxSpec spec{x.info.dtype, uint32_t(z - a), uint32_t(cols), log};
      builder.addVertex(spec, tile, std::move(fields));
    }
    ++tile;
  }
}

} // namespace

void registerSoftmaxLowerings(LoweringTable &t) {
  t["Softmax"] = [](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerSoftmax(op, g, L, false); };
  t["LogSoftmax"] = [](const ir::Op &op, const ir::Graph &g, Lowering &L) { lowerSoftmax(op, g, L, true); };
}


} // namespace popc::lib
