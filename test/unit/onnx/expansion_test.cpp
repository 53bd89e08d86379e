// Import-time specialisation: ONNX function ops expanded into their bodies,
// If/Loop with compile-time control values replaced by straight-line nodes.
#include "onnx_test_util.h"

#include "compiler/onnx/importer.h"
#include "support/error.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

using namespace popc::onnx::test;

namespace {

bool hasOp(const popc::ir::Ir &ir, const std::string &type) {
  for (const auto &op : ir.main.ops())
    if (op->type == type)
      return true;
  return false;
}

::onnx::GraphProto branch(const std::string &out, float value) {
  ::onnx::GraphProto g;
  auto *n = g.add_node();
  n->set_op_type("Constant");
  n->add_output(out);
  auto *a = n->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  *a->mutable_t() = floatTensor("", {1}, {value});
  setType(g.add_output(), out, ::onnx::TensorProto::FLOAT, {int64_t(1)});
  return g;
}

::onnx::TensorProto boolScalar(const std::string &name, bool v) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::BOOL);
  t.add_int32_data(v ? 1 : 0);
  return t;
}

void addGraphAttr(::onnx::NodeProto *n, const std::string &name, const ::onnx::GraphProto &g) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

::onnx::ModelProto ifModel(bool condIsInput) {
  auto m = makeModel();
  if (condIsInput)
    setType(m.mutable_graph()->add_input(), "cond", ::onnx::TensorProto::BOOL, {});
  else
    *m.mutable_graph()->add_initializer() = boolScalar("cond", false);
  auto *n = addNode(m, "If", {"cond"}, {"y"}, "if");
  addGraphAttr(n, "then_branch", branch("t", 1.0f));
  addGraphAttr(n, "else_branch", branch("e", 2.0f));
  addOutput(m, "y");
  return m;
}

} // namespace

TEST_CASE("LayerNormalization is imported as its ONNX function body", "[onnx][expansion]") {
  TempDir dir;
  auto m = makeModel(17);
  addInput(m, "x", {int64_t(2), int64_t(4)});
  *m.mutable_graph()->add_initializer() = floatTensor("scale", {4}, {1, 1, 1, 1});
  *m.mutable_graph()->add_initializer() = floatTensor("bias", {4}, {0, 0, 0, 0});
  addNode(m, "LayerNormalization", {"x", "scale", "bias"}, {"y"}, "ln");
  setType(m.mutable_graph()->add_output(), "y", ::onnx::TensorProto::FLOAT, {int64_t(2), int64_t(4)});
  const auto ir = popc::onnx::importOnnx(save(m, dir.file("ln.onnx")), {});
  CHECK_FALSE(hasOp(ir, "LayerNormalization"));
  CHECK(hasOp(ir, "ReduceMean"));
  CHECK(ir.main.tensor("y").info.shape == popc::Shape{2, 4});
}

TEST_CASE("If with a constant condition becomes the branch it takes", "[onnx][expansion]") {
  TempDir dir;
  const auto ir = popc::onnx::importOnnx(save(ifModel(false), dir.file("if.onnx")), {});
  CHECK_FALSE(hasOp(ir, "If"));
  // Else branch: the output is the constant 2.
  const auto &ops = ir.main.ops();
  REQUIRE(ops.size() == 1);
  CHECK(ops[0]->type == "Identity");
  const auto &src = ir.main.tensor(ops[0]->inputs[0]);
  REQUIRE(src.data.size() == 4);
  float v;
  std::memcpy(&v, src.data.data(), 4);
  CHECK(v == 2.0f);
}

TEST_CASE("If on a graph input says which input to freeze, and compiles once frozen", "[onnx][expansion]") {
  TempDir dir;
  const std::string path = save(ifModel(true), dir.file("if_input.onnx"));
  try {
    popc::onnx::importOnnx(path, {});
    FAIL("expected an error");
  } catch (const popc::Error &e) {
    CHECK(e.inputNeedingValue() == "cond");
    CHECK_THAT(e.what(), Catch::Contains("--freeze-input cond="));
  }
  popc::onnx::ImportOptions options;
  popc::ir::Tensor cond;
  cond.name = "cond";
  cond.info = {popc::DType::Bool, {}};
  cond.data = {1};
  options.frozenInputs.emplace("cond", cond);
  const auto ir = popc::onnx::importOnnx(path, options);
  CHECK(ir.main.inputs.empty());
  CHECK_FALSE(hasOp(ir, "If"));
}

TEST_CASE("Loop with a constant trip count is unrolled, scan outputs concatenated", "[onnx][expansion]") {
  TempDir dir;
  auto m = makeModel();
  addInput(m, "x", {int64_t(2)});
  *m.mutable_graph()->add_initializer() = int64Tensor("M", {3});
  m.mutable_graph()->mutable_initializer()->rbegin()->clear_dims(); // scalar
  *m.mutable_graph()->add_initializer() = boolScalar("c", true);
  ::onnx::GraphProto body;
  setType(body.add_input(), "i", ::onnx::TensorProto::INT64, {});
  setType(body.add_input(), "cin", ::onnx::TensorProto::BOOL, {});
  setType(body.add_input(), "acc", ::onnx::TensorProto::FLOAT, {int64_t(2)});
  auto *id = body.add_node();
  id->set_op_type("Identity");
  id->add_input("cin");
  id->add_output("cout");
  auto *add = body.add_node();
  add->set_op_type("Add");
  add->add_input("acc");
  add->add_input("x"); // outer-scope value
  add->add_output("next");
  setType(body.add_output(), "cout", ::onnx::TensorProto::BOOL, {});
  setType(body.add_output(), "next", ::onnx::TensorProto::FLOAT, {int64_t(2)});
  setType(body.add_output(), "next", ::onnx::TensorProto::FLOAT, {int64_t(2)});
  auto *loop = addNode(m, "Loop", {"M", "c", "x"}, {"final", "scan"}, "loop");
  addGraphAttr(loop, "body", body);
  addOutput(m, "final");
  addOutput(m, "scan");
  const auto ir = popc::onnx::importOnnx(save(m, dir.file("loop.onnx")), {});
  CHECK_FALSE(hasOp(ir, "Loop"));
  CHECK(std::count_if(ir.main.ops().begin(), ir.main.ops().end(), [](const auto &op) { return op->type == "Add"; }) == 3);
  CHECK(ir.main.tensor("final").info.shape == popc::Shape{2});
  CHECK(ir.main.tensor("scan").info.shape == popc::Shape{3, 2});
}

