#include "test/conformance/conformance_case.h"

#include "compiler/driver/compile.h"
#include "compiler/onnx/importer.h"
#include "formats/popef/popef.h"
#include "runtime/engine.h"
#include "support/error.h"

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

namespace popc::conformance {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

const char *statusName(Status s) {
  switch (s) {
  case Status::Pass: return "pass";
  case Status::Mismatch: return "mismatch";
  case Status::Unsupported: return "unsupported";
  case Status::Error: return "error";
  case Status::DataUnsupported: return "data-unsupported";
  }
  return "?";
}

namespace {

bool parseFile(const std::string &path, google::protobuf::MessageLite &message) {
  std::ifstream in(path, std::ios::binary);
  return in && message.ParseFromIstream(&in);
}

void collectOps(const ::onnx::GraphProto &graph, std::set<std::string> &ops) {
  for (const auto &node : graph.node()) {
    const bool aiOnnx = node.domain().empty() || node.domain() == "ai.onnx";
    ops.insert(aiOnnx ? node.op_type() : node.domain() + "::" + node.op_type());
    for (const auto &attr : node.attribute()) {
      if (attr.has_g())
        collectOps(attr.g(), ops);
      for (const auto &g : attr.graphs())
        collectOps(g, ops);
    }
  }
}

// Why a graph input/output cannot be fed or checked through host tensors ("" if it can).
// Sequences of tensors and optionals of either become tensors (x.0, x.1, ...).
std::string valueIssue(const ::onnx::ValueInfoProto &v, const ::onnx::TypeProto &type, int depth = 0) {
  if (type.has_optional_type() && depth == 0)
    return valueIssue(v, type.optional_type().elem_type(), 1);
  if (type.has_sequence_type() && depth < 2) {
    if (!type.sequence_type().elem_type().has_tensor_type())
      return fmt::format("'{}' is a sequence of non-tensors", v.name());
    return valueIssue(v, type.sequence_type().elem_type(), 2);
  }
  if (type.has_sequence_type())
    return fmt::format("'{}' is a nested sequence", v.name());
  if (type.has_optional_type())
    return fmt::format("'{}' is a nested optional", v.name());
  if (type.has_map_type())
    return fmt::format("'{}' is a map", v.name());
  if (type.has_sparse_tensor_type())
    return fmt::format("'{}' is a sparse tensor", v.name());
  if (type.has_tensor_type()) {
    const auto elem = type.tensor_type().elem_type();
    if (elem == TensorProto::STRING)
      return fmt::format("'{}' holds strings", v.name());
  }
  return "";
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void send(int fd, const std::string &line) {
  std::string text = line + "\n";
  const char *p = text.data();
  size_t left = text.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0)
      return;
    p += n;
    left -= size_t(n);
  }
}

// A reason on one line, bounded (the markdown table and the log are one line per test).
std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\t', ' ');
  if (text.size() > 400)
    text = text.substr(0, 400) + "...";
  return text;
}

// Thrown for test data the host tensors cannot represent (data-unsupported).
struct DataUnsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename T, typename Field>
void copyField(const Field &values, size_t n, std::vector<uint8_t> &out, const std::string &label) {
  if (size_t(values.size()) != n)
    fail("{}: {} values for {} elements", label, values.size(), n);
  out.resize(n * sizeof(T));
  for (size_t i = 0; i < n; ++i) {
    T v = static_cast<T>(values[int(i)]);
    std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
  }
}

