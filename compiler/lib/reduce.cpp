// Lowerings of reductions (Reduce*, ArgMax/ArgMin).
#include "compiler/lib/ops.h"

namespace popc::lib {

void registerReduceLowerings(LoweringTable &t) {}

} // namespace popc::lib
