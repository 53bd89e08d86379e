// Vertex kernels: the shape-specialised compute that runs on one tile.
// compiler/lib describes each vertex with a KernelSpec; VertexCodegen turns
// every distinct spec into one LLVM function (IRBuilder) in one module.
//
// Vertex ABI (shared with runtime/, which knows nothing else about vertices):
//   void <symbol>(uint8_t* tile_base, const uint32_t* field_offsets)
// Field i lives at tile_base + field_offsets[i] and has fields[i].bytes bytes.
// The code touches only those bytes.
#pragma once
#include "compiler/ops/elementwise.h"
#include "support/dtype.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace popc::codegen {

// Immediate: a number in the vertex's field table, not memory (bytes 0): a shape
// parameter the code reads, so types differing only in it share one function.
enum class FieldAccess : uint8_t { Input = 0, Output = 1, InOut = 2, Immediate = 3 }; // = popef FieldAccess

struct FieldInfo {
  std::string name;
  uint32_t bytes = 0;
  FieldAccess access = FieldAccess::Input;
  uint32_t value = 0; // Immediate: the number every vertex of the type passes
};

// Immediates come after the memory fields (the lowering connects only those).
inline size_t memoryFieldCount(const std::vector<FieldInfo> &fields) {
  size_t n = 0;
  while (n < fields.size() && fields[n].access != FieldAccess::Immediate)
    ++n;
  return n;
}

// out[i] = op(in0[i], in1[i], ...). An input marked scalar holds one element
// that is broadcast to all `elements`. Fields: in0..inN-1, out.
// Types: every input and the output are `dtype`, except where inputDTypes
// (one per input) or outDType say otherwise, as the op allows (below).
// float16 is computed in float32 and rounded once when stored; bool is one
// byte 0/1 (any non-zero byte reads as true); uint8 is unsigned throughout.
// Integer arithmetic wraps; integer division and Mod by 0 give 0, never trap.
// Ops (dtype classes: F float, S signed int, U uint8, B bool):
//   unary   Copy(any: bit copy) Relu Neg Abs Sign(F S U) Clip(F S U; params={min,max}, ±inf = none)
//           Sigmoid Tanh Exp Log Sqrt Reciprocal Floor Ceil Round(half to even) Erf Sin Cos Tan
//           Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Softplus Softsign HardSwish (F)
//           LeakyRelu Elu Celu ThresholdedRelu (F; params={alpha}) Selu (F; {alpha,gamma})
//           HardSigmoid (F; {alpha,beta}) Shrink (F; {bias,lambd}) Not (B; bitwise for S U)
//   binary  Add Sub Mul Div (F S U) Mod (F S U; params={fmod}: 1 = sign of dividend,
//           0 = sign of divisor as in Python) PRelu (F S: x<0 ? x*slope : x)
//           ClipLow ClipHigh (F S U: x<lo ? lo : x, x>hi ? hi : x)
//           And Or Xor (B; bitwise for S U) ShiftLeft ShiftRight (S U; shift >= bits gives 0,
//           or the sign for signed right shifts)
//           Pow (F S U base = dtype = output; exponent inputDTypes[1] any of F S U;
//           integer base and exponent: exact wrapping integer power)
//   n-ary   Sum Mean(F) Max Min (F S U; any number of inputs, at least one)
//   to bool Equal (any) Less Greater LessOrEqual GreaterOrEqual (F S U) IsNaN (F)
//           IsInf (F; params={detect_positive, detect_negative}); outDType is bool
//   Where   in0 bool (inputDTypes[0]), in1 and in2 dtype (any): out = in0 ? in1 : in2
//   Cast    in0 dtype → outDType (any to any): float→int truncates toward zero (NaN → 0,
//           out-of-range saturates at the int32/int64 range, then wraps to 8/16 bits),
//           to bool is != 0 (NaN → true), from bool is 0/1.
struct ElementwiseSpec {
  ops::Elementwise op; // compiler/ops/elementwise.def
  DType dtype = DType::F32;
  uint32_t elements = 0;
  std::vector<bool> scalarInput; // one per input
  std::vector<double> params;
  std::vector<DType> inputDTypes = {}; // one per input, or empty: the op's defaults
  std::optional<DType> outDType = std::nullopt; // nullopt: the op's default (dtype, or bool)
};

// Integer operands of a MatMul or Conv (ONNX MatMulInteger/ConvInteger):
// int8/uint8 elements, each widened to the int32 accumulator and centred on its
// zero point (a compile-time constant) before the multiply. Padding and masked
// lanes contribute 0, i.e. they read as the zero point, as ONNX specifies.
// The accumulator wraps at 32 bits like an int32 register.
struct IntegerOperands {
  DType a = DType::U8, b = DType::I8; // MatMul A and B; Conv in and weights
  int32_t aZero = 0, bZero = 0;
  bool operator==(const IntegerOperands &) const = default;
};

// out[b][m][n] = alpha * sum_k A[b][m][k] * B[b][k][n] + beta * C[b][m][n]
// A is stored [b][m][k], or [b][k][m] if transA. B is stored [b][k][n], or
// [b][n][k] if transB; with broadcastB it has no batch dimension (one B for all b).
// Fields: A, B, C (only if hasC), out. With `integer`, dtype (C and out) is
// int32, A and B are the integer operand types, alpha is 1 and there is no C.
// dtype float16 is computed in float32, and with halfPartials every partial
// sum is rounded to float16 (the AMP accumulating in half, PopART's
// partialsType "half"); the output is rounded once when stored.
struct MatMulSpec {
  DType dtype = DType::F32;
  uint32_t batch = 1, m = 0, n = 0, k = 0;
  bool transA = false, transB = false, broadcastB = false;
  bool hasC = false;
  float alpha = 1.0f, beta = 1.0f;
  bool halfPartials = false; // float16 only
  std::optional<IntegerOperands> integer = std::nullopt;
};

