// Logging: spdlog, one logger per module ("onnx", "passes", "lib", "runtime"...),
// configured once by the tools: level from --log-level or POPC_LOG_LEVEL, per
// module from POPC_LOG_CONFIG, destination from POPC_LOG_DEST (as PopART's
// POPART_LOG_LEVEL / POPART_LOG_CONFIG / POPART_LOG_DEST).
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
// Applies POPC_LOG_DEST, POPC_LOG_LEVEL and POPC_LOG_CONFIG (a JSON file of
// {"module": "LEVEL"} pairs) when set; POPC_LOG_LEVEL only if `useLevel`
// (a --log-level flag replaces it). Throws popc::Error naming the variable.
void configureFromEnvironment(bool useLevel = true);

} // namespace popc::log
