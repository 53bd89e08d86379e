#include "compiler/onnx/importer.h"
#include "onnx_test_util.h"

using namespace popc;
using namespace popc::onnx::test;
using Catch::Matchers::Contains;

namespace {
// gemmModel() with W stored in `location` at `offset` (16 junk bytes first).
std::string externalModel(const TempDir &dir, const std::string &location, int64_t offset,
                          int64_t length, bool writeData = true) {
  auto m = gemmModel();
  auto *w = m.mutable_graph()->mutable_initializer(0);
  std::string bytes = std::string(16, 'j') + w->raw_data();
  if (writeData)
    writeFile(dir.file("weights.bin"), bytes);
  w->clear_raw_data();
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto add = [&](const char *k, const std::string &v) {
    auto *kv = w->add_external_data();
    kv->set_key(k);
    kv->set_value(v);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  if (length >= 0)
    add("length", std::to_string(length));
  return save(m, dir.file("ext.onnx"));
}
} // namespace

TEST_CASE("external data is loaded from next to the model", "[onnx]") {
  TempDir dir;
  ir::Ir ir = popc::onnx::importOnnx(externalModel(dir, "weights.bin", 16, 48), {});
  auto w = ir.main.tensor("W").toDoubles();
  REQUIRE(w.size() == 12);
  CHECK(w[0] == 0.0);
  CHECK(w[11] == 11.0);
  // Without length: to the end of the file.
  ir::Ir ir2 = popc::onnx::importOnnx(externalModel(dir, "weights.bin", 16, -1), {});
  CHECK(ir2.main.tensor("W").toDoubles()[5] == 5.0);
}

TEST_CASE("external data errors", "[onnx]") {
  TempDir dir;
  std::string path = externalModel(dir, "../weights.bin", 16, 48);
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}),
                    Contains(path + ": initializer 'W': external data location '../weights.bin' is outside "
                                    "the model's directory"));
  path = externalModel(dir, "/etc/passwd", 0, 48);
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}), Contains("must be relative to the model's directory"));
  path = externalModel(dir, "weights.bin", 100, 48);
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}),
                    path + ": initializer 'W': external data offset 100 is past the end of 'weights.bin' (64 bytes)");
  path = externalModel(dir, "weights.bin", 32, 48);
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}), Contains("offset 32 + length 48 is past the end"));
  path = externalModel(dir, "weights.bin", 0, 48); // wrong length for [4,3] f32? no: 48 bytes, but junk
  CHECK_NOTHROW(popc::onnx::importOnnx(path, {}));
  path = externalModel(dir, "weights.bin", 20, 40);
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}), Contains("raw_data has 40 bytes, expected 48"));
  path = externalModel(dir, "nothere.bin", 0, 48);
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}), Contains("external data file 'nothere.bin' not found"));
}

TEST_CASE("external data written by onnx's python API", "[onnx]") {
  const char *python = std::getenv("POPC_PYTHON");
  if (!python)
    python = "/usr/bin/python3";
  TempDir dir;
  const std::string script = dir.file("make.py");
  writeFile(script, R"(
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "W")
g = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")], "g",
                      [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", 3])],
                      [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], [w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.save_model(m, sys.argv[1], save_as_external_data=True, all_tensors_to_one_file=True,
                location="model.data", size_threshold=0)
)");
  const std::string model = dir.file("model.onnx");
  REQUIRE(std::system((std::string(python) + " " + script + " " + model).c_str()) == 0);
  popc::onnx::ImportOptions options;
  options.inputShapes = {{"X", {2, 3}}};
  ir::Ir ir = popc::onnx::importOnnx(model, options);
  CHECK(ir.main.tensor("Y").info.shape == Shape{2, 4});
  CHECK(ir.main.tensor("W").toDoubles()[7] == 7.0);
}

TEST_CASE("external data through a symlink leaving the model directory is refused", "[onnx]") {
  TempDir outside;
  TempDir dir;
  writeFile(outside.file("secret.bin"), std::string(64, 'x'));
  fs::create_symlink(outside.file("secret.bin"), dir.file("link.bin"));
  const std::string path = externalModel(dir, "link.bin", 0, 48, /*writeData=*/false);
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}), Contains("is outside the model's directory"));
}
