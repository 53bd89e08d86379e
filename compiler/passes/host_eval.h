// A small host evaluator for constant folding: computes an op's outputs from
// constant inputs at compile time. It covers the cheap ops that appear in
// exported models' constant subgraphs (shape arithmetic, weight preprocessing),
// not every ONNX op. Output shapes/dtypes come from the IR's inference, so the
// evaluator only has to produce the data.
#pragma once
#include "compiler/ir/ir.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace popc::passes {

// True if the evaluator knows the op type at all.
bool hostEvalSupports(const std::string &opType);

// Evaluates `op`. inputs[i] is the i-th input tensor (nullptr for an omitted
// optional input); for Shape only the input's info is read, otherwise inputs
// carry Constant data. outputInfos are the inferred output infos. Returns the
// raw data of each output, or nullopt when the op cannot be folded (e.g. an
// unsupported dtype or an integer division by zero, left for run time).
std::optional<std::vector<std::vector<uint8_t>>>
hostEvaluate(const ir::Op &op, const std::vector<const ir::Tensor *> &inputs,
             const std::vector<ir::TensorInfo> &outputInfos);

// Element conversions between raw little-endian data and double / int64.
// Supported dtypes: F32 F64 I8 I16 I32 I64 U8 Bool (not F16).
bool hostDTypeSupported(DType t);
std::vector<double> decodeDoubles(DType t, const std::vector<uint8_t> &data);
std::vector<int64_t> decodeInt64s(DType t, const std::vector<uint8_t> &data);
std::vector<uint8_t> encodeDoubles(DType t, const std::vector<double> &values);
std::vector<uint8_t> encodeInt64s(DType t, const std::vector<int64_t> &values);

} // namespace popc::passes
