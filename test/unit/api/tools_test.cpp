// A graph API executable saved to a file runs with poprun-lite (FIFOs are its
// inputs and outputs) and popef-info shows its control programs.
#include <popc/Engine.hpp>
#include <popc/popops.hpp>

#include "formats/npz/npz.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace popc::api;
using namespace popc::api::program;

namespace {
std::string runTool(const std::string &args, const fs::path &dir, int &code) {
  const std::string cmd = fs::read_symlink("/proc/self/exe").parent_path().string() + "/" + args + " >" +
                          (dir / "out.txt").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(dir / "out.txt");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
} // namespace

TEST_CASE("a saved graph API popef runs with poprun-lite", "[api][tools]") {
  const fs::path dir = fs::temp_directory_path() / ("popc_api_tools." + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    Graph g(Target::createIPUTarget(1, "ipu2", 4));
    Tensor x = g.addVariable(INT, {2}, "x");
    g.setTileMapping(x, 0);
    Tensor c = g.addConstant<int>(INT, {2}, {3, 30});
    g.setTileMapping(c, 1);
    DataStream in = g.addHostToDeviceFIFO("x", INT, 2);
    DataStream out = g.addDeviceToHostFIFO("y", INT, 2);
    Sequence add;
    popops::addInPlace(g, x, c, add, "add");
    // y = x + c when x[0] is non-zero, else x.
    Engine e(g, Sequence{Copy(in, x), If(x[0], add), Copy(x, out)});
    e.saveExecutable((dir / "g.popef").string());
  }
  auto write = [&](std::vector<int32_t> v, const char *file) {
    popc::npz::writeNpz((dir / file).string(), {{"x", popc::npz::makeArray(popc::DType::I32, {2}, v.data())}});
  };
  write({1, 2}, "a.npz");
  write({0, 2}, "b.npz");
  int code = 0;
  for (auto [in, expected] : std::vector<std::pair<const char *, std::vector<int32_t>>>{{"a.npz", {4, 32}},
                                                                                         {"b.npz", {0, 2}}}) {
    std::string log = runTool(fmt::format("poprun-lite {} --inputs {} --outputs {}", (dir / "g.popef").string(),
                                          (dir / in).string(), (dir / "out.npz").string()),
                              dir, code);
    INFO(log);
    REQUIRE(code == 0);
    auto outs = popc::npz::readNpz((dir / "out.npz").string());
    std::vector<int32_t> y(2);
    std::memcpy(y.data(), outs.at("y").data.data(), 8);
    CHECK(y == expected);
  }
  std::string info = runTool(fmt::format("popef-info --json {}", (dir / "g.popef").string()), dir, code);
  CHECK(code == 0);
  CHECK(info.find("\"If\"") != std::string::npos);
  CHECK(info.find("\"compressed\": true") != std::string::npos); // saved as popc-onnx writes them
  fs::remove_all(dir);
}
