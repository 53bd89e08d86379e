#include "support/dtype.h"

#include "support/error.h"

namespace popc {

namespace {
struct DTypeInfo {
  DType type;
  size_t size;
  std::string_view name;
};
constexpr DTypeInfo kTypes[] = {
    {DType::F32, 4, "float32"}, {DType::F16, 2, "float16"}, {DType::F64, 8, "float64"},
    {DType::I8, 1, "int8"},     {DType::I16, 2, "int16"},   {DType::I32, 4, "int32"},
    {DType::I64, 8, "int64"},   {DType::U8, 1, "uint8"},    {DType::Bool, 1, "bool"},
    {DType::U16, 2, "uint16"},  {DType::U32, 4, "uint32"},  {DType::U64, 8, "uint64"},
    {DType::BF16, 2, "bfloat16"},
};
const DTypeInfo &info(DType t) {
  for (const auto &i : kTypes)
    if (i.type == t)
      return i;
  fail("invalid dtype code {}", static_cast<int>(t));
}
} // namespace

size_t dtypeSize(DType t) { return info(t).size; }
std::string_view dtypeName(DType t) { return info(t).name; }

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const auto &i : kTypes)
    if (i.name == name)
      return i.type;
  return std::nullopt;
}

bool isFloatingPoint(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::F64 || t == DType::BF16;
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeToString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace popc
