// Graph and execution profiles of the hand-built sample executable
// (test/unit/popef/sample_executable.h: 2 IPUs x 2 tiles, out = a + b), with
// every number worked out from the cycle model by hand.
#include "profile/execution_profile.h"
#include "profile/graph_profile.h"
#include "profile/html_report.h"
#include "profile/json_writer.h"
#include "profile/summary.h"
#include "tools/cli_common.h"
#include "runtime/engine.h"
#include "support/error.h"
#include "test/unit/popef/sample_executable.h"
#include "test/unit/runtime/vertex_ir.h"

#include <catch2/catch.hpp>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using popc::profile::Json;
namespace fb = ::popef::fb;

namespace {

std::shared_ptr<const popc::popef::Executable> sample(std::vector<uint8_t> bitcode = {'B', 'C', 0xC0, 0xDE, 1, 2, 3, 4}) {
  return popc::popef::Executable::fromBytes(popc::popef::serialize(popc::test::makeSampleExecutable(std::move(bitcode))),
                                            "sample.popef");
}

std::vector<uint64_t> vec(const Json &j) { return j.get<std::vector<uint64_t>>(); }

// The sample's main program: StreamCopy a, Execute add, Sync, Exchange move, StreamCopy out.
const std::vector<uint32_t> kTrace = {0, 1, 2, 3, 4, 5};

} // namespace

TEST_CASE("graph profile of the sample: target, graph, vertex types", "[profile]") {
  const Json g = popc::profile::graphProfile(*sample());
  CHECK(g["target"]["numIPUs"] == 2);
  CHECK(g["target"]["tilesPerIPU"] == 2);
  CHECK(g["target"]["numTiles"] == 4);
  CHECK(g["target"]["bytesPerTile"] == 1024);
  CHECK(g["target"]["totalMemory"] == 4096);
  CHECK(g["target"]["clockFrequency"] == 1330000000);
  CHECK(g["graph"]["numVertices"] == 2);
  CHECK(g["graph"]["numEdges"] == 6); // 2 vertices x 3 fields
  CHECK(g["graph"]["numVars"] == 4);
  CHECK(g["graph"]["numComputeSets"] == 1);
  CHECK(g["vertexTypes"]["names"][0] == "Add_2_f32");
  CHECK(g["vertexTypes"]["sizes"][0] == 12);
}

TEST_CASE("graph profile of the sample: compute sets and exchanges per tile", "[profile]") {
  const Json g = popc::profile::graphProfile(*sample());
  const Json &cs = g["computeSets"];
  CHECK(cs["names"][0] == "add");
  CHECK(vec(cs["vertexTypes"][0]) == std::vector<uint64_t>{0});
  CHECK(vec(cs["vertexCounts"][0]) == std::vector<uint64_t>{2});
  CHECK(vec(cs["vertexCountsByTile"][0]) == std::vector<uint64_t>{1, 1, 0, 0});
  CHECK(vec(cs["cycleEstimates"]["cyclesByTile"][0]) == std::vector<uint64_t>{60, 60, 0, 0});
  CHECK(vec(cs["cycleEstimates"]["activeCyclesByTile"][0]) == std::vector<uint64_t>{10, 10, 0, 0}); // ceil(10/6)
  CHECK(vec(cs["cycleEstimates"]["activeCyclesByVertexType"][0]) == std::vector<uint64_t>{20}); // ceil(20/6)

  // "move" crosses the IPU boundary (tiles 0,1 -> 2,3): a GlobalExchange.
  CHECK(g["exchanges"]["names"].empty());
  const Json &ex = g["externalExchanges"];
  CHECK(ex["names"][0] == "move");
  CHECK(ex["totalData"][0] == 16);
  CHECK(vec(ex["bytesSentByTile"][0]) == std::vector<uint64_t>{8, 8, 0, 0});
  CHECK(vec(ex["bytesReceivedByTile"][0]) == std::vector<uint64_t>{0, 0, 8, 8});
  CHECK(vec(ex["estimatedCyclesByTile"][0]) == std::vector<uint64_t>{4, 4, 4, 4}); // 8 B at 2 B/cycle

  const Json &host = g["hostExchanges"];
  CHECK(host["names"][0] == "a");
  CHECK(vec(host["bytesReceivedByTile"][0]) == std::vector<uint64_t>{8, 8, 0, 0});
  CHECK(vec(host["bytesSentByTile"][1]) == std::vector<uint64_t>{0, 0, 8, 8});
  CHECK(host["cycles"][0] == 2); // 16 B at 8 B/cycle
}

