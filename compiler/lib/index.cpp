// Lowerings of ops driven by run-time indices (Gather, Scatter, OneHot, TopK).
#include "compiler/lib/ops.h"

namespace popc::lib {

void registerIndexLowerings(LoweringTable &t) {}

} // namespace popc::lib
