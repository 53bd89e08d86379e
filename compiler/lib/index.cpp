// Lowerings of ops driven by run-time indices (TopK, OneHot, ScatterElements,
// and Gather/GatherElements when their indices are only known at run time).
// Their vertices are codelets (compiler/codelets).
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/lib/ops.h"
#include "compiler/lib/planner.h"
#include "compiler/lib/rows.h"

#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include "support/error.h"

#include <fmt/format.h>

namespace popc::lib {

namespace {

using codegen::FieldAccess;
using ir::detail::shortDType;

std::string indexSuffix(const Value &indices) { return indices.info.dtype == DType::I32 ? "i32" : "i64"; }


// Shape padded to the codelets' 8 dims.
std::vector<int64_t> dims8(const Shape &shape) {
  POPC_ASSERT(shape.size() <= 8);
  std::vector<int64_t> d(shape.begin(), shape.end());
  d.resize(8, 1);
  return d;
}

void lowerTopK(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const Value x = L.value(op.inputs[0]);
  const int64_t rank = int64_t(x.info.shape.size());
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", -1), rank);
  const int64_t k = ir::topKCount(op, g);
  const bool largest = op.attrs.getInt("largest", 1) != 0;
  Value values = L.newValue(op.outputs[0], g.tensor(op.outputs[0]).info);
  Value indices = L.newValue(op.outputs[1], g.tensor(op.outputs[1]).info);
  L.bind(op.outputs[0], values);
  L.bind(op.outputs[1], indices);
  const uint64_t cols = uint64_t(x.info.shape[size_t(axis)]);
  const uint64_t rows = cols ? uint64_t(x.info.elements()) / cols : 0;
  if (k == 0 || rows == 0)
    return;
  const auto perm = axesLastPerm(size_t(rank), {axis});
  const DType t = x.info.dtype;
  lowerRowWise(L, op.name, {RowOperand{x, perm, cols}},
               {RowOperand{values, perm, uint64_t(k)}, RowOperand{indices, perm, uint64_t(k)}}, rows,
               [&](uint32_t n) {
                 codegen::CodeletSpec spec;
                 spec.function = "popc_topk_" + shortDType(t);
                 spec.name = fmt::format("TopK_r{}_c{}_k{}_{}", n, cols, k, shortDType(t));
                 spec.fields = {codeletField("in", n * cols, t, FieldAccess::Input),
                                codeletField("values", n * uint64_t(k), t, FieldAccess::Output),
                                codeletField("indices", n * uint64_t(k), DType::I64, FieldAccess::Output)};
                 spec.args = {int64_t(n), int64_t(cols), k, largest ? 1 : 0};
                 spec.cycles = codegen::cycles::topK(n, cols, uint64_t(k));
                 return codegen::KernelSpec{spec};
               });
}

void lowerOneHot(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const Value indices = L.value(op.inputs[0]);
  const Value values = L.value(op.inputs[2]);
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  Value out = L.newValue(op.outputs[0], outInfo);
  L.bind(op.outputs[0], out);
  const int64_t depth = ir::oneHotDepth(op, g);
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", -1), int64_t(outInfo.shape.size()));
  const uint64_t rows = uint64_t(indices.info.elements());
  const DType t = values.info.dtype;
  const uint64_t es = dtypeSize(t);
  lowerRowWise(L, op.name, {RowOperand{indices, {}, 1}, RowOperand{values, {}, 2, true}},
               {RowOperand{out, axesLastPerm(outInfo.shape.size(), {axis}), uint64_t(depth)}}, rows,
               [&](uint32_t n) {
                 codegen::CodeletSpec spec;
                 spec.function = fmt::format("popc_onehot_e{}_{}", es, shortDType(indices.info.dtype));
                 spec.name = fmt::format("OneHot_r{}_d{}_{}_{}", n, depth, shortDType(indices.info.dtype), shortDType(t));
                 spec.fields = {codeletField("indices", n, indices.info.dtype, FieldAccess::Input),
                                codeletField("values", 2, t, FieldAccess::Input),
                                codeletField("out", n * uint64_t(depth), t, FieldAccess::Output)};
                 spec.args = {int64_t(n), depth};
                 spec.cycles = codegen::cycles::oneHot(n, uint64_t(depth));
                 return codegen::KernelSpec{spec};
               });
}

// Rows of GatherElements/ScatterElements along `axis` when the indices share
// the data's other dims (ir::indicesShareOtherDims): they spread over tiles
// like TopK's (the exchange gathers a line that is not innermost from its
// strided elements). 0 when the shapes differ (the op runs on one tile).
uint64_t elementRows(const Shape &data, const Shape &indices, int64_t axis) {
  if (data[size_t(axis)] == 0 || !ir::indicesShareOtherDims(data, indices, axis))
    return 0;
  uint64_t rows = 1;
  for (size_t d = 0; d < data.size(); ++d)
    if (int64_t(d) != axis)
      rows *= uint64_t(data[d]);
  return rows;
}

void lowerScatterElements(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const Value data = L.value(op.inputs[0]), indices = L.value(op.inputs[1]), updates = L.value(op.inputs[2]);
  Value out = L.newValue(op.outputs[0], g.tensor(op.outputs[0]).info);
  L.bind(op.outputs[0], out);
  if (data.info.elements() == 0)
    return;
  const int64_t rank = int64_t(data.info.shape.size());
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", 0), rank);
  const std::string reduction = op.attrs.getString("reduction", "none");
  const int64_t code = reduction == "add" ? 1 : reduction == "mul" ? 2 : reduction == "max" ? 3 : reduction == "min" ? 4 : 0;
  const DType t = data.info.dtype;
  // `rows` rows of data [rows, cols] and indices [rows, n] (all of them on one tile: the shapes themselves).
  auto spec = [&](uint64_t rows, uint64_t cols, uint64_t n, int64_t specAxis, const Shape &dataShape,
                  const Shape &indexShape) {
    codegen::CodeletSpec spec;
    spec.function = fmt::format("popc_scatter_elements_{}_{}", shortDType(t), indexSuffix(indices));
    spec.name = fmt::format("ScatterElements_{}_{}_{}", shapeToString(dataShape), shapeToString(indexShape),
                            shortDType(t));
    spec.fields = {codeletField("data", rows * cols, t, FieldAccess::Input),
                   codeletField("indices", rows * n, indices.info.dtype, FieldAccess::Input),
                   codeletField("updates", rows * n, t, FieldAccess::Input),
                   codeletField("out", rows * cols, t, FieldAccess::Output)};
    spec.args = {specAxis, int64_t(dataShape.size()), code};
    for (int64_t d : dims8(dataShape))
      spec.args.push_back(d);
    for (int64_t d : dims8(indexShape))
      spec.args.push_back(d);
    spec.cycles = codegen::cycles::scatterElements(rows * cols, rows * n);
    return codegen::KernelSpec{spec};
  };
  const uint64_t rows = elementRows(data.info.shape, indices.info.shape, axis);
  if (rows == 0 || rank == 1)
    return lowerOnOneTile(L, op.name, {data, indices, updates}, {out},
                          spec(1, uint64_t(data.info.elements()), uint64_t(indices.info.elements()), axis,
                               data.info.shape, indices.info.shape));
  const uint64_t cols = uint64_t(data.info.shape[size_t(axis)]), n = uint64_t(indices.info.shape[size_t(axis)]);
  const auto perm = axesLastPerm(size_t(rank), {axis});
  lowerRowWise(L, op.name, {RowOperand{data, perm, cols}, RowOperand{indices, perm, n}, RowOperand{updates, perm, n}},
               {RowOperand{out, perm, cols}}, rows, [&](uint32_t r) {
                 return spec(r, cols, n, 1, {int64_t(r), int64_t(cols)}, {int64_t(r), int64_t(n)});
               });
}

} // namespace

void lowerDynamicGather(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const Value data = L.value(op.inputs[0]), indices = L.value(op.inputs[1]);
  const ir::TensorInfo &outInfo = g.tensor(op.outputs[0]).info;
  Value out = L.newValue(op.outputs[0], outInfo);
  L.bind(op.outputs[0], out);
  const Shape &shape = data.info.shape;
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", 0), int64_t(shape.size()));
  uint64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    if (d < axis)
      outer *= uint64_t(shape[size_t(d)]);
    else if (d > axis)
      inner *= uint64_t(shape[size_t(d)]);
  const uint64_t axisDim = uint64_t(shape[size_t(axis)]);
  const uint64_t n = uint64_t(indices.info.elements());
  if (outInfo.elements() == 0)
    return;
  L.mapLinearly(out);
  const uint64_t es = data.elemSize(), ies = indices.elemSize();
  // Each tile holds slabs data[o] for a range of outer rows (one copy, shared
  // by its workers); its workers split the indices. A slab too big for a
  // quarter of a tile (a large embedding table) is split into column chunks
  // of the inner dims, one tile each (as popops::multiSlice splits its table).
  // When a tile's output passes the same budget (many indices into a small
  // table, e.g. BERT's token-type embedding), the indices are split into
  // bands over more tiles, each with its own copy of the slab.
  const uint64_t outersPerTile = ceilDiv(outer, L.numTiles());
  const uint64_t outerTiles = ceilDiv(outer, outersPerTile);
  const uint64_t budget = L.graph.target().bytesPerTile / 4, rowBytes = outersPerTile * axisDim * es;
  uint64_t chunk = inner;
  if (rowBytes * inner > budget) {
    chunk = std::max<uint64_t>(1, budget / rowBytes);
    chunk = std::max(chunk, ceilDiv(inner, std::max<uint64_t>(1, L.numTiles() / outerTiles)));
    chunk = std::min(chunk, inner);
  }
  const uint64_t chunks = ceilDiv(inner, chunk), outPerIndex = outersPerTile * chunk * es;
  uint64_t perBand = n;
  if (outPerIndex * n > budget) {
    const uint64_t bands = std::min(ceilDiv(outPerIndex * n, budget),
                                    std::max<uint64_t>(1, L.numTiles() / (outerTiles * chunks)));
    perBand = ceilDiv(n, bands);
  }
  const uint64_t bands = ceilDiv(n, perBand), tiles = outerTiles * chunks * bands;
  const uint32_t first = L.allocTiles(tiles);
  // Per tile, its workers' index ranges.
  std::vector<std::vector<uint64_t>> tileBounds;
  uint64_t vertices = 0;
  for (uint64_t t = 0; t < tiles; ++t) {
    const uint64_t i0 = t % bands * perBand, i1 = std::min(n, i0 + perBand);
    std::vector<uint64_t> b = splitEvenly(i1 - i0, L.workers());
    for (uint64_t &x : b)
      x += i0;
    vertices += b.size() - 1;
    tileBounds.push_back(std::move(b));
  }
  // With index checks, each vertex also writes a status record [flag, index,
  // position] (3 x int64) on its tile, which the runtime reads after the step.
  const uint64_t statusBytes = 3 * 8;
  std::optional<Value> status;
  if (L.indexChecks) {
    status = L.newValue(op.name + "/index_check", {DType::I64, {int64_t(vertices), 3}});
    std::vector<graph::Interval> mapping;
    uint64_t v = 0;
    for (uint64_t t = 0; t < tiles; ++t)
      for (size_t w = 0; w + 1 < tileBounds[t].size(); ++w, ++v)
        mapping.push_back({v * statusBytes, (v + 1) * statusBytes, uint32_t(first + t)});
    L.graph.setMapping(status->tensor, mapping);
  }
  OpBuilder builder(L, op.name);
  for (uint64_t t = 0; t < tiles; ++t) {
    const uint32_t tile = uint32_t(first + t);
    const std::vector<uint64_t> &bounds = tileBounds[t];
    const uint64_t oa = t / bands / chunks * outersPerTile, ob = std::min(outer, oa + outersPerTile);
    const uint64_t c0 = t / bands % chunks * chunk, width = std::min(inner, c0 + chunk) - c0; // inner columns
    RunList slab;
    if (width == inner)
      slab.add(oa * axisDim * inner * es, (ob - oa) * axisDim * inner * es);
    else
      for (uint64_t row = oa * axisDim; row < ob * axisDim; ++row)
        slab.add((row * inner + c0) * es, width * es);
    const graph::FieldRef table = builder.gather(data.tensor, slab, tile, "table");
    for (size_t w = 0; w + 1 < bounds.size(); ++w) {
      const uint64_t j0 = bounds[w], j1 = bounds[w + 1];
      RunList idxRuns, outRuns;
      idxRuns.add(j0 * ies, (j1 - j0) * ies);
      for (uint64_t o = oa; o < ob; ++o)
        if (width == inner)
          outRuns.add((o * n + j0) * inner * es, (j1 - j0) * inner * es);
        else
          for (uint64_t j = j0; j < j1; ++j)
            outRuns.add(((o * n + j) * inner + c0) * es, width * es);
      codegen::CodeletSpec spec;
      spec.function = fmt::format("popc_gather{}_e{}_{}", status ? "_checked" : "", es, indexSuffix(indices));
      spec.name = fmt::format("Gather{}_o{}_a{}_n{}_i{}_e{}", status ? "Checked" : "", ob - oa, axisDim, j1 - j0,
                              width, es);
      spec.fields = {{"table", uint32_t(table.bytes), FieldAccess::Input},
                     {"indices", uint32_t((j1 - j0) * ies), FieldAccess::Input},
                     {"out", uint32_t(outRuns.totalBytes()), FieldAccess::Output}};
      spec.args = {int64_t(ob - oa), int64_t(axisDim), int64_t(j1 - j0), int64_t(width)};
      spec.cycles = codegen::cycles::gatherRows(ob - oa, j1 - j0, width);
      std::vector<graph::FieldRef> fields{table, builder.gather(indices.tensor, idxRuns, tile, "indices"),
                                          builder.scatter(out.tensor, outRuns, tile, "out")};
      if (status) {
        spec.fields.push_back({"status", uint32_t(statusBytes), FieldAccess::Output});
        spec.args.push_back(int64_t(j0));
        spec.cycles += (j1 - j0) * 2; // a compare and a branch per index
        fields.push_back({status->tensor, tile, w * statusBytes, statusBytes});
      }
      builder.addVertex(spec, tile, std::move(fields));
    }
  }
  if (status)
    builder.addCheck(status->tensor,
                     fmt::format("Gather '{}': index {{value}} (element {{position}} of '{}') is out of range for "
                                 "axis {} of '{}', which has {} entries (valid: -{} to {}); fix: check the input (or "
                                 "--no-index-checks: such an index then reads zeros)",
                                 op.name, op.inputs[1], axis, op.inputs[0], axisDim, axisDim, axisDim - 1));
}

void lowerDynamicGatherElements(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const Value data = L.value(op.inputs[0]), indices = L.value(op.inputs[1]);
  Value out = L.newValue(op.outputs[0], g.tensor(op.outputs[0]).info);
  L.bind(op.outputs[0], out);
  if (out.info.elements() == 0)
    return;
  const int64_t rank = int64_t(data.info.shape.size());
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", 0), rank);
  const uint64_t es = data.elemSize();
  auto spec = [&](uint64_t dataElements, uint64_t n, int64_t specAxis, const Shape &dataShape,
                  const Shape &indexShape) {
    codegen::CodeletSpec spec;
    spec.function = fmt::format("popc_gather_elements_e{}_{}", es, indexSuffix(indices));
    spec.name = fmt::format("GatherElements_{}_{}_e{}", shapeToString(dataShape), shapeToString(indexShape), es);
    spec.fields = {{"data", uint32_t(dataElements * es), FieldAccess::Input},
                   {"indices", uint32_t(n * indices.elemSize()), FieldAccess::Input},
                   {"out", uint32_t(n * es), FieldAccess::Output}};
    spec.args = {specAxis, int64_t(dataShape.size())};
    for (int64_t d : dims8(dataShape))
      spec.args.push_back(d);
    for (int64_t d : dims8(indexShape))
      spec.args.push_back(d);
    spec.cycles = codegen::cycles::gatherElements(n);
    return codegen::KernelSpec{spec};
  };
  const uint64_t rows = elementRows(data.info.shape, indices.info.shape, axis);
  if (rows == 0 || rank == 1)
    return lowerOnOneTile(L, op.name, {data, indices}, {out},
                          spec(uint64_t(data.info.elements()), uint64_t(indices.info.elements()), axis,
                               data.info.shape, indices.info.shape));
  // Row-wise (elementRows): each tile gathers from its own rows' lines only.
  const uint64_t cols = uint64_t(data.info.shape[size_t(axis)]), n = uint64_t(indices.info.shape[size_t(axis)]);
  const auto perm = axesLastPerm(size_t(rank), {axis});
  lowerRowWise(L, op.name, {RowOperand{data, perm, cols}, RowOperand{indices, perm, n}}, {RowOperand{out, perm, n}},
               rows, [&](uint32_t r) {
                 return spec(r * cols, r * n, 1, {int64_t(r), int64_t(cols)}, {int64_t(r), int64_t(n)});
               });
}

void registerIndexLowerings(LoweringTable &t) {
  t["TopK"] = lowerTopK;
  t["OneHot"] = lowerOneHot;
  t["ScatterElements"] = lowerScatterElements;
  t["Scatter"] = lowerScatterElements;
}

} // namespace popc::lib
