// Fuzz target: ONNX model bytes through popc::onnx::importOnnx (protobuf parse,
// external-data checks, ONNX checker + shape inference, conversion to the IR and
// re-inference with the popc op registry), then the IR passes popc-onnx runs
// next (constant folding, decompositions, dead code; each re-infers and
// verifies the graph). importOnnx takes a path, so each input
// is written to a file in a private temporary directory (external-data locations
// in the model therefore resolve inside that directory only). As popc-onnx
// does, each model is first imported in a separate checking process
// (checking_worker.h), so libonnx's known crashes are refusals;
// POPC_FUZZ_IN_PROCESS=1 skips it to hunt them in-process.
#include "compiler/onnx/importer.h"
#include "compiler/passes/pass_manager.h"
#include "fuzz/checking_worker.h"
#include "fuzz/fuzz_util.h"
#include "support/error.h"
#include "support/log.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace {

const std::string &modelPath() {
  static const std::string path = [] {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "popc-fuzz-onnx-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      std::abort();
    static std::string dir = pattern;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    popc::log::setLevel("off");
    return pattern + "/model.onnx";
  }();
  return path;
}

popc::ir::Ir import(const std::string &path) {
  popc::onnx::ImportOptions options;
  options.checkInChild = false; // the checking worker is this target's child
  return popc::onnx::importOnnx(path, options);
}

} // namespace

// The checking worker gets the model's path: the fuzzer wrote the file.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  popc::fuzz::CheckingWorker::serveIfWorker(
      [](std::span<const uint8_t> path, std::vector<uint8_t> &) {
        popc::log::setLevel("off");
        import(std::string(path.begin(), path.end()));
      },
      popc::fuzz::kCheckSeconds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = modelPath();
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort();
  if (size && std::fwrite(data, 1, size, f) != size)
    std::abort();
  std::fclose(f);
  static popc::fuzz::CheckingWorker worker;
  if (!worker.passes({reinterpret_cast<const uint8_t *>(path.data()), path.size()}))
    return 0; // refused, as the tools would refuse it
  try {
    popc::ir::Ir ir = import(path);
    popc::passes::runPasses(ir, {});
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
