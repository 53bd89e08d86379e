// Each case builds a small IR graph, compiles it for a small target (few
// tiles, so planners must split), runs it on the simulated IPU and compares
// with a reference computed here.
#include "compiler/lib/step.h"
#include "test/unit/lib/lib_test_util.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace popc;

namespace {

std::vector<float> randomData(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

// Float models with random data, kept in `data` for the references.
struct Model : lib::test::Model {
  std::map<std::string, std::vector<float>> data;

  void input(const std::string &name, Shape shape, uint32_t seed) {
    data[name] = randomData(size_t(numElements(shape)), seed);
    lib::test::Model::input(name, DType::F32, shape, data[name]);
  }
  void constant(const std::string &name, Shape shape, uint32_t seed) {
    data[name] = randomData(size_t(numElements(shape)), seed);
    lib::test::Model::constant(name, DType::F32, shape, data[name]);
  }

  // Compiles for `tiles` tiles and returns the named outputs.
  std::map<std::string, std::vector<float>> run(const std::vector<std::string> &outputs, uint32_t tiles = 7,
                                                uint32_t bytesPerTile = 624 * 1024) {
    std::map<std::string, std::vector<float>> result;
    for (auto &[name, t] : lib::test::Model::run(outputs, tiles, bytesPerTile))
      result[name] = lib::test::valuesOf<float>(t.data);
    return result;
  }
};

void checkClose(const std::vector<float> &got, const std::vector<float> &want, float tol = 1e-4f) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(want[i]).margin(tol).epsilon(tol));
  }
}

using lib::test::attrs;

} // namespace

TEST_CASE("batched MatMul with batched and broadcast B", "[lib][matmul]") {
  Model m;
  m.input("a", {2, 3, 5, 4}, 1);
  m.input("b", {2, 3, 4, 6}, 2);
  m.constant("w", {4, 6}, 3);
  m.op("MatMul", {"a", "b"}, "y");
  m.op("MatMul", {"a", "w"}, "z");
  auto out = m.run({"y", "z"});
  const auto &a = m.data["a"], &b = m.data["b"], &w = m.data["w"];
  std::vector<float> y(6 * 5 * 6), z(6 * 5 * 6);
  for (int bt = 0; bt < 6; ++bt)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 6; ++j) {
        float s = 0, t = 0;
        for (int k = 0; k < 4; ++k) {
          s += a[(bt * 5 + i) * 4 + k] * b[(bt * 4 + k) * 6 + j];
          t += a[(bt * 5 + i) * 4 + k] * w[k * 6 + j];
        }
        y[(bt * 5 + i) * 6 + j] = s;
        z[(bt * 5 + i) * 6 + j] = t;
      }
  checkClose(out["y"], y);
  checkClose(out["z"], z);
}

TEST_CASE("Gemm with transposes, alpha, beta and a broadcast C", "[lib][gemm]") {
  Model m;
  m.input("a", {7, 5}, 4); // transA: A is [K=7, M=5]
  m.constant("b", {9, 7}, 5); // transB: B is [N=9, K=7]
  m.constant("c", {9}, 6);
  m.op("Gemm", {"a", "b", "c"}, "y",
       attrs({{"transA", int64_t(1)}, {"transB", int64_t(1)}, {"alpha", 0.5}, {"beta", 2.0}}));
  auto out = m.run({"y"}, 3);
  const auto &a = m.data["a"], &b = m.data["b"], &c = m.data["c"];
  std::vector<float> y(5 * 9);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 9; ++j) {
      float s = 0;
      for (int k = 0; k < 7; ++k)
        s += a[k * 5 + i] * b[j * 7 + k];
      y[i * 9 + j] = 0.5f * s + 2.0f * c[j];
    }
  checkClose(out["y"], y);
}

