// The JIT's hook for a persistent object-code cache. The runtime knows only
// this interface; a tool plugs in an implementation (poprun-lite wires it to
// the content-addressed cache in cache/, kind "obj"). Keys are computed by the
// JIT (jit.cpp): 32 hex digits of XXH3-128 over the partition's bitcode and
// function set, the memory-sandbox parameters, the host CPU name and
// features, the LLVM version and the build id of the running code, so a hit
// is exactly the machine code this process would have produced.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace popc::runtime {

class ObjectCache {
public:
  virtual ~ObjectCache() = default;
  // The object file stored under `key`, or nullopt. Must return only bytes
  // that were stored under that key (verified); never throws.
  virtual std::optional<std::vector<uint8_t>> load(const std::string &key) = 0;
  // Never throws; failures are the implementation's warnings.
  virtual void store(const std::string &key, std::span<const uint8_t> object) = 0;
};

// The cache every Jit created afterwards uses (null = none, the default).
// Process-wide because the engine builds its Jit itself; set it once, before
// creating engines.
void setObjectCache(std::shared_ptr<ObjectCache> cache);
std::shared_ptr<ObjectCache> objectCache();

} // namespace popc::runtime
