#include "runtime/tensor_text.h"

#include "support/float16.h"

#include <fmt/format.h>

#include <cstring>

namespace popc::runtime {

namespace {

template <typename T> T load(const uint8_t *raw) {
  T v;
  std::memcpy(&v, raw, sizeof v);
  return v;
}

int64_t truncated(float f) { return f != f ? 1 : int64_t(f); }
int64_t truncated(double f) { return f != f ? 1 : int64_t(f); }

std::string formatElement(DType dtype, const uint8_t *raw) {
  switch (dtype) {
  case DType::F32: return fmt::format("{:g}", load<float>(raw));
  case DType::F64: return fmt::format("{:g}", load<double>(raw));
  case DType::F16: return fmt::format("0x{:04x}", load<uint16_t>(raw));
  case DType::Bool: return load<uint8_t>(raw) ? "true" : "false";
  case DType::U64: return fmt::format("{}", load<uint64_t>(raw));
  default: return fmt::format("{}", scalarAsInt(dtype, raw));
  }
}

struct Formatter {
  DType dtype;
  const Shape &shape;
  std::span<const uint8_t> bytes;
  size_t elementSize;
  std::string text;

  void dim(size_t d, size_t offset, int indent) {
    if (d == shape.size()) {
      text += formatElement(dtype, bytes.data() + offset * elementSize);
      return;
    }
    size_t inner = 1;
    for (size_t k = d + 1; k < shape.size(); ++k)
      inner *= size_t(shape[k]);
    const bool rows = d + 2 <= shape.size();
    text += rows ? "{\n" : "{";
    for (int64_t i = 0; i < shape[d]; ++i) {
      if (rows)
        text += std::string(size_t(indent + 1), ' ');
      dim(d + 1, offset + size_t(i) * inner, indent + 1);
      if (i + 1 < shape[d])
        text += ",";
      if (rows)
        text += "\n";
    }
    if (rows)
      text += std::string(size_t(indent), ' ');
    text += "}";
  }
};

} // namespace

int64_t scalarAsInt(DType dtype, const uint8_t *raw) {
  switch (dtype) {
  case DType::F32: return truncated(load<float>(raw));
  case DType::F64: return truncated(load<double>(raw));
  case DType::F16: return truncated(halfToFloat(load<uint16_t>(raw)));
  case DType::BF16: return truncated(bfloat16ToFloat(load<uint16_t>(raw)));
  case DType::I8: return load<int8_t>(raw);
  case DType::I16: return load<int16_t>(raw);
  case DType::I32: return load<int32_t>(raw);
  case DType::I64: return load<int64_t>(raw);
  case DType::U8: case DType::Bool: return load<uint8_t>(raw);
  case DType::U16: return load<uint16_t>(raw);
  case DType::U32: return load<uint32_t>(raw);
  case DType::U64: return int64_t(load<uint64_t>(raw));
  }
  return 0;
}

std::string formatTensor(DType dtype, const Shape &shape, std::span<const uint8_t> bytes) {
  // No elements: nothing to recurse over (a verified [2^38, 0] would loop 2^38 times).
  if (bytes.empty())
    return "{}";
  Formatter f{dtype, shape, bytes, dtypeSize(dtype), {}};
  f.dim(0, 0, 0);
  return std::move(f.text);
}

} // namespace popc::runtime
