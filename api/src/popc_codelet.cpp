// popc-codelet: precompiles a codelet file to a .gp (bitcode with the vertex
// class descriptions) that graph.addCodelets loads without a compiler:
//   popc-codelet tut3_codelets.cpp -o tut3_codelets.gp
#include "codelets.h"

#include "formats/popef/popef.h"
#include "support/error.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

int main(int argc, char **argv) {
  CLI::App app{"popc-codelet: compile a graph API codelet file (C++ vertex classes) to a .gp bitcode file"};
  std::string input, output, flags;
  app.add_option("input", input, "codelet source (.cpp)")->required();
  app.add_option("-o,--output", output, "output file (default: input with .gp)");
  app.add_option("--flags", flags, "extra clang flags, space-separated (e.g. \"-DN=4 -Iinc\")");
  CLI11_PARSE(app, argc, argv);
  if (output.empty())
    output = input.substr(0, input.rfind('.')) + ".gp";
  try {
    const std::vector<uint8_t> bc = popc::api::detail::compileCodeletFile(input, flags);
    popc::popef::writeFile(output, bc);
  } catch (const popc::Error &e) {
    fmt::print(stderr, "popc-codelet: {}\n", e.what());
    return 1;
  }
  return 0;
}
