// popef-info: inspect a popef executable (header, target, model I/O, tensors,
// memory per tile, vertex types, compute sets, exchanges, program tree).
// The text output is rendered from the same JSON document --json prints.
#include "formats/popef/popef.h"
#include "profile/graph_profile.h"
#include "profile/summary.h"
#include "support/error.h"
#include "support/version.h"

#include "tools/cli_common.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <map>
#include <set>

namespace {

using namespace popc;
using nlohmann::ordered_json;
namespace fb = ::popef::fb;

using popc::popef::len;
std::string str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }
std::string dtypeStr(fb::DType d) { return std::string(dtypeName(static_cast<DType>(d))); }
ordered_json shapeJson(const flatbuffers::Vector<int64_t> *s) {
  ordered_json j = ordered_json::array();
  for (uint32_t i = 0; i < len(s); ++i)
    j.push_back(s->Get(i));
  return j;
}
std::string shapeStr(const ordered_json &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i].get<int64_t>());
  return s + "]";
}

ordered_json ioJson(const fb::Executable &exe, const flatbuffers::Vector<flatbuffers::Offset<fb::IoInfo>> *list) {
  ordered_json j = ordered_json::array();
  for (uint32_t i = 0; i < len(list); ++i) {
    const fb::IoInfo *io = list->Get(i);
    j.push_back({{"name", str(io->name())}, {"dtype", dtypeStr(io->dtype())}, {"shape", shapeJson(io->shape())},
                 {"tensor", io->tensor()}, {"stream", io->stream()}});
  }
  return j;
}

ordered_json programJson(const fb::Executable &exe, const fb::Program &p) {
  ordered_json j;
  j["kind"] = fb::EnumNameProgramKind(p.kind());
  if (!str(p.name()).empty())
    j["name"] = str(p.name());
  if (p.parallel())
    j["parallel"] = true;
  switch (p.kind()) {
  case fb::ProgramKind::Execute:
    j["compute_set"] = p.index();
    j["target_name"] = str(exe.compute_sets()->Get(p.index())->name());
    break;
  case fb::ProgramKind::Exchange:
    j["exchange"] = p.index();
    j["target_name"] = str(exe.exchanges()->Get(p.index())->name());
    break;
  case fb::ProgramKind::StreamCopy:
    j["stream"] = p.index();
    j["target_name"] = str(exe.streams()->Get(p.index())->name());
    j["direction"] = fb::EnumNameStreamDirection(exe.streams()->Get(p.index())->direction());
    break;
  case fb::ProgramKind::Call: j["function"] = p.index(); break;
  case fb::ProgramKind::Repeat: j["count"] = p.count(); break;
  case fb::ProgramKind::If:
  case fb::ProgramKind::RepeatWhileTrue:
  case fb::ProgramKind::Switch:
  case fb::ProgramKind::PrintTensor:
    j["tensor"] = p.tensor();
    if (p.case_values())
      j["case_values"] = std::vector<int64_t>(p.case_values()->begin(), p.case_values()->end());
    break;
  default: break;
  }
  if (p.kind() == fb::ProgramKind::Sequence || p.kind() == fb::ProgramKind::Repeat || p.children()) {
    j["children"] = ordered_json::array();
    for (uint32_t i = 0; i < len(p.children()); ++i)
      j["children"].push_back(programJson(exe, *p.children()->Get(i)));
  }
  return j;
}

// Distinct entry functions: types that differ only in their immediates share one (popef.fbs).
uint64_t vertexFunctions(const fb::Executable &exe) {
  std::set<std::pair<uint32_t, std::string>> functions;
  for (uint32_t i = 0; i < len(exe.vertex_types()); ++i)
    functions.emplace(exe.vertex_types()->Get(i)->module_(), str(exe.vertex_types()->Get(i)->symbol()));
  return functions.size();
}

