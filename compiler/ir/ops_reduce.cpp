// Reductions over axes: Reduce*, ArgMax/ArgMin, normalisations built on them.
#include "compiler/ir/op_helpers.h"
#include "compiler/ir/op_registry.h"

namespace popc::ir::detail {

void registerReduceOps(OpRegistry &reg) {}

} // namespace popc::ir::detail
