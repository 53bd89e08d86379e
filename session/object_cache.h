// The JIT's object cache (runtime/object_cache.h) on the content-addressed
// store (kind "obj"): a warm start reads machine code, not bitcode.
#pragma once
#include "cache/store.h"

#include <memory>

namespace popc::session {

// Installs `store` as the runtime's JIT object cache (null: none).
void useObjectCache(std::shared_ptr<cache::Store> store);

} // namespace popc::session
