// Einsum equations: parsed once into one index list per operand and for the
// output, with "..." expanded to explicit indices by each operand's rank, so
// shape inference and the decomposition pass (compiler/passes) agree.
#pragma once
#include "compiler/ir/ir.h"

#include <map>
#include <string>
#include <vector>

namespace popc::ir {

struct EinsumSpec {
  std::vector<std::string> inputs; // one index character per axis of each operand
  std::string output;              // one index character per output axis
  std::map<char, int64_t> dims;    // size of every index (checked consistent)
};

// Parses op's "equation" against its input shapes. Implicit form (no "->"):
// the output is "..." then the indices that occur once, in alphabetical order.
// Throws popc::Error naming the op for malformed equations, rank or size
// mismatches (sizes must agree exactly: 1 does not broadcast).
EinsumSpec parseEinsum(const Op &op, const Graph &graph);

} // namespace popc::ir