// The whole description; `withTensors` false leaves out the tensor list (the
// slow part on a large model) unless the memory figures need the mappings.
ordered_json describe(const popc::popef::Executable &file, bool withTensors) {
  const fb::Executable &exe = file.root();
  const fb::Target &t = *exe.target();
  uint32_t numTiles = t.num_ipus() * t.tiles_per_ipu();
  ordered_json j;
  j["file"] = file.label();
  j["header"] = {{"format_version", exe.format_version()}, {"compiler_version", str(exe.compiler_version())},
                 {"bytes", file.bytes().size()}};
  j["target"] = {{"arch", str(t.arch())},
                 {"num_ipus", t.num_ipus()},
                 {"tiles_per_ipu", t.tiles_per_ipu()},
                 {"bytes_per_tile", t.bytes_per_tile()},
                 {"workers_per_tile", t.workers_per_tile()},
                 {"clock_hz", t.clock_hz()},
                 {"exchange_bytes_per_cycle", t.exchange_bytes_per_cycle()},
                 {"inter_ipu_bytes_per_cycle", t.inter_ipu_bytes_per_cycle()},
                 {"host_bytes_per_cycle", t.host_bytes_per_cycle()},
                 {"sync_cycles", t.sync_cycles()},
                 {"global_sync_cycles", t.global_sync_cycles()}};
  if (t.replication_factor() > 1)
    j["target"]["replication_factor"] = t.replication_factor();
  const fb::Metadata *m = exe.metadata();
  j["model"] = {{"name", m ? str(m->model_name()) : ""},
                {"inputs", ioJson(exe, m ? m->inputs() : nullptr)},
                {"outputs", ioJson(exe, m ? m->outputs() : nullptr)},
                {"options", ordered_json::object()}};
  for (uint32_t i = 0; m && i < len(m->options()); ++i)
    j["model"]["options"][str(m->options()->Get(i)->key())] = str(m->options()->Get(i)->value());
  // Step structure (docs/multi-ipu.md), only when there is one.
  if (m && (m->batches_per_step() > 1 || m->accumulation_factor() > 1 || m->pipeline_stages() ||
            t.replication_factor() > 1)) {
    j["step"] = {{"batches_per_step", m->batches_per_step()},
                 {"accumulation_factor", m->accumulation_factor()},
                 {"replication_factor", t.replication_factor()},
                 {"pipeline_stages", m->pipeline_stages()}};
  }
  for (const char *kind : {"inputs", "outputs"}) {
    const auto *list = std::string(kind) == "inputs" ? (m ? m->inputs() : nullptr) : (m ? m->outputs() : nullptr);
    for (uint32_t i = 0; i < len(list); ++i) {
      if (len(list->Get(i)->host_shape()))
        j["model"][kind][i]["host_shape"] = shapeJson(list->Get(i)->host_shape());
      if (list->Get(i)->anchor())
        j["model"][kind][i]["anchor"] = str(list->Get(i)->anchor());
    }
  }

  // Tensors, and bytes mapped per tile (used when the file has no memory plan).
  std::map<uint32_t, uint64_t> mapped;
  bool planned = len(exe.tile_bytes_used()) == numTiles;
  j["tensors"] = ordered_json::array();
  for (uint32_t i = 0; (withTensors || !planned) && i < len(exe.tensors()); ++i) {
    const fb::Tensor *x = exe.tensors()->Get(i);
    std::set<uint32_t> tiles;
    uint64_t intervals = 0;
    popc::popef::forEachLane(*x, [&](const fb::TileInterval &iv, uint64_t times) {
      tiles.insert(iv.tile());
      mapped[iv.tile()] += iv.bytes() * times;
      intervals += times;
    });
    j["tensors"].push_back({{"name", str(x->name())}, {"dtype", dtypeStr(x->dtype())},
                            {"shape", shapeJson(x->shape())}, {"role", fb::EnumNameTensorRole(x->role())},
                            {"bytes", popc::popef::tensorBytes(*x)}, {"intervals", intervals},
                            {"tiles", tiles.size()}});
  }

  // Memory per tile.
  std::vector<std::pair<uint64_t, uint32_t>> perTile; // (bytes, tile)
  if (planned) {
    for (uint32_t tile = 0; tile < numTiles; ++tile)
      if (exe.tile_bytes_used()->Get(tile))
        perTile.push_back({exe.tile_bytes_used()->Get(tile), tile});
  } else {
    for (auto [tile, bytes] : mapped)
      perTile.push_back({bytes, tile});
  }
  uint64_t sum = 0, max = 0;
  for (auto [bytes, tile] : perTile)
    sum += bytes, max = std::max(max, bytes);
  std::stable_sort(perTile.begin(), perTile.end(), [](auto a, auto b) { return a.first > b.first; });
  ordered_json top = ordered_json::array();
  for (size_t i = 0; i < std::min<size_t>(5, perTile.size()); ++i)
    top.push_back({{"tile", perTile[i].second}, {"bytes", perTile[i].first}});
  j["memory"] = {{"source", planned ? "tile_bytes_used" : "tensor mappings"},
                 {"tiles", numTiles},
                 {"used_tiles", perTile.size()},
                 {"total_bytes", sum},
                 {"max_bytes", max},
                 {"mean_bytes_per_used_tile", perTile.empty() ? 0.0 : double(sum) / perTile.size()},
                 {"bytes_per_tile", t.bytes_per_tile()},
                 {"top_tiles", top}};

  // Per IPU (multi-IPU targets): memory and the bytes its exchanges send over the links.
  if (t.num_ipus() > 1) {
    std::vector<uint64_t> ipuBytes(t.num_ipus(), 0), ipuMax(t.num_ipus(), 0), ipuTiles(t.num_ipus(), 0),
        ipuSent(t.num_ipus(), 0), ipuReceived(t.num_ipus(), 0);
    for (auto [bytes, tile] : perTile) {
      const uint32_t ipu = tile / t.tiles_per_ipu();
      ipuBytes[ipu] += bytes, ipuTiles[ipu]++, ipuMax[ipu] = std::max(ipuMax[ipu], bytes);
    }
    for (uint32_t i = 0; i < len(exe.exchanges()); ++i)
      popc::popef::forEachCopy(*exe.exchanges()->Get(i), [&](const fb::Copy &cp) {
        const uint32_t from = cp.src_tile() / t.tiles_per_ipu(), to = cp.dst_tile() / t.tiles_per_ipu();
        if (from != to)
          ipuSent[from] += popc::popef::copyTotalBytes(cp), ipuReceived[to] += popc::popef::copyTotalBytes(cp);
      });
    j["memory"]["per_ipu"] = ordered_json::array();
    for (uint32_t ipu = 0; ipu < t.num_ipus(); ++ipu)
      j["memory"]["per_ipu"].push_back({{"ipu", ipu}, {"used_tiles", ipuTiles[ipu]}, {"total_bytes", ipuBytes[ipu]},
                                        {"max_bytes", ipuMax[ipu]}, {"inter_ipu_bytes_sent", ipuSent[ipu]},
                                        {"inter_ipu_bytes_received", ipuReceived[ipu]}});
  }

  j["code_modules"] = ordered_json::array();
  for (uint32_t i = 0; i < len(exe.code()); ++i)
    j["code_modules"].push_back({{"bitcode_bytes", len(exe.code()->Get(i)->bitcode())}});

  j["vertex_types"] = ordered_json::array();
  for (uint32_t i = 0; i < len(exe.vertex_types()); ++i) {
    const fb::VertexType *vt = exe.vertex_types()->Get(i);
    ordered_json fields = ordered_json::array();
    for (uint32_t f = 0; f < len(vt->fields()); ++f) {
      const fb::FieldDecl *fd = vt->fields()->Get(f);
      fields.push_back({{"name", str(fd->name())}, {"bytes", fd->bytes()},
                        {"access", fb::EnumNameFieldAccess(fd->access())}});
    }
    j["vertex_types"].push_back({{"name", str(vt->name())}, {"symbol", str(vt->symbol())},
                                 {"module", vt->module_()}, {"cycles", vt->cycles()}, {"fields", fields}});
  }

  j["compute_sets"] = ordered_json::array();
  for (uint32_t i = 0; i < len(exe.compute_sets()); ++i) {
    const fb::ComputeSet *cs = exe.compute_sets()->Get(i);
    std::set<uint32_t> tiles;
    for (uint32_t v = 0; v < len(cs->vertices()); ++v)
      tiles.insert(cs->vertices()->Get(v)->tile());
    j["compute_sets"].push_back({{"name", str(cs->name())},
                                 {"vertices", popc::popef::vertexCount(*cs)},
                                 {"stored_vertices", len(cs->vertices())},
                                 {"tiles", tiles.size()}});
  }

  j["exchanges"] = ordered_json::array();
  for (uint32_t i = 0; i < len(exe.exchanges()); ++i) {
    const fb::ExchangeStep *ex = exe.exchanges()->Get(i);
    uint64_t bytes = 0, cross = 0;
    popc::popef::forEachCopy(*ex, [&](const fb::Copy &cp) {
      bytes += popc::popef::copyTotalBytes(cp);
      if (cp.src_tile() / t.tiles_per_ipu() != cp.dst_tile() / t.tiles_per_ipu())
        cross += popc::popef::copyTotalBytes(cp);
    });
    j["exchanges"].push_back({{"name", str(ex->name())}, {"copies", popc::popef::stepRecordCount(*ex)},
                              {"pieces", len(ex->pieces())}, {"placements", len(ex->placements())},
                              {"bytes", bytes}, {"inter_ipu_bytes", cross}});
  }

  j["streams"] = ordered_json::array();
  for (uint32_t i = 0; i < len(exe.streams()); ++i) {
    const fb::HostStream *s = exe.streams()->Get(i);
    j["streams"].push_back({{"name", str(s->name())}, {"tensor", s->tensor()},
                            {"direction", fb::EnumNameStreamDirection(s->direction())}});
  }

  // Counts for the default page: what is in the file without listing it.
  std::set<uint32_t> atLoad;
  if (exe.load())
    for (uint32_t i = 0; i < len(exe.load()->children()); ++i)
      atLoad.insert(exe.load()->children()->Get(i)->index());
  uint64_t vertices = 0, storedVertices = 0, records = 0, runBytes = 0, loadBytes = 0, constantBytes = 0;
  for (const auto &cs : j["compute_sets"]) {
    vertices += cs["vertices"].get<uint64_t>();
    storedVertices += cs["stored_vertices"].get<uint64_t>();
  }
  // The per-step totals above already walked every copy record.
  uint64_t pieces = 0, placements = 0;
  for (size_t i = 0; i < j["exchanges"].size(); ++i) {
    records += j["exchanges"][i]["copies"].get<uint64_t>();
    pieces += j["exchanges"][i]["pieces"].get<uint64_t>();
    placements += j["exchanges"][i]["placements"].get<uint64_t>();
    (atLoad.count(uint32_t(i)) ? loadBytes : runBytes) += j["exchanges"][i]["bytes"].get<uint64_t>();
  }
  for (uint32_t i = 0; i < len(exe.constants()); ++i)
    constantBytes += file.constant(i).size();
  // Where the file's bytes go, by section: the fixed-size records are exact,
  // "other" is names, shapes, tables and alignment.
  // (Stored intervals and cycles for the file's bytes; the intervals they stand for in the counts.)
  uint64_t storedIntervals = 0, cycles = 0, intermediates = 0, intermediateIntervals = 0, fieldOffsets = 0, bitcode = 0;
  for (uint32_t i = 0; i < len(exe.tensors()); ++i) {
    const fb::Tensor *x = exe.tensors()->Get(i);
    storedIntervals += len(x->mapping());
    cycles += len(x->mapping_cycles());
    if (x->role() == fb::TensorRole::Intermediate) {
      intermediates++;
      popc::popef::forEachLane(*x, [&](const fb::TileInterval &, uint64_t times) { intermediateIntervals += times; });
    }
  }
  const uint64_t intervalBytes = storedIntervals * sizeof(fb::TileInterval) + cycles * sizeof(fb::IntervalCycle);
  for (uint32_t i = 0; i < len(exe.compute_sets()); ++i)
    fieldOffsets += len(exe.compute_sets()->Get(i)->field_offsets()) + len(exe.compute_sets()->Get(i)->field_strides()) +
                    len(exe.compute_sets()->Get(i)->vertex_repeats()) * sizeof(fb::VertexRepeat) / 4;
  for (uint32_t i = 0; i < len(exe.code()); ++i)
    bitcode += len(exe.code()->Get(i)->bitcode());
  const uint64_t fileBytes = file.bytes().size();
  // A compressed file's sections are counted as they are once decompressed
  // (the schedule, with any inline constants, then the data segment's).
  uint64_t segmentBytes = 0;
  for (uint32_t i = 0; i < len(exe.constants()); ++i)
    segmentBytes += exe.constants()->Get(i)->size();
  const uint64_t contentBytes = file.compressed() ? file.schedule().size() + segmentBytes + 16 : fileBytes;
  const uint64_t known = constantBytes + pieces * sizeof(fb::Piece) + placements * sizeof(fb::Placement) +
                         intervalBytes +
                         storedVertices * sizeof(fb::Vertex) + fieldOffsets * 4 + bitcode;
  ordered_json sections = {{"constants", constantBytes},
                           {"exchange_pieces", pieces * sizeof(fb::Piece)},
                           {"exchange_placements", placements * sizeof(fb::Placement)},
                           {"tensor_intervals", intervalBytes},
                           {"vertices_and_fields", storedVertices * sizeof(fb::Vertex) + fieldOffsets * 4},
                           {"bitcode", bitcode},
                           {"other", contentBytes > known ? contentBytes - known : 0}};
  uint64_t contentHash = 0;
  std::memcpy(&contentHash, file.bytes().data() + file.bytes().size() - 8, 8); // the trailer's XXH64
  j["contents"] = {{"tensors", len(exe.tensors())},
                   {"constant_bytes", constantBytes},
                   {"vertex_types", len(exe.vertex_types())},
                   {"vertex_functions", vertexFunctions(exe)},
                   {"compute_sets", len(exe.compute_sets())},
                   {"vertices", vertices},
                   {"exchange_steps", len(exe.exchanges())},
                   {"copy_records", records},
                   {"exchange_pieces", pieces},
                   {"exchange_placements", placements},
                   {"exchange_bytes_per_run", runBytes},
                   {"exchange_bytes_at_load", loadBytes},
                   {"intermediate_tensors", intermediates},
                   {"intermediate_intervals", intermediateIntervals},
                   {"file_bytes", fileBytes},
                   {"compressed", file.compressed()},
                   {"schedule_bytes", file.schedule().size()},
                   {"schedule_stored_bytes", fileBytes - std::min(fileBytes, segmentBytes)},
                   {"file_bytes_by_section", sections},
                   {"content_hash", fmt::format("{:016x}", contentHash)}};

  j["programs"]["main"] = programJson(exe, *exe.main());
  if (exe.load())
    j["programs"]["load"] = programJson(exe, *exe.load());
  j["programs"]["functions"] = ordered_json::array();
  for (uint32_t i = 0; i < len(exe.functions()); ++i)
    j["programs"]["functions"].push_back(programJson(exe, *exe.functions()->Get(i)));
  return j;
}

