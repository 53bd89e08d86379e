#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"

#include <cstring>

namespace popc::onnx::detail {

using ::onnx::TensorProto;

DType dtypeFromOnnx(int32_t elemType, const std::string &context) {
  switch (elemType) {
  case TensorProto::FLOAT: return DType::F32;
  case TensorProto::FLOAT16: return DType::F16;
  case TensorProto::DOUBLE: return DType::F64;
  case TensorProto::INT8: return DType::I8;
  case TensorProto::INT16: return DType::I16;
  case TensorProto::INT32: return DType::I32;
  case TensorProto::INT64: return DType::I64;
  case TensorProto::UINT8: return DType::U8;
  case TensorProto::UINT16: return DType::U16;
  case TensorProto::UINT32: return DType::U32;
  case TensorProto::UINT64: return DType::U64;
  case TensorProto::BOOL: return DType::Bool;
  case TensorProto::BFLOAT16: return DType::BF16;
  default: break;
  }
  const std::string name = TensorProto::DataType_IsValid(elemType)
                               ? TensorProto::DataType_Name(TensorProto::DataType(elemType))
                               : std::to_string(elemType);
  fail("{}: element type {} is not supported (supported: float, float16, double, int8, int16, "
       "int32, int64, uint8, uint16, uint32, uint64, bool, bfloat16)",
       context, name);
}

int32_t dtypeToOnnx(DType dtype) {
  switch (dtype) {
  case DType::F32: return TensorProto::FLOAT;
  case DType::F16: return TensorProto::FLOAT16;
  case DType::F64: return TensorProto::DOUBLE;
  case DType::I8: return TensorProto::INT8;
  case DType::I16: return TensorProto::INT16;
  case DType::I32: return TensorProto::INT32;
  case DType::I64: return TensorProto::INT64;
  case DType::U8: return TensorProto::UINT8;
  case DType::U16: return TensorProto::UINT16;
  case DType::U32: return TensorProto::UINT32;
  case DType::U64: return TensorProto::UINT64;
  case DType::Bool: return TensorProto::BOOL;
  case DType::BF16: return TensorProto::BFLOAT16;
  }
  return TensorProto::UNDEFINED;
}

namespace {
// Copies `values` (a repeated proto field) as `T` elements into `out`.
template <typename T, typename Field>
void copyTyped(const Field &values, int64_t n, std::vector<uint8_t> &out, const std::string &context,
               const char *fieldName) {
  if (int64_t(values.size()) != n)
    fail("{}: {} has {} values, expected {} for its shape", context, fieldName, values.size(), n);
  out.resize(size_t(n) * sizeof(T));
  for (int64_t i = 0; i < n; ++i) {
    T v = static_cast<T>(values[int(i)]);
    std::memcpy(out.data() + size_t(i) * sizeof(T), &v, sizeof(T));
  }
}
} // namespace

ir::Tensor tensorFromProto(const TensorProto &proto, const std::string &context) {
  ir::Tensor t;
  t.name = proto.name();
  t.kind = ir::TensorKind::Constant;
  t.info.dtype = dtypeFromOnnx(proto.data_type(), context);
  for (int64_t d : proto.dims()) {
    if (d < 0)
      fail("{}: negative dimension {} in dims", context, d);
    t.info.shape.push_back(d);
  }
  if (proto.has_segment())
    fail("{}: segmented tensors are not supported", context);
  if (proto.data_location() == TensorProto::EXTERNAL)
    fail("{}: external data was not loaded", context); // loadExternalData runs first
  const int64_t n = t.info.elements();
  if (proto.has_raw_data()) {
    const std::string &raw = proto.raw_data();
    if (raw.size() != t.info.bytes())
      fail("{}: raw_data has {} bytes, expected {} for {} {}", context, raw.size(), t.info.bytes(),
           dtypeName(t.info.dtype), shapeToString(t.info.shape));
    t.data.assign(raw.begin(), raw.end()); // ONNX raw_data is little-endian, like us
    return t;
  }
  switch (t.info.dtype) {
  case DType::F32: copyTyped<float>(proto.float_data(), n, t.data, context, "float_data"); break;
  case DType::F64: copyTyped<double>(proto.double_data(), n, t.data, context, "double_data"); break;
  case DType::I64: copyTyped<int64_t>(proto.int64_data(), n, t.data, context, "int64_data"); break;
  case DType::I32: copyTyped<int32_t>(proto.int32_data(), n, t.data, context, "int32_data"); break;
  case DType::I16: copyTyped<int16_t>(proto.int32_data(), n, t.data, context, "int32_data"); break;
  case DType::I8: copyTyped<int8_t>(proto.int32_data(), n, t.data, context, "int32_data"); break;
  case DType::U8: copyTyped<uint8_t>(proto.int32_data(), n, t.data, context, "int32_data"); break;
  case DType::U16: copyTyped<uint16_t>(proto.int32_data(), n, t.data, context, "int32_data"); break;
  case DType::U32: copyTyped<uint32_t>(proto.uint64_data(), n, t.data, context, "uint64_data"); break;
  case DType::U64: copyTyped<uint64_t>(proto.uint64_data(), n, t.data, context, "uint64_data"); break;
  case DType::Bool: copyTyped<uint8_t>(proto.int32_data(), n, t.data, context, "int32_data"); break;
  // float16 and bfloat16 values are stored as their bit patterns in int32_data.
  case DType::F16:
  case DType::BF16: copyTyped<uint16_t>(proto.int32_data(), n, t.data, context, "int32_data"); break;
  }
  return t;
}

std::string shapeProtoToString(const ::onnx::TensorShapeProto &shape) {
  std::string s = "[";
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto &d = shape.dim(i);
    s += i ? "," : "";
    if (d.has_dim_value())
      s += std::to_string(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty())
      s += d.dim_param();
    else
      s += "?";
  }
  return s + "]";
}

} // namespace popc::onnx::detail
