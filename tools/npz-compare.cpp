// npz-compare: checks that two .npz files hold the same keys, dtypes and
// shapes, floats equal within tolerance (|a-e| <= atol + rtol*|e|, NaN == NaN
// by default) and integers/bools exactly (formats/npz/compare.h, shared with
// the ONNX conformance runner). Exits 1 on mismatch.
#include "formats/npz/compare.h"
#include "formats/npz/npz.h"
#include "support/error.h"
#include "support/version.h"

#include "tools/cli_common.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

int main(int argc, char **argv) {
  CLI::App app{"npz-compare: compare two .npz files within tolerance", "npz-compare"};
  std::string actualPath, expectedPath;
  popc::npz::Tolerance tol{1e-5, 1e-6, true};
  app.add_option("actual", actualPath, "Produced .npz")->required();
  app.add_option("expected", expectedPath, "Reference .npz")->required();
  app.add_option("--rtol", tol.rtol, "Relative tolerance (floats)")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--atol", tol.atol, "Absolute tolerance (floats)")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_flag("--nan-equal,!--no-nan-equal", tol.nanEqual,
               "NaN in both arrays at the same place counts as equal (default on)");
  app.add_flag("--subset", tol.allowExtraKeys,
               "Compare only the keys of the expected file; the actual file may hold more (trained weights "
               "beside optimizer state)");
  app.set_version_flag("--version", popc::compilerVersion());
  if (auto exitCode = popc::tools::parseCommandLine(app, argc, argv))
    return *exitCode;
  return popc::tools::runTool("npz-compare", [&]() -> int {
    const auto actual = popc::npz::readNpz(actualPath);
    const auto expected = popc::npz::readNpz(expectedPath);
    std::map<std::string, popc::npz::ArrayView> a, e;
    for (const auto &[key, arr] : actual)
      a[key] = popc::npz::view(arr);
    for (const auto &[key, arr] : expected)
      e[key] = popc::npz::view(arr);
    const auto result = popc::npz::compareMaps(a, e, tol, actualPath);
    for (const std::string &line : result.lines)
      fmt::print("{}\n", line);
    const bool ok = result.ok;
    return ok ? 0 : 1;
  });
}
