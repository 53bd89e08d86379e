// The individual IR passes. Each rewrites the main graph of `ir` in place and
// returns how many rewrites it made (for logging). The pass manager re-infers
// and verifies the graph after each one, so a pass may leave tensor infos of
// downstream ops stale as long as the structure is valid.
#pragma once
#include "compiler/ir/ir.h"

#include <cstddef>

namespace popc::passes {

// Ops whose (non-optional) inputs are all Constant, plus Shape of any tensor
// (shapes are static), are evaluated by the host evaluator and replaced by
// Constant tensors.
size_t foldConstants(ir::Ir &ir);
// --train: every Dropout draws a random mask per micro-batch (dropout_training.cpp).
size_t trainDropouts(ir::Ir &ir);
// RNN/GRU/LSTM unrolled over time into MatMul and elementwise ops when training
// or too big for one tile (rnn_decompose.cpp).
size_t decomposeRecurrent(ir::Ir &ir);
// Q(Conv/MatMul(DQ(x), DQ(w))) as QLinearConv/QLinearMatMul, as ORT's QDQ
// transformer does (qdq_fusion.cpp).
size_t fuseQdq(ir::Ir &ir);
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// ConvInteger, QLinearMatMul, QLinearConv as integer products (int8 vertices) and
// exact float arithmetic (quantize_decompose.cpp).
size_t decomposeQuantized(ir::Ir &ir);
// ScatterND, MaxUnpool and GatherND with run-time indices as ScatterElements and
// Gather on a flat view (index_decompose.cpp).
size_t decomposeIndexOps(ir::Ir &ir);
// Det (Leibniz, up to 4x4) and DFT (cos/sin MatMuls) (linalg_decompose.cpp).
size_t decomposeLinalg(ir::Ir &ir);
// GridSample (nearest, bilinear, bicubic; zeros, border, reflection) as coordinate
// arithmetic and GatherElements (grid_sample_decompose.cpp).
size_t decomposeGridSample(ir::Ir &ir);
// RoiAlign as per-axis sample arithmetic and GatherElements of each roi's image
// (roi_align_decompose.cpp).
size_t decomposeRoiAlign(ir::Ir &ir);
// TfIdfVectorizer (integer pools) as Equal/And of shifted Slices, ReduceSum and a
// one-hot MatMul into the output columns (tfidf_decompose.cpp).
size_t decomposeTfIdf(ir::Ir &ir);
// A MaxPool whose strides and pads are multiples of its dilations as a strided
// Slice and an undilated MaxPool; a large multi-dimensional MaxPool as one pool
// per dimension (maxpool_rewrites.cpp).
size_t rewriteMaxPools(ir::Ir &ir);
// Conv over 1 or 3 spatial dims, ConvTranspose, and MaxPool/AveragePool over 1
// or 3 dims as 2-D Convs and pools, the tiled planners' (conv_canonicalize.cpp).
size_t canonicalizeWindowOps(ir::Ir &ir);
// Softmax/LogSoftmax and InstanceNormalization whose one row is more than a
// tile's share, as reductions and elementwise ops; GatherElements of such
// lines in chunks and index bands; TopK, ArgMax/ArgMin and CumSum in two
// stages; MaxPool with Indices and ScatterElements of large planes and lines
// (long_rows_decompose.cpp).
size_t decomposeLongRows(ir::Ir &ir);
// Float16 MatMul/Gemm/Conv/pooling/reductions/normalisations run in float32
// between casts: the IPU's float partials (float16_promotion.cpp).
size_t promoteFloat16(ir::Ir &ir);

// Pow(x, 2) with a constant exponent as Mul(x, x) (square_rewrite.cpp).
size_t rewriteSquares(ir::Ir &ir);

// Removes ops that do not change their data: Identity, inference Dropout,
// Reshape/Flatten/Squeeze/Unsqueeze to the same shape, identity Transpose.
// Graph output names are preserved.
size_t removeNoOps(ir::Ir &ir);

// Conv followed by BatchNormalization (or by a per-channel Mul and/or Add) with
// constant parameters becomes one Conv with rescaled weights and a new bias.
size_t foldConvBatchNorm(ir::Ir &ir);

// Inference BatchNormalization with constant parameters becomes Mul + Add by
// per-channel constants shaped [C,1,...,1].
size_t decomposeBatchNorm(ir::Ir &ir);

// Resize / Upsample with mode linear or cubic (float) becomes, per resized
// axis, Gather taps with constant indices times constant weights, summed.
size_t decomposeResize(ir::Ir &ir);
// Einsum -> Transpose/ReduceSum/Reshape/MatMul (einsum_decompose.cpp).
size_t decomposeEinsum(ir::Ir &ir);

// Removes ops not needed for the graph outputs and tensors nobody references.
size_t eliminateDeadCode(ir::Ir &ir);

// Training (training.cpp; each a no-op unless ir.training is set): the loss and
// the trainable initializers as variables; the backward pass; the optimizer's
// updates of the weights and their state.
size_t setUpTraining(ir::Ir &ir);
size_t buildBackward(ir::Ir &ir);
size_t buildOptimizer(ir::Ir &ir);

} // namespace popc::passes