TEST_CASE("a long Gemm splits K over tiles and sums the partial products", "[lib][gemm]") {
  // [4, 512] x [512, 8]: 32 outputs cannot fill 64 tiles without splitting K.
  for (bool trans : {false, true}) {
    Model m;
    m.input("a", trans ? Shape{512, 4} : Shape{4, 512}, 31);
    m.constant("b", trans ? Shape{8, 512} : Shape{512, 8}, 32);
    m.constant("c", {4, 8}, 33);
    m.op("Gemm", {"a", "b", "c"}, "y",
         attrs({{"transA", int64_t(trans)}, {"transB", int64_t(trans)}, {"alpha", 0.5}, {"beta", 2.0}}));
    auto out = m.run({"y"}, 64);
    INFO("transposed " << trans);
    CHECK(std::find(m.lastComputeSets.begin(), m.lastComputeSets.end(), "y_op/reduce") != m.lastComputeSets.end());
    const auto &a = m.data["a"], &b = m.data["b"], &c = m.data["c"];
    std::vector<float> y(4 * 8);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 8; ++j) {
        float sum = 0;
        for (int k = 0; k < 512; ++k)
          sum += (trans ? a[k * 4 + i] : a[i * 512 + k]) * (trans ? b[j * 512 + k] : b[k * 8 + j]);
        y[i * 8 + j] = 0.5f * sum + 2.0f * c[i * 8 + j];
      }
    checkClose(out["y"], y, 1e-3f);
  }
}

namespace {
std::vector<float> refConv(const std::vector<float> &x, const std::vector<float> &w, const std::vector<float> *b,
                           int N, int C, int H, int W, int M, int G, int kh, int kw, int sh, int sw, int dh,
                           int dw, int pt, int pl, int OH, int OW) {
  std::vector<float> y(size_t(N * M * OH * OW));
  const int cg = C / G, mg = M / G;
  for (int n = 0; n < N; ++n)
    for (int m = 0; m < M; ++m)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          float s = b ? (*b)[m] : 0.0f;
          const int g = m / mg;
          for (int c = 0; c < cg; ++c)
            for (int i = 0; i < kh; ++i)
              for (int j = 0; j < kw; ++j) {
                const int ih = oh * sh - pt + i * dh, iw = ow * sw - pl + j * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                  continue;
                s += x[((n * C + g * cg + c) * H + ih) * W + iw] * w[((m * cg + c) * kh + i) * kw + j];
              }
          y[((n * M + m) * OH + oh) * OW + ow] = s;
        }
  return y;
}
} // namespace

TEST_CASE("grouped, strided, dilated, padded Conv split over few tiles", "[lib][conv]") {
  for (uint32_t tiles : {1u, 5u, 64u}) {
    Model m;
    m.input("x", {2, 4, 11, 9}, 7);
    m.constant("w", {6, 2, 3, 3}, 8);
    m.constant("b", {6}, 9);
    m.op("Conv", {"x", "w", "b"}, "y",
         attrs({{"group", int64_t(2)}, {"strides", std::vector<int64_t>{2, 1}},
                {"dilations", std::vector<int64_t>{1, 2}}, {"pads", std::vector<int64_t>{1, 2, 2, 0}}}));
    auto out = m.run({"y"}, tiles);
    const auto &info = m.ir.main.tensor("y").info;
    const int OH = int(info.shape[2]), OW = int(info.shape[3]);
    INFO("tiles " << tiles);
    checkClose(out["y"], refConv(m.data["x"], m.data["w"], &m.data["b"], 2, 4, 11, 9, 6, 2, 3, 3, 2, 1, 1, 2,
                                 1, 2, OH, OW));
  }
}

