// The training passes and the autodiff they use, on small IR graphs: which
// tensors become variables, what the backward pass and the updates look like,
// and the errors. The numbers are checked on the device against torch
// (test/train, label training).
#include "compiler/ir/autodiff.h"
#include "compiler/passes/passes.h"
#include "support/error.h"
#include "test_graph.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace popc;
using namespace popc::passes::test;

namespace {

// loss = ReduceSum(Relu(x * w + b)), w [3] and b [3] initializers.
ir::Ir tinyModel() {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  g.opset = 13;
  addInput(g, "x", {2, 3});
  addF32(g, "w", {3}, {0.5f, -1.f, 2.f});
  addF32(g, "b", {3}, {0.1f, 0.2f, 0.3f});
  addI64(g, "shape", {1}, {3});
  ir.initializers = {"w", "b", "shape"};
  addOp(g, "Mul", "mul", {"x", "w"}, {"xw"});
  addOp(g, "Add", "add", {"xw", "b"}, {"z"});
  addOp(g, "Relu", "relu", {"z"}, {"r"});
  ir::Attributes keep0;
  keep0.set("keepdims", int64_t(0));
  addOp(g, "ReduceSum", "sum", {"r"}, {"loss"}, keep0);
  g.outputs = {"loss"};
  return ir;
}

bool hasUpdate(const ir::Graph &g, const std::string &variable, int64_t phase) {
  return std::any_of(g.updates.begin(), g.updates.end(),
                     [&](const ir::VariableUpdate &u) { return u.variable == variable && u.phase == phase; });
}

} // namespace

TEST_CASE("autodiff: gradients have their tensor's type and the backward ops verify", "[passes][training]") {
  ir::Ir ir = tinyModel();
  for (const char *w : {"w", "b"})
    ir.main.tensor(w).kind = ir::TensorKind::Variable;
  const auto grads = ir::appendGradients(ir.main, {"loss", {"w", "b"}, 1.0});
  REQUIRE(grads.size() == 2);
  for (const auto &[w, g] : grads)
    CHECK(ir.main.tensor(g).info == ir.main.tensor(w).info);
  ir::inferGraph(ir.main); // the backward ops verify
  // Broadcasting was undone by a ReduceSum over the batch axis.
  const std::vector<std::string> types = opTypes(ir.main);
  CHECK(std::count(types.begin(), types.end(), "ReduceSum") >= 2);
}

TEST_CASE("autodiff: a non-scalar loss, a loss without trainable inputs and an op without a rule are named",
          "[passes][training]") {
  ir::Ir ir = tinyModel();
  ir.main.tensor("w").kind = ir::TensorKind::Variable;
  CHECK_THROWS_WITH(ir::appendGradients(ir.main, {"z", {"w"}, 1.0}),
                    Catch::Contains("loss 'z' is not a scalar: its shape is [2,3]"));
  addF32(ir.main, "unused", {3}, {1.f, 2.f, 3.f});
  CHECK_THROWS_WITH(ir::appendGradients(ir.main, {"loss", {"unused"}, 1.0}),
                    Catch::Contains("does not depend on any trainable tensor"));
  ir::Ir max = tinyModel();
  max.main.tensor("w").kind = ir::TensorKind::Variable;
  ir::Attributes keep0;
  keep0.set("keepdims", int64_t(0));
  addOp(max.main, "Hardmax", "hardmax", {"r"}, {"hard"});
  addOp(max.main, "ReduceSum", "sum", {"hard"}, {"peak"}, keep0);
  CHECK_THROWS_WITH(ir::appendGradients(max.main, {"peak", {"w"}, 1.0}),
                    Catch::Contains("Hardmax 'hardmax': no gradient rule"));
}

TEST_CASE("training passes: float initializers become variables and get torch.optim's updates",
          "[passes][training]") {
  ir::Ir ir = tinyModel();
  ir::TrainingConfig cfg;
  cfg.loss = "loss";
  cfg.optimizer = "adam";
  ir.training = cfg;
  CHECK(passes::setUpTraining(ir) > 0);
  CHECK(ir.main.tensor("w").kind == ir::TensorKind::Variable);
  CHECK(ir.main.tensor("b").kind == ir::TensorKind::Variable);
  CHECK(ir.main.tensor("shape").kind == ir::TensorKind::Constant); // integers are not trained
  passes::buildBackward(ir);
  CHECK(ir.gradients.size() == 2);
  passes::buildOptimizer(ir);
  ir::inferGraph(ir.main);
  for (const char *v : {"w", "b", "Accl1___w", "Accl2___w", "Accl1___b", "Accl2___b", "Step___"})
    CHECK(hasUpdate(ir.main, v, 0));
  CHECK(ir.main.tensor("Accl1___w").kind == ir::TensorKind::Variable);
}

TEST_CASE("training passes: accumulation adds per micro-batch and updates once per step", "[passes][training]") {
  ir::Ir ir = tinyModel();
  ir::TrainingConfig cfg;
  cfg.loss = "loss";
  cfg.optimizer = "momentum";
  cfg.momentum = 0.9;
  cfg.accumulationFactor = 4;
  cfg.replicationFactor = 2;
  ir.training = cfg;
  passes::setUpTraining(ir);
  passes::buildBackward(ir);
  passes::buildOptimizer(ir);
  ir::inferGraph(ir.main);
  CHECK(hasUpdate(ir.main, "Accum___w", 0)); // += g every micro-batch
  CHECK(hasUpdate(ir.main, "Accum___w", 1)); // cleared after the update
  CHECK(hasUpdate(ir.main, "w", 1));
  CHECK(hasUpdate(ir.main, "Accl___w", 1));
  CHECK(hasUpdate(ir.main, "Step___", 1));
  CHECK(std::any_of(ir.main.ops().begin(), ir.main.ops().end(), [](const auto &op) {
    return op->type == "ReplicatedAllReduce" && op->domain == ir::kGraphcoreDomain && op->phase == 1;
  }));
}

TEST_CASE("training passes: a loss that is not in the model and an unknown --trainable are named",
          "[passes][training]") {
  ir::Ir ir = tinyModel();
  ir::TrainingConfig cfg;
  cfg.loss = "nope";
  ir.training = cfg;
  CHECK_THROWS_WITH(passes::setUpTraining(ir), Catch::Contains("--loss nope: the model has no tensor of that name"));
  ir::Ir ir2 = tinyModel();
  cfg.loss = "loss";
  cfg.trainable = {"x"};
  ir2.training = cfg;
  CHECK_THROWS_WITH(passes::setUpTraining(ir2), Catch::Contains("--trainable x: not an initializer"));
}
