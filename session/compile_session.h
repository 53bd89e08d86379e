// A compile through the content-addressed cache (docs/cache.md), as popc-onnx
// and popc::InferenceSession both do it: the lookup comes before any ONNX
// parse or LLVM, concurrent compiles of one model compile once (the others
// wait for its entry), and a compile's executable is stored for the next.
#pragma once
#include "cache/store.h"
#include "compiler/driver/compile.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace popc::session {

struct CacheSettings {
  std::shared_ptr<cache::Store> store; // null: no cache
  double lockTimeoutSeconds = 600;     // waiting for another process compiling the same key
  // Compile even when the cache has the executable (IR dumps and profiles
  // come from compiling); the result is still stored.
  bool compileOnHit = false;
};

struct CompileResult {
  // The executable: compiled here, or the cache hit's bytes when no output
  // file took them.
  std::vector<uint8_t> bytes;
  bool cacheHit = false, waitedForOtherCompile = false;
  std::string key;    // the cache key ("" without a cache)
  uint64_t size = 0;  // bytes of the executable
  double seconds = 0; // lookup (and wait) of a hit
  driver::CompileStats stats;
};

// Compiles `modelPath` (or takes it from the cache). With `outputFile`, the
// executable is also written there (a hit as the store's hard link or copy,
// without reading it into `bytes`). Throws popc::Error.
CompileResult compileModel(const std::string &modelPath, const driver::CompileOptions &options,
                           const CacheSettings &cache, const std::optional<std::string> &outputFile = std::nullopt,
                           const driver::CompileHooks *hooks = nullptr);

} // namespace popc::session
