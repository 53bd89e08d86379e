// Logging: spdlog, one logger per module ("onnx", "passes", "lib", "runtime"...),
// level set once by the tools from --log-level or POPC_LOG_LEVEL.
#pragma once
#include <spdlog/spdlog.h>
#include <memory>
#include <string>

namespace popc::log {

// Returns the named module logger (created on first use, writes to stderr).
std::shared_ptr<spdlog::logger> get(const std::string &module);
// "trace|debug|info|warn|err|off"; throws popc::Error for other names.
void setLevel(const std::string &level);

} // namespace popc::log
