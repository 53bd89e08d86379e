#include "test/unit/codegen/jit_helper.h"

#include "support/error.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace popc;
using namespace popc::codegen;
using namespace popc::codegen::test;

namespace {

struct OpCase {
  std::string op;
  unsigned arity;
  double lo, hi; // input range (keeps Log/Sqrt/Pow/Reciprocal in their domain)
  std::vector<double> params;
};

const std::vector<OpCase> kFloatOps = {
    {"Relu", 1, -2, 2, {}},     {"Sigmoid", 1, -8, 8, {}},   {"Tanh", 1, -4, 4, {}},       {"Exp", 1, -10, 10, {}},
    {"Log", 1, 0.01, 100, {}},  {"Neg", 1, -5, 5, {}},       {"Abs", 1, -5, 5, {}},        {"Sqrt", 1, 0, 100, {}},
    {"Reciprocal", 1, 0.5, 4, {}}, {"Copy", 1, -5, 5, {}},   {"LeakyRelu", 1, -3, 3, {0.1}},
    {"Clip", 1, -3, 3, {-1.0, 0.5}}, {"Floor", 1, -5, 5, {}}, {"Ceil", 1, -5, 5, {}},      {"Erf", 1, -3, 3, {}},
    {"Sin", 1, -6, 6, {}},      {"Cos", 1, -6, 6, {}},       {"Add", 2, -5, 5, {}},        {"Sub", 2, -5, 5, {}},
    {"Mul", 2, -5, 5, {}},      {"Div", 2, 0.5, 5, {}},      {"Pow", 2, 0.1, 2, {}},       {"Max", 2, -5, 5, {}},
    {"Min", 2, -5, 5, {}},      {"Round", 1, -5, 5, {}},     {"Sign", 1, -2, 2, {}},       {"Tan", 1, -1.5, 1.5, {}},
    {"Asin", 1, -1, 1, {}},     {"Acos", 1, -1, 1, {}},      {"Atan", 1, -5, 5, {}},       {"Sinh", 1, -4, 4, {}},
    {"Cosh", 1, -4, 4, {}},     {"Asinh", 1, -5, 5, {}},     {"Acosh", 1, 1, 10, {}},      {"Atanh", 1, -0.99, 0.99, {}},
    {"Elu", 1, -3, 3, {0.7}},   {"Selu", 1, -3, 3, {1.67, 1.05}}, {"Celu", 1, -3, 3, {0.5}},
    {"ThresholdedRelu", 1, -3, 3, {0.4}}, {"HardSigmoid", 1, -6, 6, {0.2, 0.5}}, {"HardSwish", 1, -5, 5, {}},
    {"Softplus", 1, -30, 30, {}}, {"Softsign", 1, -5, 5, {}}, {"Shrink", 1, -2, 2, {0.3, 0.5}},
    {"PRelu", 2, -3, 3, {}},    {"Mod", 2, 0.5, 5, {1}},     {"ClipLow", 2, -3, 3, {}},    {"ClipHigh", 2, -3, 3, {}},
    {"Mean", 2, -5, 5, {}},
};

double reference(const std::string &op, double x, double y, const std::vector<double> &p) {
  if (op == "Relu") return x < 0 ? 0 : x;
  if (op == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (op == "Tanh") return std::tanh(x);
  if (op == "Exp") return std::exp(x);
  if (op == "Log") return std::log(x);
  if (op == "Neg") return -x;
  if (op == "Abs") return std::abs(x);
  if (op == "Sqrt") return std::sqrt(x);
  if (op == "Reciprocal") return 1 / x;
  if (op == "Copy") return x;
  if (op == "LeakyRelu") return x < 0 ? p[0] * x : x;
  if (op == "Clip") return std::min(std::max(x, p[0]), p[1]);
  if (op == "Floor") return std::floor(x);
  if (op == "Ceil") return std::ceil(x);
  if (op == "Erf") return std::erf(x);
  if (op == "Sin") return std::sin(x);
  if (op == "Cos") return std::cos(x);
  if (op == "Add") return x + y;
  if (op == "Sub") return x - y;
  if (op == "Mul") return x * y;
  if (op == "Div") return x / y;
  if (op == "Pow") return std::pow(x, y);
  if (op == "Max") return std::max(x, y);
  if (op == "Min") return std::min(x, y);
  if (op == "Round") return std::nearbyint(x); // half to even in the default rounding mode
  if (op == "Sign") return x > 0 ? 1 : x < 0 ? -1 : 0;
  if (op == "Tan") return std::tan(x);
  if (op == "Asin") return std::asin(x);
  if (op == "Acos") return std::acos(x);
  if (op == "Atan") return std::atan(x);
  if (op == "Sinh") return std::sinh(x);
  if (op == "Cosh") return std::cosh(x);
  if (op == "Asinh") return std::asinh(x);
  if (op == "Acosh") return std::acosh(x);
  if (op == "Atanh") return std::atanh(x);
  if (op == "Elu") return x < 0 ? p[0] * (std::exp(x) - 1) : x;
  if (op == "Selu") return p[1] * (x > 0 ? x : p[0] * (std::exp(x) - 1));
  if (op == "Celu") return std::max(0.0, x) + std::min(0.0, p[0] * (std::exp(x / p[0]) - 1));
  if (op == "ThresholdedRelu") return x > p[0] ? x : 0;
  if (op == "HardSigmoid") return std::max(0.0, std::min(1.0, p[0] * x + p[1]));
  if (op == "HardSwish") return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
  if (op == "Softplus") return std::log1p(std::exp(x));
  if (op == "Softsign") return x / (1 + std::abs(x));
  if (op == "Shrink") return x < -p[1] ? x + p[0] : x > p[1] ? x - p[0] : 0;
  if (op == "PRelu") return x < 0 ? x * y : x;
  if (op == "Mod") return std::fmod(x, y);
  if (op == "ClipLow") return x < y ? y : x;
  if (op == "ClipHigh") return x > y ? y : x;
  if (op == "Mean") return (x + y) / 2;
  FAIL("no reference for " << op);
  return 0;
}

// Broadcast patterns to test per arity: none scalar, then each input scalar.
std::vector<std::vector<bool>> patterns(unsigned arity) {
  if (arity == 1)
    return {{false}, {true}};
  return {{false, false}, {true, false}, {false, true}};
}

template <typename T> void runFloatOps(DType dtype, double rtol) {
  std::mt19937 rng(42);
  const uint32_t n = 1037; // odd: exercises vector remainders in the host JIT
  VertexCodegen cg;
  struct Run {
    const OpCase *op;
    ElementwiseSpec spec;
    uint32_t index;
  };
  std::vector<Run> runs;
  for (const OpCase &op : kFloatOps)
    for (const auto &scalar : patterns(op.arity)) {
      ElementwiseSpec s{kernelOp(op.op), dtype, n, scalar, op.params};
      runs.push_back({&op, s, cg.getOrCreate(s)});
    }
  JitModule jit(cg);
  for (const Run &r : runs) {
    std::string mask;
    for (bool b : r.spec.scalarInput)
      mask += b ? 'S' : 'V';
    INFO("op " << r.op->op << " inputs " << mask);
    std::vector<std::vector<T>> in;
    std::vector<Bytes> fields;
    for (unsigned j = 0; j < r.op->arity; ++j) {
      in.push_back(randomVector<T>(r.spec.scalarInput[j] ? 1 : n, rng, r.op->lo, r.op->hi));
      fields.push_back(toBytes(in.back()));
    }
    fields.push_back(Bytes(n * sizeof(T)));
    auto out = fromBytes<T>(jit.run(cg.vertexTypes()[r.index], fields).back());
    std::vector<double> want(n);
    for (uint32_t i = 0; i < n; ++i) {
      double x = in[0][r.spec.scalarInput[0] ? 0 : i];
      double y = r.op->arity > 1 ? double(in[1][r.spec.scalarInput[1] ? 0 : i]) : 0.0;
      want[i] = reference(r.op->op, x, y, r.op->params);
    }
    requireClose(out, want, rtol);
  }
}

template <typename T> void runIntOps(DType dtype) {
  VertexCodegen cg;
  const std::vector<std::string> ops = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Neg", "Abs", "Copy", "Relu", "Clip"};
  std::vector<uint32_t> idx;
  const uint32_t n = 301;
  for (const auto &op : ops) {
    bool binary = op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min";
    ElementwiseSpec s{kernelOp(op), dtype, n, std::vector<bool>(binary ? 2 : 1, false), {}};
    if (op == "Clip")
      s.params = {-7, std::numeric_limits<double>::infinity()}; // no upper bound
    idx.push_back(cg.getOrCreate(s));
  }
  JitModule jit(cg);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dist(-20, 20);
  std::vector<T> a(n), b(n);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = T(dist(rng));
    b[i] = T(dist(rng));
  }
  a[0] = std::numeric_limits<T>::min();
  b[0] = -1; // INT_MIN / -1 must not trap
  b[1] = 0;  // x / 0 gives 0
  for (size_t k = 0; k < ops.size(); ++k) {
    const VertexTypeInfo &vt = cg.vertexTypes()[idx[k]];
    INFO("op " << ops[k]);
    std::vector<Bytes> fields = {toBytes(a)};
    if (memoryFieldCount(vt.fields) == 3)
      fields.push_back(toBytes(b));
    fields.push_back(Bytes(n * sizeof(T)));
    auto out = fromBytes<T>(jit.run(vt, fields).back());
    for (uint32_t i = 0; i < n; ++i) {
      using U = std::make_unsigned_t<T>;
      T x = a[i], y = b[i], want = 0;
      const std::string &op = ops[k];
      if (op == "Add") want = T(U(x) + U(y));
      else if (op == "Sub") want = T(U(x) - U(y));
      else if (op == "Mul") want = T(U(x) * U(y));
      else if (op == "Div") want = y == 0 ? 0 : y == -1 ? T(U(0) - U(x)) : T(x / y);
      else if (op == "Max") want = std::max(x, y);
      else if (op == "Min") want = std::min(x, y);
      else if (op == "Neg") want = T(U(0) - U(x));
      else if (op == "Abs") want = x < 0 ? T(U(0) - U(x)) : x;
      else if (op == "Copy") want = x;
      else if (op == "Relu") want = std::max<T>(x, 0);
      else if (op == "Clip") want = std::max<T>(x, -7);
      INFO("i " << i << " x " << x << " y " << y);
      REQUIRE(out[i] == want);
    }
  }
}

} // namespace

