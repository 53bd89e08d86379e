#include "compiler/ir/printer.h"
#include "ir_test_util.h"

using namespace popc;
using namespace popc::ir;
using namespace popc::ir::test;
using Catch::Matchers::Contains;

namespace {
Ir sampleIr() {
  Ir ir;
  ir.modelName = "tiny";
  Graph &g = ir.main;
  addInput(g, "x", {1, 3, 16, 16});
  addConstF32(g, "w", {8, 3, 3, 3});
  addConstF32(g, "b", {8});
  addConstInts(g, "shape", {1, -1});
  Op conv = makeOp("Conv", "conv1", {"x", "w", "b"}, {"c"});
  conv.attrs.set("strides", std::vector<int64_t>{1, 1});
  conv.attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv.ipu = 1;
  g.appendOp(conv);
  g.appendOp(makeOp("Reshape", "rs", {"c", "shape"}, {"y"}));
  g.outputs = {"y"};
  inferGraph(g);
  return ir;
}
} // namespace

TEST_CASE("printIr is deterministic text", "[ir]") {
  Ir ir = sampleIr();
  const std::string text = printIr(ir);
  CHECK(text == printIr(sampleIr()));
  CHECK_THAT(text, Contains("  input %x: f32[1,3,16,16]\n"));
  CHECK_THAT(text, Contains("  const %shape: i64[2] = [1,-1]\n"));
  CHECK_THAT(text, Contains("  const %w: f32[8,3,3,3]\n"));
  CHECK_THAT(text, Contains("  %c: f32[1,8,16,16] = Conv[name=conv1, ipu=1](%x, %w, %b) "
                            "{pads=[1,1,1,1], strides=[1,1]}\n"));
  CHECK_THAT(text, Contains("  %y: f32[1,2048] = Reshape[name=rs](%c, %shape)\n"));
  CHECK_THAT(text, Contains("  output %y\n"));
}

TEST_CASE("printer formats attribute kinds", "[ir]") {
  Graph g;
  addInput(g, "x", {2});
  Op op = makeOp("Identity", "id", {"x", ""}, {"y"});
  op.attrs.set("f", 1.0);
  op.attrs.set("fs", std::vector<double>{0.5, 2.0});
  op.attrs.set("s", std::string("a\"b"));
  g.appendOp(op);
  g.addTensor(Tensor{"y", {DType::F32, {2}}, TensorKind::Intermediate, {}});
  CHECK_THAT(printGraph(g), Contains("%y: f32[2] = Identity[name=id](%x, _) {f=1.0, fs=[0.5,2.0], s=\"a\\\"b\"}"));
}

TEST_CASE("graphToDot", "[ir]") {
  Ir ir = sampleIr();
  const std::string dot = graphToDot(ir.main);
  CHECK(dot == graphToDot(sampleIr().main));
  CHECK_THAT(dot, Contains("digraph \"main\" {"));
  CHECK_THAT(dot, Contains("\"op:0\" [shape=box, label=\"Conv\\nconv1\\nipu 1\"];"));
  CHECK_THAT(dot, Contains("\"t:x\" -> \"op:0\" [label=\"x\\nf32[1,3,16,16]\"];"));
  CHECK_THAT(dot, Contains("\"op:0\" -> \"op:1\" [label=\"c\\nf32[1,8,16,16]\"];"));
  CHECK_THAT(dot, Contains("\"op:1\" -> \"out:y\""));
}
