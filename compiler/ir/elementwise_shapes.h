// Elementwise operand shapes as the op's attributes and opset define them;
// shared by shape inference (ops_elementwise.cpp) and the lowering
// (compiler/lib/elementwise.cpp) so both broadcast the same way.
#pragma once
#include "compiler/ir/ir.h"

namespace popc::ir {

// The shape operand `i` takes part in numpy broadcasting with. Same number of
// elements as the tensor (only 1s are added), so it is a view of its bytes.
//  - Add/Sub/Mul/Div before opset 7 with broadcast=1: B's dims are aligned
//    with A's starting at `axis` (default: trailing) and padded with 1s.
//  - PRelu before opset 7: a 1-D slope of A's channel count is per channel
//    (axis 1), as PyTorch exports it; at later opsets too when numpy
//    broadcasting cannot apply (models upgraded by the ONNX version converter).
// Every other operand keeps its shape. Throws popc::Error (naming the op) when
// the legacy attributes do not fit the shapes.
Shape elementwiseOperandShape(const Op &op, const Graph &graph, size_t i);

} // namespace popc::ir
