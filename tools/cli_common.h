// Shared command-line handling for the tools: CLI11 parsing with popc's
// conventions (help/version exit 0; any other parse error is one line
// "<tool>: error: ..." and exit 1).
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <optional>

namespace popc::tools {

// Parses argv; returns an exit code when the tool should stop now.
inline std::optional<int> parseCommandLine(CLI::App &app, int argc, char **argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    fmt::print(stderr, "{}: error: {} (see --help)\n", app.get_name(), e.what());
    return 1;
  }
  return std::nullopt;
}

} // namespace popc::tools
