// The model a training executable came from, for poprun-lite --save-model
// (PopART's modelToHost): popc-onnx --train stores the ONNX model in the popef
// without the bytes of its trainable initializers (the popef holds those as
// device variables); writeTrainedModel puts the trained values back and writes
// an ordinary ONNX file.
#pragma once
#include "support/dtype.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace popc::onnx {

// The model file at `path` (external data loaded in) with the data of the
// initializers `trainable` removed, serialized. Throws popc::Error naming the file.
std::vector<uint8_t> modelWithoutInitializerData(const std::string &path, const std::vector<std::string> &trainable);

// One trained tensor: little-endian row-major bytes, as the device holds them.
struct TrainedTensor {
  DType dtype = DType::F32;
  Shape shape;
  const std::vector<uint8_t> *data = nullptr;
};

// Parses `source` (from modelWithoutInitializerData), sets every initializer
// named in `values` to its value, and writes the model to `path`. Throws
// popc::Error when `source` is not a model, a value's type or shape differs
// from its initializer's, or an initializer stripped at compile time has no value.
void writeTrainedModel(const std::vector<uint8_t> &source, const std::map<std::string, TrainedTensor> &values,
                       const std::string &path);

} // namespace popc::onnx
