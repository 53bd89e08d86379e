#include "test/unit/codegen/jit_helper.h"

#include "support/error.h"

#include <catch2/catch.hpp>

#include <set>

using namespace popc;
using namespace popc::codegen;
using namespace popc::codegen::test;

namespace {

// One spec of every kind.
std::vector<KernelSpec> sampleSpecs() {
  MatMulSpec mm;
  mm.m = 8;
  mm.n = 64;
  mm.k = 32;
  ConvSpec conv;
  conv.inChannels = 4;
  conv.outChannels = 8;
  conv.inHeight = conv.inWidth = 16;
  conv.inRows = 16;
  conv.outRows = conv.outWidth = 16;
  conv.kernelH = conv.kernelW = 3;
  conv.padTop = conv.padLeft = 1;
  conv.hasBias = true;
  PoolSpec pool;
  pool.channels = 4;
  pool.inHeight = pool.inWidth = pool.inRows = 8;
  pool.outRows = pool.outWidth = 4;
  pool.kernelH = pool.kernelW = pool.strideH = pool.strideW = 2;
  return {ElementwiseSpec{ops::Elementwise::Add, DType::F32, 1024, {false, true}, {}},
          ElementwiseSpec{ops::Elementwise::Tanh, DType::F32, 100, {false}, {}},
          mm,
          conv,
          pool,
          ReduceSpec{"Sum", DType::F32, 4, 256},
          SoftmaxSpec{DType::F32, 2, 10, false}};
}

} // namespace

TEST_CASE("finish() is deterministic", "[codegen]") {
  auto build = [] {
    VertexCodegen cg;
    for (const auto &s : sampleSpecs())
      cg.getOrCreate(s);
    return cg.finish();
  };
  std::vector<uint8_t> a = build();
  std::vector<uint8_t> b = build();
  REQUIRE(!a.empty());
  CHECK(a == b);
  // finish() twice on one codegen gives the same bytes too.
  VertexCodegen cg;
  for (const auto &s : sampleSpecs())
    cg.getOrCreate(s);
  CHECK(cg.finish() == a);
  CHECK(cg.finish() == a);
}

TEST_CASE("many vertex types: batches optimised on worker threads link into one deterministic module", "[codegen]") {
  // More functions than several batches hold (kBatchTypes is 32), each its
  // own length and bound (the bound is code; the length alone would be an
  // immediate, one function for all).
  constexpr uint32_t kTypes = 80;
  auto addAll = [](VertexCodegen &cg, uint32_t from, uint32_t to) {
    for (uint32_t n = from; n < to; ++n)
      cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Clip, DType::F32, 16 + n, {false}, {-1.0, 0.5 * n}});
  };
  VertexCodegen cg;
  addAll(cg, 0, kTypes);
  const std::vector<uint8_t> a = cg.finish();
  CHECK(cg.finish() == a);
  VertexCodegen again;
  addAll(again, 0, kTypes);
  CHECK(again.finish() == a);
  // Every type's entry is in the one module, and computes its own length.
  JitModule jit(cg);
  for (uint32_t t : {0u, 31u, 32u, 63u, 79u}) {
    const VertexTypeInfo &vt = cg.vertexTypes()[t];
    const uint32_t n = 16 + t;
    std::vector<float> x(n);
    for (uint32_t i = 0; i < n; ++i)
      x[i] = float(i);
    auto out = fromBytes<float>(jit.run(vt, {toBytes(x), Bytes(n * sizeof(float))}).back());
    for (uint32_t i = 0; i < n; ++i)
      CHECK(out[i] == std::min(x[i], float(t) * 0.5f));
  }
  // Types added after finish() go on being batched.
  addAll(cg, kTypes, kTypes + 40);
  CHECK(cg.finish() != a);
  VertexCodegen all;
  addAll(all, 0, kTypes + 40);
  CHECK(all.finish() == cg.finish());
}

TEST_CASE("getOrCreate dedups by key, symbols and names are deterministic and unique", "[codegen]") {
  VertexCodegen cg;
  auto specs = sampleSpecs();
  for (size_t i = 0; i < specs.size(); ++i)
    CHECK(cg.getOrCreate(specs[i]) == i);
  for (size_t i = 0; i < specs.size(); ++i)
    CHECK(cg.getOrCreate(specs[i]) == i);
  REQUIRE(cg.vertexTypes().size() == specs.size());
  std::set<std::string> names, symbols, keys;
  for (const auto &s : specs)
    keys.insert(kernelKey(s));
  for (const auto &vt : cg.vertexTypes()) {
    names.insert(vt.name);
    symbols.insert(vt.symbol);
    CHECK(vt.cycles > 0);
  }
  CHECK(keys.size() == specs.size());
  CHECK(names.size() == specs.size());
  CHECK(symbols.size() == specs.size());
  CHECK(cg.vertexTypes()[0].symbol == "v0_elementwise");
  CHECK(cg.vertexTypes()[2].symbol == "v2_matmul");
  CHECK(cg.vertexTypes()[3].symbol == "v3_conv");
  CHECK(cg.vertexTypes()[5].symbol == "v5_reduce");
  CHECK(cg.vertexTypes()[6].symbol == "v6_softmax");
  CHECK(kernelKey(specs[0]) == "elementwise:op=Add,dtype=float32,elements=1024,scalar=01,params=[]");
  // An unused beta does not make a new vertex.
  MatMulSpec mm = std::get<MatMulSpec>(specs[2]);
  mm.beta = 3.0f;
  CHECK(cg.getOrCreate(mm) == 2);
}

