// Recurrent ops (LSTM, GRU, RNN) and control flow (If, Loop).
#include "compiler/ir/op_helpers.h"
#include "compiler/ir/op_registry.h"

namespace popc::ir::detail {

void registerRecurrentOps(OpRegistry &reg) {}

} // namespace popc::ir::detail
