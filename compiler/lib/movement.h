// Data-movement lowerings shared with other lowering files.
#pragma once
#include "compiler/lib/lowering.h"

namespace popc::lib {

// Lowers a data-movement op (ir::isMovementOp: Slice, Pad, Gather, ...) as
// exchange copies into linearly mapped outputs (no vertices), following its
// ir::IndexMap. Returns false and emits nothing when an index input (Gather
// indices, ReverseSequence lengths, ...) is only known at run time, so a
// run-time lowering can take over: the Gather family's run-time path calls
// this first and handles the false case.
bool lowerIndexMap(const ir::Op &op, const ir::Graph &g, Lowering &L);

} // namespace popc::lib