TEST_CASE("static sequences resolve into tensor ops: construct, insert, erase, at, length, concat, split",
          "[onnx][sequences]") {
  TempDir dir;
  auto m = makeModel(13);
  addInput(m, "a", {int64_t(2), int64_t(3)});
  addInput(m, "b", {int64_t(1), int64_t(3)});
  *m.mutable_graph()->add_initializer() = int64Tensor("one", {1});
  m.mutable_graph()->mutable_initializer(0)->clear_dims(); // a scalar position
  addNode(m, "SequenceConstruct", {"a", "a"}, {"s1"}, "construct");
  addNode(m, "SequenceInsert", {"s1", "b", "one"}, {"s2"}, "insert"); // [a, b, a]
  addNode(m, "SequenceErase", {"s2"}, {"s3"}, "erase");               // [a, b]
  addNode(m, "SequenceAt", {"s3", "one"}, {"at"}, "at");               // b
  addNode(m, "SequenceLength", {"s2"}, {"len"}, "length");             // 3
  addNode(m, "ConcatFromSequence", {"s3"}, {"cat"}, "concat");         // [3, 3]
  auto *split = addNode(m, "SplitToSequence", {"cat"}, {"parts"}, "split");
  setIntAttr(split, "keepdims", 0); // three [3] rows
  auto *stack = addNode(m, "ConcatFromSequence", {"parts"}, {"stacked"}, "stack");
  setIntAttr(stack, "axis", -1);
  setIntAttr(stack, "new_axis", 1); // [3, 3] again, transposed
  for (const char *out : {"at", "len", "cat", "stacked"})
    addOutput(m, out, std::string(out) == "len" ? ::onnx::TensorProto::INT64 : ::onnx::TensorProto::FLOAT);
  const auto ir = popc::onnx::importOnnx(save(m, dir.file("seq.onnx")), {});
  for (const char *op : {"SequenceConstruct", "SequenceAt", "ConcatFromSequence", "SplitToSequence"})
    CHECK_FALSE(hasOp(ir, op));
  CHECK(ir.main.tensor("at").info.shape == popc::Shape{1, 3});
  CHECK(ir.main.tensor("cat").info.shape == popc::Shape{3, 3});
  CHECK(ir.main.tensor("stacked").info.shape == popc::Shape{3, 3});
  const auto &len = ir.main.tensor("len");
  REQUIRE(len.kind == popc::ir::TensorKind::Constant);
  CHECK(len.toDoubles() == std::vector<double>{3});
}

TEST_CASE("sequences that cannot be resolved at compile time are refused with the node named", "[onnx][sequences]") {
  TempDir dir;
  SECTION("a sequence reaching a tensor op") {
    auto m = makeModel(13);
    addInput(m, "a", {int64_t(2)});
    addNode(m, "SequenceConstruct", {"a"}, {"s"}, "construct");
    addNode(m, "Relu", {"s"}, {"y"}, "relu");
    addOutput(m, "y");
    CHECK_THROWS_WITH(popc::onnx::importOnnx(save(m, dir.file("out.onnx")), {}),
                      Catch::Contains("node 'relu' (Relu) takes sequence 's' as an input"));
  }
  SECTION("a position out of range") {
    auto m = makeModel(13);
    addInput(m, "a", {int64_t(2)});
    *m.mutable_graph()->add_initializer() = int64Tensor("five", {5});
    addNode(m, "SequenceConstruct", {"a"}, {"s"}, "construct");
    addNode(m, "SequenceAt", {"s", "five"}, {"y"}, "at");
    addOutput(m, "y");
    CHECK_THROWS_WITH(popc::onnx::importOnnx(save(m, dir.file("pos.onnx")), {}),
                      Catch::Contains("SequenceAt node 'at': position 5 is outside the sequence of 1 tensors"));
  }
  SECTION("a position fed at run time names the input to freeze") {
    auto m = makeModel(13);
    addInput(m, "a", {int64_t(2)});
    addInput(m, "i", {}, ::onnx::TensorProto::INT64);
    addNode(m, "SequenceConstruct", {"a", "a"}, {"s"}, "construct");
    addNode(m, "SequenceAt", {"s", "i"}, {"y"}, "at");
    addOutput(m, "y");
    try {
      popc::onnx::importOnnx(save(m, dir.file("input.onnx")), {});
      FAIL("expected an error");
    } catch (const popc::Error &e) {
      CHECK_THAT(e.what(), Catch::Contains("--freeze-input i="));
      CHECK(e.inputNeedingValue() == "i");
    }
  }
}
