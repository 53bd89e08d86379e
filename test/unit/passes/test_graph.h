// The passes tests build graphs with the IR tests' builders: one set of helpers
// (test/unit/ir/ir_test_util.h), or IR text through fromText.
#pragma once
#include "test/unit/ir/ir_test_util.h"

namespace popc::passes::test {
using namespace popc::ir::test;
} // namespace popc::passes::test
