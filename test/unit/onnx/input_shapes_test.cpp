#include "compiler/onnx/importer.h"
#include "onnx_test_util.h"

using namespace popc;
using namespace popc::onnx::test;
using Catch::Matchers::Contains;

TEST_CASE("parseInputShapes", "[onnx]") {
  auto shapes = popc::onnx::parseInputShapes({"data=1,3,224,224", "a=b=5"});
  CHECK(shapes.at("data") == Shape{1, 3, 224, 224});
  CHECK(shapes.at("a=b") == Shape{5});
  CHECK_THROWS_WITH(popc::onnx::parseInputShapes({"data"}), Contains("expected name=d0,d1,..."));
  CHECK_THROWS_WITH(popc::onnx::parseInputShapes({"=1,2"}), Contains("expected name=d0,d1,..."));
  CHECK_THROWS_WITH(popc::onnx::parseInputShapes({"x="}), Contains("no dimensions"));
  CHECK_THROWS_WITH(popc::onnx::parseInputShapes({"x=1,,2"}), Contains("dimension '' is not a positive integer"));
  CHECK_THROWS_WITH(popc::onnx::parseInputShapes({"x=1,-2"}), Contains("dimension '-2' is not a positive integer"));
  CHECK_THROWS_WITH(popc::onnx::parseInputShapes({"x=1,a"}), Contains("dimension 'a'"));
  CHECK_THROWS_WITH(popc::onnx::parseInputShapes({"x=1", "x=2"}), "--input-shape: input 'x' is given twice");
}

TEST_CASE("input-shape override fixes a dynamic dim", "[onnx]") {
  TempDir dir;
  const std::string path = save(gemmModel(std::string("batch")), dir.file("dyn.onnx"));
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}),
                    path + ": input 'X' [batch,3] has dynamic dimension 0 ('batch'); popc needs static "
                           "shapes: fix it with --input-shape X=1,3");
  popc::onnx::ImportOptions options;
  options.inputShapes = popc::onnx::parseInputShapes({"X=5,3"});
  ir::Ir ir = popc::onnx::importOnnx(path, options);
  CHECK(ir.main.tensor("X").info.shape == Shape{5, 3});
  CHECK(ir.main.tensor("Y").info.shape == Shape{5, 4});
}

TEST_CASE("input-shape override error paths", "[onnx]") {
  TempDir dir;
  const std::string path = save(gemmModel(std::string("batch")), dir.file("dyn.onnx"));
  popc::onnx::ImportOptions unknown;
  unknown.inputShapes = {{"W", {4, 3}}}; // an initializer, not an input
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, unknown),
                    path + ": --input-shape names unknown input 'W'; the model's inputs are: X");
  popc::onnx::ImportOptions rank;
  rank.inputShapes = {{"X", {1, 3, 1}}};
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, rank),
                    path + ": --input-shape X=1,3,1: input 'X' has rank 2 [batch,3], but 3 dims were given");
  popc::onnx::ImportOptions wrong;
  wrong.inputShapes = {{"X", {2, 5}}}; // contradicts W: caught by inference
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, wrong), Catch::Matchers::StartsWith(path + ": "));
}

TEST_CASE("an input without any shape needs --input-shape", "[onnx]") {
  TempDir dir;
  auto m = makeModel();
  setType(m.mutable_graph()->add_input(), "x", ::onnx::TensorProto::FLOAT, {}, /*withShape=*/false);
  addNode(m, "Relu", {"x"}, {"y"}, "r");
  addOutput(m, "y");
  const std::string path = save(m, dir.file("noshape.onnx"));
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}), Contains("input 'x' has no shape; give one with --input-shape x="));
  popc::onnx::ImportOptions options;
  options.inputShapes = {{"x", {2, 2}}};
  CHECK(popc::onnx::importOnnx(path, options).main.tensor("y").info.shape == Shape{2, 2});
}