// --- text rendering ----------------------------------------------------------

std::string human(uint64_t bytes) {
  if (bytes >= (10u << 20))
    return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  if (bytes >= (10u << 10))
    return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}

void printProgram(const ordered_json &p, int depth) {
  std::string line = p["kind"].get<std::string>();
  if (p.contains("count"))
    line += fmt::format(" x{}", p["count"].get<uint64_t>());
  if (p.contains("compute_set"))
    line += fmt::format(" cs {} '{}'", p["compute_set"].get<uint32_t>(), p["target_name"].get<std::string>());
  if (p.contains("exchange"))
    line += fmt::format(" exchange {} '{}'", p["exchange"].get<uint32_t>(), p["target_name"].get<std::string>());
  if (p.contains("stream"))
    line += fmt::format(" stream {} '{}' {}", p["stream"].get<uint32_t>(), p["target_name"].get<std::string>(),
                        p["direction"].get<std::string>());
  if (p.contains("function"))
    line += fmt::format(" function {}", p["function"].get<uint32_t>());
  if (p.contains("name"))
    line += fmt::format("  ({})", p["name"].get<std::string>());
  if (p.contains("parallel"))
    line += "  [IPUs in parallel]";
  fmt::print("{:{}}{}\n", "", 2 * depth, line);
  if (p.contains("children"))
    for (const auto &c : p["children"])
      printProgram(c, depth + 1);
}

