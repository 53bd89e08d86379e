#include "compiler/onnx/trained_model.h"

#include "support/error.h"
#include "support/file_io.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <set>
#include <string_view>

namespace popc::onnx {

namespace {
// ONNX TensorProto::DataType of a popc dtype (the values of onnx.proto).
int32_t onnxElemType(DType t) {
  switch (t) {
  case DType::F32: return ::onnx::TensorProto::FLOAT;
  case DType::F16: return ::onnx::TensorProto::FLOAT16;
  case DType::BF16: return ::onnx::TensorProto::BFLOAT16;
  case DType::F64: return ::onnx::TensorProto::DOUBLE;
  default: return -1; // only float tensors are trained
  }
}
} // namespace

void writeTrainedModel(const std::vector<uint8_t> &source, const std::map<std::string, TrainedTensor> &values,
                       const std::string &path) {
  ::onnx::ModelProto model;
  if (source.empty() || !model.ParseFromArray(source.data(), int(source.size())) || !model.has_graph())
    fail("{}: the executable's source model does not parse (a training executable from popc-onnx --train carries "
         "it; recompile)",
         path);
  std::set<std::string> written;
  for (auto &init : *model.mutable_graph()->mutable_initializer()) {
    auto it = values.find(init.name());
    if (it == values.end())
      continue;
    const TrainedTensor &v = it->second;
    Shape dims(init.dims().begin(), init.dims().end());
    if (onnxElemType(v.dtype) != init.data_type() || dims != v.shape)
      fail("{}: trained '{}' is {} {} but the model's initializer is {}", path, init.name(), dtypeName(v.dtype),
           shapeToString(v.shape), shapeToString(dims));
    init.set_raw_data(v.data->data(), v.data->size());
    written.insert(init.name());
  }
  for (const auto &init : model.graph().initializer())
    if (!written.count(init.name()) && !init.has_raw_data() && init.float_data_size() == 0 &&
        init.double_data_size() == 0 && init.int32_data_size() == 0 && init.int64_data_size() == 0 &&
        init.string_data_size() == 0 && init.uint64_data_size() == 0 && numElements(Shape(init.dims().begin(), init.dims().end())) > 0)
      fail("{}: initializer '{}' was trained but the executable has no value for it", path, init.name());
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    fail("{}: cannot serialize the trained model (over 2 GiB?)", path);
  writeFileAtomically(path, std::string_view(bytes));
}

} // namespace popc::onnx
