// Internal to compiler/codegen: one describe/emit/key triple per kernel kind,
// implemented in <kind>.cpp and dispatched by vertex_codegen.cpp.
#pragma once
#include "compiler/codegen/emitter.h"
#include "compiler/codegen/kernels.h"

#include <cstdint>
#include <string>
#include <vector>

namespace popc::codegen::detail {

struct KernelDesc {
  std::string kind;               // lower case, used in symbols: "v<index>_<kind>"
  std::string name;               // readable, unique per key
  std::vector<FieldInfo> fields;  // in ABI order
  uint64_t cycles = 0;            // one execution on one worker context
  // Optional fields: (field, stand-in). A vertex without the field passes the
  // stand-in's offset in its place; the body gets a flag per pair (present =
  // the offsets differ, Emitter::present), so one type serves both vertices.
  // The stand-in must hold at least the field's bytes (the field may be read
  // before the flag selects the value).
  std::vector<std::pair<uint32_t, uint32_t>> optionalFields;
  // Key of the code when it differs from the type's key(): specs that differ
  // only in numbers passed as immediates (FieldAccess::Immediate, after the
  // memory fields) share one function. Empty: the type's own key.
  std::string codeKey;
};

// describe() validates the spec completely (throws popc::Error) so emit()
// never fails half-way through a function. key() encodes every field of the spec.
// emit() reads immediates from the fields (Emitter::immediate), never from the
// spec: one function serves every spec with the same codeKey.
KernelDesc describe(const ElementwiseSpec &s);
void emit(Emitter &em, const ElementwiseSpec &s);
std::string key(const ElementwiseSpec &s);

KernelDesc describe(const MatMulSpec &s);
void emit(Emitter &em, const MatMulSpec &s);
std::string key(const MatMulSpec &s);

KernelDesc describe(const ConvSpec &s);
void emit(Emitter &em, const ConvSpec &s);
std::string key(const ConvSpec &s);

KernelDesc describe(const PoolSpec &s);
void emit(Emitter &em, const PoolSpec &s);
std::string key(const PoolSpec &s);

KernelDesc describe(const ReduceSpec &s);
void emit(Emitter &em, const ReduceSpec &s);
std::string key(const ReduceSpec &s);

KernelDesc describe(const CodeletSpec &s);
void emit(Emitter &em, const CodeletSpec &s);
std::string key(const CodeletSpec &s);

KernelDesc describe(const SoftmaxSpec &s);
void emit(Emitter &em, const SoftmaxSpec &s);
std::string key(const SoftmaxSpec &s);

} // namespace popc::codegen::detail
