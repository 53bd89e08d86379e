#include "compiler/passes/passes.h"
#include "test/unit/passes/test_graph.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::passes::test;

namespace {
ir::Attributes pool(std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> dilations,
                    std::vector<int64_t> pads) {
  ir::Attributes a;
  a.set("kernel_shape", kernel);
  a.set("strides", strides);
  a.set("dilations", dilations);
  a.set("pads", pads);
  return a;
}
} // namespace

TEST_CASE("maxpool-rewrites: a dilated pool that reads every d-th element is a Slice and an undilated pool",
          "[passes]") {
  ir::Ir ir;
  ir.main.opset = 13;
  addInput(ir.main, "x", {1, 1, 22000});
  addOp(ir.main, "MaxPool", "p", {"x"}, {"y"}, pool({200}, {10}, {10}, {100, 100}));
  ir.main.outputs = {"y"};
  const Shape before = ir.main.tensor("y").info.shape;
  CHECK(passes::rewriteMaxPools(ir) == 1);
  CHECK(opTypes(ir.main) == std::vector<std::string>{"Slice", "MaxPool"});
  const ir::Op &p = *ir.main.ops()[1];
  CHECK(p.attrs.getInts("strides") == std::vector<int64_t>{1});
  CHECK(p.attrs.getInts("dilations") == std::vector<int64_t>{1});
  CHECK(p.attrs.getInts("pads") == std::vector<int64_t>{10, 10});
  CHECK(ir.main.tensor("y").info.shape == before);
}

TEST_CASE("maxpool-rewrites: a large 2-D kernel becomes one pool per dimension, small ones stay", "[passes]") {
  ir::Ir ir;
  ir.main.opset = 13;
  addInput(ir.main, "x", {1, 2, 100, 100});
  addOp(ir.main, "MaxPool", "big", {"x"}, {"y"}, pool({20, 30}, {2, 3}, {1, 1}, {1, 2, 1, 2}));
  addOp(ir.main, "MaxPool", "small", {"y"}, {"z"}, pool({3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}));
  ir.main.outputs = {"z"};
  const Shape before = ir.main.tensor("y").info.shape;
  CHECK(passes::rewriteMaxPools(ir) == 1);
  CHECK(opTypes(ir.main) == std::vector<std::string>{"MaxPool", "MaxPool", "MaxPool"});
  CHECK(ir.main.ops()[0]->attrs.getInts("kernel_shape") == std::vector<int64_t>{20, 1});
  CHECK(ir.main.ops()[0]->attrs.getInts("pads") == std::vector<int64_t>{1, 0, 1, 0});
  CHECK(ir.main.ops()[1]->attrs.getInts("kernel_shape") == std::vector<int64_t>{1, 30});
  CHECK(ir.main.ops()[1]->attrs.getInts("strides") == std::vector<int64_t>{1, 3});
  CHECK(ir.main.tensor("y").info.shape == before);
}
