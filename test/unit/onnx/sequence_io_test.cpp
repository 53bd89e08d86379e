// Sequence and optional graph inputs/outputs fixed at compile time:
// --sequence-input x=N (inputs x.0 ... x.N-1), sequence outputs y.0, y.1, ...,
// --optional-absent, and the Optional* ops folded.
#include "onnx_test_util.h"

#include "compiler/onnx/importer.h"
#include "support/error.h"

#include <catch2/catch.hpp>

using namespace popc::onnx::test;

namespace {

void addSequenceInput(::onnx::ModelProto &m, const std::string &name, int elemType = ::onnx::TensorProto::FLOAT) {
  auto *v = m.mutable_graph()->add_input();
  v->set_name(name);
  v->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(elemType);
}

void addOptionalInput(::onnx::ModelProto &m, const std::string &name, const std::vector<Dim> &dims) {
  auto *v = m.mutable_graph()->add_input();
  ::onnx::ValueInfoProto inner;
  setType(&inner, name, ::onnx::TensorProto::FLOAT, dims);
  v->set_name(name);
  *v->mutable_type()->mutable_optional_type()->mutable_elem_type() = inner.type();
}

void addSequenceOutput(::onnx::ModelProto &m, const std::string &name) {
  auto *v = m.mutable_graph()->add_output();
  v->set_name(name);
  v->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      ::onnx::TensorProto::FLOAT);
}

} // namespace

TEST_CASE("a sequence input becomes N tensor inputs x.i and a sequence output N outputs y.i", "[onnx][sequences]") {
  TempDir dir;
  auto m = makeModel(13);
  addSequenceInput(m, "x");
  addInput(m, "t", {int64_t(3)});
  addNode(m, "SequenceInsert", {"x", "t"}, {"y"}, "insert"); // [x.0, x.1, t]
  addNode(m, "ConcatFromSequence", {"x"}, {"cat"}, "concat");
  addSequenceOutput(m, "y");
  addOutput(m, "cat");
  const std::string path = save(m, dir.file("seq.onnx"));
  popc::onnx::ImportOptions options;
  options.sequenceLengths = {{"x", 2}};
  options.inputShapes = popc::onnx::parseInputShapes({"x.0=2", "x.1=4"});
  const auto ir = popc::onnx::importOnnx(path, options);
  CHECK(ir.main.inputs == std::vector<std::string>{"x.0", "x.1", "t"});
  CHECK(ir.main.outputs == std::vector<std::string>{"y.0", "y.1", "y.2", "cat"});
  CHECK(ir.main.tensor("y.1").info.shape == popc::Shape{4});
  CHECK(ir.main.tensor("y.2").info.shape == popc::Shape{3});
  CHECK(ir.main.tensor("cat").info.shape == popc::Shape{6});

  SECTION("the length must be given, naming the option") {
    CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}),
                      Catch::Contains("input 'x' is a sequence") && Catch::Contains("--sequence-input x=N"));
  }
  SECTION("element shapes that stay dynamic are named") {
    popc::onnx::ImportOptions partial;
    partial.sequenceLengths = {{"x", 2}};
    CHECK_THROWS_WITH(popc::onnx::importOnnx(path, partial), Catch::Contains("input 'x.0' has no shape"));
  }
  SECTION("an empty sequence") {
    popc::onnx::ImportOptions empty;
    empty.sequenceLengths = {{"x", 0}};
    CHECK_THROWS_WITH(popc::onnx::importOnnx(path, empty),
                      Catch::Contains("ConcatFromSequence node 'concat': concatenating an empty sequence"));
    auto noConcat = m;
    noConcat.mutable_graph()->mutable_node()->RemoveLast();
    noConcat.mutable_graph()->mutable_output()->RemoveLast();
    const auto ir0 = popc::onnx::importOnnx(save(noConcat, dir.file("empty.onnx")), empty);
    CHECK(ir0.main.inputs == std::vector<std::string>{"t"});
    CHECK(ir0.main.outputs == std::vector<std::string>{"y.0"});
  }
  SECTION("options naming inputs that are not sequences") {
    popc::onnx::ImportOptions bad;
    bad.sequenceLengths = {{"t", 2}};
    CHECK_THROWS_WITH(popc::onnx::importOnnx(path, bad), Catch::Contains("input 't' is a tensor, not a sequence"));
    bad.sequenceLengths = {{"nosuch", 2}};
    CHECK_THROWS_WITH(popc::onnx::importOnnx(path, bad), Catch::Contains("unknown input 'nosuch'"));
  }
  CHECK_THROWS_WITH(popc::onnx::parseSequenceLengths({"x=-1"}), Catch::Contains("expected name=N"));
  CHECK(popc::onnx::parseSequenceLengths({"a=b=3"}) == std::map<std::string, int64_t>{{"a=b", 3}});
}

TEST_CASE("optional inputs are present or absent at compile time and OptionalHasElement folds", "[onnx][sequences]") {
  TempDir dir;
  auto m = makeModel(15);
  addOptionalInput(m, "o", {int64_t(4)});
  addNode(m, "OptionalHasElement", {"o"}, {"has"}, "has");
  addOutput(m, "has", ::onnx::TensorProto::BOOL);
  const std::string path = save(m, dir.file("opt.onnx"));

  const auto present = popc::onnx::importOnnx(path, {});
  CHECK(present.main.inputs == std::vector<std::string>{"o"});
  REQUIRE(present.main.tensor("has").kind == popc::ir::TensorKind::Constant);
  CHECK(present.main.tensor("has").toDoubles() == std::vector<double>{1});

  popc::onnx::ImportOptions options;
  options.absentOptionals = {"o"};
  const auto absent = popc::onnx::importOnnx(path, options);
  CHECK(absent.main.inputs.empty());
  CHECK(absent.main.tensor("has").toDoubles() == std::vector<double>{0});

  SECTION("OptionalGetElement of an absent optional is refused, naming the node") {
    auto g = makeModel(15);
    addOptionalInput(g, "o", {int64_t(4)});
    addNode(g, "OptionalGetElement", {"o"}, {"v"}, "get");
    addOutput(g, "v");
    CHECK_THROWS_WITH(popc::onnx::importOnnx(save(g, dir.file("get.onnx")), options),
                      Catch::Contains("OptionalGetElement node 'get': optional 'o' is empty at compile time"));
    const auto ok = popc::onnx::importOnnx(dir.file("get.onnx"), {});
    CHECK(ok.main.tensor("v").info.shape == popc::Shape{4});
  }
}