TEST_CASE("elementwise float32 ops with scalar broadcast match a reference", "[codegen][elementwise]") {
  runFloatOps<float>(DType::F32, 1e-5);
}

TEST_CASE("elementwise float64 ops match a reference", "[codegen][elementwise]") {
  runFloatOps<double>(DType::F64, 1e-12);
}

TEST_CASE("elementwise int8/int16/int32/int64 ops wrap like two's complement and never trap", "[codegen][elementwise]") {
  runIntOps<int8_t>(DType::I8);
  runIntOps<int16_t>(DType::I16);
  runIntOps<int32_t>(DType::I32);
  runIntOps<int64_t>(DType::I64);
}

TEST_CASE("elementwise Copy moves any dtype bit-exactly", "[codegen][elementwise]") {
  VertexCodegen cg;
  const uint32_t n = 77;
  std::vector<std::pair<DType, size_t>> types = {{DType::F16, 2}, {DType::Bool, 1}, {DType::U8, 1}, {DType::I8, 1}};
  std::vector<uint32_t> idx;
  for (auto [t, size] : types)
    idx.push_back(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Copy, t, n, {false}, {}}));
  JitModule jit(cg);
  std::mt19937 rng(3);
  for (size_t k = 0; k < types.size(); ++k) {
    Bytes in(n * types[k].second);
    for (auto &x : in)
      x = uint8_t(rng());
    auto out = jit.run(cg.vertexTypes()[idx[k]], {in, Bytes(in.size())});
    REQUIRE(out[1] == in);
  }
}

