#pragma once
#include <string>
namespace popc {
// The compiler version written into every popef; part of every cache key.
const std::string &compilerVersion();

// Identifies the exact code of this process, for cache keys: the GNU build-id
// notes (a linker hash of the linked output) of the executable and of the
// shared libraries whose code decides what popc produces (LLVM, ONNX,
// protobuf), as "exe:<hex> libLLVM.so.19.1:<hex> ...". Any rebuild that
// changes the compiler's code changes the executable's build-id, so stale
// cache entries are never hit after a compiler change; an unchanged binary
// copied to another machine keeps it, so CI fleets share entries. Where an
// object has no build-id note, the XXH3-64 of its file's bytes stands in.
// Computed once per process (reading notes from memory costs microseconds).
const std::string &buildId();
} // namespace popc
