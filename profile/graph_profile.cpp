#include "profile/graph_profile.h"

#include "runtime/cycle_model.h"

#include <algorithm>
#include <array>
#include <numeric>

namespace popc::profile {

namespace fb = ::popef::fb;

namespace {

using popc::popef::len;
std::string str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }
uint64_t ceilDiv(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : 0; }

Json arrayOf(const std::vector<uint64_t> &v) {
  Json j = Json::array();
  for (uint64_t x : v)
    j.push_back(x);
  return j;
}

Json targetJson(const fb::Target &t) {
  const uint64_t numTiles = uint64_t(t.num_ipus()) * t.tiles_per_ipu();
  return {{"type", "IPU_MODEL"},
          {"arch", str(t.arch())},
          {"numIPUs", t.num_ipus()},
          {"tilesPerIPU", t.tiles_per_ipu()},
          {"numTiles", numTiles},
          {"bytesPerTile", t.bytes_per_tile()},
          {"bytesPerIPU", uint64_t(t.bytes_per_tile()) * t.tiles_per_ipu()},
          {"totalMemory", uint64_t(t.bytes_per_tile()) * numTiles},
          {"clockFrequency", t.clock_hz()},
          {"numWorkerContexts", t.workers_per_tile()},
          {"replicationFactor", std::max(1u, t.replication_factor())},
          {"exchangeBytesPerCycle", t.exchange_bytes_per_cycle()},
          {"interIpuBytesPerCycle", t.inter_ipu_bytes_per_cycle()},
          {"hostBytesPerCycle", t.host_bytes_per_cycle()},
          {"minSyncDelay", t.sync_cycles()},
          {"globalSyncCycles", t.global_sync_cycles()}};
}

// Compute sets: vertex counts by type and tile, and the cycle estimates the
// engine uses (same vertex order: by tile, then type, stable).
Json computeSetsJson(const fb::Executable &exe, uint32_t numTiles) {
  const fb::Target &t = *exe.target();
  const uint32_t workers = std::max(1u, t.workers_per_tile());
  const uint32_t nTypes = len(exe.vertex_types());
  Json names = Json::array(), types = Json::array(), counts = Json::array(), byTile = Json::array(),
       active = Json::array(), activeByType = Json::array(), cycles = Json::array();
  for (uint32_t c = 0; c < len(exe.compute_sets()); ++c) {
    const fb::ComputeSet *cs = exe.compute_sets()->Get(c);
    names.push_back(str(cs->name()));
    const uint32_t nv = len(cs->vertices());
    std::vector<uint32_t> order(nv);
    std::iota(order.begin(), order.end(), 0u);
    auto key = [&](uint32_t v) { return std::pair(cs->vertices()->Get(v)->tile(), cs->vertices()->Get(v)->type()); };
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    std::vector<uint64_t> times; // vertices each stored vertex stands for
    times.reserve(nv);
    popef::forEachStoredVertex(*cs, [&](const fb::Vertex &, uint64_t n, const fb::VertexRepeat *) { times.push_back(n); });
    std::vector<uint64_t> perType(nTypes, 0), cyclesPerType(nTypes, 0), tileCount(numTiles, 0),
        tileActive(numTiles, 0), tileCycles(numTiles, 0);
    std::vector<uint64_t> costs;
    for (uint32_t k = 0; k < nv;) {
      const uint32_t tile = cs->vertices()->Get(order[k])->tile();
      costs.clear();
      for (; k < nv && cs->vertices()->Get(order[k])->tile() == tile; ++k) {
        const uint32_t type = cs->vertices()->Get(order[k])->type();
        const uint64_t cost = exe.vertex_types()->Get(type)->cycles();
        for (uint64_t i = 0; i < times[order[k]]; ++i) // a repeated vertex: its repetitions follow it
          costs.push_back(cost);
        perType[type] += times[order[k]];
        cyclesPerType[type] += cost * times[order[k]];
      }
      tileCount[tile] = costs.size();
      tileCycles[tile] = runtime::tileComputeCycles(costs, workers);
      tileActive[tile] = std::accumulate(costs.begin(), costs.end(), uint64_t(0));
    }
    Json csTypes = Json::array(), csCounts = Json::array();
    std::vector<uint64_t> activeType(nTypes, 0);
    for (uint32_t type = 0; type < nTypes; ++type) {
      activeType[type] = cyclesPerType[type];
      if (perType[type]) {
        csTypes.push_back(type);
        csCounts.push_back(perType[type]);
      }
    }
    types.push_back(csTypes);
    counts.push_back(csCounts);
    byTile.push_back(arrayOf(tileCount));
    active.push_back(arrayOf(tileActive));
    activeByType.push_back(arrayOf(activeType));
    cycles.push_back(arrayOf(tileCycles));
  }
  return {{"names", names},
          {"vertexTypes", types},
          {"vertexCounts", counts},
          {"vertexCountsByTile", byTile},
          {"cycleEstimates",
           {{"activeCyclesByTile", active}, {"activeCyclesByVertexType", activeByType}, {"cyclesByTile", cycles}}}};
}

struct ExchangeLists {
  Json internal, external;
  std::vector<uint32_t> listIndex; // popef exchange -> index in its list
};

ExchangeLists exchangesJson(const fb::Executable &exe, uint32_t numTiles) {
  const fb::Target &t = *exe.target();
  auto empty = [](const char *cyclesKey) {
    return Json{{"names", Json::array()},      {"popefIndex", Json::array()},  {"totalData", Json::array()},
                {"bytesReceivedByTile", Json::array()}, {"bytesSentByTile", Json::array()},
                {cyclesKey, Json::array()}};
  };
  ExchangeLists out{empty("cyclesByTile"), empty("estimatedCyclesByTile"), {}};
  for (uint32_t e = 0; e < len(exe.exchanges()); ++e) {
    const fb::ExchangeStep *step = exe.exchanges()->Get(e);
    uint64_t total = 0;
    popef::forEachCopy(*step, [&](const fb::Copy &c) { total += popef::copyTotalBytes(c); });
    std::vector<uint64_t> sent(numTiles), received(numTiles), cycles(numTiles);
    for (const runtime::TileTraffic &x : runtime::exchangeTraffic(t, *step)) {
      sent[x.tile] = x.sentOn + x.sentX;
      received[x.tile] = x.recvOn + x.recvX;
      cycles[x.tile] = runtime::tileExchangeCycles(t, x);
    }
    const bool external = isInterIpu(t, *step);
    Json &list = external ? out.external : out.internal;
    out.listIndex.push_back(static_cast<uint32_t>(list["names"].size()));
    list["names"].push_back(str(step->name()));
    list["popefIndex"].push_back(e);
    list["totalData"].push_back(total);
    list["bytesReceivedByTile"].push_back(arrayOf(received));
    list["bytesSentByTile"].push_back(arrayOf(sent));
    list[external ? "estimatedCyclesByTile" : "cyclesByTile"].push_back(arrayOf(cycles));
  }
  return out;
}

// Host exchanges: one per host stream. The tiles holding the tensor receive
// (host to device) or send (device to host) their share; PCIe is shared, so
// the step takes total bytes / host_bytes_per_cycle (runtime/cycle_model.h).
Json hostExchangesJson(const fb::Executable &exe, uint32_t numTiles) {
  const fb::Target &t = *exe.target();
  Json j{{"names", Json::array()},          {"direction", Json::array()},       {"totalData", Json::array()},
         {"cycles", Json::array()},         {"bytesReceivedByTile", Json::array()},
         {"bytesSentByTile", Json::array()}, {"estimatedCyclesByTile", Json::array()},
         {"every", Json::array()},          {"group", Json::array()}};
  for (uint32_t s = 0; s < len(exe.streams()); ++s) {
    const fb::HostStream *stream = exe.streams()->Get(s);
    const fb::Tensor *tensor = exe.tensors()->Get(stream->tensor());
    std::vector<uint64_t> bytes(numTiles, 0), zero(numTiles, 0), cycles(numTiles, 0);
    popef::forEachLane(*tensor, [&](const fb::TileInterval &iv, uint64_t times) { bytes[iv.tile()] += iv.bytes() * times; });
    for (uint32_t tile = 0; tile < numTiles; ++tile)
      cycles[tile] = ceilDiv(bytes[tile], t.host_bytes_per_cycle());
    const bool in = stream->direction() == fb::StreamDirection::HostToDevice;
    const uint64_t total = popef::tensorBytes(*tensor);
    j["names"].push_back(str(stream->name()));
    j["direction"].push_back(fb::EnumNameStreamDirection(stream->direction()));
    j["totalData"].push_back(total);
    j["cycles"].push_back(runtime::streamCopyCost(t, total * std::max(1u, t.replication_factor())).host);
    j["every"].push_back(std::max(1u, stream->every()));
    j["group"].push_back(std::max(1u, stream->group()));
    j["bytesReceivedByTile"].push_back(arrayOf(in ? bytes : zero));
    j["bytesSentByTile"].push_back(arrayOf(in ? zero : bytes));
    j["estimatedCyclesByTile"].push_back(arrayOf(cycles));
  }
  return j;
}

Json programsJson(const fb::Executable &exe, const ProgramIndex &index, const std::vector<uint32_t> &exchangeIndex) {
  Json list = Json::array();
  for (uint32_t id = 0; id < index.size(); ++id) {
    const fb::Program &p = index.program(id);
    Json j;
    switch (p.kind()) {
    case fb::ProgramKind::Sequence: j["type"] = "Sequence"; break;
    case fb::ProgramKind::Repeat:
      j["type"] = "Repeat";
      j["repeatCount"] = p.count();
      break;
    case fb::ProgramKind::Execute:
      j["type"] = "OnTileExecute";
      j["computeSet"] = p.index();
      break;
    case fb::ProgramKind::Exchange:
      j["type"] = isInterIpu(*exe.target(), *exe.exchanges()->Get(p.index())) ? "GlobalExchange" : "DoExchange";
      j["exchange"] = exchangeIndex[p.index()];
      break;
    case fb::ProgramKind::StreamCopy:
      j["type"] = "StreamCopy";
      j["exchange"] = p.index();
      break;
    case fb::ProgramKind::Call:
      j["type"] = "Call";
      j["target"] = p.index();
      break;
    case fb::ProgramKind::Sync:
      j["type"] = "Sync";
      j["syncType"] = "Internal";
      break;
    // Control on a scalar tensor (graph API): children [then, else], [cond, body], or the cases then the default.
    case fb::ProgramKind::If:
      j["type"] = "If";
      j["tensor"] = p.tensor();
      break;
    case fb::ProgramKind::RepeatWhileTrue:
      j["type"] = "RepeatWhileTrue";
      j["tensor"] = p.tensor();
      break;
    case fb::ProgramKind::Switch: {
      j["type"] = "Switch";
      j["tensor"] = p.tensor();
      Json cases = Json::array();
      for (uint32_t i = 0; i < len(p.case_values()); ++i)
        cases.push_back(p.case_values()->Get(i));
      j["caseValues"] = cases;
      break;
    }
    case fb::ProgramKind::PrintTensor:
      j["type"] = "PrintTensor";
      j["tensor"] = p.tensor();
      break;
    }
    std::string name = str(p.name());
    if (name.empty() && p.kind() == fb::ProgramKind::Execute)
      name = str(exe.compute_sets()->Get(p.index())->name());
    if (name.empty() && p.kind() == fb::ProgramKind::Exchange)
      name = str(exe.exchanges()->Get(p.index())->name());
    if (name.empty() && p.kind() == fb::ProgramKind::StreamCopy)
      name = str(exe.streams()->Get(p.index())->name());
    if (!name.empty())
      j["name"] = name;
    if (p.parallel())
      j["parallel"] = true; // children on different IPUs at once: the slowest IPU counts
    if (p.ipu() >= 0)
      j["ipu"] = p.ipu(); // a parallel Sequence's child: the IPU it runs on
    if (p.children() || p.kind() == fb::ProgramKind::Sequence || p.kind() == fb::ProgramKind::Repeat) {
      j["children"] = Json::array();
      for (uint32_t i = 0; i < len(p.children()); ++i)
        j["children"].push_back(index.id(p.children()->Get(i)));
    }
    list.push_back(j);
  }
  return list;
}

// Memory from the tensors' placements. A byte shared by blocks of several
// tensors (liveness lets the planner reuse it) is "overlapped".
Json memoryJson(const fb::Executable &exe, uint32_t numTiles) {
  enum Category { kConstant, kVariable, kCategories };
  static const char *kNames[kCategories] = {"constant", "variable"};
  struct Range {
    uint64_t pos;
    int delta;
    Category cat;
  };
  std::vector<std::vector<Range>> events(numTiles);
  for (uint32_t i = 0; i < len(exe.tensors()); ++i) {
    const fb::Tensor *x = exe.tensors()->Get(i);
    const Category cat = x->role() == fb::TensorRole::Constant ? kConstant : kVariable;
    popef::forEachLane(*x, [&](const fb::TileInterval &iv, uint64_t times) { // a lane's repetitions: one block
      if (!iv.bytes())
        return;
      events[iv.tile()].push_back({iv.offset(), +1, cat});
      events[iv.tile()].push_back({iv.offset() + iv.bytes() * times, -1, cat});
    });
  }
  std::vector<uint64_t> total(numTiles, 0), zeros(numTiles, 0), gaps(numTiles, 0);
  std::vector<std::vector<uint64_t>> nonOverlapped(kCategories, zeros), overlapped(kCategories, zeros);
  for (uint32_t tile = 0; tile < numTiles; ++tile) {
    auto &ev = events[tile];
    std::sort(ev.begin(), ev.end(), [](const Range &a, const Range &b) {
      return std::tie(a.pos, a.delta, a.cat) < std::tie(b.pos, b.delta, b.cat);
    });
    int64_t count[kCategories] = {0, 0};
    uint64_t prev = 0, end = 0;
    for (const Range &r : ev) {
      const uint64_t span = r.pos - prev;
      const int64_t k = count[kConstant] + count[kVariable];
      if (span && k == 1)
        nonOverlapped[count[kConstant] ? kConstant : kVariable][tile] += span;
      if (span && k >= 2)
        for (int c = 0; c < kCategories; ++c)
          overlapped[c][tile] += span * count[c];
      if (span && k >= 1)
        total[tile] += span;
      count[r.cat] += r.delta;
      prev = r.pos;
      end = std::max(end, r.pos);
    }
    gaps[tile] = len(exe.tile_bytes_used()) == numTiles ? std::max<uint64_t>(exe.tile_bytes_used()->Get(tile), end)
                                                        : end;
  }
  Json byCategory;
  for (int c = 0; c < kCategories; ++c) {
    std::vector<uint64_t> sum(numTiles);
    for (uint32_t tile = 0; tile < numTiles; ++tile)
      sum[tile] = nonOverlapped[c][tile] + overlapped[c][tile];
    byCategory[kNames[c]] = {
        {"nonInterleaved", {{"nonOverlapped", arrayOf(nonOverlapped[c])}, {"overlapped", arrayOf(overlapped[c])}}},
        {"total", arrayOf(sum)}};
  }
  return {{"byTile",
           {{"interleaved", arrayOf(zeros)},
            {"nonInterleaved", arrayOf(total)},
            {"overflowed", arrayOf(zeros)},
            {"total", arrayOf(total)},
            {"totalIncludingGaps", arrayOf(gaps)}}},
          {"byCategory", byCategory},
          {"notModelled",
           {"vertexCode", "vertexInstanceState", "controlCode", "stack", "internalExchangeCode",
            "hostExchangeCode", "message"}}};
}

// Per IPU: memory (from the per-tile totals) and the bytes each IPU sends and
// receives over the IPU links per run of the program's exchanges.
Json ipusJson(const fb::Executable &exe, const Json &tileTotals) {
  const fb::Target &t = *exe.target();
  const uint32_t tilesPerIpu = std::max(1u, t.tiles_per_ipu());
  const uint32_t numIpus = std::max(1u, t.num_ipus()) * std::max(1u, t.replication_factor());
  std::vector<uint64_t> bytes(numIpus), maxTile(numIpus), tilesUsed(numIpus), sent(numIpus), received(numIpus);
  for (size_t tile = 0; tile < tileTotals.size(); ++tile) {
    const uint32_t ipu = uint32_t(tile / tilesPerIpu);
    const uint64_t b = tileTotals[tile].get<uint64_t>();
    if (ipu >= numIpus || !b)
      continue;
    bytes[ipu] += b;
    maxTile[ipu] = std::max(maxTile[ipu], b);
    ++tilesUsed[ipu];
  }
  for (uint32_t e = 0; e < len(exe.exchanges()); ++e) {
    const fb::ExchangeStep *step = exe.exchanges()->Get(e);
    popef::forEachCopy(*step, [&](const fb::Copy &c) {
      const uint32_t from = c.src_tile() / tilesPerIpu, to = c.dst_tile() / tilesPerIpu;
      if (from != to && from < numIpus && to < numIpus) {
        sent[from] += popef::copyTotalBytes(c);
        received[to] += popef::copyTotalBytes(c);
      }
    });
  }
  Json out = Json::array();
  for (uint32_t ipu = 0; ipu < numIpus; ++ipu)
    out.push_back({{"ipu", ipu},
                   {"memoryBytes", bytes[ipu]},
                   {"maxTileBytes", maxTile[ipu]},
                   {"tilesUsed", tilesUsed[ipu]},
                   {"linkBytesSent", sent[ipu]},
                   {"linkBytesReceived", received[ipu]}});
  return out;
}

} // namespace

