// popc-report: render a profile directory (graph.json, execution.json) as one
// self-contained HTML page (no network needed to view it).
#include "profile/html_report.h"
#include "profile/json_writer.h"
#include "support/file_io.h"
#include "support/error.h"
#include "support/version.h"

#include "tools/cli_common.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <optional>

int main(int argc, char **argv) {
  using namespace popc;
  CLI::App app{"popc-report: render a profile directory as one self-contained HTML page.\n\n"
               "Example:\n  popc-onnx model.onnx -o model.popef --profile-dir prof\n"
               "  poprun-lite model.popef --inputs in.npz --profile-dir prof\n"
               "  popc-report prof -o report.html",
               "popc-report"};
  std::string dir, output;
  app.add_option("profile-dir", dir,
                 "Directory with graph.json (and execution.json, if the model was run), or either file in it")
      ->required();
  app.add_option("-o,--output", output, "HTML file to write (default: DIR/report.html)");
  app.set_version_flag("--version", compilerVersion());
  if (auto exitCode = popc::tools::parseCommandLine(app, argc, argv))
    return *exitCode;
  return popc::tools::runTool("popc-report", [&]() -> int {
    namespace fs = std::filesystem;
    // The profile's graph.json or execution.json names its directory too.
    if (fs::is_regular_file(dir) && fs::path(dir).extension() == ".json")
      dir = fs::path(dir).parent_path().empty() ? "." : fs::path(dir).parent_path().string();
    const fs::path graphPath = fs::path(dir) / "graph.json", execPath = fs::path(dir) / "execution.json";
    if (!fs::exists(graphPath))
      fail("{}: no graph.json: write one with popc-onnx --profile-dir {} (or poprun-lite --profile-dir)", dir, dir);
    const profile::Json graph = profile::readJsonFile(graphPath.string());
    for (const char *key : {"target", "graph", "computeSets", "exchanges", "programs", "memory"})
      if (!graph.contains(key))
        fail("{}: field '{}' is missing: not a popc graph profile; regenerate it with --profile-dir",
             graphPath.string(), key);
    std::optional<profile::Json> execution;
    if (fs::exists(execPath))
      execution = profile::readJsonFile(execPath.string());
    if (output.empty())
      output = (fs::path(dir) / "report.html").string();
    const std::string html = profile::htmlReport(graph, execution ? &*execution : nullptr,
                                                 "popc profile: " + fs::path(dir).filename().string());
    writeFileAtomically(output, html);
    return 0;
  });
}