TEST_CASE("a wide Conv splits its input channels and reduces the partial sums", "[lib][conv]") {
  Model m;
  m.input("x", {1, 256, 5, 5}, 21);
  m.constant("w", {16, 256, 3, 3}, 22);
  m.constant("b", {16}, 23);
  m.op("Conv", {"x", "w", "b"}, "y", attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  // 16 KiB per tile cannot hold the whole 25 KiB input: the planner must split it.
  auto out = m.run({"y"}, 64, 16 * 1024);
  CHECK(std::find(m.lastComputeSets.begin(), m.lastComputeSets.end(), "y_op/reduce") != m.lastComputeSets.end());
  checkClose(out["y"], refConv(m.data["x"], m.data["w"], &m.data["b"], 1, 256, 5, 5, 16, 1, 3, 3, 1, 1, 1, 1, 1,
                               1, 5, 5));
}

TEST_CASE("a Relu that only reads a Conv runs inside the conv vertices", "[lib][conv]") {
  Model m;
  m.input("x", {1, 3, 6, 6}, 24);
  m.constant("w", {4, 3, 3, 3}, 25);
  m.op("Conv", {"x", "w"}, "c", attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  m.op("Relu", {"c"}, "y");
  auto out = m.run({"y"}, 4);
  CHECK(std::find(m.lastComputeSets.begin(), m.lastComputeSets.end(), "y_op") == m.lastComputeSets.end());
  std::vector<float> want = refConv(m.data["x"], m.data["w"], nullptr, 1, 3, 6, 6, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1, 6, 6);
  for (float &v : want)
    v = std::max(v, 0.0f);
  checkClose(out["y"], want);
}

TEST_CASE("MaxPool and AveragePool with padding", "[lib][pool]") {
  Model m;
  m.input("x", {1, 3, 7, 6}, 10);
  ir::Attributes pa = attrs({{"kernel_shape", std::vector<int64_t>{3, 2}},
                             {"strides", std::vector<int64_t>{2, 2}},
                             {"pads", std::vector<int64_t>{1, 1, 1, 0}}});
  m.op("MaxPool", {"x"}, "mx", pa);
  m.op("AveragePool", {"x"}, "av", pa);
  auto out = m.run({"mx", "av"}, 4);
  const auto &x = m.data["x"];
  const auto &shape = m.ir.main.tensor("mx").info.shape;
  const int OH = int(shape[2]), OW = int(shape[3]);
  std::vector<float> mx, av;
  for (int c = 0; c < 3; ++c)
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow) {
        float best = -INFINITY, sum = 0;
        int count = 0;
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 2; ++j) {
            const int ih = oh * 2 - 1 + i, iw = ow * 2 - 1 + j;
            if (ih < 0 || ih >= 7 || iw < 0 || iw >= 6)
              continue;
            const float v = x[(c * 7 + ih) * 6 + iw];
            best = std::max(best, v);
            sum += v;
            ++count;
          }
        mx.push_back(best);
        av.push_back(sum / float(count));
      }
  checkClose(out["mx"], mx);
  checkClose(out["av"], av);
}

TEST_CASE("Softmax over a middle axis (opset 13)", "[lib][softmax]") {
  Model m;
  m.input("x", {2, 3, 4}, 11);
  m.op("Softmax", {"x"}, "y", attrs({{"axis", int64_t(1)}}));
  auto out = m.run({"y"}, 3);
  const auto &x = m.data["x"];
  std::vector<float> y(24);
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 4; ++c) {
      float mx = -INFINITY, sum = 0;
      for (int b = 0; b < 3; ++b)
        mx = std::max(mx, x[(a * 3 + b) * 4 + c]);
      for (int b = 0; b < 3; ++b)
        sum += std::exp(x[(a * 3 + b) * 4 + c] - mx);
      for (int b = 0; b < 3; ++b)
        y[(a * 3 + b) * 4 + c] = std::exp(x[(a * 3 + b) * 4 + c] - mx) / sum;
    }
  checkClose(out["y"], y);
}

TEST_CASE("broadcasting elementwise, transpose and concat", "[lib][elementwise]") {
  Model m;
  m.input("x", {2, 3, 4}, 12);
  m.constant("col", {3, 1}, 13);
  m.constant("s", {1}, 14);
  m.op("Add", {"x", "col"}, "a");
  m.op("Mul", {"a", "s"}, "b");
  m.op("Transpose", {"b"}, "t", attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}));
  m.op("Concat", {"x", "b"}, "c", attrs({{"axis", int64_t(1)}}));
  auto out = m.run({"t", "c", "b"}, 5);
  const auto &x = m.data["x"], &col = m.data["col"];
  const float s = m.data["s"][0];
  std::vector<float> b(24), t(24), c(48);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        const float v = (x[(i * 3 + j) * 4 + k] + col[j]) * s;
        b[(i * 3 + j) * 4 + k] = v;
        t[(k * 2 + i) * 3 + j] = v;
        c[(i * 6 + j) * 4 + k] = x[(i * 3 + j) * 4 + k];
        c[(i * 6 + 3 + j) * 4 + k] = v;
      }
  checkClose(out["b"], b);
  checkClose(out["t"], t);
  checkClose(out["c"], c);
}

