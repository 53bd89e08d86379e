// Logging: spdlog, one logger per module ("onnx", "passes", "lib", "runtime"...),
// configured once by the front ends: the tools (tools/cli_common.h: --log-level)
// and the session API, both through configureFromEnvironment (POPC_LOG_LEVEL,
// POPC_LOG_CONFIG, POPC_LOG_DEST, as PopART's POPART_LOG_*). Nothing else
// reads the environment.
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
// POPC_LOG_DEST, POPC_LOG_LEVEL (unless `level` is given: it wins) and
// POPC_LOG_CONFIG (its modules keep their own levels). Default: warn, to
// stderr. Throws popc::Error naming the variable.
void configureFromEnvironment(const std::string &level = {});

} // namespace popc::log
