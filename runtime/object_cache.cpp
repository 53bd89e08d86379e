#include "runtime/object_cache.h"

#include <mutex>

namespace popc::runtime {

namespace {
std::mutex gMutex;
std::shared_ptr<ObjectCache> gCache;
} // namespace

void setObjectCache(std::shared_ptr<ObjectCache> cache) {
  std::lock_guard<std::mutex> lock(gMutex);
  gCache = std::move(cache);
}

std::shared_ptr<ObjectCache> objectCache() {
  std::lock_guard<std::mutex> lock(gMutex);
  return gCache;
}

} // namespace popc::runtime
