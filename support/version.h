#pragma once
#include <string>
namespace popc {
// The compiler version written into every popef; part of every cache key.
const std::string &compilerVersion();
} // namespace popc