// 2-D convolution of one batch item and one group, for a block of output
// channels and a band of output rows [outRowBegin, outRowBegin+outRows).
// The input field holds rows [inRowBegin, inRowBegin+inRows) of the (unpadded)
// input, all inChannels of the group, all inWidth columns: [inChannels][inRows][inWidth].
// Positions outside [0,inHeight)x[0,inWidth) are zero padding.
// Weights: [outChannels][inChannels][kernelH][kernelW]; bias: [outChannels].
// Out: [outChannels][outRows][outWidth]. Fields: in, weights, bias (if hasBias), out.
// With `integer` (in: a, weights: b), dtype (out) is int32, without bias or relu.
// float16 and halfPartials as for MatMulSpec.
struct ConvSpec {
  DType dtype = DType::F32;
  uint32_t inChannels = 0, outChannels = 0;
  uint32_t inHeight = 0, inWidth = 0;
  int32_t inRowBegin = 0;
  uint32_t inRows = 0;
  uint32_t outRowBegin = 0, outRows = 0, outWidth = 0;
  uint32_t kernelH = 1, kernelW = 1, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int32_t padTop = 0, padLeft = 0;
  bool hasBias = false;
  bool relu = false; // fused activation applied after the bias
  bool halfPartials = false; // float16 only
  std::optional<IntegerOperands> integer = std::nullopt;
  // Integers and flags only: equal specs have equal keys (VertexCodegen's recent-spec cache).
  bool operator==(const ConvSpec &) const = default;
};

// Max or average pooling over a block of channels, same geometry as ConvSpec
// (without weights). Fields: in [channels][inRows][inWidth], out [channels][outRows][outWidth].
struct PoolSpec {
  DType dtype = DType::F32;
  bool max = true;
  bool countIncludePad = false; // average pooling only
  uint32_t channels = 0;
  uint32_t inHeight = 0, inWidth = 0;
  int32_t inRowBegin = 0;
  uint32_t inRows = 0;
  uint32_t outRowBegin = 0, outRows = 0, outWidth = 0;
  uint32_t kernelH = 1, kernelW = 1, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int32_t padTop = 0, padLeft = 0;
  bool operator==(const PoolSpec &) const = default;
};

// Reduces each of `rows` contiguous rows of `cols` elements to one value.
// Ops: Sum Mean Max Min Prod SumSquare L1 L2 LogSum LogSumExp. Fields: in [rows][cols], out [rows].
struct ReduceSpec {
  std::string op;
  DType dtype = DType::F32;
  uint32_t rows = 0, cols = 0;
};

// Softmax (or log-softmax) of each of `rows` contiguous rows of `cols` elements.
// Fields: in [rows][cols], out [rows][cols].
struct SoftmaxSpec {
  DType dtype = DType::F32;
  uint32_t rows = 0, cols = 0;
  bool log = false;
};

// A vertex whose body calls a function of the built-in codelet library
// (compiler/codelets: C++ compiled to bitcode by clang at build time):
//   void <function>(field0*, field1*, ..., int64 args[0], int64 args[1], ...)
// The function is linked into the module, inlined into the vertex and
// specialised on the constant args. `cycles` is the lowering's estimate for
// one execution (like a Poplar vertex's getCycleEstimate).
struct CodeletSpec {
  std::string function; // e.g. "popc_topk_f32"
  std::string name;     // readable vertex type name, e.g. "TopK_r4_c10_k3_f32"
  std::vector<FieldInfo> fields;
  std::vector<int64_t> args;
  uint64_t cycles = 0;
};

using KernelSpec = std::variant<ElementwiseSpec, MatMulSpec, ConvSpec, PoolSpec, ReduceSpec, SoftmaxSpec, CodeletSpec>;

struct VertexTypeInfo {
  std::string name;   // readable and unique, e.g. "MatMul_b1_m4_n16_k8_f32"
  std::string symbol; // entry function name in the module
  std::vector<FieldInfo> fields;
  uint64_t cycles = 0; // estimated cycles for one execution on one worker context
};

// Deterministic, unique text key of a spec (used for dedup and names).
std::string kernelKey(const KernelSpec &spec);

class VertexCodegen {
public:
  VertexCodegen();
  ~VertexCodegen();
  VertexCodegen(const VertexCodegen &) = delete;
  VertexCodegen &operator=(const VertexCodegen &) = delete;
  VertexCodegen(VertexCodegen &&) noexcept;

  // Index of the vertex type for `spec`, generating its function on first use.
  // Throws popc::Error for specs it cannot generate (e.g. an unsupported op/dtype).
  uint32_t getOrCreate(const KernelSpec &spec);
  const std::vector<VertexTypeInfo> &vertexTypes() const;

  // Verifies and optimises the module and returns its bitcode. Deterministic:
  // the same sequence of getOrCreate calls gives identical bytes.
  std::vector<uint8_t> finish();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace popc::codegen
