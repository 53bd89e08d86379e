// Sizes for --cache-max-size / --max-size: "5G", "500M", "64K", "1048576"
// (binary units: K = 1024; an optional "i"/"B" suffix is accepted, "5GiB").
#pragma once
#include <cstdint>
#include <string>

namespace popc::cache {
// Throws popc::Error naming `what` for anything else.
uint64_t parseSize(const std::string &text, const std::string &what);
std::string formatSize(uint64_t bytes); // "1.5 GiB", "312 KiB", "12 B"
} // namespace popc::cache
