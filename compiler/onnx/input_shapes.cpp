#include "compiler/onnx/importer.h"
#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"

#include <fmt/ranges.h>
#include "support/log.h"

#include <charconv>
#include <set>

namespace popc::onnx {

std::map<std::string, Shape> parseInputShapes(const std::vector<std::string> &specs) {
  std::map<std::string, Shape> result;
  for (const auto &spec : specs) {
    const auto eq = spec.rfind('=');
    const char *expected = "expected name=d0,d1,... with positive integer dims, e.g. input=1,3,224,224";
    if (eq == std::string::npos || eq == 0)
      fail("--input-shape '{}': {}", spec, expected);
    const std::string name = spec.substr(0, eq);
    const std::string dims = spec.substr(eq + 1);
    Shape shape;
    size_t pos = 0;
    while (pos <= dims.size() && !dims.empty()) {
      size_t comma = dims.find(',', pos);
      if (comma == std::string::npos)
        comma = dims.size();
      const std::string item = dims.substr(pos, comma - pos);
      int64_t d = 0;
      auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
      if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || d <= 0)
        fail("--input-shape '{}': dimension '{}' is not a positive integer; {}", spec, item, expected);
      shape.push_back(d);
      pos = comma + 1;
    }
    if (shape.empty())
      fail("--input-shape '{}': no dimensions; {}", spec, expected);
    if (!result.emplace(name, shape).second)
      fail("--input-shape: input '{}' is given twice", name);
  }
  return result;
}

namespace detail {

std::vector<std::string> realInputNames(const ::onnx::GraphProto &graph) {
  std::set<std::string> initializers;
  for (const auto &t : graph.initializer())
    initializers.insert(t.name());
  std::vector<std::string> names;
  for (const auto &in : graph.input())
    if (!initializers.count(in.name()))
      names.push_back(in.name());
  return names;
}

void applyInputShapes(::onnx::GraphProto &graph, const std::map<std::string, Shape> &shapes,
                      const std::string &path) {
  const auto real = realInputNames(graph);
  for (const auto &[name, shape] : shapes) {
    ::onnx::ValueInfoProto *input = nullptr;
    for (auto &in : *graph.mutable_input())
      if (in.name() == name && std::find(real.begin(), real.end(), name) != real.end())
        input = &in;
    if (!input)
      fail("{}: --input-shape names unknown input '{}'; the model's inputs are: {}", path, name,
           fmt::join(real, ", "));
    auto *tensorType = input->mutable_type()->mutable_tensor_type();
    if (tensorType->has_shape() && tensorType->shape().dim_size() != int(shape.size()))
      fail("{}: --input-shape {}={}: input '{}' has rank {} {}, but {} dims were given", path, name,
           fmt::join(shape, ","), name, tensorType->shape().dim_size(),
           shapeProtoToString(tensorType->shape()), shape.size());
    auto *s = tensorType->mutable_shape();
    for (size_t i = 0; i < shape.size(); ++i) {
      if (int(i) < s->dim_size() && s->dim(int(i)).has_dim_value() &&
          s->dim(int(i)).dim_value() != shape[i])
        log::get("onnx")->warn("{}: --input-shape overrides fixed dim {} of input '{}' ({} -> {})",
                               path, i, name, s->dim(int(i)).dim_value(), shape[i]);
    }
    s->clear_dim();
    for (int64_t d : shape)
      s->add_dim()->set_dim_value(d);
  }
}

Shape staticInputShape(const ::onnx::ValueInfoProto &input, const std::string &path) {
  const std::string &name = input.name();
  if (!input.type().has_tensor_type())
    fail("{}: input '{}' is not a tensor (sequences, maps and optionals are not supported)", path,
         name);
  const auto &tt = input.type().tensor_type();
  if (!tt.has_shape())
    fail("{}: input '{}' has no shape; give one with --input-shape {}=d0,d1,...", path, name, name);
  Shape shape, suggestion;
  std::vector<std::string> dynamic;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto &d = tt.shape().dim(i);
    if (d.has_dim_value() && d.dim_value() >= 0) {
      shape.push_back(d.dim_value());
      suggestion.push_back(d.dim_value());
    } else {
      dynamic.push_back(d.has_dim_param() && !d.dim_param().empty()
                            ? fmt::format("{} ('{}')", i, d.dim_param())
                            : std::to_string(i));
      suggestion.push_back(1);
    }
  }
  if (!dynamic.empty())
    fail("{}: input '{}' {} has dynamic dimension{} {}; popc needs static shapes: fix {} with "
         "--input-shape {}={}",
         path, name, shapeProtoToString(tt.shape()), dynamic.size() > 1 ? "s" : "",
         fmt::join(dynamic, ", "), dynamic.size() > 1 ? "them" : "it", name,
         fmt::join(suggestion, ","));
  return shape;
}

} // namespace detail
} // namespace popc::onnx