TEST_CASE("graph profile of the sample: program tree with Poplar's type tags", "[profile]") {
  const Json g = popc::profile::graphProfile(*sample());
  const Json &p = g["programs"];
  REQUIRE(p.size() == 6);
  CHECK(p[0]["type"] == "Sequence");
  CHECK(vec(p[0]["children"]) == std::vector<uint64_t>{1, 2, 3, 4, 5});
  CHECK(p[1]["type"] == "StreamCopy");
  CHECK(p[1]["exchange"] == 0);
  CHECK(p[2]["type"] == "OnTileExecute");
  CHECK(p[2]["computeSet"] == 0);
  CHECK(p[2]["name"] == "add");
  CHECK(p[3]["type"] == "Sync");
  CHECK(p[4]["type"] == "GlobalExchange");
  CHECK(p[4]["exchange"] == 0);
  CHECK(p[5]["type"] == "StreamCopy");
  CHECK(p[5]["exchange"] == 1);
  CHECK(vec(g["controlPrograms"]) == std::vector<uint64_t>{0});
}

TEST_CASE("graph profile memory: per tile bytes add up to the popef's plan", "[profile]") {
  auto exe = sample();
  const Json g = popc::profile::graphProfile(*exe);
  const Json &m = g["memory"];
  // a, b and sum on tiles 0 and 1 (8 bytes each at 0, 16, 32); out on 2 and 3.
  CHECK(vec(m["byTile"]["total"]) == std::vector<uint64_t>{24, 24, 8, 8});
  CHECK(vec(m["byTile"]["totalIncludingGaps"]) == std::vector<uint64_t>{48, 48, 8, 8}); // = tile_bytes_used
  uint64_t planned = 0, reported = 0;
  for (uint32_t t = 0; t < 4; ++t)
    planned += exe->root().tile_bytes_used()->Get(t);
  for (uint64_t b : vec(m["byTile"]["totalIncludingGaps"]))
    reported += b;
  CHECK(reported == planned);
  CHECK(vec(m["byCategory"]["constant"]["total"]) == std::vector<uint64_t>{8, 8, 0, 0});
  CHECK(vec(m["byCategory"]["variable"]["total"]) == std::vector<uint64_t>{16, 16, 8, 8});
  CHECK(vec(m["byCategory"]["variable"]["nonInterleaved"]["overlapped"]) == std::vector<uint64_t>{0, 0, 0, 0});
}

TEST_CASE("graph profile memory: bytes shared through liveness are overlapped", "[profile]") {
  auto exe = popc::test::makeSampleExecutable({'B', 'C', 0xC0, 0xDE});
  exe.tensors[2]->mapping = {{0, 8, 0, 0}, {8, 8, 1, 0}}; // sum reuses a's bytes
  const Json g = popc::profile::graphProfile(
      *popc::popef::Executable::fromBytes(popc::popef::serialize(exe), "overlap.popef"));
  const Json &m = g["memory"];
  CHECK(vec(m["byTile"]["total"]) == std::vector<uint64_t>{16, 16, 8, 8});
  CHECK(vec(m["byCategory"]["variable"]["nonInterleaved"]["overlapped"]) == std::vector<uint64_t>{16, 16, 0, 0});
  CHECK(vec(m["byCategory"]["variable"]["nonInterleaved"]["nonOverlapped"]) == std::vector<uint64_t>{0, 0, 8, 8});
  CHECK(vec(m["byCategory"]["constant"]["nonInterleaved"]["nonOverlapped"]) == std::vector<uint64_t>{8, 8, 0, 0});
}