TEST_CASE("BatchNormalization with run-time statistics", "[lib][norm]") {
  Model m;
  m.input("x", {2, 3, 2, 2}, 15);
  m.input("scale", {3}, 16);
  m.input("bias", {3}, 17);
  m.input("mean", {3}, 18);
  m.constant("var", {3}, 19);
  for (float &v : m.data["var"])
    v = std::fabs(v) + 0.5f;
  std::memcpy(m.ir.main.tensor("var").data.data(), m.data["var"].data(), 12);
  m.op("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, "y", attrs({{"epsilon", 1e-3}}));
  auto out = m.run({"y"}, 3);
  std::vector<float> y(24);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 4; ++i) {
        const size_t k = size_t((n * 3 + c) * 4 + i);
        y[k] = (m.data["x"][k] - m.data["mean"][c]) / std::sqrt(m.data["var"][c] + 1e-3f) * m.data["scale"][c] +
               m.data["bias"][c];
      }
  checkClose(out["y"], y);
}

TEST_CASE("an input that is also an output is copied to its own tensor", "[lib][outputs]") {
  Model m;
  m.input("x", {5}, 20);
  m.op("Relu", {"x"}, "r");
  auto out = m.run({"x", "r"}, 2);
  checkClose(out["x"], m.data["x"]);
  std::vector<float> r = m.data["x"];
  for (float &v : r)
    v = std::max(v, 0.0f);
  checkClose(out["r"], r);
}

TEST_CASE("lowering may move large constants out of the IR: the same executable, weights held once",
          "[lib][constants]") {
  // A 96 KiB weight (moved) and a 1 KiB bias (copied: lowerings read small
  // constants as values), lowered both ways for the same few tiles.
  auto build = [] {
    Model m;
    m.input("x", {4, 96}, 1);
    m.constant("w", {96, 256}, 2);
    m.constant("b", {256}, 3);
    m.op("MatMul", {"x", "w"}, "y");
    m.op("Add", {"y", "b"}, "z");
    return m;
  };
  auto lower = [](Model &m, bool move) {
    m.ir.main.outputs = {"z"};
    ir::inferGraph(m.ir.main);
    graph::Target target = graph::Target::forArch("ipu2");
    target.tilesPerIpu = 7;
    graph::DeviceGraph dg(target);
    codegen::VertexCodegen cg;
    lib::LowerOptions options;
    if (move)
      options.moveConstantsFrom = &m.ir.main;
    lib::lowerIrSegments(m.ir, dg, cg, options);
    graph::MemoryPlan plan = graph::planMemory(dg);
    graph::ExecutableCode code;
    code.bitcode = cg.finish();
    code.vertexTypes = cg.vertexTypes();
    return graph::serializeExecutable(dg, plan, code, {});
  };
  Model copied = build(), moved = build();
  REQUIRE(lower(copied, false) == lower(moved, true));
  CHECK(copied.ir.main.tensor("w").data.size() == 96 * 256 * 4);
  CHECK(moved.ir.main.tensor("w").data.empty()); // its bytes are the device graph's now
  CHECK(moved.ir.main.tensor("b").data.size() == 256 * 4);

  // Large constants a lowering reads as values stay: Gather's 72 KiB of
  // indices, and a weight whose matmul has only constant operands.
  auto gather = [] {
    Model m;
    m.input("x", {16, 4}, 4);
    std::vector<int64_t> indices(9000);
    for (size_t i = 0; i < indices.size(); ++i)
      indices[i] = int64_t(i * 7 % 16);
    m.lib::test::Model::constant<int64_t>("idx", DType::I64, {9000}, indices);
    m.op("Gather", {"x", "idx"}, "z", {{"axis", int64_t(0)}});
    return m;
  };
  Model gatherCopied = gather(), gatherMoved = gather();
  REQUIRE(lower(gatherCopied, false) == lower(gatherMoved, true));
  CHECK(gatherMoved.ir.main.tensor("idx").data.size() == 9000 * 8);
}