TEST_CASE("elementwise NaN handling: Relu and Clip keep NaN", "[codegen][elementwise]") {
  VertexCodegen cg;
  uint32_t relu = cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Relu, DType::F32, 3, {false}, {}});
  uint32_t clip = cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Clip, DType::F32, 3, {false}, {0.0, 1.0}});
  JitModule jit(cg);
  std::vector<float> in = {std::nanf(""), -1.0f, 2.0f};
  auto r = fromBytes<float>(jit.run(cg.vertexTypes()[relu], {toBytes(in), Bytes(12)})[1]);
  CHECK(std::isnan(r[0]));
  CHECK(r[1] == 0.0f);
  CHECK(r[2] == 2.0f);
  auto c = fromBytes<float>(jit.run(cg.vertexTypes()[clip], {toBytes(in), Bytes(12)})[1]);
  CHECK(std::isnan(c[0]));
  CHECK(c[1] == 0.0f);
  CHECK(c[2] == 1.0f);
}

TEST_CASE("elementwise rejects bad specs with popc::Error", "[codegen][elementwise]") {
  VertexCodegen cg;
  CHECK_THROWS_WITH(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Exp, DType::I32, 4, {false}, {}}),
                    "codegen: Exp not supported for int32");
  CHECK_THROWS_WITH(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Add, DType::Bool, 4, {false, false}, {}}),
                    "codegen: Add not supported for bool");
  CHECK_THROWS_WITH(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Cast, DType::F32, 4, {false}, {}}),
                    "codegen: elementwise Cast needs outDType (the target type)");
  CHECK_THROWS_WITH(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Add, DType::F32, 4, {false, false}, {}, {DType::F32, DType::I32}}),
                    "codegen: elementwise Add of float32: input 1 must be float32, not int32");
  CHECK_THROWS_WITH(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Less, DType::F32, 4, {false, false}, {}, {}, DType::F32}),
                    "codegen: elementwise Less of float32 produces bool, not float32");
  CHECK_FALSE(ops::elementwiseFromName("Frobnicate"));
  CHECK_THROWS_WITH(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::BitShift, DType::I32, 4, {false, false}, {}}),
                    "codegen: BitShift has no elementwise kernel of its own (compiler/lib lowers it onto others)");
  CHECK_THROWS_AS(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Add, DType::F32, 4, {false}, {}}), popc::Error);
  CHECK_THROWS_AS(cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Clip, DType::F32, 4, {false}, {}}), popc::Error);
  CHECK(cg.vertexTypes().empty());
  // The module stays usable after errors.
  cg.getOrCreate(ElementwiseSpec{ops::Elementwise::Add, DType::F32, 4, {false, false}, {}});
  CHECK_NOTHROW(cg.finish());
}