runtime::HostTensor tensorFromProto(const TensorProto &proto, const std::string &path) {
  runtime::HostTensor t;
  switch (proto.data_type()) {
  case TensorProto::FLOAT: t.dtype = DType::F32; break;
  case TensorProto::FLOAT16: t.dtype = DType::F16; break;
  case TensorProto::DOUBLE: t.dtype = DType::F64; break;
  case TensorProto::INT8: t.dtype = DType::I8; break;
  case TensorProto::INT16: t.dtype = DType::I16; break;
  case TensorProto::INT32: t.dtype = DType::I32; break;
  case TensorProto::INT64: t.dtype = DType::I64; break;
  case TensorProto::UINT8: t.dtype = DType::U8; break;
  case TensorProto::UINT16: t.dtype = DType::U16; break;
  case TensorProto::UINT32: t.dtype = DType::U32; break;
  case TensorProto::UINT64: t.dtype = DType::U64; break;
  case TensorProto::BOOL: t.dtype = DType::Bool; break;
  case TensorProto::BFLOAT16: t.dtype = DType::BF16; break;
  default:
    throw DataUnsupported(fmt::format(
        "{} holds {} tensors", fs::path(path).filename().string(),
        TensorProto::DataType_IsValid(proto.data_type())
            ? TensorProto::DataType_Name(TensorProto::DataType(proto.data_type()))
            : std::to_string(proto.data_type())));
  }
  for (auto d : proto.dims())
    t.shape.push_back(d);
  const size_t n = size_t(numElements(t.shape)), size = dtypeSize(t.dtype);
  if (proto.data_location() == TensorProto::EXTERNAL)
    throw DataUnsupported(fmt::format("{} uses external data", path));
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != n * size)
      fail("{}: raw_data holds {} bytes, expected {}", path, proto.raw_data().size(), n * size);
    t.data.assign(proto.raw_data().begin(), proto.raw_data().end());
    return t;
  }
  switch (t.dtype) {
  case DType::F32: copyField<float>(proto.float_data(), n, t.data, path); break;
  case DType::F64: copyField<double>(proto.double_data(), n, t.data, path); break;
  case DType::I64: copyField<int64_t>(proto.int64_data(), n, t.data, path); break;
  case DType::F16:
  case DType::BF16: copyField<uint16_t>(proto.int32_data(), n, t.data, path); break;
  case DType::I8: copyField<int8_t>(proto.int32_data(), n, t.data, path); break;
  case DType::I16: copyField<int16_t>(proto.int32_data(), n, t.data, path); break;
  case DType::I32: copyField<int32_t>(proto.int32_data(), n, t.data, path); break;
  case DType::U8: copyField<uint8_t>(proto.int32_data(), n, t.data, path); break;
  case DType::U16: copyField<uint16_t>(proto.int32_data(), n, t.data, path); break;
  case DType::U32: copyField<uint32_t>(proto.uint64_data(), n, t.data, path); break;
  case DType::U64: copyField<uint64_t>(proto.uint64_data(), n, t.data, path); break;
  case DType::Bool: copyField<uint8_t>(proto.int32_data(), n, t.data, path); break;
  }
  return t;
}

runtime::HostTensor readTensor(const std::string &path) {
  TensorProto proto;
  if (!parseFile(path, proto))
    fail("{}: not a TensorProto", path);
  return tensorFromProto(proto, path);
}

// One graph value of a test: a tensor, a sequence of tensors, or an empty optional.
struct Value {
  bool present = true, sequence = false;
  std::vector<runtime::HostTensor> tensors;
};

Value readSequence(const ::onnx::SequenceProto &seq, const std::string &path) {
  if (seq.elem_type() != ::onnx::SequenceProto::TENSOR && seq.tensor_values_size() == 0 &&
      seq.elem_type() != ::onnx::SequenceProto::UNDEFINED)
    throw DataUnsupported(fmt::format("{} holds a sequence of non-tensors", fs::path(path).filename().string()));
  Value v;
  v.sequence = true;
  for (const auto &t : seq.tensor_values())
    v.tensors.push_back(tensorFromProto(t, path));
  return v;
}

Value readValue(const std::string &path, bool sequence, bool optional) {
  if (optional) {
    ::onnx::OptionalProto proto;
    if (!parseFile(path, proto))
      fail("{}: not an OptionalProto", path);
    Value v;
    if (proto.has_sequence_value())
      return readSequence(proto.sequence_value(), path);
    if (proto.has_tensor_value())
      v.tensors.push_back(tensorFromProto(proto.tensor_value(), path));
    else
      v.present = false;
    return v;
  }
  if (sequence) {
    ::onnx::SequenceProto proto;
    if (!parseFile(path, proto))
      fail("{}: not a SequenceProto", path);
    return readSequence(proto, path);
  }
  Value v;
  v.tensors.push_back(readTensor(path));
  return v;
}

