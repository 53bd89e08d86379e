// compiler/ops/elementwise.def is the one declaration of every elementwise op:
// each layer's table must agree with it.
#include "compiler/codegen/kernels.h"
#include "compiler/ir/op_registry.h"
#include "compiler/lib/lowering.h"
#include "compiler/ops/elementwise.h"
#include "support/error.h"

#include <catch2/catch.hpp>

using namespace popc;

TEST_CASE("every elementwise op has one name, registered where its line says", "[lib][ops]") {
  const ir::OpRegistry &registry = ir::OpRegistry::instance();
  for (ops::Elementwise op : ops::allElementwise()) {
    const ops::ElementwiseInfo &info = ops::info(op);
    const std::string name(info.name);
    INFO(name);
    CHECK(ops::elementwiseFromName(name) == op);
    const ir::OpDef *def = registry.find(name);
    CHECK((def != nullptr) == info.isOnnxOp);
    CHECK((lib::findLowering(name) != nullptr) == (info.lowering != ops::Lowering::None));
    CHECK(info.isOnnxOp == (info.lowering != ops::Lowering::None));
  }
}

TEST_CASE("every elementwise kernel generates code for each dtype class it declares", "[lib][ops]") {
  const std::pair<unsigned, DType> classes[] = {
      {ops::kF, DType::F32}, {ops::kS, DType::I32}, {ops::kU, DType::U8}, {ops::kB, DType::Bool}};
  for (ops::Elementwise op : ops::allElementwise()) {
    const ops::ElementwiseInfo &info = ops::info(op);
    if (info.arity == ops::kNoKernel)
      continue;
    for (auto [cls, dtype] : classes) {
      INFO(info.name << " " << dtypeName(dtype));
      codegen::ElementwiseSpec spec{op, dtype, 8, std::vector<bool>(info.arity == ops::kVariadic ? 3 : info.arity, false), {}};
      for (const auto &param : info.params)
        spec.params.push_back(param.second);
      if (info.signature == ops::Signature::Cast)
        spec.outDType = DType::F64;
      if (info.signature == ops::Signature::Where)
        spec.inputDTypes = {DType::Bool, dtype, dtype};
      codegen::VertexCodegen cg;
      if (info.types & cls)
        CHECK_NOTHROW(cg.getOrCreate(spec));
      else
        CHECK_THROWS_AS(cg.getOrCreate(spec), popc::Error);
    }
  }
}
