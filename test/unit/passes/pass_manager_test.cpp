#include "compiler/passes/pass_manager.h"

#include "support/error.h"
#include "test_graph.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace popc;
using namespace popc::passes;
using namespace popc::passes::test;
namespace fs = std::filesystem;

namespace {

void simpleModel(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  addInput(g, "x", {2, 3});
  addF32(g, "a", {3}, {1, 2, 3});
  addF32(g, "b", {3}, {1, 1, 1});
  addOp(g, "Add", "fold_me", {"a", "b"}, {"ab"});
  addOp(g, "Identity", "id", {"x"}, {"xi"});
  addOp(g, "Mul", "mul", {"xi", "ab"}, {"y"});
  g.outputs = {"y"};
}

fs::path freshDir(const std::string &name) {
  fs::path dir = fs::temp_directory_path() / ("popc_passes_test_" + name);
  fs::remove_all(dir);
  return dir;
}

} // namespace

TEST_CASE("pass manager: default pipeline order", "[passes]") {
  ir::Ir ir;
  simpleModel(ir);
  PassManager pm = makeDefaultPipeline({});
  pm.run(ir);
  CHECK(pm.executed() ==
        std::vector<std::string>{"FWD0", "pass resize-decomposition", "pass einsum-decomposition", "pass rnn-decomposition",
                                 "pass qdq-fusion", "pass quantize-decomposition", "pass index-decomposition",
                                 "pass linalg-decomposition", "pass grid-sample-decomposition",
                                 "pass roi-align-decomposition", "pass tfidf-decomposition", "pass maxpool-rewrites",
                                 "pass window-canonicalization", "pass long-row-decomposition",
                                 "pass float16-promotion", "pass constant-folding", "pass square-rewrite", "pass noop-removal",
                                 "pass conv-bn-fold", "pass batchnorm-decomposition",
                                 "pass constant-folding", "pass dead-code-elimination", "FWD1",
                                 "PREALIAS", "MAINLOOPS", "FINAL"});
  CHECK(opTypes(ir.main) == std::vector<std::string>{"Mul"});
  CHECK(ir.main.ops()[0]->inputs[0] == "x");
}

TEST_CASE("pass manager: IR and DOT dumps at every checkpoint", "[passes]") {
  ir::Ir ir;
  simpleModel(ir);
  fs::path irDir = freshDir("ir") / "nested", dotDir = freshDir("dot");
  PassOptions opts;
  opts.dumpIrDir = irDir.string();
  opts.dumpDotDir = dotDir.string();
  runPasses(ir, opts);
  const char *names[] = {"00_FWD0", "01_FWD1", "02_PREALIAS", "03_MAINLOOPS", "04_FINAL"};
  for (const char *n : names) {
    CHECK(fs::exists(irDir / (std::string(n) + ".ir.txt")));
    CHECK(fs::exists(dotDir / (std::string(n) + ".dot")));
  }
  // FWD0 still has the Identity; FWD1 no longer does.
  auto slurp = [](const fs::path &p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  CHECK(slurp(irDir / "00_FWD0.ir.txt").find("Identity") != std::string::npos);
  CHECK(slurp(irDir / "01_FWD1.ir.txt").find("Identity") == std::string::npos);
  CHECK(slurp(dotDir / "04_FINAL.dot").find("digraph") != std::string::npos);
}

TEST_CASE("pass manager: an unwritable dump dir is named in the error", "[passes]") {
  fs::path base = freshDir("blocked");
  fs::create_directories(base);
  std::ofstream(base / "file") << "x";
  ir::Ir ir;
  simpleModel(ir);
  PassOptions opts;
  opts.dumpIrDir = (base / "file" / "sub").string();
  CHECK_THROWS_WITH(runPasses(ir, opts), Catch::Contains(opts.dumpIrDir));
}

TEST_CASE("pass manager: a pass that breaks the IR is named", "[passes]") {
  ir::Ir ir;
  simpleModel(ir);
  PassManager pm;
  pm.addCheckpoint("FWD0");
  pm.addPass("breaker", [](ir::Ir &ir) -> size_t {
    ir.main.ops()[0]->inputs[0] = "no_such_tensor";
    return 1;
  });
  // A popc bug, not a user error: InternalError (tools exit 2; the conformance runner
  // never counts it as an unsupported op).
  try {
    pm.run(ir);
    FAIL("a broken IR passed");
  } catch (const popc::InternalError &e) {
    CHECK_THAT(std::string(e.what()), Catch::StartsWith("after pass breaker: the IR no longer verifies:") &&
                                          Catch::Contains("no_such_tensor"));
  }
}

TEST_CASE("pass manager: disabled passes", "[passes]") {
  ir::Ir ir;
  simpleModel(ir);
  PassOptions opts;
  opts.disabledPasses = {"noop-removal"};
  PassManager pm = makeDefaultPipeline(opts);
  pm.run(ir);
  CHECK(opTypes(ir.main) == std::vector<std::string>{"Identity", "Mul"});

  opts.disabledPasses = {"no-such-pass"};
  ir::Ir ir2;
  simpleModel(ir2);
  CHECK_THROWS_WITH(runPasses(ir2, opts), Catch::Contains("no-such-pass") &&
                                              Catch::Contains("constant-folding"));
}
