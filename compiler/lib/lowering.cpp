#include "compiler/lib/lowering.h"

#include "compiler/lib/ops.h"
#include "support/error.h"
#include "support/log.h"

#include <algorithm>

namespace popc::lib {

// ---------------------------------------------------------------- OpBuilder

OpBuilder::OpBuilder(Lowering &lowering, std::string name)
    : lowering(lowering), name(std::move(name)) {}

uint32_t OpBuilder::preExchange() {
  if (!pre_)
    pre_ = lowering.graph.addExchange(name + "/in");
  return *pre_;
}

uint32_t OpBuilder::postExchange() {
  if (!post_)
    post_ = lowering.graph.addExchange(name + "/out");
  return *post_;
}

void OpBuilder::addVertex(const codegen::KernelSpec &spec, uint32_t tile,
                          std::vector<graph::FieldRef> fields) {
  if (!cs_)
    cs_ = lowering.graph.addComputeSet(name);
  const uint32_t type = lowering.codegen.getOrCreate(spec);
  const auto &info = lowering.codegen.vertexTypes().at(type);
  POPC_ASSERT(codegen::memoryFieldCount(info.fields) == fields.size()); // the immediates: the type's own
  for (size_t i = 0; i < fields.size(); ++i)
    POPC_ASSERT(fields[i].bytes == info.fields[i].bytes && fields[i].tile == tile);
  lowering.graph.computeSet(*cs_).vertices.push_back({type, tile, std::move(fields)});
}

void OpBuilder::addCheck(graph::TensorId status, std::string message) {
  POPC_ASSERT(cs_.has_value());
  lowering.graph.checks.push_back({*cs_, status, std::move(message)});
}

namespace {
// True when `runs` of `t` lie on `tile` back to back in its block; sets `offset`.
bool contiguousOnTile(const graph::DeviceGraph &g, graph::TensorId t, const RunList &runs,
                      uint32_t tile, uint64_t &offset) {
  const graph::DeviceTensor &dt = g.tensor(t);
  bool first = true;
  uint64_t expected = 0;
  for (const Run &r : runs.runs()) {
    uint64_t done = 0;
    while (done < r.bytes) {
      const uint64_t byte = r.byte + done;
      auto it = std::upper_bound(dt.mapping.begin(), dt.mapping.end(), byte,
                                 [](uint64_t b, const graph::Interval &iv) { return b < iv.begin; });
      --it;
      if (it->tile != tile)
        return false;
      const uint64_t blockOffset = dt.blockOffsets[it - dt.mapping.begin()] + (byte - it->begin);
      if (first) {
        offset = expected = blockOffset;
        first = false;
      } else if (blockOffset != expected) {
        return false;
      }
      const uint64_t n = std::min(r.bytes - done, it->end - byte);
      expected += n;
      done += n;
    }
  }
  return !first;
}
} // namespace

// A temporary wholly on `tile` holding `runs` of `t`, filled (pre-exchange) or
// emptied (post-exchange) by one copy per run.
graph::FieldRef OpBuilder::tileTemporary(graph::TensorId t, const RunList &runs, uint32_t tile,
                                         const std::string &what, bool incoming, bool reuse) {
  auto &g = lowering.graph;
  uint64_t offset = 0;
  if (reuse && contiguousOnTile(g, t, runs, tile, offset))
    return {t, tile, offset, runs.totalBytes()};
  if (reuse && incoming)
    if (auto laidOut = constantLaidOut(t, runs, tile, what))
      return *laidOut;
  const DType dtype = g.tensor(t).dtype;
  const uint64_t elems = runs.totalBytes() / dtypeSize(dtype);
  const graph::TensorId tmp = g.addTensor(fmt::format("{}/{}@{}#{}", name, what, tile, g.tensors().size()),
                                          dtype, {int64_t(elems)}, graph::TensorRole::Intermediate);
  g.tensor(tmp).tileTemporary = true;
  g.mapToTile(tmp, tile);
  auto &copies = g.exchange(incoming ? preExchange() : postExchange()).copies;
  uint64_t pos = 0;
  for (const Run &r : runs.runs()) {
    copies.push_back(incoming ? graph::Copy{t, r.byte, tmp, pos, r.bytes} : graph::Copy{tmp, pos, t, r.byte, r.bytes});
    pos += r.bytes;
  }
  return {tmp, tile, 0, runs.totalBytes()};
}

std::optional<graph::FieldRef> OpBuilder::constantLaidOut(graph::TensorId t, const RunList &runs, uint32_t tile,
                                                          const std::string &what) {
  auto &g = lowering.graph;
  const graph::DeviceTensor &src = g.tensor(t);
  if (!lowering.layoutConstantsAtLoad || src.role != graph::TensorRole::Constant || src.filledAtLoad ||
      src.persistent)
    return std::nullopt;
  LaidOutTable &laidOut = lowering.laidOutConstants[t];
  if (auto field = laidOut.find(tile, runs.runs()))
    return field;
  if (!lowering.reserveLoadLayout(tile, runs.totalBytes()))
    return std::nullopt;
  const DType dtype = src.dtype;
  const uint64_t elems = runs.totalBytes() / dtypeSize(dtype);
  const graph::TensorId laid = g.addTensor(fmt::format("{}/{}@{}#{}", name, what, tile, g.tensors().size()), dtype,
                                           {int64_t(elems)}, graph::TensorRole::Constant);
  g.tensor(laid).filledAtLoad = true;
  g.tensor(laid).tileTemporary = true;
  g.mapToTile(laid, tile);
  if (!load_)
    load_ = g.addExchange(name + "/load");
  auto &copies = g.exchange(*load_).copies;
  uint64_t pos = 0;
  for (const Run &r : runs.runs()) {
    copies.push_back(graph::Copy{t, r.byte, laid, pos, r.bytes});
    pos += r.bytes;
  }
  const graph::FieldRef field{laid, tile, 0, runs.totalBytes()};
  laidOut.add(tile, runs.runs(), field);
  return field;
}

graph::FieldRef OpBuilder::gather(graph::TensorId src, const RunList &runs, uint32_t tile,
                                  const std::string &what) {
  return tileTemporary(src, runs, tile, what, true);
}

graph::FieldRef OpBuilder::gatherCopy(graph::TensorId src, const RunList &runs, uint32_t tile,
                                      const std::string &what) {
  return tileTemporary(src, runs, tile, what, true, /*reuse=*/false);
}

graph::FieldRef OpBuilder::scatter(graph::TensorId dst, const RunList &runs, uint32_t tile,
                                   const std::string &what) {
  return tileTemporary(dst, runs, tile, what, false);
}

OpBuilder::~OpBuilder() {
  auto &main = lowering.graph.main();
  // The op's copy lists are complete: drop what growing them left unused
  // (up to half of each; ViT-B/16 holds 28 M copies until they are written).
  for (const std::optional<uint32_t> &ex : {pre_, post_, load_})
    if (ex)
      lowering.graph.exchange(*ex).copies.shrink_to_fit();
  log::get("lib")->debug("{}: {} copies in, {} vertices, {} copies out", name,
                         pre_ ? lowering.graph.exchange(*pre_).copies.size() : 0,
                         cs_ ? lowering.graph.computeSet(*cs_).vertices.size() : 0,
                         post_ ? lowering.graph.exchange(*post_).copies.size() : 0);
  if (load_)
    lowering.graph.load().children.push_back(graph::Program::exchange(*load_));
  if (pre_)
    main.children.push_back(graph::Program::exchange(*pre_));
  if (cs_)
    main.children.push_back(graph::Program::execute(*cs_));
  if (post_)
    main.children.push_back(graph::Program::exchange(*post_));
}

// ---------------------------------------------------------------- Lowering

const Value &Lowering::value(const std::string &irName) const {
  auto it = values_.find(irName);
  if (it == values_.end())
    fail("internal error: IR tensor '{}' has no device value", irName);
  return it->second;
}

Value Lowering::newValue(const std::string &name, const ir::TensorInfo &info, graph::TensorRole role) {
  return Value{graph.addTensor(name, info.dtype, info.shape, role), info};
}

void Lowering::mapLinearly(const Value &v, uint64_t grainElems) {
  if (graph.tensor(v.tensor).bytes == 0)
    return;
  // At least 64 elements per tile keeps vertices big enough to amortise their
  // call on the host while still spreading large tensors over every tile.
  const uint64_t minPerTile = std::max<uint64_t>(64, grainElems);
  const uint64_t elems = graph.tensor(v.tensor).bytes / v.elemSize();
  const uint32_t count = graph::linearTileCount(elems, numTiles_, grainElems, minPerTile);
  graph.mapLinearly(v.tensor, allocTiles(count), count, grainElems, minPerTile);
}

void Lowering::mapLike(const Value &v, const Value &like) {
  const auto &src = graph.tensor(like.tensor);
  // Only a mapping on the current op's IPU: an op placed on another IPU must
  // compute there, with its operands exchanged over the links once.
  const bool onThisIpu = std::all_of(src.mapping.begin(), src.mapping.end(), [&](const graph::Interval &iv) {
    return iv.tile >= firstTile_ && iv.tile < firstTile_ + numTiles_;
  });
  if (src.bytes == graph.tensor(v.tensor).bytes && !src.mapping.empty() && onThisIpu)
    graph.setMapping(v.tensor, src.mapping);
  else
    mapLinearly(v);
}

bool Lowering::reserveLoadLayout(uint32_t tile, uint64_t bytes) {
  const uint64_t budget = uint64_t(double(graph.target().bytesPerTile) * kLoadLayoutShare);
  if (tile >= loadLayoutBytes_.size())
    loadLayoutBytes_.resize(size_t(tile) + 1, 0);
  uint64_t &used = loadLayoutBytes_[tile];
  if (used + bytes > budget)
    return false;
  used += bytes;
  loadLayoutTotal_ += bytes;
  return true;
}

bool Lowering::likelyLaidOutAtLoad(const Value &v, uint64_t tileBytes, uint64_t totalBytes) const {
  const graph::DeviceTensor &t = graph.tensor(v.tensor);
  if (!layoutConstantsAtLoad || t.role != graph::TensorRole::Constant || t.filledAtLoad || t.persistent)
    return false;
  if (constantBytes_ == 0)
    for (const graph::DeviceTensor &c : graph.tensors())
      if (c.role == graph::TensorRole::Constant && !c.filledAtLoad)
        constantBytes_ += c.bytes;
  const uint64_t budget = uint64_t(double(graph.target().bytesPerTile) * kLoadLayoutShare);
  const uint64_t tiles = std::max<uint64_t>(1, graph.target().numTiles());
  const double share = double(budget) * double(tiles) * double(t.bytes) / double(std::max<uint64_t>(1, constantBytes_));
  return loadLayoutTotal_ / tiles + tileBytes <= budget && double(totalBytes) <= share;
}

void Lowering::setCurrentIpu(int64_t ipu) {
  const auto &t = graph.target();
  if (ipu < 0 || ipu >= int64_t(t.numIpus))
    fail("op placed on IPU {} but the target has {} IPU(s) (use --num-ipus)", ipu, t.numIpus);
  ipu_ = ipu;
  firstTile_ = t.firstTileOfIpu(uint32_t(ipu));
  numTiles_ = t.tilesPerIpu;
}

uint32_t Lowering::allocTiles(uint64_t count) {
  count = std::min<uint64_t>(std::max<uint64_t>(count, 1), numTiles_);
  uint32_t &cursor = cursor_[ipu_];
  if (cursor + count > numTiles_)
    cursor = 0;
  const uint32_t first = firstTile_ + cursor;
  cursor += uint32_t(count);
  return first;
}

std::vector<uint64_t> splitEvenly(uint64_t n, uint64_t parts, uint64_t minChunk) {
  parts = std::max<uint64_t>(1, std::min(parts, std::max<uint64_t>(1, n / std::max<uint64_t>(minChunk, 1))));
  std::vector<uint64_t> bounds;
  const uint64_t chunk = (n + parts - 1) / parts;
  for (uint64_t b = 0; b < n; b += chunk)
    bounds.push_back(b);
  bounds.push_back(n);
  return bounds;
}

// ---------------------------------------------------------------- registry

namespace {
const LoweringTable &table() {
  static const LoweringTable t = [] {
    LoweringTable t;
    registerElementwiseLowerings(t);
    registerMatMulLowerings(t);
    registerConvLowerings(t);
    registerPoolLowerings(t);
    registerReduceLowerings(t);
    registerSoftmaxLowerings(t);
    registerRearrangeLowerings(t);
    registerNormLowerings(t);
    registerMovementLowerings(t);
    registerIndexLowerings(t);
    registerRecurrentLowerings(t);
    registerCollectiveLowerings(t);
    return t;
  }();
  return t;
}
} // namespace

const LowerFn *findLowering(const std::string &opType) {
  auto it = table().find(opType);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> loweredOpTypes() {
  std::vector<std::string> types;
  for (const auto &[k, v] : table())
    types.push_back(k);
  return types;
}

} // namespace popc::lib