// input_0.pb, input_1.pb, ... in numeric order.
std::vector<std::string> numbered(const std::string &dir, const std::string &prefix) {
  std::vector<std::pair<int, std::string>> files;
  for (const auto &entry : fs::directory_iterator(dir)) {
    const std::string f = entry.path().filename().string();
    if (f.rfind(prefix, 0) == 0 && f.size() > prefix.size() + 3 && f.ends_with(".pb"))
      files.push_back({std::atoi(f.c_str() + prefix.size()), entry.path().string()});
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (auto &f : files)
    out.push_back(f.second);
  return out;
}

struct DataSet {
  std::string name;
  runtime::HostTensorMap inputs; // sequences flattened: x.0, x.1, ...
  std::vector<std::pair<std::string, runtime::HostTensor>> expected; // graph output order, flattened
  std::map<std::string, int64_t> sequenceLengths; // sequence inputs
  std::set<std::string> absentInputs;             // empty optional inputs
  std::set<std::string> sequenceElements;         // x.i inputs (shapes come from the data)
  std::vector<std::string> mustBeAbsent;          // outputs the executable must not have
};

DataSet loadDataSet(const TestCase &test, const std::string &dir) {
  DataSet ds;
  ds.name = fs::path(dir).filename().string();
  const auto inputs = numbered(dir, "input_"), outputs = numbered(dir, "output_");
  if (inputs.size() > test.inputs.size() || outputs.size() > test.outputs.size())
    fail("{}: {} inputs / {} outputs, but the graph has {} / {}", dir, inputs.size(), outputs.size(),
         test.inputs.size(), test.outputs.size());
  // As the ONNX backend runner does: input_K feeds the K-th non-initializer input.
  // numpy has no bfloat16: ONNX's generator stores such data as uint16 bits.
  auto read = [&](const std::string &file, const std::string &name) {
    runtime::HostTensor t = readTensor(file);
    if (test.bfloat16Values.count(name) && t.dtype == DType::U16)
      t.dtype = DType::BF16;
    return t;
  };
  auto readAny = [&](const std::string &file, const std::string &name) {
    if (!test.sequenceValues.count(name) && !test.optionalValues.count(name))
      return Value{true, false, {read(file, name)}};
    return readValue(file, test.sequenceValues.count(name) > 0, test.optionalValues.count(name) > 0);
  };
  using onnx::sequenceElementName;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string &name = test.inputs[k];
    Value v = readAny(inputs[k], name);
    if (!v.present) {
      ds.absentInputs.insert(name);
    } else if (v.sequence) {
      ds.sequenceLengths[name] = int64_t(v.tensors.size());
      for (size_t i = 0; i < v.tensors.size(); ++i) {
        ds.inputs[sequenceElementName(name, i)] = std::move(v.tensors[i]);
        ds.sequenceElements.insert(sequenceElementName(name, i));
      }
    } else {
      ds.inputs[name] = std::move(v.tensors[0]);
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string &name = test.outputs[k];
    Value v = readAny(outputs[k], name);
    if (!v.present) {
      ds.mustBeAbsent.push_back(name);
      ds.mustBeAbsent.push_back(sequenceElementName(name, 0));
    } else if (v.sequence) {
      for (size_t i = 0; i < v.tensors.size(); ++i)
        ds.expected.push_back({sequenceElementName(name, i), std::move(v.tensors[i])});
      ds.mustBeAbsent.push_back(sequenceElementName(name, v.tensors.size()));
    } else {
      ds.expected.push_back({name, std::move(v.tensors[0])});
    }
  }
  return ds;
}

std::string compareOutputs(const DataSet &ds, const runtime::HostTensorMap &actual, const npz::Tolerance &tol) {
  for (const auto &[name, exp] : ds.expected) {
    auto it = actual.find(name);
    if (it == actual.end())
      return fmt::format("{}: output '{}' missing", ds.name, name);
    const auto &act = it->second;
    auto r = npz::compareArrays({act.dtype, &act.shape, act.data}, {exp.dtype, &exp.shape, exp.data}, tol);
    if (!r.ok)
      return fmt::format("{}: output '{}': {}", ds.name, name, r.message);
  }
  for (const auto &name : ds.mustBeAbsent)
    if (actual.count(name))
      return fmt::format("{}: output '{}' should not exist (an empty optional, or past the end of a sequence)",
                         ds.name, name);
  return "";
}

} // namespace

