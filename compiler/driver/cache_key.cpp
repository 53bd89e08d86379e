#include "compiler/driver/cache_key.h"
#include "formats/popef/popef.h"

#include "cache/hash.h"
#include "support/error.h"
#include "support/file_io.h"
#include "support/log.h"
#include "support/version.h"

#include <google/protobuf/io/coded_stream.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <span>

namespace popc::driver {

namespace {

namespace fs = std::filesystem;
using google::protobuf::io::CodedInputStream;

// A whole file, mmapped read-only (empty files have no mapping).
struct MappedFile {
  std::span<const uint8_t> bytes;
  std::shared_ptr<void> mapping;
};

std::optional<MappedFile> mapFile(const fs::path &path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid())
    return std::nullopt;
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return std::nullopt;
  MappedFile f;
  size_t size = size_t(st.st_size);
  if (size) {
    void *m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (m == MAP_FAILED)
      return std::nullopt;
    f.mapping = std::shared_ptr<void>(m, [size](void *p) { ::munmap(p, size); });
    f.bytes = {static_cast<const uint8_t *>(m), size};
  }
  return f;
}

// ONNX field numbers (onnx.proto3) on the paths that can reach a TensorProto.
enum class Msg { Model, Graph, Function, Node, Attribute, Sparse, Tensor, StringEntry };

struct Child {
  Msg parent;
  uint32_t field;
  Msg child;
};
constexpr Child kChildren[] = {
    {Msg::Model, 7, Msg::Graph},         // ModelProto.graph
    {Msg::Model, 25, Msg::Function},     // ModelProto.functions
    {Msg::Function, 7, Msg::Node},       // FunctionProto.node
    {Msg::Graph, 1, Msg::Node},          // GraphProto.node
    {Msg::Graph, 5, Msg::Tensor},        // GraphProto.initializer
    {Msg::Graph, 15, Msg::Sparse},       // GraphProto.sparse_initializer
    {Msg::Node, 5, Msg::Attribute},      // NodeProto.attribute
    {Msg::Attribute, 5, Msg::Tensor},    // AttributeProto.t
    {Msg::Attribute, 6, Msg::Graph},     // AttributeProto.g
    {Msg::Attribute, 10, Msg::Tensor},   // AttributeProto.tensors
    {Msg::Attribute, 11, Msg::Graph},    // AttributeProto.graphs
    {Msg::Attribute, 22, Msg::Sparse},   // AttributeProto.sparse_tensor
    {Msg::Attribute, 23, Msg::Sparse},   // AttributeProto.sparse_tensors
    {Msg::Sparse, 1, Msg::Tensor},       // SparseTensorProto.values
    {Msg::Sparse, 2, Msg::Tensor},       // SparseTensorProto.indices
    {Msg::Tensor, 13, Msg::StringEntry}, // TensorProto.external_data
};

// Walks one message; collects external_data "location" values. Skips every
// other field without copying it. False on malformed input.
bool scan(CodedInputStream &in, Msg msg, int depth, std::set<std::string> &locations) {
  if (depth > 64)
    return false;
  std::string entryKey, entryValue;
  while (uint32_t tag = in.ReadTag()) {
    const uint32_t field = tag >> 3, wire = tag & 7;
    switch (wire) {
    case 0: {
      uint64_t v;
      if (!in.ReadVarint64(&v))
        return false;
      break;
    }
    case 1:
      if (!in.Skip(8))
        return false;
      break;
    case 5:
      if (!in.Skip(4))
        return false;
      break;
    case 2: {
      uint32_t length;
      if (!in.ReadVarint32(&length))
        return false;
      if (msg == Msg::StringEntry && (field == 1 || field == 2)) {
        if (!in.ReadString(field == 1 ? &entryKey : &entryValue, int(length)))
          return false;
        break;
      }
      const Child *child = nullptr;
      for (const Child &c : kChildren)
        if (c.parent == msg && c.field == field)
          child = &c;
      if (!child) {
        if (!in.Skip(int(length)))
          return false;
        break;
      }
      auto limit = in.PushLimit(int(length));
      if (!scan(in, child->child, depth + 1, locations) || !in.ConsumedEntireMessage())
        return false;
      in.PopLimit(limit);
      break;
    }
    default:
      return false; // groups are not used by ONNX
    }
  }
  if (msg == Msg::StringEntry && entryKey == "location")
    locations.insert(entryValue);
  return true;
}

} // namespace

std::optional<ExecutableKey> executableCacheKey(const std::string &modelPath, const CompileOptions &options) {
  auto log = log::get("driver");
  auto model = mapFile(modelPath);
  if (!model || model->bytes.empty()) {
    log->debug("{}: not keyed for the cache (cannot read it)", modelPath);
    return std::nullopt;
  }
  std::set<std::string> locations;
  CodedInputStream in(model->bytes.data(), int(std::min<size_t>(model->bytes.size(), INT32_MAX)));
  in.SetTotalBytesLimit(INT32_MAX);
  if (model->bytes.size() > size_t(INT32_MAX) || !scan(in, Msg::Model, 0, locations) ||
      !in.ConsumedEntireMessage()) {
    log->debug("{}: not keyed for the cache (not a well-formed protobuf)", modelPath);
    return std::nullopt;
  }

  std::map<std::string, std::string> described;
  try {
    described = options.describe();
  } catch (const Error &) {
    return std::nullopt; // an invalid option: the compile reports it
  }

  cache::Hasher h;
  h.field("key-format", "popc-exe-1");
  h.field("compiler", compilerVersion());
  h.field("build-id", buildId());
  h.field("compressor", popef::compressorVersion()); // a shared library the build id does not cover
  h.field("onnx", model->bytes);
  const fs::path modelDir = fs::absolute(fs::path(modelPath)).parent_path();
  ExecutableKey key;
  for (const std::string &location : locations) {
    auto data = fs::path(location).is_absolute() ? std::nullopt : mapFile(modelDir / location);
    if (!data) {
      log->debug("{}: not keyed for the cache (external data '{}' unreadable)", modelPath, location);
      return std::nullopt;
    }
    h.field("external:" + location, data->bytes);
    key.externalFiles.push_back(location);
  }
  for (const auto &[name, value] : described)
    h.field("option:" + name, value);
  key.key = h.digest().hex();
  return key;
}

} // namespace popc::driver
