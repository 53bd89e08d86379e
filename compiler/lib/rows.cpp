#include "compiler/lib/rows.h"

#include "compiler/lib/planner.h"

#include <algorithm>

namespace popc::lib {

Value constantTensor(Lowering &L, const std::string &name, const ir::TensorInfo &info, std::vector<uint8_t> data) {
  Value v = L.newValue(name, info, graph::TensorRole::Constant);
  data.resize(info.bytes());
  L.graph.tensor(v.tensor).constData = std::move(data);
  L.mapLinearly(v);
  return v;
}

std::vector<int64_t> windowArgs3(const Shape &inSpatial, const ir::WindowParams &p, uint64_t &kernelVolume) {
  const size_t lead = 3 - inSpatial.size();
  std::vector<int64_t> args;
  auto add = [&](const std::vector<int64_t> &v, int64_t fill) {
    args.insert(args.end(), lead, fill);
    args.insert(args.end(), v.begin(), v.end());
  };
  add(inSpatial, 1);
  add(p.outSpatial, 1);
  add(p.kernel, 1);
  add(p.strides, 1);
  add(p.padsBegin, 0);
  add(p.dilations, 1);
  kernelVolume = uint64_t(numElements(p.kernel));
  return args;
}

void lowerOnOneTile(Lowering &L, const std::string &name, const std::vector<Value> &inputs,
                    const std::vector<Value> &outputs, const codegen::KernelSpec &spec) {
  const uint32_t tile = L.allocTiles(1);
  OpBuilder builder(L, name);
  std::vector<graph::FieldRef> fields;
  for (const Value &in : inputs) {
    RunList all;
    all.add(0, in.info.bytes());
    fields.push_back(builder.gather(in.tensor, all, tile, "in"));
  }
  for (const Value &out : outputs) {
    L.graph.mapToTile(out.tensor, tile);
    fields.push_back({out.tensor, tile, 0, out.info.bytes()});
  }
  builder.addVertex(spec, tile, std::move(fields));
}

std::vector<int64_t> axesLastPerm(size_t rank, const std::vector<int64_t> &axes) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < int64_t(rank); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d))
      perm.push_back(d);
  perm.insert(perm.end(), axes.begin(), axes.end());
  return perm;
}

namespace {

bool isIdentity(const std::vector<int64_t> &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i))
      return false;
  return true;
}

// Byte runs of rows [r0, r1) of `op` in its tensor.
RunList rowRuns(const RowOperand &op, uint64_t r0, uint64_t r1) {
  RunList runs;
  const uint64_t es = op.value.elemSize();
  if (isIdentity(op.perm))
    runs.add(r0 * op.perRow * es, (r1 - r0) * op.perRow * es);
  else
    addTransposeRuns(runs, op.value.info.shape, op.perm, r0 * op.perRow, r1 * op.perRow, es);
  return runs;
}

} // namespace

void lowerRowWise(Lowering &L, const std::string &name, const std::vector<RowOperand> &inputs,
                  const std::vector<RowOperand> &outputs, uint64_t rows,
                  const std::function<codegen::KernelSpec(uint32_t rowCount)> &spec) {
  lowerRowWiseAt(L, name, inputs, outputs, rows, [&](uint64_t, uint32_t n) { return spec(n); });
}

void lowerRowWiseAt(Lowering &L, const std::string &name, const std::vector<RowOperand> &inputs,
                    const std::vector<RowOperand> &outputs, uint64_t rows,
                    const std::function<codegen::KernelSpec(uint64_t firstRow, uint32_t rowCount)> &spec) {
  auto &dg = L.graph;
  if (rows == 0)
    return;
  // Enough rows per tile that each tile reads at least ~1 KiB of input.
  uint64_t inBytesPerRow = 1;
  for (const RowOperand &in : inputs)
    if (!in.whole)
      inBytesPerRow += in.perRow * in.value.elemSize();
  const uint64_t rowsPerTile = std::max<uint64_t>(ceilDiv(rows, L.numTiles()), ceilDiv(1024, inBytesPerRow));
  const uint64_t tiles = ceilDiv(rows, rowsPerTile);
  const uint32_t firstTile = L.allocTiles(tiles);

  for (const RowOperand &out : outputs) {
    if (!isIdentity(out.perm)) {
      L.mapLinearly(out.value);
      continue;
    }
    const uint64_t rowBytes = out.perRow * out.value.elemSize();
    std::vector<graph::Interval> mapping;
    for (uint64_t t = 0; t < tiles; ++t) {
      const uint64_t r0 = t * rowsPerTile, r1 = std::min(rows, r0 + rowsPerTile);
      if (rowBytes)
        mapping.push_back({r0 * rowBytes, r1 * rowBytes, uint32_t(firstTile + t)});
    }
    dg.setMapping(out.value.tensor, mapping);
  }

  OpBuilder builder(L, name);
  for (uint64_t t = 0; t < tiles; ++t) {
    const uint32_t tile = uint32_t(firstTile + t);
    const uint64_t r0 = t * rowsPerTile, r1 = std::min(rows, r0 + rowsPerTile);
    const auto bounds = splitEvenly(r1 - r0, L.workers());
    // Whole-tensor inputs: one copy per tile, shared by its vertices.
    std::vector<graph::FieldRef> wholeOnTile(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].whole) {
        RunList all;
        all.add(0, uint64_t(inputs[i].value.info.elements()) * inputs[i].value.elemSize());
        wholeOnTile[i] = builder.gather(inputs[i].value.tensor, all, tile, "table");
      }
    for (size_t v = 0; v + 1 < bounds.size(); ++v) {
      const uint64_t a = r0 + bounds[v], z = r0 + bounds[v + 1];
      std::vector<graph::FieldRef> fields;
      for (size_t i = 0; i < inputs.size(); ++i)
        fields.push_back(inputs[i].whole ? wholeOnTile[i] : builder.gather(inputs[i].value.tensor, rowRuns(inputs[i], a, z), tile, "in"));
      for (const RowOperand &out : outputs)
        fields.push_back(builder.scatter(out.value.tensor, rowRuns(out, a, z), tile, "out"));
      builder.addVertex(spec(a, uint32_t(z - a)), tile, std::move(fields));
    }
  }
}

} // namespace popc::lib
