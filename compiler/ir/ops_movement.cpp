// Data-movement ops whose output elements are input elements at indices known at
// compile time (Slice, Pad, Tile, Expand, Split, Gather with constant indices, ...),
// and shape-only ops folded at compile time (Shape, ConstantOfShape, Range, ...).
#include "compiler/ir/op_helpers.h"
#include "compiler/ir/op_registry.h"

namespace popc::ir::detail {

void registerMovementOps(OpRegistry &reg) {}

} // namespace popc::ir::detail
