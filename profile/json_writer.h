// Deterministic JSON text for profiles: keys in insertion order, two-space
// indent, arrays of scalars on one line (per-tile arrays stay readable).
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace popc::profile {

std::string toJsonText(const nlohmann::ordered_json &j);
// Writes toJsonText(j) to `path` atomically. Throws popc::Error.
void writeJsonFile(const std::string &path, const nlohmann::ordered_json &j);
// Reads and parses a profile; errors name the file. Throws popc::Error.
nlohmann::ordered_json readJsonFile(const std::string &path);

} // namespace popc::profile
