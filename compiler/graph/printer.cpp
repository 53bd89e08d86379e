#include "compiler/graph/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace popc::graph {

namespace {

const char *roleName(TensorRole r) {
  switch (r) {
  case TensorRole::Input: return "input";
  case TensorRole::Output: return "output";
  case TensorRole::Constant: return "constant";
  case TensorRole::Intermediate: return "intermediate";
  }
  return "?";
}

// "tile 5", "tiles 0-23" (contiguous) or "24 tiles in 0-1471".
std::string tilesText(const std::set<uint32_t> &tiles) {
  if (tiles.empty())
    return "no tile";
  const uint32_t lo = *tiles.begin(), hi = *tiles.rbegin();
  if (tiles.size() == 1)
    return fmt::format("tile {}", lo);
  if (hi - lo + 1 == tiles.size())
    return fmt::format("tiles {}-{}", lo, hi);
  return fmt::format("{} tiles in {}-{}", tiles.size(), lo, hi);
}

std::string typeText(const DeviceTensor &t) { return std::string(dtypeName(t.dtype)) + shapeToString(t.shape); }

class GraphPrinter {
public:
  GraphPrinter(const DeviceGraph &g, const std::vector<std::string> &names) : g_(g), names_(names) {}

  std::string run() {
    const Target &t = g_.target();
    out_ += fmt::format("target {}: {} IPU x {} tiles, {} bytes per tile, {} workers\n", t.arch, t.numIpus,
                        t.tilesPerIpu, t.bytesPerTile, t.workersPerTile);
    for (const DeviceTensor &dt : g_.tensors()) {
      std::set<uint32_t> tiles;
      for (const Interval &iv : dt.mapping)
        tiles.insert(iv.tile);
      out_ += fmt::format("tensor %{}: {} {}{}{}, {} bytes on {}\n", dt.name, typeText(dt), roleName(dt.role),
                          dt.filledAtLoad ? " filled-at-load" : "", dt.persistent ? " persistent" : "", dt.bytes,
                          tilesText(tiles));
    }
    for (const ComputeSet &cs : g_.computeSets()) {
      std::set<uint32_t> tiles;
      std::map<uint32_t, std::pair<size_t, std::set<uint32_t>>> byType; // type -> count, tiles
      for (const Vertex &v : cs.vertices) {
        tiles.insert(v.tile);
        auto &[count, typeTiles] = byType[v.type];
        ++count;
        typeTiles.insert(v.tile);
      }
      out_ += fmt::format("compute-set {}: {} {} on {}\n", cs.name, cs.vertices.size(),
                          cs.vertices.size() == 1 ? "vertex" : "vertices", tilesText(tiles));
      for (const auto &[type, entry] : byType)
        out_ += fmt::format("  {} x{} on {}\n", type < names_.size() ? names_[type] : fmt::format("type{}", type),
                            entry.first, tilesText(entry.second));
    }
    for (const ExchangeStep &ex : g_.exchanges()) {
      uint64_t bytes = 0;
      std::set<TensorId> sources, destinations;
      for (const Copy &c : ex.copies) {
        bytes += c.bytes;
        sources.insert(c.src);
        destinations.insert(c.dst);
      }
      out_ += fmt::format("exchange {}: {} {}, {} bytes{}\n", ex.name, ex.copies.size(),
                          ex.copies.size() == 1 ? "copy" : "copies", bytes,
                          ex.fromReplica >= 0 ? fmt::format(", from replica {}", ex.fromReplica) : "");
      out_ += "  from " + tensorList(sources) + "\n  into " + tensorList(destinations) + "\n";
    }
    for (const HostStream &s : g_.streams())
      out_ += fmt::format("stream {}: %{} {}\n", s.name, g_.tensor(s.tensor).name,
                          s.direction == StreamDirection::HostToDevice ? "host-to-device" : "device-to-host");
    out_ += "program load\n";
    program(g_.load(), 1);
    out_ += "program main\n";
    program(g_.main(), 1);
    return out_;
  }

private:
  // At most 4 names, then how many more.
  std::string tensorList(const std::set<TensorId> &ids) const {
    std::string s;
    size_t shown = 0;
    for (TensorId id : ids) {
      if (shown == 4) {
        s += fmt::format(" (+{} more)", ids.size() - shown);
        break;
      }
      s += (shown++ ? ", %" : "%") + g_.tensor(id).name;
    }
    return s.empty() ? "nothing" : s;
  }

  void program(const Program &p, int depth) {
    const std::string pad(size_t(depth) * 2, ' ');
    switch (p.kind) {
    case ProgramKind::Sequence:
      out_ += pad + (p.parallel ? "parallel" : "sequence") + (p.name.empty() ? "" : " " + p.name) + "\n";
      break;
    case ProgramKind::Execute: out_ += pad + "execute " + g_.computeSets().at(p.index).name + "\n"; break;
    case ProgramKind::Exchange: out_ += pad + "exchange " + g_.exchanges().at(p.index).name + "\n"; break;
    case ProgramKind::StreamCopy: out_ += pad + "stream-copy " + g_.streams().at(p.index).name + "\n"; break;
    case ProgramKind::Repeat: out_ += fmt::format("{}repeat {}\n", pad, p.count); break;
    case ProgramKind::Call: out_ += fmt::format("{}call {}\n", pad, p.index); break;
    case ProgramKind::Sync: out_ += pad + "sync\n"; break;
    case ProgramKind::If: out_ += pad + "if %" + g_.tensor(p.tensor).name + "\n"; break;
    case ProgramKind::RepeatWhileTrue: out_ += pad + "repeat-while-true %" + g_.tensor(p.tensor).name + "\n"; break;
    case ProgramKind::Switch:
      out_ += fmt::format("{}switch %{} cases [{}]\n", pad, g_.tensor(p.tensor).name, fmt::join(p.caseValues, ","));
      break;
    case ProgramKind::PrintTensor: out_ += pad + "print %" + g_.tensor(p.tensor).name + "\n"; break;
    }
    for (const Program &c : p.children)
      program(c, depth + 1);
  }

  const DeviceGraph &g_;
  const std::vector<std::string> &names_;
  std::string out_;
};

} // namespace

std::string printDeviceGraph(const DeviceGraph &graph, const std::vector<std::string> &vertexTypeNames) {
  return GraphPrinter(graph, vertexTypeNames).run();
}

} // namespace popc::graph