TEST_CASE("execution profile of the sample trace: steps, cycles and balances", "[profile]") {
  const Json g = popc::profile::graphProfile(*sample());
  const Json x = popc::profile::executionProfile(g, kTrace);
  CHECK(vec(x["programTrace"]) == std::vector<uint64_t>{0, 1, 2, 3, 4, 5});
  const Json &s = x["simulation"];
  // stream a: 1000 sync + 2; add: 10; Sync: 100; move: 1000 sync + 4; stream out: 1000 + 2.
  CHECK(s["cycles"] == 3168);
  CHECK(s["phaseCycles"]["compute"] == 60);
  CHECK(s["phaseCycles"]["exchange"] == 4);
  CHECK(s["phaseCycles"]["sync"] == 3100);
  CHECK(s["phaseCycles"]["host"] == 4);
  CHECK(s["tileCycles"]["compute"] == 120);
  CHECK(s["tileCycles"]["activeCompute"] == 20);
  CHECK(s["tileCycles"]["globalExchange"] == 16);
  CHECK(s["tileCycles"]["sync"] == 3100 * 4);
  const Json &steps = s["steps"];
  REQUIRE(steps.size() == 8);
  CHECK(steps[0]["type"] == "Sync");
  CHECK(steps[0]["syncType"] == "External");
  CHECK(steps[1]["type"] == "StreamCopy");
  CHECK(steps[1]["cyclesFrom"] == 1000);
  CHECK(steps[1]["cyclesTo"] == 1002);
  CHECK(steps[1]["activeTiles"] == 2);
  CHECK(steps[1]["dataBalance"].get<double>() == Approx(0.5)); // tiles 0,1 hold 8 B each of 4 tiles
  const Json &exec = steps[2];
  CHECK(exec["type"] == "OnTileExecute");
  CHECK(exec["cycles"] == 60);
  CHECK(exec["cyclesFrom"] == 1002);
  CHECK(exec["cyclesTo"] == 1062);
  CHECK(exec["cyclesOverlapped"] == 0);
  CHECK(exec["tileBalance"].get<double>() == Approx(0.5));      // 120 / (60 * 4)
  CHECK(exec["activeTileBalance"].get<double>() == Approx(1.0)); // 120 / (60 * 2)
  CHECK(exec["threadBalance"].get<double>() == Approx(1.0 / 6)); // 20 active / 120: one vertex per tile, one of six contexts busy
  CHECK(steps[3]["type"] == "Sync");
  CHECK(steps[3]["syncType"] == "Internal");
  CHECK(steps[3]["cycles"] == 100);
  CHECK(steps[4]["syncType"] == "External");
  const Json &ex = steps[5];
  CHECK(ex["type"] == "GlobalExchange");
  CHECK(ex["externalExchange"] == 0);
  CHECK(ex["cycles"] == 4);
  CHECK(ex["totalData"] == 16);
  CHECK(ex["activeTiles"] == 4);
  CHECK(ex["dataBalance"].get<double>() == Approx(1.0));
  CHECK(steps[7]["cyclesTo"] == 3168);
  CHECK(vec(s["computeSetRuns"]) == std::vector<uint64_t>{1});
  CHECK(vec(s["vertexTypeCycles"]) == std::vector<uint64_t>{20});
}

TEST_CASE("execution profile: a trace naming an unknown program is an error", "[profile]") {
  const Json g = popc::profile::graphProfile(*sample());
  const std::vector<uint32_t> unknown = {99};
  CHECK_THROWS_WITH(popc::profile::executionProfile(g, unknown), Catch::Contains("names program 99"));
  const std::vector<uint32_t> offTree = {0, 2};
  CHECK_THROWS_WITH(popc::profile::executionProfile(g, offTree), Catch::Contains("entry 1 is not program 1"));
}