void readModelInfo(TestCase &test) {
  ::onnx::ModelProto model;
  const std::string path = test.dir + "/model.onnx";
  if (!parseFile(path, model)) {
    test.modelError = path + ": cannot be read as an ONNX ModelProto";
    return;
  }
  const auto &graph = model.graph();
  std::set<std::string> initializers;
  for (const auto &t : graph.initializer())
    initializers.insert(t.name());
  auto noteKind = [&](const ::onnx::ValueInfoProto &v) {
    const auto &t = v.type();
    if (t.has_optional_type())
      test.optionalValues.insert(v.name());
    if (t.has_sequence_type() || (t.has_optional_type() && t.optional_type().elem_type().has_sequence_type()))
      test.sequenceValues.insert(v.name());
  };
  auto isBfloat16 = [](const ::onnx::ValueInfoProto &v) {
    return v.type().has_tensor_type() && v.type().tensor_type().elem_type() == TensorProto::BFLOAT16;
  };
  for (const auto &v : graph.input())
    if (!initializers.count(v.name())) {
      test.inputs.push_back(v.name());
      if (test.dataIssue.empty())
        test.dataIssue = valueIssue(v, v.type());
      noteKind(v);
      bool open = !v.type().tensor_type().has_shape();
      for (const auto &d : v.type().tensor_type().shape().dim())
        open = open || !d.has_dim_value();
      if (open)
        test.dynamicInputs.insert(v.name());
      if (isBfloat16(v))
        test.bfloat16Values.insert(v.name());
    }
  for (const auto &v : graph.output()) {
    test.outputs.push_back(v.name());
    if (test.dataIssue.empty())
      test.dataIssue = valueIssue(v, v.type());
    noteKind(v);
    if (isBfloat16(v))
      test.bfloat16Values.insert(v.name());
  }
  std::set<std::string> ops;
  collectOps(graph, ops);
  test.opTypes.assign(ops.begin(), ops.end());
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(test.dir, ec))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      test.dataSets.push_back(entry.path().string());
  std::sort(test.dataSets.begin(), test.dataSets.end());
}

// POPC_CONFORMANCE_INJECT="test_a=segv,test_b=hang,..." makes the child misbehave for
// those tests (segv, abort, hang, exit, throw), so the runner's own classification is tested.
void injectFault(const TestCase &test) {
  const char *env = std::getenv("POPC_CONFORMANCE_INJECT");
  if (!env)
    return;
  const std::string spec = std::string(",") + env + ",", key = "," + test.name + "=";
  const auto at = spec.find(key);
  if (at == std::string::npos)
    return;
  const auto start = at + key.size();
  const std::string what = spec.substr(start, spec.find(',', start) - start);
  if (what == "segv") {
    std::signal(SIGSEGV, SIG_DFL); // a plain kernel kill, also in a sanitizer build (whose handler would exit instead)
    std::raise(SIGSEGV);
  }
  if (what == "abort")
    std::abort();
  if (what == "hang")
    for (;;)
      ::pause();
  if (what == "exit")
    std::_Exit(3);
  if (what == "throw")
    throw std::logic_error("injected internal error");
}

