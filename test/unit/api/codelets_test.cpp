// Graph API: user codelets end to end (compile, per-size wrappers,
// getCycleEstimate into the popef, bitcode gate), and clang diagnostics.
#include <popc/Engine.hpp>

#include "formats/popef/popef.h"

#include <catch2/catch.hpp>

using namespace popc::api;
using namespace popc::api::program;

namespace {
const char *kCodelets = R"(
#include <poplar/Vertex.hpp>
using namespace poplar;

// out[i] = in[i] * scale; count[0] += size
class Scale : public Vertex {
public:
  Input<Vector<float>> in;
  Input<float> scale;
  Output<Vector<float>> out;
  InOut<int> count;
  bool compute() {
    for (unsigned i = 0; i < in.size(); ++i)
      out[i] = in[i] * scale;
    *count += int(in.size());
    return true;
  }
  uint64_t getCycleEstimate() const { return 100 + 3 * in.size(); }
};

class NoEstimate : public Vertex {
public:
  InOut<Vector<int>> v;
  bool compute() { for (auto &x : v) x = -x; return true; }
};
)";
} // namespace

TEST_CASE("a user codelet runs with field sizes fixed at compile time", "[api]") {
  Graph graph(Target::createIPUTarget(1, "ipu2", 8));
  graph.addCodeletsFromString(kCodelets, "scale_codelets.cpp");
  Tensor in = graph.addConstant<float>(FLOAT, {6}, {1, 2, 3, 4, 5, 6});
  Tensor s = graph.addConstant(FLOAT, {}, 0.5f);
  Tensor out = graph.addVariable(FLOAT, {6}, "out");
  Tensor count = graph.addVariable(INT, {2}, "count");
  Tensor neg = graph.addVariable(INT, {3}, "neg");
  mapLinearly(graph, in, 3);
  graph.setTileMapping(s, 0);
  graph.setTileMapping(out, 4); // not the vertices' tiles: exchanged after the compute set
  graph.setTileMapping(count, 0);
  graph.setTileMapping(neg, 2);
  graph.setInitialValue(count, std::vector<int>{0, 0});
  graph.setInitialValue(neg, std::vector<int>{1, -2, 3});
  ComputeSet cs = graph.addComputeSet("scale");
  for (unsigned k = 0; k < 2; ++k) {
    // Two sizes (4 and 2 elements): two vertex types.
    const unsigned b = k ? 4 : 0, e = k ? 6 : 4;
    VertexRef v = graph.addVertex(cs, "Scale", {{"in", in.slice(b, e)}, {"scale", s}, {"out", out.slice(b, e)}});
    graph.connect(v["count"], count[k]);
    graph.setTileMapping(v, k);
  }
  VertexRef n = graph.addVertex(cs, "NoEstimate", {{"v", neg}});
  graph.setTileMapping(n, 2);
  graph.createHostRead("out", out);
  graph.createHostRead("count", count);
  graph.createHostRead("neg", neg);
  CHECK(graph.estimateCycles("Scale", {{"in", 40}}) == 130);
  Engine engine(graph, Repeat(2, Execute(cs)));
  engine.run(0);
  std::vector<float> o(6);
  engine.readTensor("out", o.data());
  CHECK(o == std::vector<float>{0.5, 1, 1.5, 2, 2.5, 3});
  std::vector<int> c(2), ng(3);
  engine.readTensor("count", c.data());
  engine.readTensor("neg", ng.data());
  CHECK(c == std::vector<int>{8, 4}); // run twice
  CHECK(ng == std::vector<int>{1, -2, 3});

  // The executable carries the codelets' estimates as vertex cycles.
  auto exe = popc::popef::Executable::fromBytes(engine.getExecutable());
  std::map<std::string, uint64_t> cycles;
  for (const auto *vt : *exe->root().vertex_types())
    cycles[vt->name()->str()] = vt->cycles();
  CHECK(cycles.at("Scale_0") == 100 + 3 * 4);
  CHECK(cycles.at("Scale_1") == 100 + 3 * 2);
  CHECK(cycles.at("NoEstimate_2") == 10 + 3); // default: 10 + elements
}

