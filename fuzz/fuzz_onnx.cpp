// Fuzz target: ONNX model bytes through popc::onnx::importOnnx (protobuf parse,
// external-data checks, ONNX checker + shape inference, conversion to the IR and
// re-inference with the popc op registry). importOnnx takes a path, so each input
// is written to a file in a private temporary directory (external-data locations
// in the model therefore resolve inside that directory only).
#include "compiler/onnx/importer.h"
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

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = modelPath();
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort();
  if (size && std::fwrite(data, 1, size, f) != size)
    std::abort();
  std::fclose(f);
  try {
    // As popc-onnx does, import in a forked child first, so libonnx's known
    // crashes are refusals; POPC_FUZZ_IN_PROCESS=1 hunts them in-process.
    static const bool inProcess = std::getenv("POPC_FUZZ_IN_PROCESS") != nullptr;
    popc::onnx::ImportOptions options;
    options.checkInChild = !inProcess;
    popc::onnx::importOnnx(path, options);
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
