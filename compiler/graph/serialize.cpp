#include "compiler/graph/serialize.h"
#include "compiler/graph/constant_spill.h"

#include "formats/popef/popef.h"
#include "support/allocator.h"
#include "support/error.h"
#include "support/parallel.h"
#include "support/version.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace popc::graph {

namespace fb = ::popef::fb;

namespace {

std::unique_ptr<fb::TargetT> toTarget(const Target &t) {
  auto out = std::make_unique<fb::TargetT>();
  out->arch = t.arch;
  out->num_ipus = t.numIpus;
  out->tiles_per_ipu = t.tilesPerIpu;
  out->bytes_per_tile = t.bytesPerTile;
  out->workers_per_tile = t.workersPerTile;
  out->clock_hz = t.clockHz;
  out->exchange_bytes_per_cycle = t.exchangeBytesPerCycle;
  out->inter_ipu_bytes_per_cycle = t.interIpuBytesPerCycle;
  out->host_bytes_per_cycle = t.hostBytesPerCycle;
  out->sync_cycles = t.syncCycles;
  out->global_sync_cycles = t.globalSyncCycles;
  return out;
}

// Resolves symbolic copies to tile addresses. Every tensor's interval start
// addresses (its block base on the interval's tile plus the interval's offset
// inside the block) are computed once, up front, so that exchange steps can
// then be resolved on several threads.
class CopyResolver {
public:
  CopyResolver(const DeviceGraph &g, const MemoryPlan &plan) : g_(g), addrs_(g.tensors().size()) {
    constexpr size_t kTensorsPerTask = 4096;
    parallelFor((addrs_.size() + kTensorsPerTask - 1) / kTensorsPerTask, [&](size_t task) {
      const size_t end = std::min(addrs_.size(), (task + 1) * kTensorsPerTask);
      std::vector<uint32_t> baseOnTile; // dense, for tensors with many intervals per tile
      for (TensorId id = TensorId(task * kTensorsPerTask); id < end; ++id) {
        const DeviceTensor &t = g.tensor(id);
        const auto &blocks = plan.bases.at(id);
        addrs_[id].reserve(t.mapping.size());
        if (t.mapping.size() < 4 * blocks.size() || blocks.empty()) {
          for (size_t i = 0; i < t.mapping.size(); ++i)
            addrs_[id].push_back(uint32_t(plan.base(id, t.mapping[i].tile) + t.blockOffsets[i]));
          continue;
        }
        // A partial-sum tensor's intervals cycle over its tiles: one table
        // lookup each instead of a binary search of its blocks.
        baseOnTile.assign(size_t(blocks.back().first) + 1, UINT32_MAX);
        for (const auto &[tile, base] : blocks)
          baseOnTile[tile] = base;
        for (size_t i = 0; i < t.mapping.size(); ++i) {
          const uint32_t tile = t.mapping[i].tile;
          POPC_ASSERT(tile < baseOnTile.size() && baseOnTile[tile] != UINT32_MAX);
          addrs_[id].push_back(uint32_t(baseOnTile[tile] + t.blockOffsets[i]));
        }
      }
    });
  }

  // Where interval i of tensor `id` starts on its tile.
  uint32_t address(TensorId id, size_t i) const { return addrs_[id][i]; }

  // Where the previous copy of a step ended in its source and destination:
  // a step's copies mostly walk a tensor in order, so the next interval is
  // found by a short step forward instead of a binary search.
  struct Cursor {
    TensorId tensor = UINT32_MAX;
    size_t interval = 0;
  };

