#include "compiler/ir/ir.h"

#include "support/error.h"
#include "support/float16.h"

#include <algorithm>
#include <cstring>

namespace popc::ir {

namespace {
template <typename Out, typename In> void convertAll(const Tensor &t, std::vector<Out> &out) {
  const int64_t n = t.info.elements();
  out.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    In v;
    std::memcpy(&v, t.data.data() + size_t(i) * sizeof(In), sizeof(In));
    out[size_t(i)] = static_cast<Out>(v);
  }
}

// 16-bit float formats: bits decoded to float first.
template <typename Out> void convertBits16(const Tensor &t, std::vector<Out> &out, float (*decode)(uint16_t)) {
  std::vector<uint16_t> bits;
  convertAll<uint16_t, uint16_t>(t, bits);
  out.resize(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    out[i] = static_cast<Out>(decode(bits[i]));
}

template <typename Out> std::vector<Out> convertData(const Tensor &t) {
  if (!hasData(t.kind))
    fail("tensor '{}' is not a constant", t.name);
  if (t.data.size() != t.info.bytes())
    fail("constant '{}' holds {} bytes, expected {} for {} {}", t.name, t.data.size(),
         t.info.bytes(), dtypeName(t.info.dtype), shapeToString(t.info.shape));
  std::vector<Out> out;
  switch (t.info.dtype) {
  case DType::F32: convertAll<Out, float>(t, out); break;
  case DType::F64: convertAll<Out, double>(t, out); break;
  case DType::I8: convertAll<Out, int8_t>(t, out); break;
  case DType::I16: convertAll<Out, int16_t>(t, out); break;
  case DType::I32: convertAll<Out, int32_t>(t, out); break;
  case DType::I64: convertAll<Out, int64_t>(t, out); break;
  case DType::U8: convertAll<Out, uint8_t>(t, out); break;
  case DType::U16: convertAll<Out, uint16_t>(t, out); break;
  case DType::U32: convertAll<Out, uint32_t>(t, out); break;
  case DType::U64: convertAll<Out, uint64_t>(t, out); break;
  case DType::Bool: convertAll<Out, uint8_t>(t, out); break;
  case DType::F16: convertBits16(t, out, halfToFloat); break;
  case DType::BF16: convertBits16(t, out, bfloat16ToFloat); break;
  }
  return out;
}
} // namespace

std::vector<int64_t> Tensor::toInt64s() const { return convertData<int64_t>(*this); }
std::vector<double> Tensor::toDoubles() const { return convertData<double>(*this); }

// --- Graph -------------------------------------------------------------------

Tensor &Graph::addTensor(Tensor t) {
  if (t.name.empty())
    fail("graph '{}': cannot add a tensor with an empty name", id_);
  auto [it, inserted] = tensors_.emplace(t.name, std::move(t));
  if (!inserted)
    fail("graph '{}': tensor '{}' already exists", id_, it->first);
  return it->second;
}

Tensor &Graph::tensor(const std::string &name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    fail("graph '{}': no tensor named '{}'", id_, name);
  return it->second;
}

const Tensor &Graph::tensor(const std::string &name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    fail("graph '{}': no tensor named '{}'", id_, name);
  return it->second;
}

void Graph::removeTensor(const std::string &name) {
  if (tensors_.erase(name) == 0)
    fail("graph '{}': cannot remove unknown tensor '{}'", id_, name);
}

std::string Graph::uniqueName(const std::string &base) const {
  if (!hasTensor(base))
    return base;
  for (size_t i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!hasTensor(candidate))
      return candidate;
  }
}

Op &Graph::appendOp(Op op) {
  ops_.push_back(std::make_unique<Op>(std::move(op)));
  return *ops_.back();
}

Op &Graph::insertOpBefore(size_t index, Op op) {
  if (index > ops_.size())
    fail("graph '{}': insert position {} past the {} ops", id_, index, ops_.size());
  auto it = ops_.insert(ops_.begin() + std::ptrdiff_t(index), std::make_unique<Op>(std::move(op)));
  return **it;
}

void Graph::removeOp(size_t index) {
  if (index >= ops_.size())
    fail("graph '{}': no op at index {} ({} ops)", id_, index, ops_.size());
  ops_.erase(ops_.begin() + std::ptrdiff_t(index));
}

std::optional<size_t> Graph::producer(const std::string &tensor) const {
  for (size_t i = 0; i < ops_.size(); ++i)
    for (const auto &out : ops_[i]->outputs)
      if (out == tensor)
        return i;
  return std::nullopt;
}

std::vector<size_t> Graph::consumers(const std::string &tensor) const {
  std::vector<size_t> result;
  for (size_t i = 0; i < ops_.size(); ++i)
    if (std::find(ops_[i]->inputs.begin(), ops_[i]->inputs.end(), tensor) != ops_[i]->inputs.end())
      result.push_back(i);
  return result;
}

void Graph::replaceAllUses(const std::string &from, const std::string &to) {
  for (auto &op : ops_)
    for (auto &in : op->inputs)
      if (in == from)
        in = to;
  for (auto &out : outputs)
    if (out == from)
      out = to;
  for (auto &u : updates)
    if (u.value == from)
      u.value = to;
}

} // namespace popc::ir