void printText(const ordered_json &j) {
  const auto &h = j["header"];
  fmt::print("{}: popef format {}, compiled by {}, {}\n", j["file"].get<std::string>(),
             h["format_version"].get<uint32_t>(), h["compiler_version"].get<std::string>(),
             human(h["bytes"].get<uint64_t>()));
  const auto &t = j["target"];
  fmt::print("\ntarget: {} x {} IPU(s), {} tiles/IPU, {} per tile, {} workers/tile, {:.3g} GHz\n",
             t["num_ipus"].get<uint32_t>(), t["arch"].get<std::string>(), t["tiles_per_ipu"].get<uint32_t>(),
             human(t["bytes_per_tile"].get<uint64_t>()), t["workers_per_tile"].get<uint32_t>(),
             t["clock_hz"].get<uint64_t>() / 1e9);
  fmt::print("  exchange {} B/cycle, inter-IPU {} B/cycle, host {} B/cycle, sync {} cycles, global sync {} cycles\n",
             t["exchange_bytes_per_cycle"].get<uint32_t>(), t["inter_ipu_bytes_per_cycle"].get<uint32_t>(),
             t["host_bytes_per_cycle"].get<uint32_t>(), t["sync_cycles"].get<uint32_t>(),
             t["global_sync_cycles"].get<uint32_t>());

  const auto &m = j["model"];
  fmt::print("\nmodel '{}'\n", m["name"].get<std::string>());
  for (const char *kind : {"inputs", "outputs"}) {
    fmt::print("  {}:\n", kind);
    for (const auto &io : m[kind])
      fmt::print("    {} {} {}{}{}\n", io["name"].get<std::string>(), io["dtype"].get<std::string>(),
                 shapeStr(io["shape"]),
                 io.contains("host_shape") ? fmt::format(", per step {}", shapeStr(io["host_shape"])) : "",
                 io.contains("anchor") ? fmt::format(", anchor {}", io["anchor"].get<std::string>()) : "");
  }
  if (!m["options"].empty()) {
    fmt::print("  options:");
    for (const auto &[k, v] : m["options"].items())
      fmt::print(" {}={}", k, v.get<std::string>());
    fmt::print("\n");
  }

  const auto &mem = j["memory"];
  fmt::print("\nmemory (from {}): {} of {} tiles used, total {}, max {} per tile ({:.1f}% of {}), mean {} per used tile\n",
             mem["source"].get<std::string>(), mem["used_tiles"].get<size_t>(), mem["tiles"].get<uint32_t>(),
             human(mem["total_bytes"].get<uint64_t>()), human(mem["max_bytes"].get<uint64_t>()),
             100.0 * mem["max_bytes"].get<uint64_t>() / mem["bytes_per_tile"].get<uint64_t>(),
             human(mem["bytes_per_tile"].get<uint64_t>()),
             human(static_cast<uint64_t>(mem["mean_bytes_per_used_tile"].get<double>())));
  for (const auto &tt : mem["top_tiles"])
    fmt::print("  tile {:>6}: {}\n", tt["tile"].get<uint32_t>(), human(tt["bytes"].get<uint64_t>()));
  if (mem.contains("per_ipu"))
    for (const auto &ipu : mem["per_ipu"])
      fmt::print("  IPU {:>3}: {} on {} tiles, max {} per tile; inter-IPU exchange: sends {}, receives {}\n",
                 ipu["ipu"].get<uint32_t>(), human(ipu["total_bytes"].get<uint64_t>()),
                 ipu["used_tiles"].get<uint64_t>(), human(ipu["max_bytes"].get<uint64_t>()),
                 human(ipu["inter_ipu_bytes_sent"].get<uint64_t>()),
                 human(ipu["inter_ipu_bytes_received"].get<uint64_t>()));
  if (j.contains("step")) {
    const auto &st = j["step"];
    fmt::print("\nstep: {} batch(es) per step x {} accumulation x {} replica(s){}\n",
               st["batches_per_step"].get<uint32_t>(), st["accumulation_factor"].get<uint32_t>(),
               st["replication_factor"].get<uint32_t>(),
               st["pipeline_stages"].get<uint32_t>()
                   ? fmt::format(", pipelined over {} stages", st["pipeline_stages"].get<uint32_t>())
                   : "");
  }

  const auto &c = j["contents"];
  fmt::print("\ncontents: {} tensors ({} of constants), {} vertex types ({} functions to compile), {} compute sets with {} vertices, "
             "{} exchange steps with {} copy records in {} placements of {} distinct pieces ({} per run, {} once at "
             "load)\n",
             c["tensors"].get<uint64_t>(), human(c["constant_bytes"].get<uint64_t>()),
             c["vertex_types"].get<uint64_t>(), c["vertex_functions"].get<uint64_t>(), c["compute_sets"].get<uint64_t>(),
             c["vertices"].get<uint64_t>(),
             c["exchange_steps"].get<uint64_t>(), c["copy_records"].get<uint64_t>(),
             c["exchange_placements"].get<uint64_t>(), c["exchange_pieces"].get<uint64_t>(), human(c["exchange_bytes_per_run"].get<uint64_t>()), human(c["exchange_bytes_at_load"].get<uint64_t>()));
  std::string bySection;
  for (const auto &[k, v] : c["file_bytes_by_section"].items())
    bySection += fmt::format("{}{} {}", bySection.empty() ? "" : ", ", k, human(v.get<uint64_t>()));
  const std::string stored =
      c["compressed"].get<bool>()
          ? fmt::format("the schedule's {} stored as {} (zstd); once decompressed: ",
                        human(c["schedule_bytes"].get<uint64_t>()), human(c["schedule_stored_bytes"].get<uint64_t>()))
          : std::string();
  fmt::print("file: {} ({}{}); {} of the tensors are intermediates with {} intervals\n",
             human(c["file_bytes"].get<uint64_t>()), stored, bySection, c["intermediate_tensors"].get<uint64_t>(),
             c["intermediate_intervals"].get<uint64_t>());
  fmt::print("content hash (XXH64 of the file): {}\n", c["content_hash"].get<std::string>());

  if (j.contains("tensors")) {
    fmt::print("\ntensors ({}{}):\n", j["tensors"].size(),
               j.contains("tensor_filter") ? fmt::format(" matching '{}'", j["tensor_filter"].get<std::string>()) : "");
    size_t width = 40;
    for (const auto &x : j["tensors"])
      width = std::max(width, x["name"].get<std::string>().size());
    fmt::print("  {:<{}} {:<8} {:<20} {:<12} {:>9} {:>6}\n", "name", width, "dtype", "shape", "role", "intervals",
               "tiles");
    for (const auto &x : j["tensors"])
      fmt::print("  {:<{}} {:<8} {:<20} {:<12} {:>9} {:>6}\n", x["name"].get<std::string>(), width,
                 x["dtype"].get<std::string>(), shapeStr(x["shape"]), x["role"].get<std::string>(),
                 x["intervals"].get<uint32_t>(), x["tiles"].get<size_t>());
  }
  if (!j.contains("vertex_types")) {
    const auto &main = j["programs"]["main"];
    if (main.contains("children_by_kind")) {
      std::string kinds;
      for (const auto &[k, n] : main["children_by_kind"].items())
        kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n.get<uint64_t>(), k);
      fmt::print("\nprograms: main is a {} of {} programs ({}){}\n", main["kind"].get<std::string>(),
                 main["children_count"].get<uint64_t>(), kinds,
                 j["programs"].contains("load") ? "; a load program lays constants out once" : "");
    } else {
      fmt::print("\nprograms:\n  main:\n");
      printProgram(main, 2);
    }
    fmt::print("\nlists: --tensors [FILTER] for the tensors, --all for every list (tensors, vertex types, compute "
               "sets, exchange steps, the program tree); --io for the inputs and outputs alone\n");
    return;
  }

  fmt::print("\nvertex types ({}):\n", j["vertex_types"].size());
  for (const auto &vt : j["vertex_types"]) {
    std::string fields;
    for (const auto &f : vt["fields"])
      fields += fmt::format("{}{} {} {}B", fields.empty() ? "" : ", ", f["access"].get<std::string>(),
                            f["name"].get<std::string>(), f["bytes"].get<uint32_t>());
    fmt::print("  {:<40} {:>10} cycles  ({})\n", vt["name"].get<std::string>(), vt["cycles"].get<uint64_t>(), fields);
  }
  fmt::print("\ncompute sets ({}):\n", j["compute_sets"].size());
  for (const auto &cs : j["compute_sets"])
    fmt::print("  {:<40} {:>8} vertices on {:>6} tiles\n", cs["name"].get<std::string>(),
               cs["vertices"].get<uint32_t>(), cs["tiles"].get<size_t>());
  fmt::print("\nexchange steps ({}):\n", j["exchanges"].size());
  for (const auto &ex : j["exchanges"])
    fmt::print("  {:<40} {:>8} copies {:>12}{}\n", ex["name"].get<std::string>(), ex["copies"].get<uint32_t>(),
               human(ex["bytes"].get<uint64_t>()),
               ex["inter_ipu_bytes"].get<uint64_t>() ? fmt::format(" ({} inter-IPU)", human(ex["inter_ipu_bytes"].get<uint64_t>())) : "");
  fmt::print("\nprograms:\n  main:\n");
  printProgram(j["programs"]["main"], 2);
  if (j["programs"].contains("load")) {
    fmt::print("  load (once, when the executable is loaded):\n");
    printProgram(j["programs"]["load"], 2);
  }
  for (size_t i = 0; i < j["programs"]["functions"].size(); ++i) {
    fmt::print("  function {}:\n", i);
    printProgram(j["programs"]["functions"][i], 2);
  }
}

