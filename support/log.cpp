#include "support/log.h"

#include "support/error.h"

#include <nlohmann/json.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>

namespace popc::log {

namespace {
std::mutex gMutex;
spdlog::level::level_enum gLevel = spdlog::level::warn;
std::map<std::string, spdlog::level::level_enum> gModuleLevels;
spdlog::sink_ptr gSink; // null until first use: stderr

spdlog::sink_ptr sinkLocked() {
  if (!gSink)
    gSink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  return gSink;
}

spdlog::level::level_enum levelFor(const std::string &module) {
  auto it = gModuleLevels.find(module);
  return it == gModuleLevels.end() ? gLevel : it->second;
}

spdlog::level::level_enum parseLevel(std::string level, const std::string &where) {
  std::transform(level.begin(), level.end(), level.begin(), [](unsigned char c) { return std::tolower(c); });
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off")
    fail("{}unknown log level '{}' (use trace, debug, info, warn, err, critical or off)", where, level);
  return parsed;
}
} // namespace

std::shared_ptr<spdlog::logger> get(const std::string &module) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (auto existing = spdlog::get(module))
    return existing;
  auto logger = std::make_shared<spdlog::logger>(module, sinkLocked());
  logger->set_pattern("[%n] %l: %v");
  logger->set_level(levelFor(module));
  spdlog::register_logger(logger);
  return logger;
}

void setLevel(const std::string &level) {
  auto parsed = parseLevel(level, "");
  std::lock_guard<std::mutex> lock(gMutex);
  gLevel = parsed;
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) { l->set_level(levelFor(l->name())); });
}

void setModuleLevels(const std::map<std::string, std::string> &levels) {
  std::map<std::string, spdlog::level::level_enum> parsed;
  for (const auto &[module, level] : levels)
    parsed[module] = parseLevel(level, "module '" + module + "': ");
  std::lock_guard<std::mutex> lock(gMutex);
  for (const auto &[module, level] : parsed)
    gModuleLevels[module] = level;
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) { l->set_level(levelFor(l->name())); });
}

void setDestination(const std::string &dest) {
  spdlog::sink_ptr sink;
  if (dest == "stderr") {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else if (dest == "stdout") {
    sink = std::make_shared<spdlog::sinks::stdout_sink_mt>();
  } else {
    try {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(dest, false);
    } catch (const spdlog::spdlog_ex &e) {
      fail("{}: cannot open the log file ({}): use stdout, stderr or a writable file name", dest, e.what());
    }
  }
  std::lock_guard<std::mutex> lock(gMutex);
  gSink = sink;
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) {
    l->sinks().clear();
    l->sinks().push_back(sink);
  });
}

void setModuleLevelsFromFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    fail("{}: cannot open: give a JSON file like {{\"runtime\": \"DEBUG\"}}", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception &e) {
    fail("{}: not valid JSON ({}): expected {{\"module\": \"LEVEL\", ...}}", path, e.what());
  }
  if (!j.is_object())
    fail("{}: expected a JSON object of module: level pairs, like {{\"runtime\": \"DEBUG\"}}", path);
  std::map<std::string, std::string> levels;
  for (const auto &[module, level] : j.items()) {
    if (!level.is_string())
      fail("{}: module '{}': the level must be a string (TRACE DEBUG INFO WARN ERR CRITICAL OFF)", path, module);
    levels[module] = level.get<std::string>();
  }
  try {
    setModuleLevels(levels);
  } catch (const Error &e) {
    fail("{}: {}", path, e.what());
  }
}

void configureFromEnvironment(const std::string &level) {
  // The errors for a file or destination begin with its name; a level's do not.
  auto fromEnv = [](const char *var, void (*apply)(const std::string &), const char *sep = " ") {
    const char *value = std::getenv(var);
    if (!value || !*value)
      return;
    try {
      apply(value);
    } catch (const Error &e) {
      fail("{}{}{}", var, sep, e.what());
    }
  };
  fromEnv("POPC_LOG_DEST", setDestination);
  if (level.empty())
    fromEnv("POPC_LOG_LEVEL", setLevel, ": ");
  fromEnv("POPC_LOG_CONFIG", setModuleLevelsFromFile);
  if (!level.empty())
    setLevel(level);
}

} // namespace popc::log
