#include "compiler/ir/printer.h"
#include "compiler/onnx/importer.h"
#include "onnx_test_util.h"

using namespace popc;
using namespace popc::onnx::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("import a Gemm model", "[onnx]") {
  TempDir dir;
  auto m = gemmModel();
  // Old exporters also list initializers as graph inputs: they stay constants.
  setType(m.mutable_graph()->add_input(), "W", ::onnx::TensorProto::FLOAT, {int64_t(4), int64_t(3)});
  const std::string path = save(m, dir.file("gemm.onnx"));
  ir::Ir ir = popc::onnx::importOnnx(path, {});
  const ir::Graph &g = ir.main;
  CHECK(ir.modelName == "test_graph");
  CHECK(ir.opsetVersion == 13);
  CHECK(g.opset == 13);
  CHECK(g.inputs == std::vector<std::string>{"X"});
  CHECK(g.outputs == std::vector<std::string>{"Y"});
  REQUIRE(g.ops().size() == 1);
  const ir::Op &op = *g.ops()[0];
  CHECK(op.type == "Gemm");
  CHECK(op.name == "gemm0");
  CHECK(op.attrs.getInt("transB") == 1);
  CHECK(g.tensor("W").kind == ir::TensorKind::Constant);
  CHECK(g.tensor("W").toDoubles()[11] == 11.0);
  CHECK(g.tensor("B").toDoubles() == std::vector<double>{1, 2, 3, 4});
  CHECK(g.tensor("Y").info == ir::TensorInfo{DType::F32, {2, 4}});
  CHECK_THAT(ir::printIr(ir), Contains("%Y: f32[2,4] = Gemm[name=gemm0](%X, %W, %B) {transB=1}"));
}

TEST_CASE("unsupported operators are listed in one error", "[onnx]") {
  TempDir dir;
  auto m = makeModel();
  addInput(m, "x", {int64_t(1), int64_t(4)});
  addNode(m, "Unique", {"x"}, {"a"}, "unique_1");
  addNode(m, "Relu", {"a"}, {"b"}, "relu");
  addNode(m, "Unique", {"b"}, {"c"}, "unique_2");
  addNode(m, "Foo", {"c"}, {"d"}, "n3");
  addNode(m, "Bar", {"d"}, {"e"}, "", "com.example");
  auto *imp = m.add_opset_import();
  imp->set_domain("com.example");
  imp->set_version(1);
  addOutput(m, "e");
  const std::string path = save(m, dir.file("model.onnx"));
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}),
                    path + ": unsupported operators (ai.onnx opset 13): Unique (nodes: unique_1, unique_2); Foo (nodes: n3); "
                           "Bar (domain com.example version 1, which popc does not implement; nodes: Bar_4)");
}

TEST_CASE("not an ONNX file, truncated file, directory, missing file", "[onnx]") {
  TempDir dir;
  const std::string text = dir.file("x.onnx");
  writeFile(text, "hello, this is not a protobuf\n");
  CHECK_THROWS_WITH(popc::onnx::importOnnx(text, {}), StartsWith(text + ": not an ONNX model (not a protobuf"));
  const std::string empty = dir.file("empty.onnx");
  writeFile(empty, "");
  CHECK_THROWS_WITH(popc::onnx::importOnnx(empty, {}), empty + ": not an ONNX model (the file is empty)");

  std::string bytes;
  gemmModel().SerializeToString(&bytes);
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t(10)}) {
    const std::string truncated = dir.file("trunc.onnx");
    writeFile(truncated, bytes.substr(0, cut));
    INFO("cut at " << cut << " of " << bytes.size());
    CHECK_THROWS_WITH(popc::onnx::importOnnx(truncated, {}),
                      StartsWith(truncated + ": ONNX model truncated: the file ends at byte " + std::to_string(cut)));
  }
  CHECK_THROWS_WITH(popc::onnx::importOnnx(dir.path().string(), {}),
                    StartsWith(dir.path().string() + ": is a directory, not an ONNX model file"));
  CHECK_THROWS_WITH(popc::onnx::importOnnx(dir.file("missing.onnx"), {}), Contains("cannot open file"));
}

