// Lowerings of recurrent ops and control flow.
#include "compiler/lib/ops.h"

namespace popc::lib {

void registerRecurrentLowerings(LoweringTable &t) {}

} // namespace popc::lib