  // Splits `c` at the interval boundaries of source and destination.
  void resolve(const Copy &c, std::vector<fb::Copy> &out, Cursor &from, Cursor &to) const {
    if (c.bytes == 0) // an empty tensor has no intervals to search
      return;
    const DeviceTensor &src = g_.tensor(c.src), &dst = g_.tensor(c.dst);
    const std::vector<uint32_t> &sa = addrs_[c.src], &da = addrs_[c.dst];
    size_t si = intervalAt(src, c.src, c.srcByte, from), di = intervalAt(dst, c.dst, c.dstByte, to);
    uint64_t s = c.srcByte, d = c.dstByte;
    for (uint64_t done = 0; done < c.bytes;) {
      const Interval &sv = src.mapping[si], &dv = dst.mapping[di];
      const uint64_t n = std::min({c.bytes - done, sv.end - s, dv.end - d});
      const uint32_t so = uint32_t(sa[si] + (s - sv.begin)), dof = uint32_t(da[di] + (d - dv.begin));
      if (!(sv.tile == dv.tile && so == dof))
        out.push_back(popef::singleCopy(sv.tile, so, dv.tile, dof, uint32_t(n)));
      done += n, s += n, d += n;
      si += s == sv.end;
      di += d == dv.end;
    }
    from = {c.src, std::min(si, src.mapping.size() - 1)};
    to = {c.dst, std::min(di, dst.mapping.size() - 1)};
  }

private:
  // The interval holding `byte` (mappings are sorted and contiguous).
  static size_t intervalAt(const DeviceTensor &t, TensorId id, uint64_t byte, const Cursor &near) {
    constexpr size_t kSteps = 4;
    auto scanFrom = [&](size_t i) -> std::optional<size_t> {
      if (t.mapping[i].begin > byte)
        return std::nullopt;
      for (size_t end = std::min(t.mapping.size(), i + kSteps); i < end; ++i)
        if (byte < t.mapping[i].end)
          return i;
      return std::nullopt;
    };
    if (near.tensor == id)
      if (auto i = scanFrom(near.interval))
        return *i;
    // Most mappings cut a tensor into nearly equal intervals: the interval
    // where `byte` would be if they were equal, or just before it.
    const uint64_t total = t.mapping.back().end;
    if (total > 0 && t.mapping.size() > kSteps) {
      const size_t guess = size_t(static_cast<unsigned __int128>(byte) * t.mapping.size() / total);
      if (auto i = scanFrom(guess >= 1 ? std::min(guess - 1, t.mapping.size() - 1) : 0))
        return *i;
    }
    auto it = std::upper_bound(t.mapping.begin(), t.mapping.end(), byte,
                               [](uint64_t b, const Interval &iv) { return b < iv.begin; });
    POPC_ASSERT(it != t.mapping.begin());
    return size_t(std::prev(it) - t.mapping.begin());
  }
  const DeviceGraph &g_;
  std::vector<std::vector<uint32_t>> addrs_;
};

// The copies in destination order (tile, then offset): bucketed by tile, then
// each tile's few, usually already ordered, copies sorted by offset. A step's
// destinations never overlap, so the order is unique. (A comparison sort of the
// whole step was a fifth of a CNN's compile.)
std::vector<fb::Copy> sortByDestination(std::vector<fb::Copy> copies) {
  auto byDestination = [](const fb::Copy &a, const fb::Copy &b) {
    return std::pair(a.dst_tile(), a.dst_offset()) < std::pair(b.dst_tile(), b.dst_offset());
  };
  if (std::is_sorted(copies.begin(), copies.end(), byDestination))
    return copies;
  uint32_t tiles = 0;
  for (const fb::Copy &c : copies)
    tiles = std::max(tiles, c.dst_tile() + 1);
  std::vector<size_t> next(size_t(tiles) + 1, 0);
  for (const fb::Copy &c : copies)
    ++next[c.dst_tile() + 1];
  std::partial_sum(next.begin(), next.end(), next.begin());
  const std::vector<size_t> begin = next;
  std::vector<fb::Copy> sorted(copies.size());
  for (const fb::Copy &c : copies)
    sorted[next[c.dst_tile()]++] = c;
  std::vector<fb::Copy>().swap(copies);
  auto byOffset = [](const fb::Copy &a, const fb::Copy &b) { return a.dst_offset() < b.dst_offset(); };
  for (uint32_t t = 0; t < tiles; ++t) {
    const auto first = sorted.begin() + ptrdiff_t(begin[t]), last = sorted.begin() + ptrdiff_t(begin[t + 1]);
    if (!std::is_sorted(first, last, byOffset))
      std::sort(first, last, byOffset);
  }
  return sorted;
}

// Sorted by destination and merged into long runs (DESIGN.md: coalesce at compile time).
std::vector<fb::Copy> coalesce(std::vector<fb::Copy> copies) {
  copies = sortByDestination(std::move(copies));
  size_t kept = 0; // merged in place
  for (const fb::Copy &c : copies) {
    if (kept > 0) {
      fb::Copy &p = copies[kept - 1];
      if (p.dst_tile() == c.dst_tile() && p.src_tile() == c.src_tile() &&
          p.dst_offset() + p.bytes() == c.dst_offset() && p.src_offset() + p.bytes() == c.src_offset()) {
        p = popef::singleCopy(p.src_tile(), p.src_offset(), p.dst_tile(), p.dst_offset(), p.bytes() + c.bytes());
        continue;
      }
    }
    copies[kept++] = c;
  }
  copies.resize(kept);
  return copies;
}

// Folds the copies into a destination tile (sorted by destination, coalesced)
// that repeat with constant source and destination strides into one strided
// record each. Records from different source tiles may interleave: a gather
// whose rows straddle two source tiles becomes two records, not one per row.
// Each tile's copies are visited grouped by (source tile, bytes), in order
// within a group; a copy that does not continue its group's open record
// starts the next one. Records come out in the order of their first copy.
// (Without a map per destination tile: its nodes were most of the writer's
// allocations.)
std::vector<fb::Copy> foldStrided(const std::vector<fb::Copy> &copies) {
  std::vector<fb::Copy> folded;
  std::vector<fb::Copy> record; // one tile's: at the position of a record's first copy
  std::vector<uint8_t> starts;
  std::vector<uint32_t> order;
  auto key = [&](uint32_t i) { return std::tuple(copies[i].src_tile(), copies[i].bytes(), i); };
  for (size_t begin = 0, end = 0; begin < copies.size(); begin = end) {
    while (end < copies.size() && copies[end].dst_tile() == copies[begin].dst_tile())
      ++end;
    const size_t n = end - begin;
    order.resize(n);
    std::iota(order.begin(), order.end(), uint32_t(begin));
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    record.resize(n);
    starts.assign(n, 0);
    size_t open = 0;
    for (size_t k = 0; k < n; ++k) {
      const fb::Copy &c = copies[order[k]];
      const fb::Copy *prev = k > 0 ? &copies[order[k - 1]] : nullptr;
      if (prev && prev->src_tile() == c.src_tile() && prev->bytes() == c.bytes()) {
        fb::Copy &p = record[open];
        if (c.src_offset() >= p.src_offset()) {
          const uint32_t srcStep = c.src_offset() - p.src_offset(), dstStep = c.dst_offset() - p.dst_offset();
          const uint64_t next = uint64_t(p.repeat()) + 1;
          if (p.repeat() == 0 && dstStep >= p.bytes()) {
            p = fb::Copy(p.src_tile(), p.src_offset(), p.dst_tile(), p.dst_offset(), p.bytes(), 1, srcStep, dstStep);
            continue;
          }
          if (p.repeat() > 0 && p.repeat() < UINT32_MAX && uint64_t(srcStep) == next * p.src_stride() &&
              uint64_t(dstStep) == next * p.dst_stride()) {
            p = fb::Copy(p.src_tile(), p.src_offset(), p.dst_tile(), p.dst_offset(), p.bytes(), p.repeat() + 1,
                         p.src_stride(), p.dst_stride());
            continue;
          }
        }
      }
      open = order[k] - begin;
      starts[open] = 1;
      record[open] = c;
    }
    for (size_t i = 0; i < n; ++i)
      if (starts[i])
        folded.push_back(record[i]);
  }
  return folded;
}

std::unique_ptr<fb::ProgramT> toProgram(const Program &p, const std::vector<uint32_t> &tensorIndex) {
  auto out = std::make_unique<fb::ProgramT>();
  out->kind = static_cast<fb::ProgramKind>(p.kind);
  out->index = p.index;
  out->count = p.count;
  out->name = p.name;
  out->tensor = tensorIndex.at(p.tensor);
  out->case_values = p.caseValues;
  out->parallel = p.parallel;
  out->ipu = p.ipu;
  for (const Program &c : p.children)
    out->children.push_back(toProgram(c, tensorIndex));
  return out;
}

std::unique_ptr<fb::IoInfoT> toIoInfo(const IoInfo &io, const std::vector<uint32_t> &tensorIndex) {
  auto out = std::make_unique<fb::IoInfoT>();
  out->name = io.name;
  out->dtype = static_cast<fb::DType>(io.dtype);
  out->shape = io.shape;
  out->tensor = tensorIndex.at(io.tensor);
  out->stream = io.stream;
  if (!io.hostShape.empty() && io.hostShape != io.shape)
    out->host_shape = io.hostShape;
  if (!io.anchor.empty())
    out->anchor = io.anchor;
  return out;
}

} // namespace

