// The host evaluator lives in the IR (compiler/ir/host_eval.h) because shape
// inference needs it for shape subgraphs; the passes use it under these names.
#pragma once
#include "compiler/ir/host_eval.h"

namespace popc::passes {

using ir::decodeDoubles;
using ir::decodeInt64s;
using ir::encodeDoubles;
using ir::encodeInt64s;
using ir::hostEvalNeedsOnlyInfo;
using ir::hostEvalSupports;
using ir::hostEvaluate;

} // namespace popc::passes