TEST_CASE("execution profile from the engine's trace matches the engine's cycle report", "[profile]") {
  auto exe = sample(popc::test::sampleAddBitcode());
  popc::profile::TraceRecorder trace(*exe);
  popc::runtime::EngineOptions options{1, nullptr};
  options.observer = &trace;
  popc::runtime::Engine engine(exe, options);
  popc::runtime::HostTensor a{popc::DType::F32, {4}, std::vector<uint8_t>(16)};
  float values[4] = {1, 2, 3, 4};
  std::memcpy(a.data.data(), values, 16);
  for (int run = 0; run < 3; ++run)
    engine.run({{"a", a}});
  REQUIRE(trace.trace().size() == 18);
  const Json x = popc::profile::executionProfile(popc::profile::graphProfile(*exe), trace.trace());
  const auto &r = engine.report();
  CHECK(x["simulation"]["cycles"] == r.cycles.total());
  CHECK(x["simulation"]["cycles"] == 3 * 3168);
  CHECK(x["simulation"]["phaseCycles"]["compute"] == r.cycles.compute);
  CHECK(x["simulation"]["phaseCycles"]["exchange"] == r.cycles.exchange);
  CHECK(x["simulation"]["phaseCycles"]["sync"] == r.cycles.sync);
  CHECK(x["simulation"]["phaseCycles"]["host"] == r.cycles.host);
}

TEST_CASE("json text is deterministic with scalar arrays on one line", "[profile]") {
  const Json j = {{"b", 1}, {"a", {1, 2, 3}}, {"c", {{"x", Json::array()}}}};
  CHECK(popc::profile::toJsonText(j) == "{\n  \"b\": 1,\n  \"a\": [1,2,3],\n  \"c\": {\n    \"x\": []\n  }\n}\n");
  const Json g = popc::profile::graphProfile(*sample());
  CHECK(popc::profile::toJsonText(g) == popc::profile::toJsonText(popc::profile::graphProfile(*sample())));
  CHECK(Json::parse(popc::profile::toJsonText(g)) == g);
}

TEST_CASE("profile summary of the sample matches the golden text", "[profile]") {
  const Json g = popc::profile::graphProfile(*sample());
  const Json x = popc::profile::executionProfile(g, kTrace);
  popc::profile::SummaryOptions options;
  options.showExecutionSteps = true;
  const std::string text = popc::profile::profileSummary(g, &x, options);
  // Per IPU: the sample's one inter-IPU copy moves 16 bytes from IPU 0 to IPU 1.
  REQUIRE(g["ipus"].size() == 2);
  CHECK(g["ipus"][0]["linkBytesSent"] == 16);
  CHECK(g["ipus"][1]["linkBytesReceived"] == 16);
  CHECK(g["ipus"][0]["memoryBytes"].get<uint64_t>() + g["ipus"][1]["memoryBytes"].get<uint64_t>() == 64);
  const std::string goldenPath = std::string(POPC_TEST_SOURCE_DIR) + "/test/unit/profile/golden/sample_summary.txt";
  if (std::getenv("POPC_UPDATE_GOLDEN"))
    std::ofstream(goldenPath) << text;
  std::ifstream in(goldenPath);
  REQUIRE(in);
  std::stringstream golden;
  golden << in.rdbuf();
  CHECK(text == golden.str());
  // A few lines spelled out, as in the Poplar guide's example.
  CHECK_THAT(text, Catch::Contains("  Tiles per IPU:          2\n"));
  CHECK_THAT(text, Catch::Contains("  Clock Speed (approx):   1,330.0 MHz\n"));
  CHECK_THAT(text, Catch::Contains("  Number of vertices:                2\n"));
  CHECK_THAT(text, Catch::Contains("  Total cycles:                                  3,168 (approx 2.4 microseconds)\n"));
  CHECK_THAT(text, Catch::Contains("  Total thread balance:                          16.7%\n"));
  CHECK_THAT(text, Catch::Contains("  OnTileExecute (cycles 1,002 - 1,062): add\n"));
  CHECK(text.find('\033') == std::string::npos);
}