Json tensorMap(const popef::Executable &file) {
  const fb::Executable &exe = file.root();
  Json j = Json::object();
  for (uint32_t i = 0; i < len(exe.tensors()); ++i) {
    const fb::Tensor *t = exe.tensors()->Get(i);
    std::string name = str(t->name());
    if (j.contains(name)) // names are unique in practice; never drop a tensor
      name += "#" + std::to_string(i);
    std::vector<uint32_t> tiles;
    Json intervals = Json::array();
    popef::forEachInterval(*t, [&](const fb::TileInterval &iv) {
      tiles.push_back(iv.tile());
      intervals.push_back({iv.begin(), iv.begin() + iv.bytes(), uint64_t(iv.tile()), uint64_t(iv.offset())});
    });
    std::sort(tiles.begin(), tiles.end());
    tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
    Json shape = Json::array();
    for (uint32_t k = 0; k < len(t->shape()); ++k)
      shape.push_back(t->shape()->Get(k));
    j[name] = {{"dtype", dtypeName(static_cast<DType>(t->dtype()))},
               {"shape", shape},
               {"role", fb::EnumNameTensorRole(t->role())},
               {"tiles", tiles},
               {"intervals", intervals}};
  }
  return j;
}

bool isInterIpu(const fb::Target &target, const fb::ExchangeStep &step) {
  if (step.from_replica() >= 0) // from another replica's IPU (runtime/cycle_model.cpp)
    return true;
  bool cross = false;
  popef::forEachCopy(step, [&](const fb::Copy &c) {
    cross |= c.src_tile() / target.tiles_per_ipu() != c.dst_tile() / target.tiles_per_ipu();
  });
  return cross;
}

