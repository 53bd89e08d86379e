// Fuzz target: IR text through popc::ir::parseIr (popc-opt's reader). Any input
// must parse or throw popc::Error. What parses and verifies must print as text
// that parses back to the same text (the round trip docs/ir-text.md promises).
#include "compiler/ir/op_registry.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "fuzz/fuzz_util.h"
#include "support/error.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  try {
    popc::ir::Ir ir = popc::ir::parseIr(text, "fuzz.ir", uint64_t(1) << 26);
    popc::ir::inferGraph(ir.main);
    popc::ir::verifyGraph(ir.main);
    const std::string printed = popc::ir::printIr(ir);
    if (popc::ir::printIr(popc::ir::parseIr(printed, "printed.ir")) != printed)
      __builtin_trap();
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