TEST_CASE("an undefined node input is reported on one line naming file, node and tensor", "[onnx]") {
  TempDir dir;
  auto m = gemmModel();
  m.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  const std::string path = save(m, dir.file("bad.onnx"));
  try {
    popc::onnx::importOnnx(path, {});
    FAIL("expected an error");
  } catch (const Error &e) {
    std::string msg = e.what();
    CHECK_THAT(msg, StartsWith(path + ": "));
    CHECK_THAT(msg, Contains("gemm0") && Contains("'nowhere'"));
    CHECK(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("a Conv on a rank-2 input is refused before onnx's shape inference (which crashes on it)", "[onnx]") {
  const std::string path = std::string(POPC_SOURCE_DIR_FOR_TESTS) + "/fuzz/findings/onnx-conv-rank2-input.onnx";
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}), Contains("1 to 3 spatial dims"));
}

TEST_CASE("shape errors found by inference name the file and node", "[onnx]") {
  TempDir dir;
  auto m = makeModel();
  addInput(m, "a", {int64_t(2), int64_t(3)});
  addInput(m, "b", {int64_t(4), int64_t(5)});
  addNode(m, "MatMul", {"a", "b"}, {"c"}, "mm");
  addOutput(m, "c");
  const std::string path = save(m, dir.file("mm.onnx"));
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}), StartsWith(path + ": "));
}

TEST_CASE("node names, Constant folding, IPU annotations, tensor attributes", "[onnx]") {
  TempDir dir;
  auto m = makeModel();
  addInput(m, "x", {int64_t(2), int64_t(6)});
  auto *c = addNode(m, "Constant", {}, {"shape"});
  auto *a = c->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  *a->mutable_t() = int64Tensor("", {3, 4});
  auto *r = addNode(m, "Reshape", {"x", "shape"}, {"y"});
  setIntAttr(r, "__ipu_number", 1);
  setIntAttr(r, "__pipeline_stage", 2);
  addNode(m, "Relu", {"y"}, {"z"}, "act");
  addNode(m, "Relu", {"z"}, {"w"}, "act");
  addOutput(m, "w");
  const std::string path = save(m, dir.file("names.onnx"));
  ir::Ir ir = popc::onnx::importOnnx(path, {});
  const ir::Graph &g = ir.main;
  REQUIRE(g.ops().size() == 3);
  CHECK(g.ops()[0]->name == "Reshape_1");
  CHECK(g.ops()[0]->ipu == 1);
  CHECK(g.ops()[0]->pipelineStage == 2);
  CHECK(g.ops()[0]->attrs.all().empty());
  CHECK(g.ops()[1]->name == "act");
  CHECK(g.ops()[2]->name == "act_1");
  CHECK(g.tensor("shape").kind == ir::TensorKind::Constant);
  CHECK(g.tensor("shape").toInt64s() == std::vector<int64_t>{3, 4});
  CHECK(g.tensor("w").info.shape == Shape{3, 4});
}

TEST_CASE("legacy opsets are upgraded by the ONNX version converter, unsupported dtypes are rejected clearly", "[onnx]") {
  TempDir dir;
  auto m = makeModel(6);
  addInput(m, "a", {int64_t(2)});
  addInput(m, "b", {int64_t(2)});
  addNode(m, "Add", {"a", "b"}, {"c"}, "add");
  addOutput(m, "c");
  const std::string path = save(m, dir.file("old.onnx"));
  const auto ir = popc::onnx::importOnnx(path, {});
  CHECK(ir.main.opset == 9);
  CHECK(ir.main.ops().front()->type == "Add");

  auto s = makeModel();
  addInput(s, "a", {int64_t(2)}, ::onnx::TensorProto::STRING);
  addNode(s, "Identity", {"a"}, {"b"}, "id");
  addOutput(s, "b", ::onnx::TensorProto::STRING);
  const std::string spath = save(s, dir.file("str.onnx"));
  CHECK_THROWS_WITH(popc::onnx::importOnnx(spath, {}), Contains("input 'a': element type STRING is not supported"));
}

