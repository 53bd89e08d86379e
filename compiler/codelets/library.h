// The built-in codelet library as LLVM bitcode (see README.md).
#pragma once
#include <cstdint>
#include <span>

namespace popc::codelets {

// One bitcode module defining every popc_* codelet function.
std::span<const uint8_t> libraryBitcode();

} // namespace popc::codelets
