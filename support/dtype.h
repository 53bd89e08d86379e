// Element types shared by the IR, the popef format, the runtime and npz files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace popc {

// The numeric values are part of the popef format (formats/popef/popef.fbs).
enum class DType : uint8_t {
  F32 = 0,
  F16 = 1,
  F64 = 2,
  I8 = 3,
  I16 = 4,
  I32 = 5,
  I64 = 6,
  U8 = 7,
  Bool = 8,
  U16 = 9,
  U32 = 10,
  U64 = 11,
  BF16 = 12,
};

size_t dtypeSize(DType t);
std::string_view dtypeName(DType t); // "float32", "int64", ...
std::optional<DType> dtypeFromName(std::string_view name);
bool isFloatingPoint(DType t); // float16, bfloat16, float32, float64

using Shape = std::vector<int64_t>;
int64_t numElements(const Shape &shape);
std::string shapeToString(const Shape &shape); // "[1,3,224,224]"

} // namespace popc
