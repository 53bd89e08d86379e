#include "support/log.h"

#include "support/error.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <mutex>

namespace popc::log {

namespace {
std::mutex gMutex;
spdlog::level::level_enum gLevel = spdlog::level::warn;
} // namespace

std::shared_ptr<spdlog::logger> get(const std::string &module) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (auto existing = spdlog::get(module))
    return existing;
  auto logger = spdlog::stderr_logger_mt(module);
  logger->set_pattern("[%n] %l: %v");
  logger->set_level(gLevel);
  return logger;
}

void setLevel(const std::string &level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off")
    fail("unknown log level '{}' (use trace, debug, info, warn, err or off)", level);
  std::lock_guard<std::mutex> lock(gMutex);
  gLevel = parsed;
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) { l->set_level(parsed); });
}

} // namespace popc::log
