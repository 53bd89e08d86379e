#include "compiler/ops/elementwise.h"

#include "support/error.h"

#include <cstdlib>
#include <map>
#include <sstream>

namespace popc::ops {

namespace {

// "alpha=0.01 beta=0.5" → {{"alpha", 0.01}, {"beta", 0.5}} (strtod: "inf", "-inf").
std::vector<std::pair<std::string, double>> parseParams(const char *text) {
  std::vector<std::pair<std::string, double>> params;
  std::istringstream in(text);
  for (std::string item; in >> item;) {
    const size_t eq = item.find('=');
    POPC_ASSERT(eq != std::string::npos && "elementwise.def: a parameter is name=default");
    params.emplace_back(item.substr(0, eq), std::strtod(item.c_str() + eq + 1, nullptr));
  }
  return params;
}

const std::vector<ElementwiseInfo> &table() {
  static const std::vector<ElementwiseInfo> infos = {
#define POPC_ELEMENTWISE(Name, Arity, Types, Sig, Cost_, Params, Infer, MinIn, MaxIn, Grad, Host, Lower)            \
  ElementwiseInfo{#Name, Arity, Types, Signature::Sig, Cost::Cost_, parseParams(Params), (MinIn) > 0, Lowering::Lower},
#include "compiler/ops/elementwise.def"
  };
  return infos;
}

} // namespace

const ElementwiseInfo &info(Elementwise op) { return table().at(size_t(op)); }

std::optional<Elementwise> elementwiseFromName(std::string_view name) {
  // Asked for every op constant folding looks at: a map, not a scan of the table.
  static const std::map<std::string_view, Elementwise> byName = [] {
    std::map<std::string_view, Elementwise> m;
    for (size_t i = 0; i < table().size(); ++i)
      m.emplace(table()[i].name, Elementwise(i));
    return m;
  }();
  auto it = byName.find(name);
  return it == byName.end() ? std::nullopt : std::optional(it->second);
}

const std::vector<Elementwise> &allElementwise() {
  static const std::vector<Elementwise> all = [] {
    std::vector<Elementwise> v;
    for (size_t i = 0; i < table().size(); ++i)
      v.push_back(Elementwise(i));
    return v;
  }();
  return all;
}

unsigned typeClass(DType t) {
  if (isFloatingPoint(t))
    return kF;
  switch (t) {
  case DType::I8: case DType::I16: case DType::I32: case DType::I64: return kS;
  case DType::Bool: return kB;
  default: return kU;
  }
}

} // namespace popc::ops
