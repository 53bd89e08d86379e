// Codelet vertices: a call into the built-in codelet library (compiler/codelets)
// with the vertex's field pointers and constant int64 arguments.
#include "compiler/codegen/kinds.h"
#include "support/error.h"

#include <fmt/format.h>

namespace popc::codegen::detail {

KernelDesc describe(const CodeletSpec &s) {
  if (s.function.rfind("popc_", 0) != 0)
    fail("codegen: codelet function '{}' is not a library codelet (popc_*)", s.function);
  if (s.fields.empty())
    fail("codegen: codelet '{}' has no fields", s.function);
  KernelDesc d;
  d.kind = "codelet";
  d.name = s.name.empty() ? s.function : s.name;
  d.fields = s.fields;
  d.cycles = s.cycles;
  return d;
}

void emit(Emitter &em, const CodeletSpec &s) {
  llvm::IRBuilder<> &b = em.b();
  llvm::Module &module = *b.GetInsertBlock()->getModule();
  std::vector<llvm::Type *> params(s.fields.size(), b.getPtrTy());
  params.insert(params.end(), s.args.size(), b.getInt64Ty());
  llvm::FunctionCallee callee =
      module.getOrInsertFunction(s.function, llvm::FunctionType::get(b.getVoidTy(), params, false));
  std::vector<Value *> args;
  for (size_t i = 0; i < s.fields.size(); ++i)
    args.push_back(em.field(i));
  for (int64_t a : s.args)
    args.push_back(em.i64(a));
  b.CreateCall(callee, args);
}

std::string key(const CodeletSpec &s) {
  std::string k = fmt::format("codelet:{}:{}:", s.function, s.name);
  for (const FieldInfo &f : s.fields)
    k += fmt::format("{}/{}/{},", f.name, f.bytes, int(f.access));
  k += ":";
  for (int64_t a : s.args)
    k += fmt::format("{},", a);
  return k + fmt::format(":{}", s.cycles);
}

} // namespace popc::codegen::detail
