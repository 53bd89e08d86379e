#include "profile/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

namespace popc::profile {

namespace {

uint64_t u(const Json &j) { return j.get<uint64_t>(); }

uint64_t sum(const Json &a) {
  uint64_t s = 0;
  for (const auto &x : a)
    s += u(x);
  return s;
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }
std::string oneDecimal(double v) {
  const double r = std::round(v * 10) / 10;
  return fmt::format("{}.{}", withCommas(uint64_t(r)), uint64_t(std::llround(r * 10)) % 10);
}

class Out {
public:
  explicit Out(bool colours) : colours_(colours) {}
  void line(const std::string &s = {}) { text_ += s + "\n"; }
  void heading(const std::string &s) { line(colours_ ? "\033[1;36m" + s + "\033[0m" : s); }
  std::string warn(const std::string &s) const { return colours_ ? "\033[1;31m" + s + "\033[0m" : s; }
  std::string dim(const std::string &s) const { return colours_ ? "\033[2m" + s + "\033[0m" : s; }
  // `indent + label`, then `value` right-aligned to end at column `end`.
  void right(int indent, const std::string &label, const std::string &value, size_t end,
             const std::string &suffix = {}) {
    std::string s = std::string(indent, ' ') + label;
    s += std::string(s.size() + 1 + value.size() < end ? end - s.size() - value.size() : 1, ' ') + value;
    line(s + suffix);
  }
  const std::string &text() const { return text_; }

private:
  bool colours_;
  std::string text_;
};

void target(Out &o, const Json &t) {
  o.heading("Target:");
  auto row = [&](const std::string &label, const std::string &value) {
    o.line(fmt::format("  {:<24}{}", label, value));
  };
  auto mem = [](uint64_t bytes) {
    return bytes >= (1u << 20) ? oneDecimal(bytes / 1048576.0) + " MB" : oneDecimal(bytes / 1024.0) + " kB";
  };
  // The graph profile's target is one replica (popef Target); the whole system is R of them.
  const uint64_t replicas = std::max<uint64_t>(1, u(t["replicationFactor"]));
  row("Number of IPUs:", withCommas(u(t["numIPUs"]) * replicas));
  row("Tiles per IPU:", withCommas(u(t["tilesPerIPU"])));
  row("Total Tiles:", withCommas(u(t["numTiles"]) * replicas));
  row("Memory Per-Tile:", oneDecimal(u(t["bytesPerTile"]) / 1024.0) + " kB");
  row("Total Memory:", mem(u(t["totalMemory"]) * replicas));
  row("Clock Speed (approx):", oneDecimal(u(t["clockFrequency"]) / 1e6) + " MHz");
  row("Number of Replicas:", withCommas(replicas));
  row("IPUs per Replica:", withCommas(u(t["numIPUs"])));
  row("Tiles per Replica:", withCommas(u(t["numTiles"])));
  row("Memory per Replica:", mem(u(t["totalMemory"])));
  o.line();
}

void graphCounts(Out &o, const Json &g) {
  o.heading("Graph:");
  o.line(fmt::format("  {:<24}{:>12}", "Number of vertices:", withCommas(u(g["numVertices"]))));
  o.line(fmt::format("  {:<24}{:>12}", "Number of edges:", withCommas(u(g["numEdges"]))));
  o.line(fmt::format("  {:<24}{:>12}", "Number of variables:", withCommas(u(g["numVars"]))));
  o.line(fmt::format("  {:<24}{:>12}", "Number of compute sets:", withCommas(u(g["numComputeSets"]))));
  o.line();
}

// Vertex instances of each type over the whole graph.
std::vector<uint64_t> instancesByType(const Json &graph) {
  std::vector<uint64_t> n(graph["vertexTypes"]["names"].size(), 0);
  const Json &cs = graph["computeSets"];
  for (size_t c = 0; c < cs["vertexTypes"].size(); ++c)
    for (size_t i = 0; i < cs["vertexTypes"][c].size(); ++i)
      n[u(cs["vertexTypes"][c][i])] += u(cs["vertexCounts"][c][i]);
  return n;
}

std::string label(const std::string &category) {
  static const std::map<std::string, std::string> names{{"constant", "Constants"}, {"variable", "Variables"}};
  auto it = names.find(category);
  return it == names.end() ? category : it->second;
}

void memory(Out &o, const Json &graph) {
  const Json &m = graph["memory"];
  const Json &byTile = m["byTile"];
  const uint64_t bytesPerTile = u(graph["target"]["bytesPerTile"]);
  o.heading("Memory on all IPUs:");
  o.heading("Memory Usage:");
  o.line("  Total:");
  o.right(4, "Including Gaps:", withCommas(sum(byTile["totalIncludingGaps"])), 38, " B");
  o.line("    Excluding Gaps:");
  o.line("      By Memory Region:");
  o.right(8, "Non-interleaved:", withCommas(sum(byTile["nonInterleaved"])), 38, " B");
  o.right(8, "Interleaved:", withCommas(sum(byTile["interleaved"])), 38, " B");
  o.right(8, "Overflowed:", withCommas(sum(byTile["overflowed"])), 38, " B");
  const uint64_t total = sum(byTile["total"]);
  o.right(6, "Total:", withCommas(total), 38, " B");
  o.line("      By Data Type:");
  uint64_t nonOverlapped = 0, overlapped = 0;
  o.line("        Not Overlapped");
  for (const auto &[cat, v] : m["byCategory"].items()) {
    const uint64_t b = sum(v["nonInterleaved"]["nonOverlapped"]);
    nonOverlapped += b;
    o.right(12, label(cat) + ":", withCommas(b), 59, " B");
  }
  o.right(10, "Total:", withCommas(nonOverlapped), 59, " B");
  o.line("        Overlapped");
  for (const auto &[cat, v] : m["byCategory"].items()) {
    const uint64_t b = sum(v["nonInterleaved"]["overlapped"]);
    overlapped += b;
    o.right(12, label(cat) + ":", withCommas(b), 59, " B");
  }
  o.right(10, "Total:", withCommas(overlapped), 59, " B");
  o.right(10, "Total After Overlapping:", withCommas(total - nonOverlapped), 59, " B");

  if (graph.contains("ipus") && graph["ipus"].size() > 1) {
    o.line("  By IPU (memory; bytes over the IPU links per run):");
    for (const auto &ipu : graph["ipus"])
      o.line(fmt::format("    IPU {}: {} B on {} tiles (max {} B per tile); links: sent {} B, received {} B",
                         u(ipu["ipu"]), withCommas(u(ipu["memoryBytes"])), withCommas(u(ipu["tilesUsed"])),
                         withCommas(u(ipu["maxTileBytes"])), withCommas(u(ipu["linkBytesSent"])),
                         withCommas(u(ipu["linkBytesReceived"]))));
  }

  // Vertex data: each vertex's field-offset table (popc keeps these with the
  // host-side compute set plan, so they are not part of the tile totals).
  const std::vector<uint64_t> instances = instancesByType(graph);
  const Json &types = graph["vertexTypes"];
  std::vector<std::pair<uint64_t, std::string>> byType;
  uint64_t vertexData = 0;
  for (size_t t = 0; t < instances.size(); ++t) {
    const uint64_t b = instances[t] * u(types["sizes"][t]);
    vertexData += b;
    if (instances[t])
      byType.push_back({b, types["names"][t].get<std::string>()});
  }
  std::stable_sort(byType.begin(), byType.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  size_t width = 40;
  for (const auto &[b, name] : byType)
    width = std::max(width, name.size() + 4);
  o.line(fmt::format("      Vertex Data ({}B):", withCommas(vertexData)));
  o.line("        By Category:");
  o.right(10, "Internal vertex state:", withCommas(vertexData), 42, " B");
  o.line("        By Type:");
  for (const auto &[b, name] : byType)
    o.right(10, name, withCommas(b), 10 + width + 12, " B");
  o.line();
  o.line();

  // Histogram of bytes per tile (excluding gaps), 1 KB bins widened to at most 20 rows.
  const Json &tiles = byTile["total"];
  const Json &gaps = byTile["totalIncludingGaps"];
  uint64_t lo = UINT64_MAX, hi = 0, maxGaps = 0, maxGapsTile = 0, maxTile = 0, oom = 0;
  for (size_t t = 0; t < tiles.size(); ++t) {
    lo = std::min(lo, u(tiles[t]));
    if (u(tiles[t]) > hi)
      hi = u(tiles[t]), maxTile = t;
    if (u(gaps[t]) > maxGaps)
      maxGaps = u(gaps[t]), maxGapsTile = t;
    oom += u(gaps[t]) > bytesPerTile;
  }
  o.line("  By Tile (Excluding Gaps):");
  o.line("    Range (KB) Histogram (Excluding Gaps)               Count (tiles)");
  if (!tiles.empty()) {
    const uint64_t first = lo / 1024, last = hi / 1024;
    const uint64_t bin = std::max<uint64_t>(1, (last - first + 20) / 20);
    std::vector<uint64_t> counts((last - first) / bin + 1, 0);
    for (const auto &x : tiles)
      counts[(u(x) / 1024 - first) / bin]++;
    const uint64_t peak = *std::max_element(counts.begin(), counts.end());
    for (size_t i = 0; i < counts.size(); ++i) {
      const size_t stars = counts[i] ? std::max<uint64_t>(1, (40 * counts[i] + peak - 1) / peak) : 0;
      o.line(fmt::format("    {:>5} - {:>2} {:<40}{:>7}", first + i * bin, first + (i + 1) * bin,
                         std::string(stars, '*'), counts[i]));
    }
  }
  o.line();
  o.line(fmt::format("    Maximum (Including Gaps): {} ({:.1f} K) on tile {}", withCommas(maxGaps), maxGaps / 1024.0,
                     maxGapsTile));
  o.line(fmt::format("    Maximum (Excluding Gaps): {} ({:.1f} K) on tile {}", withCommas(hi), hi / 1024.0, maxTile));
  const std::string oomLine = fmt::format("    {} tile(s) out of memory", oom);
  o.line(oom ? o.warn(oomLine) : oomLine);
  o.line();
}

std::string programLabel(const Json &p) {
  std::string s = p["type"].get<std::string>();
  if (p.contains("repeatCount"))
    s += fmt::format(" x{}", u(p["repeatCount"]));
  if (p.contains("name"))
    s += ": " + p["name"].get<std::string>();
  return s;
}

void varStorage(Out &o, const Json &graph) {
  const Json &m = graph["memory"];
  o.line();
  if (!m.contains("liveness")) {
    o.line("  Variable Storage Liveness: not available (profile written from the executable alone; "
           "popc-onnx --profile-dir records it)");
    o.line();
    return;
  }
  const Json &live = m["liveness"];
  o.heading("  Variable Storage Liveness: All tiles");
  o.line();
  o.line(fmt::format("    Always-live bytes: {}", withCommas(u(live["alwaysLiveBytes"]))));
  o.line("    Always-live variables:");
  size_t width = 24;
  for (const auto &v : live["alwaysLiveVariables"])
    width = std::max(width, v["name"].get<std::string>().size() + 2);
  for (const auto &v : live["alwaysLiveVariables"])
    o.right(6, v["name"].get<std::string>(), withCommas(u(v["bytes"])), 6 + width + 12);
  o.line();
  o.line(fmt::format("    Maximum live bytes (including always-live): {}", withCommas(u(live["maxLiveBytes"]))));
  o.line();
  std::map<uint64_t, const Json *> stepOf; // program id -> liveness step
  for (const auto &s : live["steps"])
    stepOf.emplace(u(s["program"]), &s);
  const Json &programs = graph["programs"];
  auto walk = [&](auto &self, uint64_t id, int depth) -> void {
    if (id >= programs.size() || depth > 64)
      return;
    const Json &p = programs[id];
    const std::string pad(4 + 2 * depth, ' ');
    o.line(pad + programLabel(p));
    if (auto it = stepOf.find(id); it != stepOf.end()) {
      const Json &s = *it->second;
      o.line(fmt::format("{}  Live Bytes (excluding always-live): {}", pad, withCommas(u(s["liveBytes"]))));
      o.line(fmt::format("{}  Max Live Bytes on a tile: {} on tile {}", pad, withCommas(u(s["maxTileLiveBytes"])),
                         u(s["maxTile"])));
      o.line(fmt::format("{}  Live Vars (excluding always-live): {}{}", pad, withCommas(u(s["numLiveVariables"])),
                         s["largestLiveVariables"].empty() ? "" : ", largest:"));
      size_t w = 24;
      for (const auto &v : s["largestLiveVariables"])
        w = std::max(w, v["name"].get<std::string>().size() + 2);
      for (const auto &v : s["largestLiveVariables"])
        o.right(int(pad.size()) + 4, v["name"].get<std::string>(), withCommas(u(v["bytes"])), pad.size() + 4 + w + 12);
    }
    if (p.contains("children"))
      for (const auto &c : p["children"])
        self(self, u(c), depth + 1);
  };
  walk(walk, 0, 0);
  o.line();
}

void execution(Out &o, const Json &graph, const Json &exe, const SummaryOptions &options) {
  const Json &sim = exe["simulation"];
  const Json &tc = sim["tileCycles"];
  const uint64_t cycles = u(sim["cycles"]);
  const uint64_t numTiles = u(graph["target"]["numTiles"]);
  const double mhz = u(graph["target"]["clockFrequency"]) / 1e6;
  o.heading("Execution:");
  o.line();
  auto row = [&](const std::string &label, const std::string &value) {
    o.line(fmt::format("  {:<47}{}", label, value));
  };
  row("Total cycles:", fmt::format("{} (approx {:.1f} microseconds)", withCommas(cycles), cycles / mhz));
  row("Total compute cycles (including idle threads):", withCommas(u(tc["compute"])));
  row("Total compute cycles (excluding idle threads):", withCommas(u(tc["activeCompute"])));
  row("Total IPU exchange cycles:", withCommas(u(tc["doExchange"])));
  row("Total global exchange cycles:", withCommas(u(tc["globalExchange"])));
  row("Total host exchange cycles:", withCommas(u(tc["streamCopy"])));
  row("Total shared structure copy cycles:", withCommas(u(tc["copySharedStructure"])));
  row("Total sync cycles:", withCommas(u(tc["sync"])));
  row("Total tile balance:", percent(cycles ? double(u(tc["compute"])) / (double(cycles) * numTiles) : 1.0));
  row("Total thread balance:", percent(u(tc["compute"]) ? double(u(tc["activeCompute"])) / u(tc["compute"]) : 1.0));
  o.line();

  const std::vector<uint64_t> instances = instancesByType(graph);
  const Json &names = graph["vertexTypes"]["names"];
  auto byType = [&](const std::vector<std::pair<uint64_t, size_t>> &rows, const std::vector<uint64_t> &counts,
                    int indent) {
    size_t width = 40;
    for (const auto &[c, t] : rows)
      width = std::max(width, names[t].get<std::string>().size() + 2);
    for (const auto &[c, t] : rows)
      o.line(fmt::format("{}{:<{}}{:>18}: {:>12}", std::string(indent, ' '), names[t].get<std::string>(), width,
                         fmt::format("({} instances)", counts[t]), withCommas(c)));
  };
  o.line("  Cycles by vertex type:");
  std::vector<std::pair<uint64_t, size_t>> rows;
  for (size_t t = 0; t < sim["vertexTypeCycles"].size(); ++t)
    if (instances[t])
      rows.push_back({u(sim["vertexTypeCycles"][t]), t});
  std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  byType(rows, instances, 4);
  o.line();
  if (!options.showExecutionSteps)
    return;

  o.heading("Steps");
  const Json &cs = graph["computeSets"];
  for (const auto &s : sim["steps"]) {
    const std::string type = s["type"].get<std::string>();
    if (type == "Sync") {
      o.line(o.dim(fmt::format("  --- {} Sync ---", s["syncType"].get<std::string>())));
      continue;
    }
    o.line(fmt::format("  {} (cycles {} - {}){}", type, withCommas(u(s["cyclesFrom"])), withCommas(u(s["cyclesTo"])),
                       s.contains("name") ? ": " + s["name"].get<std::string>() : ""));
    auto row2 = [&](const std::string &label, const std::string &value) {
      o.line(fmt::format("    {:<36}{}", label, value));
    };
    row2("Cycles:", s.contains("cyclesOverlapped")
                        ? fmt::format("{} ({} overlapped with previous)", withCommas(u(s["cycles"])),
                                      withCommas(u(s["cyclesOverlapped"])))
                        : withCommas(u(s["cycles"])));
    row2("Active Tiles:", fmt::format("{} / {}", withCommas(u(s["activeTiles"])), withCommas(numTiles)));
    if (s.contains("threadBalance"))
      row2("Thread Balance:", percent(s["threadBalance"].get<double>()));
    row2("Tile Balance:", percent(s["tileBalance"].get<double>()));
    row2("Active Tile Balance:", percent(s["activeTileBalance"].get<double>()));
    if (s.contains("totalData")) {
      row2("Total Data:", withCommas(u(s["totalData"])));
      o.line(fmt::format("    Data Balance (mean / max data per tile): {}", percent(s["dataBalance"].get<double>())));
    }
    if (type == "OnTileExecute") {
      const size_t c = u(s["computeSet"]);
      std::vector<uint64_t> counts(names.size(), 0);
      std::vector<std::pair<uint64_t, size_t>> r;
      for (size_t i = 0; i < cs["vertexTypes"][c].size(); ++i) {
        const size_t t = u(cs["vertexTypes"][c][i]);
        counts[t] = u(cs["vertexCounts"][c][i]);
        r.push_back({u(cs["cycleEstimates"]["activeCyclesByVertexType"][c][t]), t});
      }
      std::stable_sort(r.begin(), r.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
      o.line("    By vertex type:");
      byType(r, counts, 6);
    }
  }
  o.line();
}

} // namespace

std::string withCommas(uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

std::string profileSummary(const Json &graph, const Json *exe, const SummaryOptions &options) {
  Out o(options.colours);
  target(o, graph["target"]);
  graphCounts(o, graph["graph"]);
  memory(o, graph);
  if (options.showVarStorage)
    varStorage(o, graph);
  if (exe)
    execution(o, graph, *exe, options);
  return o.text();
}

} // namespace popc::profile