size_t programNodes(const ordered_json &p) {
  size_t n = 1;
  if (p.contains("children"))
    for (const auto &c : p["children"])
      n += programNodes(c);
  return n;
}

// What the user asked to see. The default is one page: the lists that grow
// with the model (229 k tensors on ResNet-18) only on request.
struct View {
  bool all = false;
  std::optional<std::string> tensorFilter; // --tensors [FILTER]
};

void scope(ordered_json &j, const View &view) {
  if (view.all)
    return;
  if (view.tensorFilter) {
    ordered_json kept = ordered_json::array();
    for (auto &x : j["tensors"])
      if (x["name"].get<std::string>().find(*view.tensorFilter) != std::string::npos)
        kept.push_back(std::move(x));
    j["tensors"] = std::move(kept);
    if (!view.tensorFilter->empty())
      j["tensor_filter"] = *view.tensorFilter;
  } else {
    j.erase("tensors");
  }
  j.erase("vertex_types");
  j.erase("compute_sets");
  j.erase("exchanges");
  j["programs"].erase("functions");
  // A small program tree stays (the graph API's); a model's flat list of
  // thousands of steps becomes counts by kind.
  for (const char *which : {"main", "load"}) {
    if (!j["programs"].contains(which))
      continue;
    ordered_json &p = j["programs"][which];
    if (programNodes(p) <= 60)
      continue;
    ordered_json byKind = ordered_json::object();
    for (const auto &c : p["children"]) {
      const std::string k = c["kind"].get<std::string>();
      byKind[k] = (byKind.contains(k) ? byKind[k].get<uint64_t>() : 0) + 1;
    }
    const size_t count = p["children"].size();
    p.erase("children");
    p["children_count"] = count;
    p["children_by_kind"] = byKind;
  }
}