TEST_CASE("initializers of every supported dtype, raw and typed fields", "[onnx]") {
  TempDir dir;
  auto m = makeModel();
  using TP = ::onnx::TensorProto;
  struct Case {
    const char *name;
    int type;
    DType dtype;
    std::vector<double> values;
  };
  const Case cases[] = {
      {"f32", TP::FLOAT, DType::F32, {1.5, -2}},   {"f64", TP::DOUBLE, DType::F64, {0.25, 3}},
      {"i32", TP::INT32, DType::I32, {-7, 9}},     {"i64", TP::INT64, DType::I64, {1LL << 40, -1}},
      {"i8", TP::INT8, DType::I8, {-128, 127}},    {"u8", TP::UINT8, DType::U8, {0, 255}},
      {"b", TP::BOOL, DType::Bool, {1, 0}},        {"i16", TP::INT16, DType::I16, {-300, 300}},
  };
  for (const auto &c : cases) {
    auto *t = m.mutable_graph()->add_initializer();
    t->set_name(c.name);
    t->set_data_type(c.type);
    t->add_dims(2);
    for (double v : c.values) {
      if (c.type == TP::FLOAT)
        t->add_float_data(float(v));
      else if (c.type == TP::DOUBLE)
        t->add_double_data(v);
      else if (c.type == TP::INT64)
        t->add_int64_data(int64_t(v));
      else
        t->add_int32_data(int32_t(v));
    }
    addNode(m, "Identity", {c.name}, {std::string(c.name) + "_out"}, std::string("id_") + c.name);
    addOutput(m, std::string(c.name) + "_out", c.type);
  }
  // float16 as bit patterns in int32_data, and as raw_data.
  auto *h = m.mutable_graph()->add_initializer();
  h->set_name("f16");
  h->set_data_type(TP::FLOAT16);
  h->add_dims(2);
  h->add_int32_data(0x3c00); // 1.0
  h->add_int32_data(0xc000); // -2.0
  auto *hr = m.mutable_graph()->add_initializer();
  hr->set_name("f16raw");
  hr->set_data_type(TP::FLOAT16);
  hr->add_dims(1);
  hr->set_raw_data(std::string("\x00\x38", 2)); // 0.5
  addNode(m, "Add", {"f16", "f16raw"}, {"h_out"}, "addh");
  addOutput(m, "h_out", TP::FLOAT16);
  const std::string path = save(m, dir.file("dtypes.onnx"));
  ir::Ir ir = popc::onnx::importOnnx(path, {});
  for (const auto &c : cases) {
    INFO(c.name);
    const ir::Tensor &t = ir.main.tensor(c.name);
    CHECK(t.info == ir::TensorInfo{c.dtype, {2}});
    CHECK(t.toDoubles() == c.values);
    CHECK(ir.main.tensor(std::string(c.name) + "_out").info.dtype == c.dtype);
  }
  CHECK(ir.main.tensor("f16").toDoubles() == std::vector<double>{1, -2});
  CHECK(ir.main.tensor("f16raw").toDoubles() == std::vector<double>{0.5});
  CHECK(ir.main.tensor("h_out").info == ir::TensorInfo{DType::F16, {2}});
}

TEST_CASE("initializer data size mismatch names the initializer", "[onnx]") {
  TempDir dir;
  auto m = gemmModel();
  m.mutable_graph()->mutable_initializer(1)->add_float_data(5); // B: 5 values for [4]
  const std::string path = save(m, dir.file("badinit.onnx"));
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}),
                    Contains(path + ": initializer 'B': float_data has 5 values, expected 4"));
}

TEST_CASE("a model with only non-default domains lists its ops", "[onnx]") {
  TempDir dir;
  auto m = makeModel();
  m.mutable_opset_import(0)->set_domain("com.microsoft");
  addInput(m, "x", {int64_t(2)});
  addNode(m, "FusedMatMul", {"x"}, {"y"}, "mm", "com.microsoft");
  addOutput(m, "y");
  const std::string path = save(m, dir.file("ort.onnx"));
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}),
                    path + ": unsupported operators: FusedMatMul (domain com.microsoft version 13, which popc does "
                           "not implement; nodes: mm)");
}

TEST_CASE("a training optimizer node with the wrong inputs is refused by name", "[onnx]") {
  TempDir dir;
  auto m = makeModel();
  m.mutable_opset_import(0)->set_domain("ai.onnx.preview.training");
  addInput(m, "x", {int64_t(2)});
  addNode(m, "Adagrad", {"x"}, {"y"}, "opt", "ai.onnx.preview.training");
  addOutput(m, "y");
  const std::string path = save(m, dir.file("train.onnx"));
  CHECK_THROWS_WITH(popc::onnx::importOnnx(path, {}),
                    path + ": Adagrad node 'opt' has 1 inputs; it takes R, T and 3 tensors per weight");
}
