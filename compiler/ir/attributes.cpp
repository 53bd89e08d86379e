#include "compiler/ir/ir.h"

#include "support/error.h"

namespace popc::ir {

namespace {
const char *kindName(const AttrValue &v) {
  switch (v.index()) {
  case 0: return "int";
  case 1: return "float";
  case 2: return "string";
  case 3: return "ints";
  case 4: return "floats";
  case 5: return "strings";
  default: return "tensor";
  }
}

[[noreturn]] void wrongType(const std::string &name, const AttrValue &v, const char *expected) {
  fail("attribute '{}' is {}, expected {}", name, kindName(v), expected);
}
} // namespace

int64_t Attributes::getInt(const std::string &name, int64_t fallback) const {
  return has(name) ? getInt(name) : fallback;
}

int64_t Attributes::getInt(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    fail("required attribute '{}' is missing", name);
  if (auto *i = std::get_if<int64_t>(&it->second))
    return *i;
  wrongType(name, it->second, "int");
}

double Attributes::getFloat(const std::string &name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return fallback;
  if (auto *d = std::get_if<double>(&it->second))
    return *d;
  if (auto *i = std::get_if<int64_t>(&it->second)) // ints are valid floats
    return double(*i);
  wrongType(name, it->second, "float");
}

std::string Attributes::getString(const std::string &name, const std::string &fallback) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return fallback;
  if (auto *s = std::get_if<std::string>(&it->second))
    return *s;
  wrongType(name, it->second, "string");
}

std::vector<int64_t> Attributes::getInts(const std::string &name, std::vector<int64_t> fallback) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return fallback;
  if (auto *v = std::get_if<std::vector<int64_t>>(&it->second))
    return *v;
  wrongType(name, it->second, "ints");
}

std::vector<double> Attributes::getFloats(const std::string &name, std::vector<double> fallback) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return fallback;
  if (auto *v = std::get_if<std::vector<double>>(&it->second))
    return *v;
  if (auto *v = std::get_if<std::vector<int64_t>>(&it->second))
    return std::vector<double>(v->begin(), v->end());
  wrongType(name, it->second, "floats");
}

std::shared_ptr<const Tensor> Attributes::getTensor(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    fail("required attribute '{}' is missing", name);
  if (auto *t = std::get_if<std::shared_ptr<const Tensor>>(&it->second))
    return *t;
  wrongType(name, it->second, "tensor");
}

} // namespace popc::ir