TEST_CASE("codelet errors point at the user's file and line", "[api]") {
  Graph graph(Target::createIPUTarget(1, "ipu2", 4));
  const char *bad = "#include <poplar/Vertex.hpp>\n"
                    "class Bad : public poplar::Vertex {\n"
                    "public:\n"
                    "  poplar::Output<float> out;\n"
                    "  bool compute() { *out = undefined_name; return true; }\n"
                    "};\n";
  CHECK_THROWS_WITH(graph.addCodeletsFromString(bad, "bad_codelet.cpp"),
                    Catch::Contains("bad_codelet.cpp:5:") && Catch::Contains("undefined_name"));
  CHECK_THROWS_WITH(graph.addCodeletsFromString("int x;", "none.cpp"), Catch::Contains("no vertex class"));
  graph.addCodeletsFromString(kCodelets, "ok.cpp");
  ComputeSet cs = graph.addComputeSet();
  CHECK_THROWS_WITH(graph.addVertex(cs, "Missing"), Catch::Contains("no vertex class 'Missing'"));
  VertexRef v = graph.addVertex(cs, "Scale");
  Tensor i = graph.addVariable(INT, {4}, "i");
  CHECK_THROWS_WITH(graph.connect(v["nope"], i), Catch::Contains("has no field 'nope'"));
  CHECK_THROWS_WITH(graph.connect(v["in"], i), Catch::Contains("holds float, the tensor is int"));
  CHECK_THROWS_WITH(graph.connect(v["scale"], graph.addVariable(FLOAT, {2})), Catch::Contains("scalar field"));
}

TEST_CASE("codelet classes are read from clang's AST", "[api]") {
  // Namespaces, typedef'd element types, plain members, a struct's default
  // public access and a class only in a comment: clang sees what the compiler sees.
  const char *source = "#include <poplar/Vertex.hpp>\n"
                       "using Real = float;\n"
                       "namespace mine {\n"
                       "struct Twice : public poplar::Vertex {\n"
                       "  poplar::Input<poplar::Vector<Real>> in;\n"
                       "  poplar::Output<poplar::Vector<float>> out;\n"
                       "  float factor = 2; // not a field\n"
                       "  bool compute() { for (unsigned i = 0; i < in.size(); ++i) out[i] = factor * in[i]; return true; }\n"
                       "  uint64_t getCycleEstimate() const { return 42; }\n"
                       "};\n"
                       "} // namespace mine\n"
                       "/* class Ghost : public poplar::Vertex { poplar::Input<float> x; }; */\n";
  Graph graph(Target::createIPUTarget(1, "ipu2", 4));
  graph.addCodeletsFromString(source, "twice.cpp");
  CHECK(graph.estimateCycles("Twice", {{"in", 16}, {"out", 16}}) == 42);
  ComputeSet cs = graph.addComputeSet();
  CHECK_THROWS_WITH(graph.addVertex(cs, "Ghost"), Catch::Contains("no vertex class 'Ghost'"));
  Tensor in = graph.addConstant<float>(FLOAT, {3}, {1, 2, 3});
  Tensor out = graph.addVariable(FLOAT, {3}, "out");
  graph.setTileMapping(in, 0);
  graph.setTileMapping(out, 0);
  VertexRef v = graph.addVertex(cs, "Twice", {{"in", in}, {"out", out}});
  graph.setTileMapping(v, 0);
  CHECK_THROWS_WITH(graph.connect(v["factor"], out), Catch::Contains("has no field 'factor'"));
  graph.createHostRead("out", out);
  Engine engine(graph, Execute(cs));
  engine.run(0);
  std::vector<float> o(3);
  engine.readTensor("out", o.data());
  CHECK(o == std::vector<float>{2, 4, 6});

  // The generated entry binds fields and calls compute(): private ones are named.
  const char *hidden = "#include <poplar/Vertex.hpp>\n"
                       "class Hidden : public poplar::Vertex {\n"
                       "  poplar::Input<float> x;\n"
                       "public:\n"
                       "  bool compute() { return true; }\n"
                       "};\n";
  CHECK_THROWS_WITH(graph.addCodeletsFromString(hidden, "hidden.cpp"),
                    Catch::Contains("hidden.cpp: class Hidden: field 'x' is private"));
}
