// session/: the cached compile and the run session the CLIs and the C++
// session API share.
#include "cache/tiered_store.h"
#include "session/compile_session.h"
#include "session/run_inputs.h"
#include "session/run_session.h"
#include "support/error.h"
#include "test/unit/temp_dir.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace popc;
namespace fs = std::filesystem;
using popc::test::TempDir;

namespace {

const std::string kRelu = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx"; // x, y float [3,4,5]

std::vector<uint8_t> fileBytes(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

runtime::HostTensor floats(Shape shape, const std::vector<float> &values) {
  runtime::HostTensor t{DType::F32, std::move(shape), std::vector<uint8_t>(values.size() * 4)};
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

std::vector<float> asFloats(const runtime::HostTensor &t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

} // namespace

TEST_CASE("a literal input fills every element", "[session]") {
  auto [name, t] = session::parseInputArgument("x=2x3xf32=0.5", 1 << 20);
  CHECK(name == "x");
  CHECK(t.shape == Shape{2, 3});
  CHECK(asFloats(t) == std::vector<float>(6, 0.5f));
  CHECK_THROWS_AS(session::parseInputArgument("x=2x3xq9=1", 1 << 20), Error);
}

TEST_CASE("a data set input gives each step its slice", "[session]") {
  const std::vector<runtime::IoDesc> model{{"x", DType::F32, {1, 2}, 8, 8}, {"y", DType::F32, {1}, 4, 4}};
  runtime::HostTensorMap inputs{{"x", floats({3, 2}, {1, 2, 3, 4, 5, 6})}, {"y", floats({1}, {9})}};
  const auto dataset = session::datasetInputs(inputs, model, 3);
  CHECK(dataset == std::set<std::string>{"x"}); // y is the same for every step
  runtime::HostTensorMap step{{"y", inputs.at("y")}};
  session::selectIteration(inputs, model, dataset, 2, step);
  CHECK(asFloats(step.at("x")) == std::vector<float>{5, 6});
}

TEST_CASE("the second compile of a model comes from the cache", "[session]") {
  TempDir dir;
  session::CacheSettings cache;
  cache::StoreOptions so;
  so.dir = (dir.path() / "cache").string();
  cache.store = cache::openStore(so);
  const driver::CompileOptions options;
  const session::CompileResult first = session::compileModel(kRelu, options, cache);
  CHECK_FALSE(first.cacheHit);
  CHECK(first.key.size() == 32);
  REQUIRE_FALSE(first.bytes.empty());
  const session::CompileResult second = session::compileModel(kRelu, options, cache);
  CHECK(second.cacheHit);
  CHECK(second.key == first.key);
  CHECK(second.bytes == first.bytes);
  // With an output file a hit is written there, not read.
  const fs::path out = dir.path() / "relu.popef";
  const session::CompileResult third = session::compileModel(kRelu, options, cache, out.string());
  CHECK(third.cacheHit);
  CHECK(third.size == first.bytes.size());
  CHECK(fileBytes(out) == first.bytes);
  // compileOnHit compiles anyway (profiles, IR dumps) and gets the same bytes.
  cache.compileOnHit = true;
  CHECK(session::compileModel(kRelu, options, cache).bytes == first.bytes);
}

TEST_CASE("a compile that keeps its constants in a temporary file writes the same executable", "[session]") {
  const std::string mlp = std::string(POPC_SOURCE_DIR_FOR_TESTS) + "/samples/mlp/model.onnx"; // 69 KB of weights
  const session::CacheSettings noCache;
  driver::CompileOptions options;
  const std::vector<uint8_t> inMemory = session::compileModel(mlp, options, noCache).bytes;
  options.spillConstantsAtBytes = 1;
  CHECK(session::compileModel(mlp, options, noCache).bytes == inMemory);
}

TEST_CASE("a run session runs steps over a data set", "[session]") {
  const session::CompileResult compiled = session::compileModel(kRelu, {}, {});
  session::RunSession run(popc::popef::Executable::fromBytes(compiled.bytes, "relu"), {}, "relu");
  std::vector<float> values(2 * 60);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i % 7) - 3.0f;
  uint64_t done = 0;
  const runtime::HostTensorMap out = run.runSteps({{"x", floats({6, 4, 5}, values)}}, 2, {}, &done);
  CHECK(done == 2);
  // The last step's slice, through Relu.
  std::vector<float> want(values.begin() + 60, values.end());
  for (float &v : want)
    v = std::max(v, 0.0f);
  CHECK(asFloats(out.at("y")) == want);
  // An inference executable has no variables to save or load.
  CHECK(run.weights().empty());
  CHECK_THROWS_WITH(run.requireVariables("--save-weights w.npz"),
                    "--save-weights w.npz: relu has no variables (compile with popc-onnx --train)");
}
