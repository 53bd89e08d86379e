// The JIT's object cache (runtime/object_cache.h) on the content-addressed
// store (kind "obj"): a warm start reads machine code, not bitcode; and the
// schedules of compressed popefs, decompressed (kind "sched").
#pragma once
#include "cache/store.h"

#include <memory>

namespace popc::session {

// Installs `store` as the runtime's JIT object cache and as the cache of
// compressed popefs' decompressed schedules (kind "sched") (null: none).
void useObjectCache(std::shared_ptr<cache::Store> store);

} // namespace popc::session