TEST_CASE("elementwise Sum adds any number of inputs, scalars included", "[codegen][elementwise]") {
  std::mt19937 rng(7);
  for (size_t arity : {1u, 3u, 5u}) {
    ElementwiseSpec spec{ops::Elementwise::Sum, DType::F32, 37, std::vector<bool>(arity, false), {}};
    spec.scalarInput.back() = arity > 1;
    VertexCodegen cg;
    const uint32_t type = cg.getOrCreate(spec);
    JitModule jit(cg);
    std::vector<std::vector<float>> ins;
    std::vector<Bytes> fields;
    for (size_t j = 0; j < arity; ++j) {
      ins.push_back(randomVector<float>(spec.scalarInput[j] ? 1 : 37, rng));
      fields.push_back(toBytes(ins.back()));
    }
    fields.push_back(Bytes(37 * 4));
    auto out = fromBytes<float>(jit.run(cg.vertexTypes()[type], fields).back());
    std::vector<double> want(37, 0.0);
    for (size_t i = 0; i < 37; ++i)
      for (size_t j = 0; j < arity; ++j)
        want[i] += ins[j][spec.scalarInput[j] ? 0 : i];
    requireClose(out, want);
  }
  CHECK_THROWS_AS(VertexCodegen().getOrCreate(ElementwiseSpec{ops::Elementwise::Sum, DType::F32, 4, {}, {}}), popc::Error);
}
