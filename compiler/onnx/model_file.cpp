#include "compiler/onnx/onnx_internal.h"
#include "compiler/onnx/trained_model.h"

#include "support/error.h"
#include "support/file_io.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <climits>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace popc::onnx::detail {

namespace {

// Why `bytes` is not a well-formed protobuf message, from a walk over its
// top-level fields (wire format only): "truncated ..." when a field runs past
// the end of the file, "not a protobuf ..." when a field key or wire type is
// invalid; empty when the fields are well-formed.
std::string protobufDamage(std::string_view bytes) {
  const size_t n = bytes.size();
  size_t pos = 0;
  auto varint = [&](uint64_t &v) {
    v = 0;
    for (int shift = 0; shift < 64 && pos < n; shift += 7) {
      const auto b = uint8_t(bytes[pos++]);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return true;
    }
    return false;
  };
  auto truncated = [&](size_t start, uint64_t field, uint64_t end) {
    return fmt::format("truncated: the file ends at byte {} but field {} at byte {} runs to byte {}", n, field,
                       start, end);
  };
  while (pos < n) {
    const size_t start = pos;
    uint64_t key = 0, value = 0;
    if (!varint(key))
      return pos >= n ? fmt::format("truncated: the file ends at byte {} inside a field key", n)
                      : fmt::format("not a protobuf (bad field key at byte {})", start);
    const uint64_t field = key >> 3, wire = key & 7;
    if (field == 0 || wire == 3 || wire == 4 || wire > 5)
      return fmt::format("not a protobuf (invalid field key 0x{:x} at byte {})", key, start);
    if (wire == 0 && !varint(value))
      return truncated(start, field, n + 1);
    const uint64_t size = wire == 1 ? 8 : wire == 5 ? 4 : 0;
    if (wire == 2 && !varint(value))
      return truncated(start, field, n + 1);
    const uint64_t end = uint64_t(pos) + (wire == 2 ? value : size);
    if (end > n)
      return truncated(start, field, end);
    pos = size_t(end);
  }
  return {};
}

} // namespace

::onnx::ModelProto readModel(const std::string &path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail("{}: is a directory, not an ONNX model file; fix: give the .onnx file in it (e.g. {})", path,
         (fs::path(path) / "model.onnx").string());
  // One read into a buffer of the file's size, parsed in place: a stream
  // (and its string) would copy a model of hundreds of MB twice more.
  const FileBytes file =
      readWholeFile(path, INT_MAX,
                    "over protobuf's 2 GiB limit for one message; fix: save the weights as ONNX external data "
                    "(onnx.save_model(..., save_as_external_data=True))");
  const std::string_view bytes = file.view();
  if (bytes.empty())
    fail("{}: not an ONNX model (the file is empty)", path);
  ::onnx::ModelProto model;
  // A few stray bytes can parse as an empty message, so also require a graph.
  if (!model.ParseFromArray(bytes.data(), int(bytes.size())) || !model.has_graph() || model.ir_version() <= 0) {
    const std::string damage = protobufDamage(bytes);
    if (damage.starts_with("truncated"))
      fail("{}: ONNX model {}; fix: copy or export the file again", path, damage);
    fail("{}: not an ONNX model ({})", path,
         damage.empty() ? "a protobuf, but it does not parse as a ModelProto with a graph, or nests deeper than "
                                   "protobuf allows"
                                 : damage);
  }
  return model;
}

namespace {
int64_t parseNonNegative(const std::string &value, const std::string &context, const char *key) {
  int64_t v = -1;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || v < 0)
    fail("{}: external data '{}' is '{}', expected a non-negative integer", context, key, value);
  return v;
}

bool isInside(const fs::path &dir, const fs::path &p) {
  auto rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != ".." && !rel.is_absolute();
}

void inlineTensor(::onnx::TensorProto &t, const fs::path &modelDir, const std::string &context) {
  if (t.data_location() != ::onnx::TensorProto::EXTERNAL)
    return;
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = parseNonNegative(kv.value(), context, "offset");
    else if (kv.key() == "length")
      length = parseNonNegative(kv.value(), context, "length");
  }
  if (location.empty())
    fail("{}: external data has no 'location'", context);
  if (fs::path(location).is_absolute())
    fail("{}: external data location '{}' must be relative to the model's directory", context,
         location);
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(modelDir, ec);
  const fs::path file = fs::weakly_canonical(modelDir / location, ec);
  if (ec || !isInside(dir, file))
    fail("{}: external data location '{}' is outside the model's directory {}", context, location,
         dir.string());
  if (!fs::is_regular_file(file, ec))
    fail("{}: external data file '{}' not found next to the model", context, location);
  const int64_t fileSize = int64_t(fs::file_size(file, ec));
  if (ec)
    fail("{}: cannot read external data file '{}': {}", context, location, ec.message());
  if (offset > fileSize)
    fail("{}: external data offset {} is past the end of '{}' ({} bytes)", context, offset,
         location, fileSize);
  if (length < 0)
    length = fileSize - offset;
  if (length > fileSize - offset)
    fail("{}: external data offset {} + length {} is past the end of '{}' ({} bytes)", context,
         offset, length, location, fileSize);
  std::ifstream in(file, std::ios::binary);
  std::string data(size_t(length), '\0');
  in.seekg(offset);
  if (!in.read(data.data(), length))
    fail("{}: failed to read {} bytes at offset {} from '{}'", context, length, offset, location);
  t.set_raw_data(std::move(data));
  t.clear_external_data();
  t.set_data_location(::onnx::TensorProto::DEFAULT);
}

void inlineGraph(::onnx::GraphProto &g, const fs::path &modelDir, const std::string &path) {
  for (auto &t : *g.mutable_initializer())
    inlineTensor(t, modelDir, fmt::format("{}: initializer '{}'", path, t.name()));
  for (auto &node : *g.mutable_node())
    for (auto &attr : *node.mutable_attribute()) {
      const std::string context =
          fmt::format("{}: node '{}' attribute '{}'", path, node.name(), attr.name());
      if (attr.has_t())
        inlineTensor(*attr.mutable_t(), modelDir, context);
      for (auto &t : *attr.mutable_tensors())
        inlineTensor(t, modelDir, context);
      if (attr.has_g())
        inlineGraph(*attr.mutable_g(), modelDir, path);
      for (auto &sub : *attr.mutable_graphs())
        inlineGraph(sub, modelDir, path);
    }
}
} // namespace

void loadExternalData(::onnx::ModelProto &model, const std::string &path) {
  const fs::path modelDir = fs::absolute(fs::path(path)).parent_path();
  inlineGraph(*model.mutable_graph(), modelDir, path);
}

} // namespace popc::onnx::detail

namespace popc::onnx {

std::vector<uint8_t> modelWithoutInitializerData(const std::string &path, const std::vector<std::string> &trainable) {
  ::onnx::ModelProto model = detail::readModel(path);
  detail::loadExternalData(model, path);
  const std::set<std::string> names(trainable.begin(), trainable.end());
  for (auto &init : *model.mutable_graph()->mutable_initializer())
    if (names.count(init.name())) {
      // Keep name, type and dims; the values travel as popef variables.
      init.clear_raw_data();
      init.clear_float_data();
      init.clear_double_data();
      init.clear_int32_data();
      init.clear_int64_data();
      init.clear_external_data();
      init.clear_data_location();
    }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    fail("{}: cannot serialize the model for the popef (over 2 GiB?)", path);
  return {bytes.begin(), bytes.end()};
}

} // namespace popc::onnx
