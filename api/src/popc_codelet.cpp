// popc-codelet: precompiles a codelet file to a .gp (bitcode with the vertex
// class descriptions) that graph.addCodelets loads without a compiler:
//   popc-codelet tut3_codelets.cpp -o tut3_codelets.gp
// Command-line conventions as every popc tool (docs/cli.md): --help/--version
// exit 0, a usage or input error is one line "popc-codelet: error: ..." and exit 1.
#include "codelets.h"

#include "formats/popef/popef.h"
#include "support/error.h"
#include "support/version.h"
#include "tools/cli_common.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

int main(int argc, char **argv) {
  CLI::App app{"popc-codelet: compile a graph API codelet file (C++ vertex classes) to a .gp bitcode file\n\n"
               "  popc-codelet codelets.cpp -o codelets.gp\n"
               "  popc-codelet codelets.cpp --flags \"-DN=4 -Iinclude\"",
               "popc-codelet"};
  std::string input, output, flags;
  app.add_option("input", input, "codelet source (.cpp)")->required();
  app.add_option("-o,--output", output, "output file (default: input with .gp)");
  app.add_option("--flags", flags, "extra clang flags, space-separated (e.g. \"-DN=4 -Iinc\")");
  app.set_version_flag("--version", popc::compilerVersion());
  if (auto exitCode = popc::tools::parseCommandLine(app, argc, argv))
    return *exitCode;
  if (output.empty())
    output = input.substr(0, input.rfind('.')) + ".gp";
  return popc::tools::runTool("popc-codelet", [&] {
    const std::vector<uint8_t> bc = popc::api::detail::compileCodeletFile(input, flags);
    popc::popef::writeFile(output, bc);
    return 0;
  });
}
