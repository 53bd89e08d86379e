#include "profile/execution_profile.h"

#include "support/error.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

namespace popc::profile {

namespace {

// What one run of a compute set or exchange costs, from the graph profile.
struct StepFacts {
  uint64_t cycles = 0;      // slowest tile
  uint64_t tileSum = 0;     // cycles summed over tiles
  uint64_t activeSum = 0;   // compute: active (issuing) cycles summed over tiles
  uint64_t activeTiles = 0;
  uint64_t totalData = 0, maxData = 0, dataSum = 0; // exchanges: sent + received per tile
};

StepFacts computeFacts(const Json &cs, size_t i) {
  StepFacts f;
  const Json &cycles = cs["cycleEstimates"]["cyclesByTile"][i];
  const Json &active = cs["cycleEstimates"]["activeCyclesByTile"][i];
  const Json &counts = cs["vertexCountsByTile"][i];
  for (size_t t = 0; t < cycles.size(); ++t) {
    const uint64_t c = cycles[t].get<uint64_t>();
    f.cycles = std::max(f.cycles, c);
    f.tileSum += c;
    f.activeSum += active[t].get<uint64_t>();
    f.activeTiles += counts[t].get<uint64_t>() > 0;
  }
  return f;
}

StepFacts exchangeFacts(const Json &list, size_t i, const char *cyclesKey) {
  StepFacts f;
  const Json &cycles = list[cyclesKey][i], &sent = list["bytesSentByTile"][i], &recv = list["bytesReceivedByTile"][i];
  for (size_t t = 0; t < cycles.size(); ++t) {
    const uint64_t c = cycles[t].get<uint64_t>();
    const uint64_t data = sent[t].get<uint64_t>() + recv[t].get<uint64_t>();
    f.cycles = std::max(f.cycles, c);
    f.tileSum += c;
    f.activeTiles += data > 0;
    f.dataSum += data;
    f.maxData = std::max(f.maxData, data);
  }
  f.totalData = list["totalData"][i].get<uint64_t>();
  return f;
}

double ratio(uint64_t a, uint64_t b) { return b ? double(a) / double(b) : 1.0; }

} // namespace

Json executionProfile(const Json &graph, std::span<const uint32_t> trace,
                      const std::map<uint32_t, HostAllReduce> &hostAllReduce) {
  const Json &programs = graph.at("programs");
  const Json &target = graph.at("target");
  const uint64_t numTiles = target.at("numTiles").get<uint64_t>();
  const uint64_t syncCycles = target.at("minSyncDelay").get<uint64_t>();
  const uint64_t globalSync = target.at("globalSyncCycles").get<uint64_t>();
  const Json &cs = graph.at("computeSets");
  const Json &internal = graph.at("exchanges"), &external = graph.at("externalExchanges"),
             &host = graph.at("hostExchanges");
  const size_t nTypes = graph.at("vertexTypes").at("names").size();

  // Facts per compute set / exchange, computed on first use.
  std::vector<std::optional<StepFacts>> csFacts(cs["names"].size()), inFacts(internal["names"].size()),
      exFacts(external["names"].size()), hostFacts(host["names"].size());
  auto facts = [](std::vector<std::optional<StepFacts>> &cache, size_t i, auto make) -> const StepFacts & {
    if (!cache[i])
      cache[i] = make();
    return *cache[i];
  };

  // The condition of each RepeatWhileTrue: the engine syncs once per run of it.
  std::vector<bool> waitsForPredicate(programs.size(), false);
  for (const auto &p : programs)
    if (p.at("type") == "RepeatWhileTrue" && p.contains("children") && !p["children"].empty() &&
        p["children"][0].get<size_t>() < programs.size())
      waitsForPredicate[p["children"][0].get<size_t>()] = true;

  Json steps = Json::array();
  uint64_t now = 0;
  struct {
    uint64_t activeCompute = 0, compute = 0, doExchange = 0, globalExchange = 0, streamCopy = 0, sync = 0;
  } tileCycles;
  struct {
    uint64_t compute = 0, exchange = 0, sync = 0, host = 0;
  } phase;
  std::vector<uint64_t> csCycles(csFacts.size(), 0), csRuns(csFacts.size(), 0), typeCycles(nTypes, 0);
  uint64_t exchangeData = 0, hostData = 0;

  auto sync = [&](const char *type, uint64_t cycles, std::optional<uint32_t> program) {
    Json s{{"type", "Sync"}, {"syncType", type}};
    if (program)
      s["program"] = *program;
    s["cycles"] = cycles;
    s["cyclesFrom"] = now;
    s["cyclesTo"] = now + cycles;
    steps.push_back(s);
    now += cycles;
    phase.sync += cycles;
    tileCycles.sync += cycles * numTiles;
  };
  auto common = [&](Json &s, uint32_t id, const Json &p, const StepFacts &f) {
    s["program"] = id;
    if (p.contains("name"))
      s["name"] = p["name"];
    s["cycles"] = f.cycles;
    s["cyclesFrom"] = now;
    s["cyclesTo"] = now + f.cycles;
    s["activeTiles"] = f.activeTiles;
    s["tileBalance"] = ratio(f.tileSum, f.cycles * numTiles);
    s["activeTileBalance"] = ratio(f.tileSum, f.cycles * f.activeTiles);
    now += f.cycles;
  };

  // Host streams: a device-to-host anchor moves data only on some executions
  // (every/group, as the engine counts them); the others cost nothing.
  std::vector<uint64_t> streamCalls(host["names"].size(), 0);
  auto skippedAnchor = [&](size_t h) {
    if (host["direction"][h] != "DeviceToHost" || !host.contains("every"))
      return false;
    const uint64_t every = std::max<uint64_t>(1, host["every"][h].get<uint64_t>());
    const uint64_t group = std::max<uint64_t>(1, host["group"][h].get<uint64_t>());
    const uint64_t k = streamCalls[h]++;
    return (k / group) % every != every - 1;
  };

  // One program's own step(s); its children follow in the trace.
  auto leaf = [&](uint32_t id) {
    const Json &p = programs[id];
    const std::string type = p.at("type").get<std::string>();
    // RepeatWhileTrue waits for its condition's value after every run of the
    // condition; the sync is charged as the condition starts.
    if (waitsForPredicate[id])
      sync("Internal", syncCycles, std::nullopt);
    if (type == "OnTileExecute") {
      const size_t c = p["computeSet"].get<size_t>();
      const StepFacts &f = facts(csFacts, c, [&] { return computeFacts(cs, c); });
      Json s{{"type", type}};
      common(s, id, p, f);
      s["cyclesOverlapped"] = 0;
      s["threadBalance"] = ratio(f.activeSum, f.tileSum);
      s["computeSet"] = c;
      steps.push_back(s);
      tileCycles.compute += f.tileSum;
      tileCycles.activeCompute += f.activeSum;
      phase.compute += f.cycles;
      csCycles[c] += f.cycles;
      csRuns[c]++;
      const Json &byType = cs["cycleEstimates"]["activeCyclesByVertexType"][c];
      for (size_t t = 0; t < nTypes && t < byType.size(); ++t)
        typeCycles[t] += byType[t].get<uint64_t>();
    } else if (type == "DoExchange" || type == "GlobalExchange") {
      const bool global = type == "GlobalExchange";
      const size_t e = p["exchange"].get<size_t>();
      if (global && !hostAllReduce.empty()) {
        auto h = hostAllReduce.find(external["popefIndex"][e].get<uint32_t>());
        if (h != hostAllReduce.end()) {
          sync("External", h->second.syncCycles, std::nullopt);
          StepFacts f;
          f.cycles = h->second.transferCycles;
          f.totalData = h->second.bytes;
          Json s{{"type", type}, {"hostAllReduce", true}};
          common(s, id, p, f);
          s["totalData"] = f.totalData;
          s["externalExchange"] = e;
          steps.push_back(s);
          phase.host += f.cycles;
          hostData += f.totalData;
          return;
        }
      }
      const StepFacts &f = global ? facts(exFacts, e, [&] { return exchangeFacts(external, e, "estimatedCyclesByTile"); })
                                  : facts(inFacts, e, [&] { return exchangeFacts(internal, e, "cyclesByTile"); });
      sync(global ? "External" : "Internal", global ? globalSync : syncCycles, std::nullopt);
      Json s{{"type", type}};
      common(s, id, p, f);
      s["totalData"] = f.totalData;
      s["dataBalance"] = ratio(f.dataSum, f.maxData * numTiles);
      s[global ? "externalExchange" : "exchange"] = e;
      if (!global)
        s["cyclesOverlapped"] = 0;
      steps.push_back(s);
      (global ? tileCycles.globalExchange : tileCycles.doExchange) += f.tileSum;
      phase.exchange += f.cycles;
      exchangeData += f.totalData;
    } else if (type == "StreamCopy") {
      const size_t h = p["exchange"].get<size_t>();
      if (skippedAnchor(h))
        return;
      const StepFacts &f = facts(hostFacts, h, [&] {
        StepFacts x = exchangeFacts(host, h, "estimatedCyclesByTile");
        x.cycles = host["cycles"][h].get<uint64_t>(); // PCIe is shared: total bytes / bandwidth
        return x;
      });
      sync("External", globalSync, std::nullopt);
      Json s{{"type", type}};
      common(s, id, p, f);
      s["totalData"] = f.totalData;
      s["dataBalance"] = ratio(f.dataSum, f.maxData * numTiles);
      s["hostExchange"] = h;
      steps.push_back(s);
      tileCycles.streamCopy += f.tileSum;
      phase.host += f.cycles;
      hostData += f.totalData;
    } else if (type == "Sync") {
      sync("Internal", syncCycles, id);
    } else if (type == "If" || type == "Switch") {
      sync("Internal", syncCycles, id); // the branch waits for the value on its tile
    } else if (type == "PrintTensor") {
      sync("External", globalSync, id); // the host reads the tensor (engine: global_sync_cycles)
    }
    // Sequence, Repeat, RepeatWhileTrue and Call only lead to the programs that
    // follow them in the trace.
  };

  // Follows the trace down the program tree as the engine ran it, so that a
  // parallel Sequence (children on different IPUs at once) costs its slowest child.
  size_t pos = 0;
  std::function<void(uint32_t)> walk = [&](uint32_t id) {
    if (id >= programs.size())
      fail("program trace names program {} but the graph profile has {}: profile the same executable", id,
           programs.size());
    if (pos >= trace.size() || trace[pos] != id)
      fail("program trace entry {} is not program {} as the program tree requires: profile the same executable",
           pos, id);
    ++pos;
    leaf(id);
    const Json &p = programs[id];
    const std::string type = p.at("type").get<std::string>();
    std::vector<uint32_t> children;
    if (p.contains("children"))
      children = p["children"].get<std::vector<uint32_t>>();
    auto next = [&]() -> uint32_t {
      if (pos >= trace.size() || std::find(children.begin(), children.end(), trace[pos]) == children.end())
        fail("program trace entry {} is not a branch of program {}: profile the same executable", pos, id);
      return trace[pos];
    };
    if (type == "Sequence" && p.value("parallel", false)) {
      // The slowest IPU: children on one IPU (stages of a training pipeline) add up.
      auto total = [](const auto &x) { return x.compute + x.exchange + x.sync + x.host; };
      const auto start = phase;
      std::map<int64_t, decltype(phase)> ipus;
      int64_t unnamed = -1;
      for (uint32_t c : children) {
        const int64_t named = programs[c].value("ipu", int64_t(-1));
        auto [it, added] = ipus.try_emplace(named >= 0 ? named : unnamed--, start);
        phase = it->second;
        now = total(phase);
        walk(c);
        it->second = phase;
      }
      auto slowest = start;
      for (const auto &[ipu, x] : ipus)
        if (total(x) > total(slowest))
          slowest = x;
      phase = slowest;
      now = total(phase);
    } else if (type == "Sequence") {
      for (uint32_t c : children)
        walk(c);
    } else if (type == "Repeat") {
      for (uint64_t i = 0; i < p.value("repeatCount", uint64_t(0)); ++i)
        for (uint32_t c : children)
          walk(c);
    } else if (type == "Call") {
      const Json &functions = graph.at("functionPrograms");
      const size_t f = p.at("target").get<size_t>();
      if (f >= functions.size())
        fail("program {} calls function {} but the graph profile has {}", id, f, functions.size());
      walk(functions[f].get<uint32_t>());
    } else if (type == "If" || type == "Switch") {
      walk(next());
    } else if (type == "RepeatWhileTrue" && children.size() == 2) {
      walk(children[0]);
      while (pos < trace.size() && trace[pos] == children[1]) {
        walk(children[1]);
        walk(children[0]);
      }
    }
  };
  while (pos < trace.size())
    walk(trace[pos]); // each run of main

  Json j;
  j["profileFormat"] = "popc-execution-profile/1";
  j["profilerMode"] = "IPU_MODEL";
  j["programTrace"] = Json::array();
  for (uint32_t id : trace)
    j["programTrace"].push_back(id);
  Json sim;
  sim["cycles"] = now;
  sim["tileCycles"] = {{"activeCompute", tileCycles.activeCompute}, {"compute", tileCycles.compute},
                       {"copySharedStructure", 0},                  {"doExchange", tileCycles.doExchange},
                       {"globalExchange", tileCycles.globalExchange}, {"streamCopy", tileCycles.streamCopy},
                       {"sync", tileCycles.sync}};
  sim["phaseCycles"] = {{"compute", phase.compute}, {"exchange", phase.exchange}, {"sync", phase.sync},
                        {"host", phase.host}};
  sim["totalData"] = {{"exchange", exchangeData}, {"host", hostData}};
  Json a = Json::array(), b = Json::array(), c = Json::array();
  for (size_t i = 0; i < csCycles.size(); ++i)
    a.push_back(csCycles[i]), b.push_back(csRuns[i]);
  for (uint64_t x : typeCycles)
    c.push_back(x);
  sim["computeSetCycles"] = a;
  sim["computeSetRuns"] = b;
  sim["vertexTypeCycles"] = c;
  sim["steps"] = steps;
  j["simulation"] = sim;
  return j;
}

} // namespace popc::profile
