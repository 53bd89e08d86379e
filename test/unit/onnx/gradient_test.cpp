// Gradient (ai.onnx.preview.training): models built with the protobuf API,
// compiled and run on the simulator; gradients checked against the analytic
// derivatives computed here on the host.
#include "compiler/driver/compile.h"
#include "compiler/onnx/importer.h"
#include "formats/popef/popef.h"
#include "runtime/engine.h"
#include "test/unit/onnx/onnx_test_util.h"

#include <cmath>
#include <cstring>

using namespace popc::onnx::test;

namespace {

const char *kTraining = "ai.onnx.preview.training";

::onnx::ModelProto trainingModel(int64_t opset) {
  auto m = makeModel(opset);
  auto *imp = m.add_opset_import();
  imp->set_domain(kTraining);
  imp->set_version(1);
  return m;
}

void addGradient(::onnx::ModelProto &m, const std::vector<std::string> &xs, const std::string &y,
                 const std::vector<std::string> &outputs) {
  auto *g = addNode(m, "Gradient", xs, outputs, "grad", kTraining);
  auto *a = g->add_attribute();
  a->set_name("xs");
  a->set_type(::onnx::AttributeProto::STRINGS);
  for (const auto &x : xs)
    a->add_strings(x);
  auto *b = g->add_attribute();
  b->set_name("y");
  b->set_type(::onnx::AttributeProto::STRING);
  b->set_s(y);
  for (const auto &o : outputs)
    addOutput(m, o);
}

popc::runtime::HostTensor f32(const popc::Shape &shape, const std::vector<float> &v) {
  popc::runtime::HostTensor t{popc::DType::F32, shape, {}};
  t.data.resize(v.size() * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::vector<float> values(const popc::runtime::HostTensor &t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

popc::runtime::HostTensorMap run(const ::onnx::ModelProto &m, const TempDir &dir,
                                 const popc::runtime::HostTensorMap &inputs) {
  popc::driver::CompileOptions options;
  options.tilesPerIpu = 16;
  auto bytes = popc::driver::compileOnnx(save(m, dir.file("grad.onnx")), options);
  popc::runtime::Engine engine(popc::popef::Executable::fromBytes(std::move(bytes), "grad"), {1, nullptr});
  return engine.run(inputs);
}

void checkClose(const popc::runtime::HostTensor &t, const popc::Shape &shape, const std::vector<float> &expected) {
  CHECK(t.shape == shape);
  const auto got = values(t);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == Approx(expected[i]).epsilon(1e-4).margin(1e-6));
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

} // namespace

TEST_CASE("Gradient sums broadcast gradients back to each input's shape", "[onnx][gradient]") {
  // y = Sigmoid(a·b)/c - b + Exp(a), a [2,3], b [3], c [2,1]
  TempDir dir;
  auto m = trainingModel(13);
  addInput(m, "a", {int64_t(2), int64_t(3)});
  addInput(m, "b", {int64_t(3)});
  addInput(m, "c", {int64_t(2), int64_t(1)});
  addNode(m, "Mul", {"a", "b"}, {"t"}, "mul");
  addNode(m, "Sigmoid", {"t"}, {"u"}, "sigmoid");
  addNode(m, "Div", {"u", "c"}, {"v"}, "div");
  addNode(m, "Sub", {"v", "b"}, {"w"}, "sub");
  addNode(m, "Exp", {"a"}, {"e"}, "exp");
  addNode(m, "Add", {"w", "e"}, {"y"}, "add");
  addOutput(m, "y");
  addGradient(m, {"a", "b", "c"}, "y", {"da", "db", "dc"});
  const std::vector<float> a{0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f}, b{1.0f, -2.0f, 0.5f}, c{2.0f, -4.0f};
  auto out = run(m, dir, {{"a", f32({2, 3}, a)}, {"b", f32({3}, b)}, {"c", f32({2, 1}, c)}});
  std::vector<float> da(6), db(3, 0.0f), dc(2, 0.0f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      const float t = a[size_t(3 * i + j)] * b[size_t(j)], s = sigmoid(t), ds = s * (1 - s);
      da[size_t(3 * i + j)] = ds * b[size_t(j)] / c[size_t(i)] + std::exp(a[size_t(3 * i + j)]);
      db[size_t(j)] += ds * a[size_t(3 * i + j)] / c[size_t(i)] - 1.0f;
      dc[size_t(i)] += -s / (c[size_t(i)] * c[size_t(i)]);
    }
  checkClose(out.at("da"), {2, 3}, da);
  checkClose(out.at("db"), {3}, db);
  checkClose(out.at("dc"), {2, 1}, dc);
}

TEST_CASE("Gradient through batched and 1-D MatMul with Relu", "[onnx][gradient]") {
  // y = Relu(A·B) + v·B with A [2,2,3] (batch broadcast over B [3,4]) and v [3] (1-D).
  TempDir dir;
  auto m = trainingModel(12); // ReduceSum's axes as an attribute
  addInput(m, "A", {int64_t(2), int64_t(2), int64_t(3)});
  addInput(m, "B", {int64_t(3), int64_t(4)});
  addInput(m, "v", {int64_t(3)});
  addNode(m, "MatMul", {"A", "B"}, {"p"}, "mm");
  addNode(m, "Relu", {"p"}, {"r"}, "relu");
  addNode(m, "MatMul", {"v", "B"}, {"q"}, "mv"); // [4]
  addNode(m, "Add", {"r", "q"}, {"y"}, "add");   // [2,2,4]
  addOutput(m, "y");
  addGradient(m, {"A", "B", "v"}, "y", {"dA", "dB", "dv"});
  std::vector<float> A(12), B(12), v{0.5f, -1.0f, 2.0f};
  for (int i = 0; i < 12; ++i) {
    A[size_t(i)] = float((i * 7) % 5) - 2.0f;
    B[size_t(i)] = float((i * 3) % 7) * 0.5f - 1.5f;
  }
  auto out = run(m, dir, {{"A", f32({2, 2, 3}, A)}, {"B", f32({3, 4}, B)}, {"v", f32({3}, v)}});
  std::vector<float> dA(12, 0.0f), dB(12, 0.0f), dv(3, 0.0f);
  for (int n = 0; n < 4; ++n) // the 4 rows of the batch
    for (int j = 0; j < 4; ++j) {
      float p = 0;
      for (int k = 0; k < 3; ++k)
        p += A[size_t(3 * n + k)] * B[size_t(4 * k + j)];
      const float mask = p > 0 ? 1.0f : 0.0f;
      for (int k = 0; k < 3; ++k) {
        dA[size_t(3 * n + k)] += mask * B[size_t(4 * k + j)];
        dB[size_t(4 * k + j)] += mask * A[size_t(3 * n + k)] + v[size_t(k)]; // q broadcast to 4 rows
        dv[size_t(k)] += B[size_t(4 * k + j)];
      }
    }
  checkClose(out.at("dA"), {2, 2, 3}, dA);
  checkClose(out.at("dB"), {3, 4}, dB);
  checkClose(out.at("dv"), {3}, dv);
}

TEST_CASE("Gradient through Log, Neg, Tanh and Identity, an unrelated x gets zeros", "[onnx][gradient]") {
  // y = Identity(Neg(Log(x))) + Tanh(x); z does not reach y.
  TempDir dir;
  auto m = trainingModel(13);
  addInput(m, "x", {int64_t(4)});
  addInput(m, "z", {int64_t(2)});
  addNode(m, "Log", {"x"}, {"l"}, "log");
  addNode(m, "Neg", {"l"}, {"n"}, "neg");
  addNode(m, "Identity", {"n"}, {"i"}, "id");
  addNode(m, "Tanh", {"x"}, {"t"}, "tanh");
  addNode(m, "Add", {"i", "t"}, {"y"}, "add");
  addOutput(m, "y");
  addGradient(m, {"x", "z"}, "y", {"dx", "dz"});
  const std::vector<float> x{0.5f, 1.0f, 2.0f, 3.0f};
  auto out = run(m, dir, {{"x", f32({4}, x)}, {"z", f32({2}, {1.0f, 2.0f})}});
  std::vector<float> dx;
  for (float v : x)
    dx.push_back(-1.0f / v + 1.0f - std::tanh(v) * std::tanh(v));
  checkClose(out.at("dx"), {4}, dx);
  checkClose(out.at("dz"), {2}, {0.0f, 0.0f});
}

TEST_CASE("Gradient refuses ops it cannot differentiate, naming the node", "[onnx][gradient]") {
  TempDir dir;
  auto m = trainingModel(13);
  addInput(m, "x", {int64_t(4)});
  addNode(m, "Tan", {"x"}, {"t"}, "tan");
  addOutput(m, "t");
  addGradient(m, {"x"}, "t", {"dx"});
  CHECK_THROWS_WITH(popc::onnx::importOnnx(save(m, dir.file("tan.onnx")), {}),
                    Catch::Contains("Gradient node 'grad': Tan 'tan': no gradient rule"));
}

TEST_CASE("Gradient uses every gradient rule the IR declares, and two Gradient nodes share forward nodes",
          "[onnx][gradient]") {
  // y = Softmax(x) * w: dy/dx for a seed of ones is softmax'(x)^T w, dy/dw = softmax(x).
  TempDir dir;
  auto m = trainingModel(13);
  addInput(m, "x", {int64_t(3)});
  addInput(m, "w", {int64_t(3)});
  addNode(m, "Softmax", {"x"}, {"s"}, "soft");
  addNode(m, "Mul", {"s", "w"}, {"y"}, "mul");
  addOutput(m, "y");
  addGradient(m, {"x"}, "y", {"dx"});
  auto *second = addNode(m, "Gradient", {"w"}, {"dw"}, "grad2", kTraining);
  auto *xs = second->add_attribute();
  xs->set_name("xs");
  xs->set_type(::onnx::AttributeProto::STRINGS);
  *xs->add_strings() = "w";
  auto *y = second->add_attribute();
  y->set_name("y");
  y->set_type(::onnx::AttributeProto::STRING);
  y->set_s("y");
  addOutput(m, "dw");
  const std::vector<float> x{0.5f, -1.0f, 2.0f}, w{1.0f, 2.0f, -3.0f};
  auto out = run(m, dir, {{"x", f32({3}, x)}, {"w", f32({3}, w)}});
  std::vector<float> s(3), dx(3);
  float total = 0;
  for (size_t i = 0; i < 3; ++i)
    total += std::exp(x[i]);
  for (size_t i = 0; i < 3; ++i)
    s[i] = std::exp(x[i]) / total;
  float sw = 0;
  for (size_t i = 0; i < 3; ++i)
    sw += s[i] * w[i];
  for (size_t i = 0; i < 3; ++i)
    dx[i] = s[i] * (w[i] - sw);
  checkClose(out.at("dx"), {3}, dx);
  checkClose(out.at("dw"), {3}, s);
}

TEST_CASE("Gradient through ReduceMax (ties share), ReduceL2 and ReduceLogSumExp", "[onnx][gradient]") {
  // y = ReduceMax(x, 1) + ReduceL2(x, 1) + ReduceLogSumExp(x, 1), x [2,3]; seed ones.
  TempDir dir;
  auto m = trainingModel(13);
  addInput(m, "x", {int64_t(2), int64_t(3)});
  for (auto [type, out] : {std::pair("ReduceMax", "ReduceMax_y"), std::pair("ReduceL2", "ReduceL2_y"),
                           std::pair("ReduceLogSumExp", "ReduceLogSumExp_y")}) {
    auto *n = addNode(m, type, {"x"}, {out}, type);
    auto *axes = n->add_attribute();
    axes->set_name("axes");
    axes->set_type(::onnx::AttributeProto::INTS);
    axes->add_ints(1);
    setIntAttr(n, "keepdims", 0);
  }
  addNode(m, "Add", {"ReduceMax_y", "ReduceL2_y"}, {"s"}, "add1");
  addNode(m, "Add", {"s", "ReduceLogSumExp_y"}, {"y"}, "add2");
  addOutput(m, "y");
  addGradient(m, {"x"}, "y", {"dx"});
  const std::vector<float> x{1.0f, 3.0f, 3.0f, -2.0f, 0.5f, -1.0f};
  auto out = run(m, dir, {{"x", f32({2, 3}, x)}});
  std::vector<float> dx(6);
  for (size_t r = 0; r < 2; ++r) {
    const float *row = &x[r * 3];
    const float mx = std::max({row[0], row[1], row[2]});
    float ties = 0, l2 = 0, lse = 0;
    for (size_t k = 0; k < 3; ++k) {
      ties += row[k] == mx;
      l2 += row[k] * row[k];
      lse += std::exp(row[k]);
    }
    l2 = std::sqrt(l2);
    lse = std::log(lse);
    for (size_t k = 0; k < 3; ++k)
      dx[r * 3 + k] = (row[k] == mx ? 1.0f / ties : 0.0f) + row[k] / l2 + std::exp(row[k] - lse);
  }
  checkClose(out.at("dx"), {2, 3}, dx);
}
