// npz-compare: checks that two .npz files hold the same keys, dtypes and
// shapes and values equal within tolerance (|a-b| <= atol + rtol*|b|).
// Used by the end-to-end tests and the quickstart; exits 1 on mismatch.
#include "formats/npz/npz.h"
#include "support/version.h"
#include "support/error.h"

#include "tools/cli_common.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace {

double element(const popc::npz::Array &a, size_t i) {
  using popc::DType;
  const uint8_t *p = a.data.data();
  auto load = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p + i * sizeof v, sizeof v);
    return double(v);
  };
  switch (a.dtype) {
  case DType::F32: return load(float{});
  case DType::F64: return load(double{});
  case DType::I8: return load(int8_t{});
  case DType::I16: return load(int16_t{});
  case DType::I32: return load(int32_t{});
  case DType::I64: return load(int64_t{});
  case DType::U8:
  case DType::Bool: return load(uint8_t{});
  case DType::F16: popc::fail("float16 comparison is not supported");
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"npz-compare: compare two .npz files within tolerance", "npz-compare"};
  std::string actualPath, expectedPath;
  double rtol = 1e-5, atol = 1e-6;
  app.add_option("actual", actualPath, "Produced .npz")->required();
  app.add_option("expected", expectedPath, "Reference .npz")->required();
  app.add_option("--rtol", rtol, "Relative tolerance")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--atol", atol, "Absolute tolerance")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.set_version_flag("--version", popc::compilerVersion());
  if (auto exitCode = popc::tools::parseCommandLine(app, argc, argv))
    return *exitCode;
  return popc::tools::runTool("npz-compare", [&]() -> int {
    const auto actual = popc::npz::readNpz(actualPath);
    const auto expected = popc::npz::readNpz(expectedPath);
    bool ok = true;
    for (const auto &[key, exp] : expected) {
      auto it = actual.find(key);
      if (it == actual.end()) {
        fmt::print("{}: missing key '{}'\n", actualPath, key);
        ok = false;
        continue;
      }
      const auto &act = it->second;
      if (act.dtype != exp.dtype || act.shape != exp.shape) {
        fmt::print("{}: '{}' is {}{}, expected {}{}\n", actualPath, key, popc::dtypeName(act.dtype),
                   popc::shapeToString(act.shape), popc::dtypeName(exp.dtype), popc::shapeToString(exp.shape));
        ok = false;
        continue;
      }
      const size_t n = size_t(popc::numElements(exp.shape));
      size_t bad = 0;
      double worst = 0;
      size_t worstAt = 0;
      for (size_t i = 0; i < n; ++i) {
        const double a = element(act, i), e = element(exp, i);
        const double err = std::fabs(a - e);
        if (!(err <= atol + rtol * std::fabs(e))) {
          if (bad == 0 || err > worst) {
            worst = err;
            worstAt = i;
          }
          ++bad;
        }
      }
      if (bad) {
        fmt::print("'{}': {} of {} elements differ; worst at {}: {} vs {}\n", key, bad, n, worstAt,
                   element(act, worstAt), element(exp, worstAt));
        ok = false;
      } else {
        fmt::print("'{}': {} elements match (rtol {}, atol {})\n", key, n, rtol, atol);
      }
    }
    for (const auto &[key, arr] : actual)
      if (!expected.count(key)) {
        fmt::print("{}: unexpected key '{}'\n", actualPath, key);
        ok = false;
      }
    return ok ? 0 : 1;
  });
}
