// popc-opt: read IR text (what popc-onnx --dump-ir writes), run named passes,
// print the result. The driver of the golden tests in test/filecheck, as
// mlir-opt and iree-opt are for theirs.
#include "compiler/codegen/kernels.h"
#include "compiler/graph/printer.h"
#include "compiler/graph/target.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/text_syntax.h"
#include "compiler/lib/lowering.h"
#include "compiler/passes/pass_manager.h"
#include "support/error.h"
#include "support/file_io.h"
#include "support/version.h"

#include "tools/cli_common.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using namespace popc;

constexpr std::string_view kSplitMarker = "// -----";

// The pieces of `text` between lines that are exactly "// -----". Each piece
// keeps the text before it as blank lines, so errors name the file's own lines.
std::vector<std::string> splitInput(const std::string &text) {
  std::vector<std::string> pieces;
  std::string current;
  size_t linesBefore = 0, linesInCurrent = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const size_t next = end == std::string::npos ? text.size() : end + 1;
    std::string_view line(text.data() + start, (end == std::string::npos ? text.size() : end) - start);
    if (line == kSplitMarker) {
      pieces.push_back(std::string(linesBefore, '\n') + current);
      linesBefore += linesInCurrent + 1;
      current.clear();
      linesInCurrent = 0;
    } else {
      current.append(text, start, next - start);
      ++linesInCurrent;
    }
    start = next;
  }
  pieces.push_back(std::string(linesBefore, '\n') + current);
  return pieces;
}

// "<source>:<line>:<column>" of the op an op error names ("<Type> '<name>':
// ..."), found by its `[name=` field in the text; just <source> otherwise.
std::string opLocation(const std::string &text, const std::string &source, const std::string &error) {
  const size_t open = error.find('\''), close = open == std::string::npos ? open : error.find('\'', open + 1);
  if (close == std::string::npos)
    return source;
  const std::string field = "[name=" + ir::text::name(error.substr(open + 1, close - open - 1));
  for (size_t at = text.find(field); at != std::string::npos; at = text.find(field, at + 1)) {
    const char next = at + field.size() < text.size() ? text[at + field.size()] : '\0';
    if (next != ',' && next != ']')
      continue;
    const size_t lineStart = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
    const size_t line = size_t(std::count(text.begin(), text.begin() + std::ptrdiff_t(lineStart), '\n')) + 1;
    const size_t first = text.find_first_not_of(" \t", lineStart);
    return fmt::format("{}:{}:{}", source, line, first - lineStart + 1);
  }
  return source;
}

// --lower: the target the lowering plans for.
struct LowerTarget {
  bool lower = false;
  std::string arch = "ipu2";
  uint32_t tilesPerIpu = 0; // 0: the arch's
};

// The main graph lowered onto `lt`'s target, as graph::printDeviceGraph text.
std::string lowered(const ir::Ir &ir, const LowerTarget &lt) {
  graph::Target target = graph::Target::forArch(lt.arch);
  if (lt.tilesPerIpu) {
    if (lt.tilesPerIpu > target.tilesPerIpu)
      fail("--tiles-per-ipu {}: {} has {} tiles per IPU", lt.tilesPerIpu, lt.arch, target.tilesPerIpu);
    target.tilesPerIpu = lt.tilesPerIpu;
  }
  for (const auto &op : ir.main.ops())
    if (!lib::findLowering(op->type))
      fail("op '{}' ({}) has no lowering: run the passes that decompose it first (popc-onnx runs the whole "
           "pipeline; popc-opt --list-passes)",
           op->name, op->type);
  graph::DeviceGraph dg(target);
  codegen::VertexCodegen codegen;
  lib::lowerIr(ir, dg, codegen);
  std::vector<std::string> names;
  for (const auto &t : codegen.vertexTypes())
    names.push_back(t.name);
  return graph::printDeviceGraph(dg, names);
}

