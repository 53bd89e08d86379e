// The elementwise ops as one enum, with what every layer needs to know about
// them, all derived from elementwise.def (one line per op).
#pragma once
#include "support/dtype.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace popc::ops {

enum class Elementwise : uint8_t {
#define POPC_ELEMENTWISE(Name, ...) Name,
#include "compiler/ops/elementwise.def"
};

// dtype classes (elementwise.def's Types column).
enum : unsigned { kF = 1, kS = 2, kU = 4, kB = 8, kNum = kF | kS | kU, kAll = kNum | kB };
// Arity column: any number of inputs (at least one); no kernel of its own.
inline constexpr unsigned kVariadic = 0, kNoKernel = ~0u;

// How a kernel's input and output dtypes relate to its dtype.
enum class Signature : uint8_t {
  Same,   // every input and the output are dtype
  ToBool, // inputs dtype, output bool
  Where,  // in0 bool, in1/in2/out dtype
  Pow,    // in0/out dtype, in1 any numeric
  Cast,   // in0 dtype, out any
};

// Cycle class of one element (codegen/cycle_estimates.h): 1, 4, ~10 cycles.
enum class Cost : uint8_t { Cheap, Slow, Transcendental };

// How compiler/lib lowers the ONNX op (see elementwise.def).
enum class Lowering : uint8_t { Simple, Variadic, Custom, None };

struct ElementwiseInfo {
  std::string_view name;
  unsigned arity;     // kernel inputs, kVariadic or kNoKernel
  unsigned types;     // kF | kS | kU | kB the kernel accepts
  Signature signature;
  Cost cost;
  // The kernel's parameters in order with their defaults (for a Simple
  // lowering, the ONNX attributes that give them).
  std::vector<std::pair<std::string, double>> params;
  bool isOnnxOp;      // false: a kernel only lowerings use
  Lowering lowering;
};

const ElementwiseInfo &info(Elementwise op);
inline std::string_view name(Elementwise op) { return info(op).name; }
// The op of an ONNX op type or kernel name, if it is elementwise.
std::optional<Elementwise> elementwiseFromName(std::string_view name);
// Every op, in declaration order.
const std::vector<Elementwise> &allElementwise();

// The class (kF, kS, kU or kB) of a dtype.
unsigned typeClass(DType t);

} // namespace popc::ops
