// The executable cache key: XXH3-128 of everything that decides the popef
// bytes — the ONNX file, every external-data file it references, every
// output-changing option (CompileOptions::describe(), which includes the
// target), the compiler version and its build id (support/version.h).
//
// Cheap by design: the model is mmapped and hashed; external-data locations
// are found by walking the protobuf wire format (no ModelProto is built, no
// tensor copied), so a cache hit never pays for an ONNX parse or LLVM.
#pragma once
#include "compiler/driver/compile.h"

#include <optional>
#include <string>
#include <vector>

namespace popc::driver {

struct ExecutableKey {
  std::string key;                        // 32 hex digits
  std::vector<std::string> externalFiles; // locations as written in the model, sorted
};

// nullopt when the model cannot be keyed (missing or unreadable file,
// malformed protobuf, missing external data): the caller compiles without
// the cache and the compiler reports the problem properly.
std::optional<ExecutableKey> executableCacheKey(const std::string &modelPath, const CompileOptions &options);

} // namespace popc::driver
