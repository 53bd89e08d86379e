// Logging: spdlog, one logger per module ("onnx", "passes", "lib", "runtime"...),
// configured once by the tools (tools/cli_common.h reads --log-level and
// POPC_LOG_LEVEL, POPC_LOG_CONFIG, POPC_LOG_DEST, as PopART's POPART_LOG_*;
// the library reads no environment).
#pragma once
#include <spdlog/spdlog.h>
#include <map>
#include <memory>
#include <string>

namespace popc::log {

// Returns the named module logger (created on first use, writes to the
// configured destination, stderr by default).
std::shared_ptr<spdlog::logger> get(const std::string &module);
// trace, debug, info, warn, err, critical or off (any case; "warning" and
// "error" too); throws popc::Error for other names. Modules with their own
// level (setModuleLevels) keep it.
void setLevel(const std::string &level);
// Per-module levels, overriding setLevel for those modules. Throws popc::Error.
void setModuleLevels(const std::map<std::string, std::string> &levels);
// "stdout", "stderr" or a file name (appended to). Throws popc::Error.
void setDestination(const std::string &dest);
// Per-module levels from a JSON file of {"module": "LEVEL"} pairs. Throws
// popc::Error naming the file.
void setModuleLevelsFromFile(const std::string &path);

} // namespace popc::log
