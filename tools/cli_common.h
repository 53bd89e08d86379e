// Shared command-line handling for the tools: CLI11 parsing with popc's
// conventions (help/version exit 0; any other parse error is one line
// "<tool>: error: ..." and exit 1).
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "support/allocator.h"
#include "support/error.h"
#include "support/log.h"

#include <cstdlib>
#include <unistd.h>
#include <functional>
#include <optional>
#include <string>

namespace popc::tools {

// For a tool with subcommands: the first positional word of argv when it names
// no subcommand ("popc-cache frob"); CLI11 would only say one is required.
inline std::optional<std::string> unknownSubcommand(CLI::App &app, int argc, char **argv) {
  const auto subcommands = app.get_subcommands([](CLI::App *) { return true; });
  if (subcommands.empty())
    return std::nullopt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--")
      return std::nullopt;
    if (arg.starts_with("-")) {
      // An option that takes a value consumes the next word (unless given as --opt=value).
      const CLI::Option *opt = arg.find('=') == std::string::npos ? app.get_option_no_throw(arg) : nullptr;
      for (CLI::App *scope : subcommands)
        if (!opt && arg.find('=') == std::string::npos)
          opt = scope->get_option_no_throw(arg);
      if (opt && opt->get_type_size_min() > 0)
        ++i;
      continue;
    }
    for (const CLI::App *sub : subcommands)
      if (sub->check_name(arg))
        return std::nullopt;
    return arg;
  }
  return std::nullopt;
}

// Parses argv; returns an exit code when the tool should stop now.
inline std::optional<int> parseCommandLine(CLI::App &app, int argc, char **argv) {
  if (auto word = unknownSubcommand(app, argc, argv)) {
    std::string names;
    for (const CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; }))
      names += (names.empty() ? "" : ", ") + sub->get_name();
    fmt::print(stderr, "{}: error: unknown subcommand '{}'; expected one of: {} (see --help)\n", app.get_name(),
               *word, names);
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &e) {
    // --help, --help-all, --version (CLI11 derives them from Success; exit()
    // prints each) and flags that did their job and end the tool (--list-passes).
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    fmt::print(stderr, "{}: error: {} (see --help)\n", app.get_name(), e.what());
    return 1;
  }
  return std::nullopt;
}

// Thrown once a tool has printed its one-line error itself (an MPI rank,
// which prints before waiting for the other ranks to print theirs): exit 1.
struct ErrorAlreadyReported {};

// Runs a tool's body with popc's exit codes: 0 success, 1 a user error (bad
// input; one line "<tool>: error: ..."), 2 an internal error (a popc bug).
inline int runTool(const std::string &tool, const std::function<int()> &body) {
  tuneAllocatorForLargeHeaps();
  try {
    return body();
  } catch (const ErrorAlreadyReported &) {
    return 1;
  } catch (const Error &e) {
    fmt::print(stderr, "{}: error: {}\n", tool, e.what());
    return 1;
  } catch (const std::exception &e) {
    fmt::print(stderr, "{}: internal error: {}\n", tool, e.what());
    return 2;
  }
}

// Logging from POPC_LOG_DEST, POPC_LOG_LEVEL and POPC_LOG_CONFIG, then
// --log-level (which wins over POPC_LOG_LEVEL; POPC_LOG_CONFIG's modules keep
// their own levels). Default: warn, to stderr. Errors name the variable.
inline void applyLogLevel(const std::string &level) { log::configureFromEnvironment(level); }

// Colour as the Poplar guide specifies: CLICOLOR_FORCE=1 always; else
// CLICOLOR=0 never; else only when `fd` is a terminal.
inline bool coloursFor(int fd) {
  if (const char *force = std::getenv("CLICOLOR_FORCE"); force && std::string(force) == "1")
    return true;
  if (const char *c = std::getenv("CLICOLOR"); c && std::string(c) == "0")
    return false;
  return ::isatty(fd);
}

} // namespace popc::tools
