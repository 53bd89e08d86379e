// Internal helpers shared by the ops_*.cpp registration files.
#pragma once
#include "compiler/ir/op_registry.h"
#include "support/error.h"

#include <fmt/format.h>

#include <optional>
#include <string_view>

namespace popc::ir::detail {

// Throws popc::Error "<OpType> '<name>': <message>".
template <typename... Args>
[[noreturn]] void failOp(const Op &op, fmt::format_string<Args...> format, Args &&...args) {
  fail("{}: {}", describeOp(op), fmt::format(format, std::forward<Args>(args)...));
}

// Info of input i (must be present).
const TensorInfo &inputInfo(const Op &op, const Graph &graph, size_t i);
// Throws: input i of `op` must be known at compile time. When it is a graph
// input the error says how to freeze it and carries its name (Error::inputNeedingValue).
[[noreturn]] void failNotConstant(const Op &op, const Graph &graph, size_t i, const char *what);
// Integer values of constant input i; error when it is not known at compile time.
std::vector<int64_t> constantInputInts(const Op &op, const Graph &graph, size_t i, const char *what);

bool isFloat(DType t);
bool isInteger(DType t);
void requireFloat(const Op &op, const TensorInfo &info, const char *what);
void requireSameDType(const Op &op, const TensorInfo &a, const TensorInfo &b, const char *whatA,
                      const char *whatB);
void requireRank(const Op &op, const TensorInfo &info, size_t rank, const char *what);
std::string shortDType(DType t); // "f32"
int64_t onnxElementType(DType t); // TensorProto.DataType: Cast's `to` (F32 -> 1)
std::optional<DType> dtypeFromShort(std::string_view name); // "f32" -> F32 (the IR text's names)

// Registration, one function per ops_*.cpp file.
void registerElementwiseOps(OpRegistry &reg);
void registerMatMulOps(OpRegistry &reg);
void registerNnOps(OpRegistry &reg);
void registerShapeOps(OpRegistry &reg);
void registerMovementOps(OpRegistry &reg);
void registerReduceOps(OpRegistry &reg);
void registerIndexOps(OpRegistry &reg);
void registerRecurrentOps(OpRegistry &reg);
void registerQuantOps(OpRegistry &reg);

} // namespace popc::ir::detail
