#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "ir_test_util.h"

using namespace popc;
using namespace popc::ir;
using namespace popc::ir::test;
using Catch::Matchers::Contains;

namespace {

// Text that parses prints back as the same bytes.
void roundTrips(const std::string &text) {
  const Ir ir = parseIr(text, "test.ir");
  CHECK(printIr(ir) == text);
}

std::string parseError(const std::string &text) {
  try {
    parseIr(text, "bad.ir");
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("parseIr reads back what printIr writes", "[ir][parser]") {
  Ir ir;
  ir.modelName = "tiny \"model\"";
  ir.opsetVersion = 17;
  Graph &g = ir.main;
  g.opset = 17;
  addInput(g, "x", {1, 3, 4, 4});
  addInput(g, "odd name, with (parens)", {2}, DType::I64);
  addConstF32(g, "w", {8, 3, 3, 3}); // large: printed without values
  addConstInts(g, "onnx::Reshape_5", {1, -1});
  Tensor half;
  half.name = "h";
  half.kind = TensorKind::Constant;
  half.info = {DType::F16, {3}};
  half.data = {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c}; // 1, -2, inf
  g.addTensor(half);
  Tensor var;
  var.name = "v";
  var.kind = TensorKind::Variable;
  var.info = {DType::F32, {2}};
  var.data.assign(8, 0);
  std::memcpy(var.data.data(), std::vector<float>{0.1f, -3.5f}.data(), 8);
  g.addTensor(var);
  Op conv = makeOp("Conv", "/conv/Conv", {"x", "w", ""}, {"c"});
  conv.attrs.set("strides", std::vector<int64_t>{1, 1});
  conv.attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv.ipu = 1;
  conv.pipelineStage = 2;
  conv.phase = 1;
  g.appendOp(conv);
  Op custom = makeOp("Thing", "t:", {"c", "odd name, with (parens)"}, {"", "z:"});
  custom.domain = "ai.graphcore";
  custom.attrs.set("f", 1e-08);
  custom.attrs.set("fs", std::vector<double>{0.5, -2.0});
  custom.attrs.set("empty", std::vector<int64_t>{});
  custom.attrs.set("s", std::string("a\"b\\c\nd"));
  custom.attrs.set("ss", std::vector<std::string>{"p", "q r"});
  auto value = std::make_shared<Tensor>(makeConst("", {7, 8}));
  custom.attrs.set("value", std::shared_ptr<const Tensor>(value));
  custom.attrs.set("nothing", std::shared_ptr<const Tensor>());
  g.appendOp(custom);
  g.addTensor(Tensor{"c", {DType::F32, {1, 8, 4, 4}}, TensorKind::Intermediate, {}});
  g.addTensor(Tensor{"z:", {DType::Bool, {}}, TensorKind::Intermediate, {}});
  g.outputs = {"c", "z:"};
  g.updates.push_back({"v", "c", 1});
  Graph body("loop body");
  addInput(body, "i", {});
  body.appendOp(makeOp("Identity", "id", {"i"}, {"o"}));
  body.outputs = {"o"};
  ir.subgraphs.emplace(body.id(), std::move(body));

  const std::string text = printIr(ir);
  CHECK_THAT(text, Contains("input %\"odd name, with (parens)\": i64[2]"));
  CHECK_THAT(text, Contains("  _, %\"z:\": bool[] = ai.graphcore::Thing[name=\"t:\"]"));
  CHECK_THAT(text, Contains("graph \"loop body\" (opset 13) {"));
  roundTrips(text);

  const Ir back = parseIr(text, "test.ir");
  CHECK(back.modelName == "tiny \"model\"");
  CHECK(back.opsetVersion == 17);
  CHECK(back.main.tensor("h").data == half.data);
  CHECK(back.main.tensor("v").data == g.tensor("v").data);
  CHECK(back.main.tensor("v").kind == TensorKind::Variable);
  CHECK(back.main.tensor("w").data == std::vector<uint8_t>(8 * 27 * 4, 0));
  const Op &c = *back.main.ops()[0];
  CHECK(c.ipu == 1);
  CHECK(c.pipelineStage == 2);
  CHECK(c.phase == 1);
  CHECK(c.inputs == std::vector<std::string>{"x", "w", ""});
  const Op &t = *back.main.ops()[1];
  CHECK(t.domain == "ai.graphcore");
  CHECK(t.outputs == std::vector<std::string>{"", "z:"});
  CHECK(t.attrs.getString("s", "") == "a\"b\\c\nd");
  CHECK(t.attrs.getFloat("f", 0) == 1e-08);
  CHECK(t.attrs.getFloats("empty").empty());
  CHECK(t.attrs.getTensor("value")->toInt64s() == std::vector<int64_t>{7, 8});
  CHECK(back.main.updates == g.updates);
  REQUIRE(back.subgraphs.count("loop body") == 1);
  CHECK(back.subgraphs.at("loop body").outputs == std::vector<std::string>{"o"});
}

TEST_CASE("parseIr: every dtype's values round trip", "[ir][parser]") {
  roundTrips("ir \"m\" (opset 13)\n"
             "graph main (opset 13) {\n"
             "  const %a: f64[2] = [0.1,-inf]\n"
             "  const %b: bf16[2] = [1.0,-0.5]\n"
             "  const %c: i8[2] = [-128,127]\n"
             "  const %d: u64[1] = [-1]\n"
             "  const %e: bool[2] = [0,1]\n"
             "  const %f: f32[] = [nan]\n"
             "  const %g: i32[0] = []\n"
             "  output %a\n"
             "}\n");
}

TEST_CASE("parseIr: comments, blank lines and no header", "[ir][parser]") {
  const Ir ir = parseIr("// RUN: popc-opt %s\n# a comment\n\ngraph main (opset 11) {\n"
                        "  input %x: f32[2]\n  // CHECK: Relu\n  %y: f32[2] = Relu[name=r](%x)\n  output %y\n}\n",
                        "c.ir");
  CHECK(ir.opsetVersion == 11);
  CHECK(ir.main.ops().size() == 1);
  CHECK(ir.main.tensor("y").info.shape == Shape{2});
}

TEST_CASE("parseIr: errors name the file, line and column, and the fix", "[ir][parser]") {
  CHECK(parseError("") == "bad.ir:1:1: no graph in the text; write at least 'graph main (opset 13) {' ... '}'");
  CHECK_THAT(parseError("graph main (opset 13) {\n  input %x: f99[2]\n}\n"),
             Contains("bad.ir:2:13: unknown dtype 'f99'"));
  CHECK_THAT(parseError("graph main (opset 13) {\n  %y: f32[2] = Relu[name=r](%x\n}\n"),
             Contains("bad.ir:2:31: expected ')' to close the inputs of op 'r', found the end of the line"));
  CHECK_THAT(parseError("graph main (opset 13) {\n  const %c: i64[3] = [1,2]\n}\n"),
             Contains("bad.ir:2:22: %c has 2 values for 3 elements"));
  CHECK_THAT(parseError("graph main (opset 13) {\n  input %x: f32[2]\n  input %x: f32[2]\n}\n"),
             Contains("bad.ir:3:3: tensor %x is defined twice in graph 'main'"));
  CHECK_THAT(parseError("graph main (opset 13) {\n  input %x: f32[2]\n"), Contains("bad.ir:3:1: the text ends inside graph 'main' (opened on line 1): it has no closing '}'"));
  CHECK_THAT(parseError("graph main (opset 13) {\n  bogus %x\n}\n"), Contains("bad.ir:2:3: expected a graph line"));
  CHECK_THAT(parseError("graph main (opset 13) {\n  %y: f32[2] = Relu[name=r, gpu=1](%x)\n}\n"),
             Contains("bad.ir:2:29: unknown op field 'gpu' of op 'r'"));
  CHECK_THAT(parseError("graph main (opset 13) {\n  %y: f32[2] = Cast[name=r](%x) {to=\"f32}\n}\n"),
             Contains("bad.ir:2:37: attribute to has no closing quote"));
  CHECK_THAT(parseError("graph main (opset 13) {\n  const %c: i64[1] = [1.5]\n}\n"),
             Contains("bad.ir:2:23: '1.5' is not an integer"));
  CHECK_THAT(parseError("graph main (opset 13) {\n}\ngraph main (opset 13) {\n}\ngraph main (opset 13) {\n}\n"),
             Contains("bad.ir:5:1: graph 'main' is defined twice"));
}