// Parses, verifies, runs `passNames` in order and prints one piece.
std::string process(const std::string &text, const std::string &source, const std::vector<std::string> &passNames,
                    const LowerTarget &lt) {
  ir::Ir ir = ir::parseIr(text, source);
  try {
    ir::inferGraph(ir.main);
    ir::verifyGraph(ir.main);
  } catch (const Error &e) {
    fail("{}: the IR does not verify: {}", opLocation(text, source, e.what()), e.what());
  }
  passes::PassManager pm;
  for (const std::string &name : passNames) {
    const passes::PipelineStep *step = passes::findPass(name);
    if (!step)
      fail("--pass {}: no such pass; valid names are {}", name,
           fmt::join(passes::makeDefaultPipeline({}, true).passNames(), ", "));
    pm.addPass(name, step->fn);
  }
  if (!passNames.empty())
    pm.run(ir);
  return lt.lower ? lowered(ir, lt) : ir::printIr(ir);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"popc-opt: run popc IR passes on IR text and print the result.\n\n"
               "The text is what `popc-onnx --dump-ir DIR` writes (docs/ir-text.md); lines that start\n"
               "with // or # are comments. Golden tests (test/filecheck) pipe the output to FileCheck.\n\n"
               "Examples:\n"
               "  popc-onnx model.onnx -o m.popef --dump-ir dump      # dump/00_FWD0.ir.txt, ...\n"
               "  popc-opt dump/00_FWD0.ir.txt --pass constant-folding,noop-removal\n"
               "  popc-opt cases.ir --split-input-file --pass conv-bn-fold | FileCheck-19 cases.ir\n"
               "  popc-opt matmul.ir --lower --tiles-per-ipu 16       # the device graph, as text\n"
               "  popc-opt --list-passes",
               "popc-opt"};
  std::string input = "-", output;
  std::vector<std::string> passNames;
  bool split = false;
  LowerTarget lt;
  app.add_option("input", input, "IR text to read ('-' or nothing: standard input)");
  app.add_option("--pass", passNames,
                 "Passes to run, in order (comma-separated or repeated): names from --list-passes; none: parse, "
                 "verify and print")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("-o,--output", output, "Write the result here instead of standard output");
  app.add_flag("--split-input-file", split,
               "Treat each part between lines '// -----' as its own IR: each is processed and printed on its own "
               "(parts joined by '// -----'); an error in one part is reported and the others still run");
  app.add_flag("--lower", lt.lower,
               "After the passes, lower the main graph onto the target and print the device graph (tensors and "
               "their tiles, compute sets and their vertices, exchanges, programs) instead of the IR");
  app.add_option("--arch", lt.arch, "With --lower: ipu1 or ipu2 (default)")->check(CLI::IsMember({"ipu1", "ipu2"}));
  app.add_option("--tiles-per-ipu", lt.tilesPerIpu, "With --lower: use only this many tiles (default: all)")
      ->check(CLI::PositiveNumber);
  app.add_flag_callback(
      "--list-passes",
      [] {
        for (const std::string &name : passes::makeDefaultPipeline({}, true).passNames())
          fmt::print("{}\n", name);
        throw CLI::Success();
      },
      "Print the pass names --pass accepts and exit");
  app.set_version_flag("--version", compilerVersion());
  if (auto exitCode = popc::tools::parseCommandLine(app, argc, argv))
    return *exitCode;
  return popc::tools::runTool("popc-opt", [&]() -> int {
    std::string text;
    if (input == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      text = std::string(readWholeFile(input).view());
    }
    const std::string source = input == "-" ? "<stdin>" : input;
    std::string result;
    int status = 0;
    if (split) {
      const std::vector<std::string> pieces = splitInput(text);
      for (size_t i = 0; i < pieces.size(); ++i) {
        if (i)
          result += std::string(kSplitMarker) + "\n";
        try {
          result += process(pieces[i], source, passNames, lt);
        } catch (const Error &e) {
          fmt::print(stderr, "popc-opt: error: {}\n", e.what());
          status = 1;
        }
      }
    } else {
      result = process(text, source, passNames, lt);
    }
    if (output.empty())
      fmt::print("{}", result);
    else
      writeFileAtomically(output, result);
    return status;
  });
}
