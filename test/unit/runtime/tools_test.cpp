// poprun-lite and popef-info on the hand-built sample executable.
#include "formats/npz/npz.h"
#include "formats/popef/popef.h"
#include "test/unit/popef/sample_executable.h"
#include "test/unit/runtime/vertex_ir.h"

#include <catch2/catch.hpp>

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string out, err;
};

Result run(const std::string &args, const fs::path &dir) {
  // The tools are built next to this test binary (build/bin).
  std::string cmd = fs::read_symlink("/proc/self/exe").parent_path().string() + "/" + args + " >" + (dir / "out.txt").string() + " 2>" +
                    (dir / "err.txt").string();
  int status = std::system(cmd.c_str());
  auto slurp = [](const fs::path &p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out.txt"), slurp(dir / "err.txt")};
}

} // namespace

TEST_CASE("poprun-lite and popef-info on the sample", "[runtime][tools]") {
  fs::path dir = fs::temp_directory_path() / ("popc-tools-test." + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string model = (dir / "sample.popef").string();
  popc::popef::writeFile(model, popc::popef::serialize(popc::test::makeSampleExecutable(popc::test::sampleAddBitcode())));
  float a[4] = {1, 2, 3, 4};
  popc::npz::writeNpz((dir / "in.npz").string(), {{"a", popc::npz::makeArray(popc::DType::F32, {4}, a)}});

  auto r = run("poprun-lite " + model + " --inputs " + (dir / "in.npz").string() + " --outputs " +
                   (dir / "out.npz").string() + " --iterations 3 --threads 2 --report",
               dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("cycles total 9504 over 3 iteration(s); per iteration 3168"));
  auto outs = popc::npz::readNpz((dir / "out.npz").string());
  float expect[4] = {11, 22, 33, 44};
  CHECK(outs.at("out") == popc::npz::makeArray(popc::DType::F32, {4}, expect));

  r = run("poprun-lite " + model + " --inputs " + (dir / "in.npz").string(), dir);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("out float32 [4]: min 11 max 44 mean 27.5 values [11, 22, 33, 44]"));

  double wrong[4] = {1, 2, 3, 4};
  popc::npz::writeNpz((dir / "bad.npz").string(), {{"a", popc::npz::makeArray(popc::DType::F64, {4}, wrong)}});
  r = run("poprun-lite " + model + " --inputs " + (dir / "bad.npz").string(), dir);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("poprun-lite: error: inputs do not match"));
  CHECK_THAT(r.err, Catch::Contains("Expected inputs: a float32 [4]"));

  r = run("poprun-lite " + model, dir);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("the model needs inputs (a float32 [4]): pass --inputs FILE.npz"));

  r = run("poprun-lite " + (dir / "missing.popef").string() + " --inputs x.npz", dir);
  CHECK(r.code == 1);
  r = run("poprun-lite --bogus", dir);
  CHECK(r.code == 1);

  r = run("popef-info " + model, dir);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("Exchange exchange 0 'move'")); // a small program tree stays on the page
  CHECK_THAT(r.out, !Catch::Contains("Add_2_f32"));                  // vertex types only with --all
  r = run("popef-info --all " + model, dir);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("Add_2_f32"));
  r = run("popef-info --json " + model, dir);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("\"compiler_version\": \"test\""));

  if (!std::getenv("KEEP_TOOLS_TEST_DIR")) fs::remove_all(dir);
}
