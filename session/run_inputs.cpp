#include "session/run_inputs.h"

#include "formats/npz/npz.h"
#include "support/element.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

namespace popc::session {

namespace {

const std::map<std::string, DType> &literalTypes() {
  static const std::map<std::string, DType> types{
      {"f16", DType::F16}, {"bf16", DType::BF16}, {"f32", DType::F32}, {"f64", DType::F64}, {"i8", DType::I8},
      {"i16", DType::I16}, {"i32", DType::I32},   {"i64", DType::I64}, {"u8", DType::U8},   {"u16", DType::U16},
      {"u32", DType::U32}, {"u64", DType::U64},   {"bool", DType::Bool}};
  return types;
}

runtime::HostTensor parseLiteral(const std::string &arg, const std::string &name, const std::string &text) {
  auto bad = [&](const std::string &why) -> runtime::HostTensor {
    fail("--input {}: {}; expected NAME=FILE.npy or NAME=SHAPExTYPE=VALUES, e.g. {}=1x3xf32=0.5 or "
         "{}=2xi64=3,7",
         arg, why, name, name);
  };
  const size_t eq = text.find('=');
  if (eq == std::string::npos)
    return bad("no '=' between the type and the values");
  const std::string spec = text.substr(0, eq), values = text.substr(eq + 1);
  // "2x3xf32": dims then the type; "f32" alone is a scalar.
  Shape shape;
  std::string type = spec;
  for (size_t x = spec.find('x'), begin = 0; x != std::string::npos; begin = x + 1, x = spec.find('x', begin)) {
    int64_t d = -1;
    const auto [ptr, ec] = std::from_chars(spec.data() + begin, spec.data() + x, d);
    if (ec != std::errc() || ptr != spec.data() + x || d < 0)
      return bad(fmt::format("'{}' is not a dimension", spec.substr(begin, x - begin)));
    shape.push_back(d);
    type = spec.substr(x + 1);
  }
  const auto it = literalTypes().find(type);
  if (it == literalTypes().end())
    return bad(fmt::format("unknown element type '{}' (f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool)", type));
  runtime::HostTensor t{it->second, shape, {}};
  const uint64_t count = uint64_t(numElements(shape));
  if (count > (uint64_t(1) << 32))
    return bad(fmt::format("{} elements is too many for a literal; use a .npy file", count));
  t.data.assign(count * dtypeSize(t.dtype), 0);
  std::vector<double> parsed;
  std::string token;
  auto flush = [&] {
    if (token.empty())
      return;
    double v = 0;
    if (token == "true" || token == "false") {
      v = token == "true";
    } else {
      const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
      if (ec != std::errc() || ptr != token.data() + token.size())
        bad(fmt::format("'{}' is not a number", token));
    }
    parsed.push_back(v);
    token.clear();
  };
  for (char c : values) {
    if (c == ',' || c == ' ' || c == '[' || c == ']')
      flush();
    else
      token += c;
  }
  flush();
  if (parsed.size() != 1 && parsed.size() != count)
    return bad(fmt::format("{} values for {} elements (give one value for all, or one per element)", parsed.size(),
                           count));
  for (uint64_t i = 0; i < count; ++i)
    storeElement(t.dtype, t.data.data() + i * dtypeSize(t.dtype), parsed.size() == 1 ? parsed[0] : parsed[i]);
  return t;
}

// splitmix64: the same stream on every platform (std distributions are not).
uint64_t nextRandom(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

} // namespace

std::pair<std::string, runtime::HostTensor> parseInputArgument(const std::string &arg, uint64_t maxBytes) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    fail("--input {}: expected NAME=FILE.npy or NAME=SHAPExTYPE=VALUES (e.g. x=1x3xf32=0.5)", arg);
  const std::string name = arg.substr(0, eq), value = arg.substr(eq + 1);
  if (value.size() > 4 && value.ends_with(".npy")) {
    std::ifstream in(value, std::ios::binary);
    if (!in)
      fail("--input {}: cannot open '{}': {}", arg, value, std::strerror(errno));
    in.seekg(0, std::ios::end);
    const auto size = uint64_t(in.tellg());
    if (maxBytes && size > maxBytes)
      fail("--input {}: '{}' is {} bytes, over --max-memory", arg, value, size);
    in.seekg(0);
    std::vector<uint8_t> bytes(size);
    in.read(reinterpret_cast<char *>(bytes.data()), std::streamsize(size));
    npz::Array a = npz::readNpy(bytes, value);
    return {name, {a.dtype, std::move(a.shape), std::move(a.data)}};
  }
  return {name, parseLiteral(arg, name, value)};
}

FillMode parseFillMode(const std::string &mode) {
  if (mode.empty())
    return FillMode::None;
  if (mode == "random")
    return FillMode::Random;
  if (mode == "zeros")
    return FillMode::Zeros;
  if (mode == "ones")
    return FillMode::Ones;
  fail("--fill {}: expected random, zeros or ones", mode);
}

void fillMissingInputs(runtime::HostTensorMap &inputs, const std::vector<runtime::IoDesc> &modelInputs,
                       FillMode mode, uint64_t seed) {
  if (mode == FillMode::None)
    return;
  uint64_t state = seed;
  for (const runtime::IoDesc &io : modelInputs) {
    if (inputs.count(io.name))
      continue;
    runtime::HostTensor t{io.dtype, io.shape, std::vector<uint8_t>(io.bytes, 0)};
    const uint64_t count = io.bytes / dtypeSize(io.dtype);
    for (uint64_t i = 0; i < count && mode != FillMode::Zeros; ++i) {
      double v = 1;
      if (mode == FillMode::Random) {
        const uint64_t r = nextRandom(state);
        v = isFloatingPoint(io.dtype) ? double(r >> 11) * 0x1.0p-52 - 1.0 // [-1, 1)
            : io.dtype == DType::Bool ? double(r >> 63)
                                      : double(r % 10);
      }
      storeElement(io.dtype, t.data.data() + i * dtypeSize(io.dtype), v);
    }
    inputs[io.name] = std::move(t);
  }
}

namespace {
const runtime::IoDesc *findInput(const std::vector<runtime::IoDesc> &modelInputs, const std::string &name) {
  auto io = std::find_if(modelInputs.begin(), modelInputs.end(), [&](const runtime::IoDesc &d) { return d.name == name; });
  return io == modelInputs.end() ? nullptr : &*io;
}
} // namespace

std::set<std::string> datasetInputs(const runtime::HostTensorMap &inputs,
                                    const std::vector<runtime::IoDesc> &modelInputs, uint64_t runs) {
  std::set<std::string> names;
  for (const auto &[name, t] : inputs) {
    const runtime::IoDesc *io = findInput(modelInputs, name);
    if (runs > 1 && io && !io->shape.empty() && t.shape.size() == io->shape.size() &&
        t.shape[0] == io->shape[0] * int64_t(runs) && std::equal(t.shape.begin() + 1, t.shape.end(), io->shape.begin() + 1) &&
        t.data.size() == io->bytes * runs)
      names.insert(name);
  }
  return names;
}

void selectIteration(const runtime::HostTensorMap &inputs, const std::vector<runtime::IoDesc> &modelInputs,
                     const std::set<std::string> &names, uint64_t k, runtime::HostTensorMap &run) {
  for (const std::string &name : names) {
    const runtime::IoDesc &io = *findInput(modelInputs, name);
    const runtime::HostTensor &t = inputs.at(name);
    runtime::HostTensor &slice = run[name];
    slice.dtype = t.dtype;
    slice.shape = io.shape;
    slice.data.assign(t.data.begin() + int64_t(k * io.bytes), t.data.begin() + int64_t((k + 1) * io.bytes));
  }
}

} // namespace popc::session
