// The bitcode gate's libm allow-list: every listed function is accepted with
// its float/double signature (elementwise vertices call them), a wrong
// signature or an unlisted name is refused.
#include "runtime/bitcode_gate.h"
#include "support/error.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <catch2/catch.hpp>

#include <algorithm>

namespace {

// A vertex "v" that calls `name` once with `arity` arguments of type `t`.
std::unique_ptr<llvm::Module> callingModule(llvm::LLVMContext &ctx, const std::string &name, llvm::Type *t,
                                            unsigned arity) {
  auto m = std::make_unique<llvm::Module>("vertices", ctx);
  llvm::IRBuilder<> b(ctx);
  auto *f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), b.getPtrTy()}, false),
                                   llvm::Function::ExternalLinkage, "v", *m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  std::vector<llvm::Type *> params(arity, t);
  auto callee = m->getOrInsertFunction(name, llvm::FunctionType::get(t, params, false));
  std::vector<llvm::Value *> args(arity, llvm::ConstantFP::get(t, 0.5));
  b.CreateStore(b.CreateCall(callee, args), f->getArg(0));
  b.CreateRetVoid();
  return m;
}

} // namespace

TEST_CASE("bitcode gate allows the elementwise libm functions with their signatures", "[runtime]") {
  llvm::LLVMContext ctx;
  const auto &allowed = popc::runtime::allowedLibmFunctions();
  for (const char *base : {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "fmod"}) {
    const unsigned arity = std::string(base) == "fmod" ? 2 : 1;
    for (bool isFloat : {true, false}) {
      const std::string name = std::string(base) + (isFloat ? "f" : "");
      INFO(name);
      CHECK(std::find(allowed.begin(), allowed.end(), name) != allowed.end());
      llvm::Type *t = isFloat ? llvm::Type::getFloatTy(ctx) : llvm::Type::getDoubleTy(ctx);
      CHECK_NOTHROW(popc::runtime::checkModule(*callingModule(ctx, name, t, arity), "m", {"v"}));
      llvm::Type *wrong = isFloat ? llvm::Type::getDoubleTy(ctx) : llvm::Type::getFloatTy(ctx);
      CHECK_THROWS_WITH(popc::runtime::checkModule(*callingModule(ctx, name, wrong, arity), "m", {"v"}),
                        Catch::Contains("declared with the wrong type"));
    }
  }
  CHECK_THROWS_WITH(
      popc::runtime::checkModule(*callingModule(ctx, "remquof", llvm::Type::getFloatTy(ctx), 2), "m", {"v"}),
      Catch::Contains("external function 'remquof' is not allowed"));
}
