// Element-wise comparison of two arrays, as numpy.testing.assert_allclose
// (equal_nan=True) does for floats and exact equality for integers and bool.
// One implementation for npz-compare and the ONNX conformance runner.
#pragma once
#include "formats/npz/npz.h"

#include <cstdint>
#include <span>
#include <map>
#include <string>
#include <vector>

namespace popc::npz {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
  bool nanEqual = true; // NaN == NaN (numpy's equal_nan=True)
  bool allowExtraKeys = false; // keys only in `actual` are not a mismatch
};

// A view of one array: what both npz::Array and the runtime's HostTensor hold.
struct ArrayView {
  DType dtype = DType::F32;
  const Shape *shape = nullptr;
  std::span<const uint8_t> data;
};
ArrayView view(const Array &array);

struct CompareResult {
  bool ok = true;
  uint64_t elements = 0, mismatches = 0;
  // Empty when ok. Otherwise one line: a dtype/shape difference, or
  // "3 of 100 elements differ (rtol 0.001, atol 1e-05); worst at [0,2]: 1.5 vs 1.25
  //  (abs err 0.25, rel err 0.2)".
  std::string message;
};

// Floats (float16, bfloat16, float32/64): |a - e| <= atol + rtol * |e|, infinities must match
// exactly, NaN matches NaN when tol.nanEqual. Integers and bool: exact.
// dtype and shape must be identical.
CompareResult compareArrays(const ArrayView &actual, const ArrayView &expected, const Tolerance &tol);

// Element i as a double (16-bit floats decoded); for reports.
double elementAsDouble(DType dtype, std::span<const uint8_t> data, uint64_t i);

// Every array of `expected` against the same key of `actual`; a key missing
// from either side is a mismatch. One line per key, as npz-compare prints them
// ("'y': 40 elements match (rtol 1e-05, atol 1e-06)", "'y': 3 of 40 elements
// differ ...", "out.npz: missing key 'z'").
struct MapComparison {
  bool ok = true;
  std::vector<std::string> lines;
};
MapComparison compareMaps(const std::map<std::string, ArrayView> &actual,
                          const std::map<std::string, ArrayView> &expected, const Tolerance &tol,
                          const std::string &actualLabel);

} // namespace popc::npz