TEST_CASE("summary colours follow CLICOLOR and CLICOLOR_FORCE", "[profile]") {
  ::setenv("CLICOLOR_FORCE", "1", 1);
  CHECK(popc::tools::coloursFor(-1));
  ::unsetenv("CLICOLOR_FORCE");
  ::setenv("CLICOLOR", "0", 1);
  CHECK_FALSE(popc::tools::coloursFor(-1));
  ::unsetenv("CLICOLOR");
  CHECK_FALSE(popc::tools::coloursFor(-1)); // not a terminal
  const Json g = popc::profile::graphProfile(*sample());
  popc::profile::SummaryOptions options;
  options.colours = true;
  CHECK_THAT(popc::profile::profileSummary(g, nullptr, options), Catch::Contains("\033[1;36mTarget:\033[0m"));
}

TEST_CASE("html report embeds the profiles safely", "[profile]") {
  Json g = popc::profile::graphProfile(*sample());
  g["computeSets"]["names"][0] = "</script><b>x";
  const std::string html = popc::profile::htmlReport(g, nullptr, "t");
  CHECK(html.find("</script><b>x") == std::string::npos);
  CHECK_THAT(html, Catch::Contains("<\\/script><b>x"));
  CHECK_THAT(html, Catch::Contains("id=\"heatmap\""));
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg")); // no fetches, only the SVG namespace
}

TEST_CASE("execution profile of control flow (If, Switch) and PrintTensor matches the engine's cycles", "[profile]") {
  // Appended to the sample's main: If b[0] (10, true) { add } else { Sync };
  // Switch b[0] { case 10: Sync; case 20: add; default: Sync } — each waits for b with one sync;
  // PrintTensor b — the host reads it (one global sync).
  auto exe = popc::test::makeSampleExecutable(popc::test::sampleAddBitcode());
  auto node = [](fb::ProgramKind kind, uint32_t index = 0) { return popc::test::sampleProgram(kind, index); };
  auto branch = node(fb::ProgramKind::If);
  branch->tensor = 1;
  branch->children.push_back(node(fb::ProgramKind::Execute, 0));
  branch->children.push_back(node(fb::ProgramKind::Sync));
  auto choose = node(fb::ProgramKind::Switch);
  choose->tensor = 1;
  choose->case_values = {10, 20};
  choose->children.push_back(node(fb::ProgramKind::Sync));
  choose->children.push_back(node(fb::ProgramKind::Execute, 0));
  choose->children.push_back(node(fb::ProgramKind::Sync));
  exe.main->children.push_back(std::move(branch));
  exe.main->children.push_back(std::move(choose));
  auto print = node(fb::ProgramKind::PrintTensor);
  print->tensor = 1;
  exe.main->children.push_back(std::move(print));
  auto file = popc::popef::Executable::fromBytes(popc::popef::serialize(exe), "control.popef");

  const Json g = popc::profile::graphProfile(*file);
  REQUIRE(g["programs"].size() == 14);
  CHECK(g["programs"][6]["type"] == "If");
  CHECK(vec(g["programs"][6]["children"]) == std::vector<uint64_t>{7, 8});
  CHECK(g["programs"][9]["type"] == "Switch");
  CHECK(g["programs"][9]["caseValues"] == Json({10, 20}));

  popc::profile::TraceRecorder trace(*file);
  popc::runtime::EngineOptions options{1, nullptr};
  options.observer = &trace;
  popc::runtime::Engine engine(file, options);
  std::vector<std::string> printed;
  engine.setPrintHandler([&](const std::string &line) { printed.push_back(line); });
  engine.run({{"a", {popc::DType::F32, {4}, std::vector<uint8_t>(16)}}});
  // main, its five steps, If, then-branch (add), Switch, case 10 (Sync), PrintTensor.
  CHECK(trace.trace() == std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 13});
  CHECK(printed.size() == 1);
  const Json x = popc::profile::executionProfile(g, trace.trace());
  CHECK(x["simulation"]["cycles"] == engine.report().cycles.total());
  // If sync + add + Switch sync + Sync + PrintTensor's global sync
  CHECK(x["simulation"]["cycles"] == 3168 + 100 + 60 + 100 + 100 + 1000);
  CHECK(x["simulation"]["phaseCycles"]["sync"] == engine.report().cycles.sync);
}