// --io: one line per model input and output, for scripts.
void printIo(const ordered_json &j) {
  for (const char *kind : {"inputs", "outputs"})
    for (const auto &io : j["model"][kind])
      fmt::print("{} {} {} {}\n", std::string(kind).substr(0, std::string(kind).size() - 1),
                 io["name"].get<std::string>(), io["dtype"].get<std::string>(), shapeStr(io["shape"]));
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"popef-info: inspect a popef executable.\n\n"
               "By default one page: target, inputs and outputs, options, memory, what the file holds\n"
               "(counts) and its content hash. The lists that grow with the model come on request.\n\n"
               "Examples:\n"
               "  popef-info model.popef                     the page\n"
               "  popef-info model.popef --io                inputs and outputs, one per line (for scripts)\n"
               "  popef-info model.popef --tensors conv1     tensors whose name contains 'conv1'\n"
               "  popef-info model.popef --all --json        everything, as JSON",
               "popef-info"};
  std::string path;
  bool json = false, io = false;
  View view;
  app.add_option("executable", path, "Executable to inspect (.popef)")->required();
  app.add_flag("--json", json, "Print the description as JSON (the same sections as the text)");
  app.add_flag("--io", io, "Print only the inputs and outputs: 'input|output NAME DTYPE [SHAPE]' per line");
  std::string filter;
  auto *tensors = app.add_option("--tensors", filter,
                                 "List the tensors, those whose name contains FILTER if one is given")
                      ->expected(0, 1)
                      ->type_name("[FILTER]");
  app.add_flag("--all", view.all,
               "Every list: tensors, vertex types, compute sets, exchange steps and the whole program tree");
  bool summary = false;
  popc::profile::SummaryOptions summaryOptions;
  app.add_flag("--summary", summary,
               "Print the profile summary of the graph (Poplar's printProfileSummary layout: target, graph, "
               "memory); poprun-lite --summary adds the execution");
  app.add_flag("--show-var-storage", summaryOptions.showVarStorage,
               "With --summary: liveness per program (only in popc-onnx --profile-dir's graph.json)");
  app.set_version_flag("--version", compilerVersion());
  if (auto exitCode = popc::tools::parseCommandLine(app, argc, argv))
    return *exitCode;
  return popc::tools::runTool("popef-info", [&]() -> int {
    auto exe = popc::popef::Executable::open(path);
    if (summary) {
      summaryOptions.colours = popc::tools::coloursFor(1);
      fmt::print("{}", popc::profile::profileSummary(popc::profile::graphProfile(*exe), nullptr, summaryOptions));
      return 0;
    }
    ordered_json j = describe(*exe, view.all || tensors->count());
    if (io) {
      printIo(j);
      return 0;
    }
    if (tensors->count())
      view.tensorFilter = filter;
    scope(j, view);
    if (json)
      fmt::print("{}\n", j.dump(2));
    else
      printText(j);
    return 0;
  });
}