int runTestInChild(const TestCase &test, int fd) {
  auto result = [&](Status s, std::string reason) {
    // Paths inside the test's folder read better relative ("model.onnx: ...").
    for (size_t at; (at = reason.find(test.dir + "/")) != std::string::npos;)
      reason.erase(at, test.dir.size() + 1);
    send(fd, fmt::format("result {}\t{}", statusName(s), oneLine(reason)));
    return 0;
  };
  std::string phase = "load-data";
  try {
    send(fd, "phase load-data");
    std::vector<DataSet> sets;
    try {
      for (const auto &dir : test.dataSets)
        sets.push_back(loadDataSet(test, dir));
    } catch (const DataUnsupported &e) {
      return result(Status::DataUnsupported, e.what());
    }
    if (sets.empty())
      return result(Status::Error, "no test_data_set_* folder");

    phase = "compile";
    send(fd, "phase compile");
    injectFault(test);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<uint8_t> bytes;
    // popc compiles static shapes: an input the model uses as a shape, axes,
    // count or condition is frozen to the test's value (what a user does with
    // --freeze-input), as long as every data set feeds the same value.
    driver::CompileOptions options;
    // Dynamic dimensions are fixed to the data's shapes, as a user does with
    // --input-shape (when every data set feeds the same shape).
    // Sequence lengths and empty optionals are fixed from the data the same
    // way (--sequence-input, --optional-absent), when every data set agrees.
    for (const auto &ds : sets)
      if (ds.sequenceLengths != sets[0].sequenceLengths || ds.absentInputs != sets[0].absentInputs)
        return result(Status::Unsupported, "data sets feed sequences of different lengths or optionals that are "
                                           "empty in some and present in others");
    options.sequenceLengths = sets[0].sequenceLengths;
    options.absentOptionals = sets[0].absentInputs;
    for (const auto &[name, value] : sets[0].inputs) {
      bool same = test.dynamicInputs.count(name) > 0 || sets[0].sequenceElements.count(name) > 0;
      for (const auto &ds : sets)
        same = same && ds.inputs.count(name) && ds.inputs.at(name).shape == value.shape;
      if (same)
        options.inputShapes[name] = value.shape;
    }
    for (;;) {
      try {
        bytes = driver::compileOnnx(test.dir + "/model.onnx", options);
        break;
      } catch (const Error &e) {
        const std::string &name = e.inputNeedingValue();
        auto it = sets[0].inputs.find(name);
        if (name.empty() || options.frozenInputs.count(name) || it == sets[0].inputs.end())
          return result(Status::Unsupported, e.what());
        for (const auto &ds : sets) {
          auto other = ds.inputs.find(name);
          if (other == ds.inputs.end() || other->second.data != it->second.data)
            return result(Status::Unsupported, fmt::format("{} (data sets feed different values)", e.what()));
        }
        options.frozenInputs[name] = {it->second.dtype, it->second.shape, it->second.data};
      }
    }
    for (auto &ds : sets)
      for (const auto &[name, value] : options.frozenInputs)
        ds.inputs.erase(name);
    send(fd, fmt::format("time compile {:.4f}", since(t0)));

    phase = "jit";
    send(fd, "phase jit");
    t0 = std::chrono::steady_clock::now();
    runtime::Engine engine(popef::Executable::fromBytes(std::move(bytes), test.id()), {1, nullptr});
    send(fd, fmt::format("time jit {:.4f}", since(t0)));

    for (const auto &ds : sets) {
      phase = "run";
      send(fd, "phase run");
      t0 = std::chrono::steady_clock::now();
      auto outputs = engine.run(ds.inputs);
      send(fd, fmt::format("time run {:.4f}", since(t0)));
      phase = "compare";
      send(fd, "phase compare");
      std::string why = compareOutputs(ds, outputs, test.tolerance);
      if (!why.empty())
        return result(Status::Mismatch, why);
    }
    std::string frozen;
    for (const auto &[name, value] : options.frozenInputs)
      frozen += (frozen.empty() ? "compiled with --freeze-input " : ", ") + name;
    return result(Status::Pass, frozen);
  } catch (const Error &e) {
    return result(Status::Error, fmt::format("{} error: {}", phase, e.what()));
  } catch (const InternalError &e) {
    return result(Status::Error, fmt::format("{}: {}", phase, e.what()));
  } catch (const std::exception &e) {
    return result(Status::Error, fmt::format("{}: internal error: {}", phase, e.what()));
  }
}

} // namespace popc::conformance
