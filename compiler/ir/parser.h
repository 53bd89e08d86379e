// Reads the IR text that printIr writes (docs/ir-text.md) back into an Ir:
// parseIr(printIr(ir)) prints as the same bytes. popc-opt and the golden
// FileCheck tests (test/filecheck) are built on it.
#pragma once
#include "compiler/ir/ir.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace popc::ir {

// Parses `text`. Lines whose first non-blank characters are "//" or "#" are
// comments (RUN and CHECK lines of a golden test). The leading
// `ir "name" (opset N)` line may be left out. Constants printed without
// values (more than 8 elements) read as zeros. Throws popc::Error
// "<source>:<line>:<column>: <what>; <fix>" on the first error.
// Op semantics are not checked here: inferGraph/verifyGraph do that.
// `maxTensorBytes` bounds each declared constant, variable and attribute
// tensor (their bytes are allocated): larger ones are an error.
Ir parseIr(std::string_view text, const std::string &source, uint64_t maxTensorBytes = uint64_t(1) << 34);

} // namespace popc::ir
