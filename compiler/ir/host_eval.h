// A small host evaluator: computes an op's outputs from constant inputs at
// compile time. It covers what exported models compute on shapes and
// constants (Shape→Gather→Unsqueeze→Concat→Reshape chains, Range,
// ConstantOfShape, comparisons and Where on int tensors, weight transposes)
// and every data-movement op of index_map.h (byte copies, any dtype). Shape
// inference uses it through constantValue() so a shape-like input computed
// from shapes is known while the graph is built; the constant folding pass
// uses it to replace such subgraphs by Constant tensors.
#pragma once
#include "compiler/ir/ir.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace popc::ir {

// True if the evaluator knows the op type at all.
bool hostEvalSupports(const std::string &opType);
// True for ops whose outputs depend only on their inputs' shapes and dtypes
// (Shape, Size, EyeLike): they fold whatever their inputs are.
bool hostEvalNeedsOnlyInfo(const std::string &opType);

// Evaluates `op` of `graph`. inputs[i] is the i-th input tensor (nullptr for
// an omitted optional input) carrying Constant data (only info for the ops of
// hostEvalNeedsOnlyInfo); outputInfos[k] the inferred info of output k (any
// value for an unrequested "" output). Returns the raw data of every output,
// or nullopt when the op cannot be folded (e.g. an integer division by zero,
// left for run time).
using HostResult = std::optional<std::vector<std::vector<uint8_t>>>;
HostResult hostEvaluate(const Op &op, const Graph &graph, const std::vector<const Tensor *> &inputs,
                        const std::vector<TensorInfo> &outputInfos);
// Same, for an op outside any graph: a scratch graph holds copies of the inputs.
HostResult hostEvaluate(const Op &op, const std::vector<const Tensor *> &inputs,
                        const std::vector<TensorInfo> &outputInfos);

// Element conversions between raw little-endian data and double / int64, for
// every dtype (float16 through float).
std::vector<double> decodeDoubles(DType t, const std::vector<uint8_t> &data);
std::vector<int64_t> decodeInt64s(DType t, const std::vector<uint8_t> &data);
std::vector<uint8_t> encodeDoubles(DType t, const std::vector<double> &values);
std::vector<uint8_t> encodeInt64s(DType t, const std::vector<int64_t> &values);

} // namespace popc::ir