TEST_CASE("elementwise cycle estimates follow the documented model", "[codegen]") {
  VertexCodegen cg;
  CHECK(cg.vertexTypes().at(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Add, DType::F32, 100, {false, false}, {}})).cycles ==
        110);
  CHECK(cg.vertexTypes().at(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Exp, DType::F32, 100, {false}, {}})).cycles == 1010);
  const VertexTypeInfo &vt = cg.vertexTypes().back();
  REQUIRE(vt.fields.size() == 3);
  CHECK(vt.fields[0].name == "in0");
  CHECK(vt.fields[0].access == FieldAccess::Input);
  CHECK(vt.fields[1].name == "out");
  CHECK(vt.fields[1].access == FieldAccess::Output);
  CHECK(vt.fields[2].name == "elements"); // 100 >= 16: a number in the field table, not code
  CHECK(vt.fields[2].access == FieldAccess::Immediate);
  CHECK(vt.fields[2].value == 100);
  CHECK(vt.fields[2].bytes == 0);
  const VertexTypeInfo &add = cg.vertexTypes().at(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Add, DType::F32, 100, {true, false}, {}}));
  CHECK(add.fields[0].bytes == 4);
  CHECK(add.fields[1].bytes == 400);
}

TEST_CASE("the module declares only allowed external functions", "[codegen]") {
  VertexCodegen cg;
  for (const auto &s : sampleSpecs())
    cg.getOrCreate(s);
  for (const char *op : {"Erf", "Exp", "Log", "Sigmoid", "Sin", "Cos"})
    cg.getOrCreate(ElementwiseSpec{kernelOp(op), DType::F32, 64, {false}, {}});
  cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Pow, DType::F64, 64, {false, false}, {}});
  std::string ir = hostOptimisedIR(cg.finish()); // after the host pipeline, as the runtime sees it
  std::set<std::string> allowed = {"expf", "logf", "tanhf", "erff", "powf", "exp", "log", "tanh", "erf", "pow"};
  size_t pos = 0;
  while ((pos = ir.find("\ndeclare ", pos)) != std::string::npos) {
    size_t at = ir.find('@', pos);
    size_t end = ir.find('(', at);
    std::string name = ir.substr(at + 1, end - at - 1);
    pos = end;
    if (name.rfind("llvm.", 0) == 0)
      continue;
    INFO("declared: " << name);
    CHECK(allowed.count(name));
  }
}

TEST_CASE("the host JIT vectorises the inner loops", "[codegen]") {
  VertexCodegen cg;
  for (const auto &s : sampleSpecs())
    cg.getOrCreate(s);
  std::string ir = hostOptimisedIR(cg.finish());
  // Elementwise add, matmul rows and the row sum must all use vector types.
  auto body = [&](const std::string &sym) {
    size_t start = ir.find("@" + sym + "(");
    REQUIRE(start != std::string::npos);
    size_t end = ir.find("\n}\n", start);
    return ir.substr(start, end - start);
  };
  CHECK(body("v0_elementwise").find("x float>") != std::string::npos);
  CHECK(body("v2_matmul").find("x float>") != std::string::npos);
  CHECK(body("v3_conv").find("x float>") != std::string::npos);
  CHECK(body("v5_reduce").find("x float>") != std::string::npos);
}

TEST_CASE("getOrCreate gives each conv spec its type however many others come between", "[codegen]") {
  // Twenty convolutions differing in one field, asked in rounds: more than
  // the specs getOrCreate remembers, so later rounds find some by their key.
  auto conv = [](uint32_t outChannels, bool bias) {
    ConvSpec s;
    s.inChannels = 4;
    s.outChannels = outChannels;
    s.inHeight = s.inRows = 6;
    s.inWidth = 6;
    s.outRows = 4;
    s.outWidth = 4;
    s.kernelH = s.kernelW = 3;
    s.hasBias = bias;
    return s;
  };
  VertexCodegen cg;
  std::vector<uint32_t> first;
  for (uint32_t i = 0; i < 20; ++i)
    first.push_back(cg.getOrCreate(conv(1 + i / 2, i % 2 == 1)));
  CHECK(std::set<uint32_t>(first.begin(), first.end()).size() == 20);
  for (int round = 0; round < 3; ++round)
    for (uint32_t i = 0; i < 20; ++i) {
      const uint32_t j = (i * 7 + uint32_t(round)) % 20; // a different order each round
      CHECK(cg.getOrCreate(conv(1 + j / 2, j % 2 == 1)) == first[j]);
    }
  CHECK(cg.vertexTypes().size() == 20);
}

TEST_CASE("elementwise specs differing only in element count share one function", "[codegen]") {
  VertexCodegen cg;
  std::vector<uint32_t> counts{16, 77, 126, 1000, 5};
  std::vector<uint32_t> types;
  for (uint32_t n : counts)
    types.push_back(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Sum, DType::F32, n, {false, false, false}, {}}));
  const auto &vts = cg.vertexTypes();
  for (size_t i = 1; i + 1 < counts.size(); ++i)
    CHECK(vts[types[i]].symbol == vts[types[0]].symbol);
  CHECK(vts[types.back()].symbol != vts[types[0]].symbol); // 5 < 16 elements: a constant in the code
  JitModule jit(cg);
  for (size_t i = 0; i < counts.size(); ++i) {
    const uint32_t n = counts[i];
    std::vector<float> a(n), b(n), c(n), want(n);
    for (uint32_t j = 0; j < n; ++j) {
      a[j] = float(j) * 0.5f, b[j] = 1.0f / float(j + 1), c[j] = -float(j % 7);
      want[j] = a[j] + b[j] + c[j];
    }
    const VertexTypeInfo &vt = vts[types[i]];
    const std::vector<Bytes> out =
        jit.run(vt, {toBytes(a), toBytes(b), toBytes(c), Bytes(n * sizeof(float), 0xFF)});
    CHECK(fromBytes<float>(out[3]) == want);
  }
}
