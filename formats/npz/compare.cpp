#include "formats/npz/compare.h"

#include "support/float16.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace popc::npz {

namespace {

template <typename T> T load(std::span<const uint8_t> data, uint64_t i) {
  T v;
  std::memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
  return v;
}

// Exact value of an integer/bool element (int64 holds every supported type).
int64_t integerElement(DType dtype, std::span<const uint8_t> data, uint64_t i) {
  switch (dtype) {
  case DType::I8: return load<int8_t>(data, i);
  case DType::I16: return load<int16_t>(data, i);
  case DType::I32: return load<int32_t>(data, i);
  case DType::I64: return load<int64_t>(data, i);
  case DType::U8: return load<uint8_t>(data, i);
  case DType::U16: return load<uint16_t>(data, i);
  case DType::U32: return load<uint32_t>(data, i);
  case DType::U64: return load<uint64_t>(data, i);
  case DType::Bool: return load<uint8_t>(data, i) != 0;
  default: return 0;
  }
}

// "[0,2,1]" for flat index i of `shape`.
std::string indexString(const Shape &shape, uint64_t i) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const auto extent = uint64_t(std::max<int64_t>(shape[d], 1));
    index[d] = int64_t(i % extent);
    i /= extent;
  }
  return shapeToString(index);
}

std::string valueString(DType dtype, std::span<const uint8_t> data, uint64_t i) {
  if (isFloatingPoint(dtype))
    return fmt::format("{:.9g}", elementAsDouble(dtype, data, i));
  if (dtype == DType::Bool)
    return integerElement(dtype, data, i) ? "true" : "false";
  if (dtype == DType::U64) // integerElement wraps values >= 2^63
    return fmt::format("{}", load<uint64_t>(data, i));
  return fmt::format("{}", integerElement(dtype, data, i));
}

} // namespace

ArrayView view(const Array &array) { return {array.dtype, &array.shape, array.data}; }

double elementAsDouble(DType dtype, std::span<const uint8_t> data, uint64_t i) {
  switch (dtype) {
  case DType::F32: return load<float>(data, i);
  case DType::F64: return load<double>(data, i);
  case DType::F16: return halfToFloat(load<uint16_t>(data, i));
  case DType::BF16: return bfloat16ToFloat(load<uint16_t>(data, i));
  case DType::U64: return double(load<uint64_t>(data, i));
  default: return double(integerElement(dtype, data, i));
  }
}

CompareResult compareArrays(const ArrayView &actual, const ArrayView &expected, const Tolerance &tol) {
  CompareResult r;
  static const Shape kScalar;
  const Shape &as = actual.shape ? *actual.shape : kScalar, &es = expected.shape ? *expected.shape : kScalar;
  if (actual.dtype != expected.dtype || as != es) {
    r.ok = false;
    r.message = fmt::format("got {} {}, expected {} {}", dtypeName(actual.dtype), shapeToString(as),
                            dtypeName(expected.dtype), shapeToString(es));
    return r;
  }
  const uint64_t n = uint64_t(numElements(es));
  const size_t bytes = size_t(n) * dtypeSize(expected.dtype);
  if (actual.data.size() < bytes || expected.data.size() < bytes) {
    r.ok = false;
    r.message = fmt::format("data holds {} / {} bytes, expected {} for {} {}", actual.data.size(),
                            expected.data.size(), bytes, dtypeName(expected.dtype), shapeToString(es));
    return r;
  }
  r.elements = n;
  const bool floating = isFloatingPoint(expected.dtype);
  double worstErr = -1;
  uint64_t worstAt = 0;
  for (uint64_t i = 0; i < n; ++i) {
    double err = 0;
    bool bad;
    if (floating) {
      const double a = elementAsDouble(actual.dtype, actual.data, i);
      const double e = elementAsDouble(expected.dtype, expected.data, i);
      if (std::isnan(a) || std::isnan(e)) {
        bad = !(tol.nanEqual && std::isnan(a) && std::isnan(e));
        err = INFINITY;
      } else if (std::isinf(a) || std::isinf(e)) {
        bad = a != e;
        err = bad ? INFINITY : 0;
      } else {
        err = std::fabs(a - e);
        bad = !(err <= tol.atol + tol.rtol * std::fabs(e));
      }
    } else {
      const int64_t a = integerElement(actual.dtype, actual.data, i);
      const int64_t e = integerElement(expected.dtype, expected.data, i);
      bad = a != e;
      err = bad ? std::fabs(double(a) - double(e)) : 0;
    }
    if (bad) {
      if (err > worstErr) {
        worstErr = err;
        worstAt = i;
      }
      ++r.mismatches;
    }
  }
  if (r.mismatches == 0)
    return r;
  r.ok = false;
  const double a = elementAsDouble(actual.dtype, actual.data, worstAt);
  const double e = elementAsDouble(expected.dtype, expected.data, worstAt);
  const double absErr = std::fabs(a - e);
  std::string tolText = floating ? fmt::format(" (rtol {:g}, atol {:g})", tol.rtol, tol.atol) : " (exact)";
  r.message = fmt::format("{} of {} elements differ{}; worst at {}: {} vs {} (abs err {:.3g}, rel err {:.3g})",
                          r.mismatches, n, tolText, indexString(es, worstAt),
                          valueString(actual.dtype, actual.data, worstAt),
                          valueString(expected.dtype, expected.data, worstAt), absErr,
                          e != 0 ? absErr / std::fabs(e) : (absErr == 0 ? 0.0 : INFINITY));
  return r;
}

MapComparison compareMaps(const std::map<std::string, ArrayView> &actual,
                          const std::map<std::string, ArrayView> &expected, const Tolerance &tol,
                          const std::string &actualLabel) {
  MapComparison out;
  for (const auto &[key, exp] : expected) {
    auto it = actual.find(key);
    if (it == actual.end()) {
      out.lines.push_back(fmt::format("{}: missing key '{}'", actualLabel, key));
      out.ok = false;
      continue;
    }
    const CompareResult r = compareArrays(it->second, exp, tol);
    if (!r.ok) {
      out.lines.push_back(fmt::format("'{}': {}", key, r.message));
      out.ok = false;
    } else if (isFloatingPoint(exp.dtype)) {
      out.lines.push_back(fmt::format("'{}': {} elements match (rtol {}, atol {})", key, r.elements, tol.rtol, tol.atol));
    } else {
      out.lines.push_back(fmt::format("'{}': {} elements match (exact)", key, r.elements));
    }
  }
  for (const auto &[key, arr] : actual)
    if (!expected.count(key) && !tol.allowExtraKeys) {
      out.lines.push_back(fmt::format("{}: unexpected key '{}'", actualLabel, key));
      out.ok = false;
    }
  return out;
}

} // namespace popc::npz