ProgramIndex::ProgramIndex(const fb::Executable &exe) {
  add(*exe.main());
  for (uint32_t i = 0; i < len(exe.functions()); ++i) {
    functionIds_.push_back(static_cast<uint32_t>(programs_.size()));
    add(*exe.functions()->Get(i));
  }
}

void ProgramIndex::add(const fb::Program &p) {
  ids_.emplace(&p, static_cast<uint32_t>(programs_.size()));
  programs_.push_back(&p);
  for (uint32_t i = 0; i < len(p.children()); ++i)
    add(*p.children()->Get(i));
}

Json graphProfile(const popef::Executable &file) {
  const fb::Executable &exe = file.root();
  const fb::Target &t = *exe.target();
  const uint32_t numTiles = t.num_ipus() * t.tiles_per_ipu();
  // Edges: fields connected to tensors (an immediate is a number, not an edge).
  std::vector<uint64_t> typeEdges;
  for (uint32_t i = 0; i < len(exe.vertex_types()); ++i) {
    const fb::VertexType *vt = exe.vertex_types()->Get(i);
    uint64_t n = 0;
    for (uint32_t f = 0; f < len(vt->fields()); ++f)
      n += popef::isImmediate(*vt->fields()->Get(f)) ? 0 : 1;
    typeEdges.push_back(n);
  }
  uint64_t vertices = 0, edges = 0;
  for (uint32_t c = 0; c < len(exe.compute_sets()); ++c) {
    const fb::ComputeSet *cs = exe.compute_sets()->Get(c);
    popef::forEachStoredVertex(*cs, [&](const fb::Vertex &v, uint64_t times, const fb::VertexRepeat *) {
      vertices += times;
      edges += times * typeEdges[v.type()];
    });
  }
  Json j;
  j["profileFormat"] = "popc-graph-profile/1";
  j["target"] = targetJson(t);
  j["graph"] = {{"numComputeSets", len(exe.compute_sets())},
                {"numEdges", edges},
                {"numVars", len(exe.tensors())},
                {"numVertices", vertices}};
  Json vt{{"names", Json::array()}, {"sizes", Json::array()}, {"cycleEstimates", Json::array()}};
  for (uint32_t i = 0; i < len(exe.vertex_types()); ++i) {
    const fb::VertexType *type = exe.vertex_types()->Get(i);
    vt["names"].push_back(str(type->name()));
    vt["sizes"].push_back(4 * len(type->fields())); // the field-offset table of one vertex
    vt["cycleEstimates"].push_back(type->cycles());
  }
  j["vertexTypes"] = vt;
  j["computeSets"] = computeSetsJson(exe, numTiles);
  ExchangeLists ex = exchangesJson(exe, numTiles);
  j["exchanges"] = ex.internal;
  j["externalExchanges"] = ex.external;
  j["hostExchanges"] = hostExchangesJson(exe, numTiles);
  ProgramIndex index(exe);
  j["programs"] = programsJson(exe, index, ex.listIndex);
  j["controlPrograms"] = {0};
  j["functionPrograms"] = Json::array();
  for (uint32_t id : index.functionIds())
    j["functionPrograms"].push_back(id);
  j["memory"] = memoryJson(exe, numTiles);
  j["ipus"] = ipusJson(exe, j["memory"]["byTile"]["total"]);
  return j;
}

} // namespace popc::profile