namespace {

// `consumable`: the same graph as `g`, whose exchange copies are released as
// soon as they are resolved (or null).
std::vector<uint8_t> serializeGraph(const DeviceGraph &g, const MemoryPlan &plan, const ExecutableCode &code,
                                    const std::map<std::string, std::string> &options, ExchangeStats *stats,
                                    std::vector<uint32_t> *tensorIndexOut, DeviceGraph *consumable) {
  fb::ExecutableT exe;
  exe.format_version = popef::kFormatVersion;
  exe.compiler_version = compilerVersion();
  exe.target = toTarget(g.target());
  exe.target->replication_factor = g.replicationFactor;

  auto meta = std::make_unique<fb::MetadataT>();
  meta->model_name = g.modelName;
  meta->batches_per_step = g.batchesPerStep;
  meta->accumulation_factor = g.accumulationFactor;
  meta->pipeline_stages = g.pipelineStages;
  for (const auto &[k, v] : options) {
    auto o = std::make_unique<fb::OptionT>();
    o->key = k;
    o->value = v;
    meta->options.push_back(std::move(o));
  }
  exe.metadata = std::move(meta);
  exe.source_model = g.sourceModel;
  std::vector<std::span<const uint8_t>> segment; // per constant: its bytes (popef data segment)
  std::vector<bool> segmentSpilled;              // ...held in a ConstantSpill's file mapping

  // The popef index of each graph tensor. Per-tile temporaries share one popef
  // tensor per lowering and operand (its name without "@<tile>#<id>"), one
  // interval per tile: as separate tensors, hundreds of thousands of them
  // dominated the file, its writing and its verification.
  std::optional<CopyResolver> resolver(std::in_place, g, plan);
  std::vector<uint32_t> tensorIndex(g.tensors().size());
  // (name, dtype, role, filled at load) -> popef index; hashed: the keys of
  // one op's temporaries share long prefixes, which made a tree's compares dear.
  std::unordered_map<std::string, uint32_t> groups;
  for (TensorId id = 0; id < g.tensors().size(); ++id) {
    const DeviceTensor &t = g.tensor(id);
    fb::TensorT *out = nullptr;
    uint64_t groupBegin = 0;
    const std::string name = t.tileTemporary ? t.name.substr(0, t.name.rfind('@')) : t.name;
    if (t.tileTemporary) {
      POPC_ASSERT(t.role != TensorRole::Constant || t.filledAtLoad); // a temporary has no data of its own
      std::string key = name;
      key += {'\0', char(t.dtype), char(t.role), char(t.filledAtLoad)};
      auto [it, added] = groups.try_emplace(std::move(key), uint32_t(exe.tensors.size()));
      tensorIndex[id] = it->second;
      if (!added) {
        out = exe.tensors[it->second].get();
        groupBegin = out->mapping.empty() ? 0 : out->mapping.back().begin() + out->mapping.back().bytes();
      }
    } else {
      tensorIndex[id] = uint32_t(exe.tensors.size());
    }
    if (!out) {
      exe.tensors.push_back(std::make_unique<fb::TensorT>());
      out = exe.tensors.back().get();
      out->name = name;
      out->dtype = static_cast<fb::DType>(t.dtype);
      out->shape = t.shape;
      out->role = static_cast<fb::TensorRole>(t.role);
      out->filled_at_load = t.filledAtLoad;
      if (t.role == TensorRole::Constant && !t.filledAtLoad) {
        // The bytes go to the data segment, straight from the graph (no copy in the object tree).
        out->constant = int32_t(exe.constants.size());
        exe.constants.push_back(std::make_unique<fb::ConstantDataT>());
        segment.emplace_back(t.constantBytes());
        segmentSpilled.push_back(t.constData.empty() && !t.spilled.empty());
      }
    }
    for (size_t i = 0; i < t.mapping.size(); ++i) {
      const Interval &iv = t.mapping[i];
      out->mapping.emplace_back(groupBegin + iv.begin, uint32_t(iv.size()), iv.tile, resolver->address(id, i));
    }
    if (t.tileTemporary) // one dimension: the elements of all its tiles' pieces
      out->shape = {int64_t((groupBegin + t.bytes) / dtypeSize(t.dtype))};
  }
  // Rows spread over a few tiles repeat: stored as cycles (popef.fbs).
  parallelFor(exe.tensors.size(), [&](size_t i) { popef::foldMapping(*exe.tensors[i]); });
  for (const IoInfo &io : g.inputs)
    exe.metadata->inputs.push_back(toIoInfo(io, tensorIndex));
  for (const IoInfo &io : g.outputs)
    exe.metadata->outputs.push_back(toIoInfo(io, tensorIndex));
  for (const IoInfo &io : g.variables)
    exe.metadata->variables.push_back(toIoInfo(io, tensorIndex));

  exe.code.push_back(std::make_unique<fb::CodeModuleT>()); // its bitcode last (code.pendingBitcode)
  for (const codegen::VertexTypeInfo &vt : code.vertexTypes) {
    auto out = std::make_unique<fb::VertexTypeT>();
    out->name = vt.name;
    out->symbol = vt.symbol;
    out->module_ = 0;
    out->cycles = vt.cycles;
    for (const codegen::FieldInfo &f : vt.fields) {
      auto fd = std::make_unique<fb::FieldDeclT>();
      fd->name = f.name;
      fd->bytes = f.bytes;
      fd->access = static_cast<fb::FieldAccess>(f.access);
      out->fields.push_back(std::move(fd));
    }
    exe.vertex_types.push_back(std::move(out));
  }

  std::vector<uint32_t> fieldsOfType;
  for (const codegen::VertexTypeInfo &vt : code.vertexTypes)
    fieldsOfType.push_back(uint32_t(vt.fields.size()));
  for (uint32_t c = 0; c < g.computeSets().size(); ++c) {
    const ComputeSet &cs = g.computeSets()[c];
    auto out = std::make_unique<fb::ComputeSetT>();
    out->name = cs.name;
    std::vector<const Vertex *> vertices;
    for (const Vertex &v : cs.vertices)
      vertices.push_back(&v);
    std::stable_sort(vertices.begin(), vertices.end(),
                     [](const Vertex *a, const Vertex *b) { return a->tile < b->tile; });
    for (const Vertex *v : vertices) {
      const std::vector<codegen::FieldInfo> &declared = code.vertexTypes.at(v->type).fields;
      POPC_ASSERT(v->fields.size() == codegen::memoryFieldCount(declared));
      out->vertices.emplace_back(v->type, v->tile, uint32_t(out->field_offsets.size()));
      for (const FieldRef &f : v->fields) {
        POPC_ASSERT(f.tile == v->tile);
        out->field_offsets.push_back(uint32_t(plan.base(f.tensor, f.tile) + f.blockOffset));
      }
      for (size_t i = v->fields.size(); i < declared.size(); ++i) // immediates: numbers in the field table
        out->field_offsets.push_back(declared[i].value);
    }
    popef::foldVertices(*out, fieldsOfType); // a tile's workers on consecutive slices: one vertex
    exe.compute_sets.push_back(std::move(out));
    if (consumable) // packed: the vertices (a few hundred MB on big models) go before the copies are resolved
      std::vector<Vertex>().swap(consumable->computeSet(c).vertices);
  }
  if (consumable)
    releaseFreedHeap();

  std::vector<bool> atLoad(g.exchanges().size(), false);
  for (const Program &p : g.load().children)
    atLoad.at(p.index) = true;
  // Each step on its own, in parallel: resolved, folded and packed.
  std::vector<std::unique_ptr<fb::ExchangeStepT>> steps(g.exchanges().size());
  std::vector<ExchangeStats> stepStats(steps.size());
  PeriodicHeapRelease release;
  parallelFor(steps.size(), [&](size_t e) {
    const ExchangeStep &ex = g.exchanges()[e];
    std::vector<fb::Copy> copies;
    copies.reserve(ex.copies.size());
    CopyResolver::Cursor from, to;
    for (const Copy &c : ex.copies)
      resolver->resolve(c, copies, from, to);
    if (consumable) { // resolved: the graph's copies go before the sort and the fold need their memory
      CopyList &done = consumable->exchange(uint32_t(e)).copies;
      const uint64_t bytes = done.memoryBytes();
      done.release();
      release.freed(bytes);
    }
    copies = foldStrided(coalesce(std::move(copies)));
    auto out = std::make_unique<fb::ExchangeStepT>();
    out->name = ex.name;
    out->from_replica = ex.fromReplica;
    popef::setCopies(*out, copies);
    (atLoad[e] ? stepStats[e].loadCopies : stepStats[e].copies) = copies.size();
    for (const fb::Copy &c : copies)
      (atLoad[e] ? stepStats[e].loadBytes : stepStats[e].bytes) += popef::copyTotalBytes(c);
    steps[e] = std::move(out);
  });
  resolver.reset();
  if (consumable) // the released copies' pages go back before the file is packed beside the tree
    releaseFreedHeap();
  exe.exchanges = std::move(steps);
  if (stats)
    for (const ExchangeStats &s : stepStats) {
      stats->copies += s.copies, stats->bytes += s.bytes;
      stats->loadCopies += s.loadCopies, stats->loadBytes += s.loadBytes;
    }

  for (const HostStream &s : g.streams()) {
    auto out = std::make_unique<fb::HostStreamT>();
    out->name = s.name;
    out->tensor = tensorIndex.at(s.tensor);
    out->direction = static_cast<fb::StreamDirection>(s.direction);
    out->every = s.every;
    out->group = s.group;
    exe.streams.push_back(std::move(out));
  }

  // The packed size, roughly: what dominates are constants, copy records,
  // tensor mappings, vertices and their field offsets.
  size_t sizeHint = 1 << 20;
  sizeHint += exe.constants.size() * 64;
  for (const auto &ex : exe.exchanges)
    sizeHint += ex->pieces.size() * sizeof(fb::Piece) + ex->placements.size() * sizeof(fb::Placement) + 64;
  for (const auto &t : exe.tensors)
    sizeHint += t->mapping.size() * sizeof(fb::TileInterval) + t->mapping_cycles.size() * sizeof(fb::IntervalCycle) +
                t->name.size() + 96;
  for (const auto &cs : exe.compute_sets)
    sizeHint += cs->vertices.size() * sizeof(fb::Vertex) + cs->field_offsets.size() * 4 +
                cs->vertex_repeats.size() * sizeof(fb::VertexRepeat) + cs->field_strides.size() * 4 + 64;
  exe.main = toProgram(g.main(), tensorIndex);
  if (!g.load().children.empty())
    exe.load = toProgram(g.load(), tensorIndex);
  for (uint64_t used : plan.tileBytesUsed)
    exe.tile_bytes_used.push_back(uint32_t(used));
  for (const DeviceGraph::RunCheck &c : g.checks) {
    auto check = std::make_unique<fb::CheckT>();
    check->compute_set = c.computeSet;
    check->tensor = tensorIndex.at(c.tensor);
    check->message = c.message;
    sizeHint += c.message.size() + 32;
    exe.checks.push_back(std::move(check));
  }
  if (tensorIndexOut)
    *tensorIndexOut = std::move(tensorIndex);
  exe.code[0]->bitcode = code.pendingBitcode.valid() ? code.pendingBitcode.get() : code.bitcode;
  sizeHint += exe.code[0]->bitcode.size();
  try {
    // A spilled constant's pages leave this process as soon as the file's bytes hold it.
    return popef::serialize(std::move(exe), sizeHint, segment, [&](size_t i) {
      if (segmentSpilled[i])
        ConstantSpill::drop(segment[i]);
    });
  } catch (const Error &e) { // (thrown before the tree is consumed: it still has its counts)
    uint64_t pieces = 0, placements = 0;
    for (const auto &ex : exe.exchanges)
      pieces += ex->pieces.size(), placements += ex->placements.size();
    fail("{} ({} tensors, exchange steps of {} placements of {} pieces): compile with a smaller batch, or over "
         "fewer tiles (--tiles-per-ipu), so that the work splits into fewer copies",
         e.what(), exe.tensors.size(), placements, pieces);
  }
}

} // namespace

std::vector<uint8_t> serializeExecutable(const DeviceGraph &g, const MemoryPlan &plan, const ExecutableCode &code,
                                         const std::map<std::string, std::string> &options, ExchangeStats *stats,
                                         std::vector<uint32_t> *tensorIndex) {
  return serializeGraph(g, plan, code, options, stats, tensorIndex, nullptr);
}

std::vector<uint8_t> serializeExecutable(DeviceGraph &&g, const MemoryPlan &plan, const ExecutableCode &code,
                                         const std::map<std::string, std::string> &options, ExchangeStats *stats,
                                         std::vector<uint32_t> *tensorIndex) {
  return serializeGraph(g, plan, code, options, stats, tensorIndex, &g);
}

} // namespace popc::graph
