// Ops driven by run-time indices: Gather, Scatter, OneHot, TopK.
#include "compiler/ir/op_helpers.h"
#include "compiler/ir/op_registry.h"

namespace popc::ir::detail {

void registerIndexOps(OpRegistry &reg) {}

} // namespace popc::ir::detail
