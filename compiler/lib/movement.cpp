// Lowerings of data-movement ops: exchange copies only, no compute.
#include "compiler/lib/ops.h"

namespace popc::lib {

void registerMovementLowerings(LoweringTable &t) {}

} // namespace popc::lib
