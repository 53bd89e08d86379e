// One element of any popc::DType written from a host number: the conversion
// shared by the IR's constant folding (ir::encodeDoubles/encodeInt64s) and the
// runner's literal and filled inputs.
#pragma once
#include "support/dtype.h"

#include <cstdint>

namespace popc {

// Stores `v` at `p` as one element of `t`, converted as C++ converts (bool:
// v != 0; float16/bfloat16 round to nearest even). `p` has dtypeSize(t) bytes.
void storeElement(DType t, uint8_t *p, double v);
void storeElement(DType t, uint8_t *p, int64_t v);

} // namespace popc
