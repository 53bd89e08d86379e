#include "compiler/passes/host_eval.h"

#include "compiler/passes/pass_utils.h"
#include "support/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

namespace popc::passes {

using ir::Op;
using ir::Tensor;
using ir::TensorInfo;
using Bytes = std::vector<uint8_t>;
using Result = std::optional<std::vector<Bytes>>;

namespace {

template <typename T> T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T> void store(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

bool isFloat(DType t) { return t == DType::F32 || t == DType::F64; }

// Row-major strides of a shape, in elements.
std::vector<int64_t> stridesOf(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = int(s.size()) - 2; i >= 0; --i)
    st[i] = st[i + 1] * s[i + 1];
  return st;
}

// For each output element, the index of the element of an input of shape `in`
// that numpy broadcasting reads.
std::vector<int64_t> broadcastIndex(const Shape &in, const Shape &out) {
  size_t r = out.size(), k = in.size();
  std::vector<int64_t> inStrides = stridesOf(in), bstride(r, 0);
  for (size_t d = 0; d < k; ++d)
    if (in[d] != 1)
      bstride[r - k + d] = inStrides[d];
  int64_t n = numElements(out);
  std::vector<int64_t> idx(size_t(n), 0), counter(r, 0);
  int64_t cur = 0;
  for (int64_t i = 0; i < n; ++i) {
    idx[size_t(i)] = cur;
    for (int d = int(r) - 1; d >= 0; --d) {
      if (++counter[d] < out[d]) {
        cur += bstride[d];
        break;
      }
      cur -= bstride[d] * (out[d] - 1);
      counter[d] = 0;
    }
  }
  return idx;
}

int64_t normAxis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

// --- elementwise ---------------------------------------------------------

Result binary(const Op &op, const Tensor &a, const Tensor &b, const TensorInfo &out) {
  if (!hostDTypeSupported(out.dtype) || out.dtype == DType::Bool || a.info.dtype != out.dtype ||
      b.info.dtype != out.dtype)
    return std::nullopt;
  std::vector<int64_t> ia = broadcastIndex(a.info.shape, out.shape);
  std::vector<int64_t> ib = broadcastIndex(b.info.shape, out.shape);
  size_t n = ia.size();
  const std::string &t = op.type;
  if (isFloat(out.dtype)) {
    // Evaluate in double, round once to the output type.
    std::vector<double> x = decodeDoubles(a.info.dtype, a.data), y = decodeDoubles(b.info.dtype, b.data);
    std::vector<double> r(n);
    for (size_t i = 0; i < n; ++i) {
      double u = x[size_t(ia[i])], v = y[size_t(ib[i])];
      r[i] = t == "Add" ? u + v : t == "Sub" ? u - v : t == "Mul" ? u * v : u / v;
    }
    return std::vector<Bytes>{encodeDoubles(out.dtype, r)};
  }
  // Integers stay exact in int64; ONNX integer Div truncates toward zero.
  std::vector<int64_t> x = decodeInt64s(a.info.dtype, a.data), y = decodeInt64s(b.info.dtype, b.data);
  std::vector<int64_t> r(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t u = x[size_t(ia[i])], v = y[size_t(ib[i])];
    if (t == "Div" && v == 0)
      return std::nullopt; // leave the division by zero to run time
    r[i] = t == "Add" ? u + v : t == "Sub" ? u - v : t == "Mul" ? u * v : u / v;
  }
  return std::vector<Bytes>{encodeInt64s(out.dtype, r)};
}

Result unary(const Op &op, const Tensor &a, const TensorInfo &out) {
  const std::string &t = op.type;
  if (!hostDTypeSupported(out.dtype) || out.dtype == DType::Bool || a.info.dtype != out.dtype)
    return std::nullopt;
  if (!isFloat(out.dtype)) {
    if (t != "Neg" && t != "Abs" && t != "Relu")
      return std::nullopt;
    std::vector<int64_t> x = decodeInt64s(a.info.dtype, a.data);
    for (int64_t &v : x)
      v = t == "Neg" ? -v : t == "Abs" ? (v < 0 ? -v : v) : (v < 0 ? 0 : v);
    return std::vector<Bytes>{encodeInt64s(out.dtype, x)};
  }
  static const std::map<std::string, std::function<double(double)>> fns = {
      {"Neg", [](double v) { return -v; }},
      {"Abs", [](double v) { return std::fabs(v); }},
      {"Relu", [](double v) { return v < 0 ? 0.0 : v; }},
      {"Sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"Tanh", [](double v) { return std::tanh(v); }},
      {"Sqrt", [](double v) { return std::sqrt(v); }},
      {"Exp", [](double v) { return std::exp(v); }},
      {"Log", [](double v) { return std::log(v); }},
      {"Reciprocal", [](double v) { return 1.0 / v; }},
      {"Floor", [](double v) { return std::floor(v); }},
      {"Ceil", [](double v) { return std::ceil(v); }},
  };
  const auto &fn = fns.at(t);
  std::vector<double> x = decodeDoubles(a.info.dtype, a.data);
  for (double &v : x)
    v = fn(v);
  return std::vector<Bytes>{encodeDoubles(out.dtype, x)};
}

Result cast(const Tensor &a, const TensorInfo &out) {
  DType from = a.info.dtype, to = out.dtype;
  if (!hostDTypeSupported(from) || !hostDTypeSupported(to))
    return std::nullopt;
  if (isFloat(to))
    return std::vector<Bytes>{encodeDoubles(to, decodeDoubles(from, a.data))};
  if (!isFloat(from)) {
    std::vector<int64_t> v = decodeInt64s(from, a.data);
    if (to == DType::Bool)
      for (int64_t &x : v)
        x = x != 0;
    return std::vector<Bytes>{encodeInt64s(to, v)};
  }
  std::vector<double> d = decodeDoubles(from, a.data);
  std::vector<int64_t> v(d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    if (to == DType::Bool) {
      v[i] = d[i] != 0;
      continue;
    }
    if (!std::isfinite(d[i]) || std::fabs(d[i]) >= 9.2e18)
      return std::nullopt; // undefined in ONNX; do not guess at compile time
    v[i] = int64_t(std::trunc(d[i]));
  }
  return std::vector<Bytes>{encodeInt64s(to, v)};
}

// --- data movement (byte-level, any dtype) ---------------------------------

Result transpose(const Op &op, const Tensor &a, const TensorInfo &out) {
  size_t r = a.info.shape.size(), es = dtypeSize(a.info.dtype);
  std::vector<int64_t> perm = op.attrs.getInts("perm");
  if (perm.empty())
    for (size_t i = 0; i < r; ++i)
      perm.push_back(int64_t(r - 1 - i));
  if (perm.size() != r)
    return std::nullopt;
  std::vector<int64_t> inStrides = stridesOf(a.info.shape);
  Shape outShape(r);
  std::vector<int64_t> srcStride(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t p = perm[d];
    if (p < 0 || p >= int64_t(r))
      return std::nullopt;
    outShape[d] = a.info.shape[size_t(p)];
    srcStride[d] = inStrides[size_t(p)];
  }
  if (outShape != out.shape)
    return std::nullopt;
  int64_t n = numElements(outShape);
  Bytes res(size_t(n) * es);
  std::vector<int64_t> counter(r, 0);
  int64_t src = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(&res[size_t(i) * es], &a.data[size_t(src) * es], es);
    for (int d = int(r) - 1; d >= 0; --d) {
      if (++counter[d] < outShape[d]) {
        src += srcStride[d];
        break;
      }
      src -= srcStride[d] * (outShape[d] - 1);
      counter[d] = 0;
    }
  }
  return std::vector<Bytes>{res};
}

Result concat(const Op &op, const std::vector<const Tensor *> &ins, const TensorInfo &out) {
  size_t r = out.shape.size(), es = dtypeSize(out.dtype);
  int64_t axis = normAxis(op.attrs.getInt("axis"), r);
  if (axis < 0 || axis >= int64_t(r))
    return std::nullopt;
  // outer = product of dims before axis; each input contributes a contiguous
  // block of (its axis dim * inner) elements per outer index.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= out.shape[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < r; ++d)
    inner *= out.shape[d];
  Bytes res;
  res.reserve(out.bytes());
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor *t : ins) {
      if (!t)
        continue;
      if (t->info.shape.size() != r || t->info.dtype != out.dtype)
        return std::nullopt;
      size_t block = size_t(t->info.shape[size_t(axis)] * inner) * es;
      const uint8_t *p = t->data.data() + size_t(o) * block;
      res.insert(res.end(), p, p + block);
    }
  if (res.size() != out.bytes())
    return std::nullopt;
  return std::vector<Bytes>{res};
}

Result gather(const Op &op, const Tensor &data, const Tensor &indices, const TensorInfo &out) {
  size_t r = data.info.shape.size(), es = dtypeSize(data.info.dtype);
  int64_t axis = normAxis(op.attrs.getInt("axis", 0), r);
  if (axis < 0 || axis >= int64_t(r) || isFloat(indices.info.dtype) ||
      !hostDTypeSupported(indices.info.dtype))
    return std::nullopt;
  int64_t outer = 1, inner = 1, dim = data.info.shape[size_t(axis)];
  for (int64_t d = 0; d < axis; ++d)
    outer *= data.info.shape[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < r; ++d)
    inner *= data.info.shape[d];
  std::vector<int64_t> idx = decodeInt64s(indices.info.dtype, indices.data);
  Bytes res;
  res.reserve(out.bytes());
  size_t block = size_t(inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx) {
      if (i < 0)
        i += dim;
      if (i < 0 || i >= dim)
        return std::nullopt; // out of range: let the run-time op report it
      const uint8_t *p = data.data.data() + size_t((o * dim + i) * inner) * es;
      res.insert(res.end(), p, p + block);
    }
  if (res.size() != out.bytes())
    return std::nullopt;
  return std::vector<Bytes>{res};
}

Result constantOp(const Op &op, const TensorInfo &out) {
  const auto &a = op.attrs;
  if (a.has("value")) {
    auto t = a.getTensor("value");
    if (!t || t->info != out || t->data.size() != out.bytes())
      return std::nullopt;
    return std::vector<Bytes>{t->data};
  }
  if (!hostDTypeSupported(out.dtype))
    return std::nullopt;
  std::vector<double> f;
  std::vector<int64_t> i;
  if (a.has("value_float"))
    f = {a.getFloat("value_float", 0)};
  else if (a.has("value_floats"))
    f = a.getFloats("value_floats");
  else if (a.has("value_int"))
    i = {a.getInt("value_int")};
  else if (a.has("value_ints"))
    i = a.getInts("value_ints");
  else
    return std::nullopt; // value_string, sparse_value: not supported here
  Bytes res = f.empty() && !i.empty() ? encodeInt64s(out.dtype, i) : encodeDoubles(out.dtype, f);
  if (res.size() != out.bytes())
    return std::nullopt;
  return std::vector<Bytes>{res};
}

Result shapeOp(const Op &op, const Tensor &a, const TensorInfo &out) {
  const Shape &s = a.info.shape;
  int64_t r = int64_t(s.size());
  auto clampAxis = [&](int64_t v) {
    if (v < 0)
      v += r;
    return std::clamp<int64_t>(v, 0, r);
  };
  int64_t start = clampAxis(op.attrs.getInt("start", 0));
  int64_t end = clampAxis(op.attrs.getInt("end", r));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(s[size_t(d)]);
  Bytes res = encodeInt64s(out.dtype, dims);
  if (res.size() != out.bytes())
    return std::nullopt;
  return std::vector<Bytes>{res};
}

const std::set<std::string> kBinary = {"Add", "Sub", "Mul", "Div"};
const std::set<std::string> kUnary = {"Neg",  "Abs", "Relu",       "Sigmoid", "Tanh", "Sqrt",
                                      "Exp",  "Log", "Reciprocal", "Floor",   "Ceil"};
// Ops whose output bytes equal their first input's bytes.
const std::set<std::string> kCopy = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"};
const std::set<std::string> kOther = {"Constant", "Shape", "Cast", "Transpose", "Concat", "Gather"};

} // namespace

bool hostEvalSupports(const std::string &t) {
  return kBinary.count(t) || kUnary.count(t) || kCopy.count(t) || kOther.count(t);
}

Result hostEvaluate(const Op &op, const std::vector<const Tensor *> &inputs,
                    const std::vector<TensorInfo> &outputInfos) {
  const std::string &t = op.type;
  if (!isOnnxOp(op) || outputInfos.size() != 1 || !hostEvalSupports(t))
    return std::nullopt;
  const TensorInfo &out = outputInfos[0];
  if (t == "Constant")
    return constantOp(op, out);
  if (inputs.empty() || !inputs[0])
    return std::nullopt;
  const Tensor &a = *inputs[0];
  if (t == "Shape")
    return shapeOp(op, a, out);
  if (a.data.size() != a.info.bytes())
    return std::nullopt; // not constant data
  if (kCopy.count(t)) {
    if (a.info.dtype != out.dtype || a.data.size() != out.bytes())
      return std::nullopt;
    return std::vector<Bytes>{a.data};
  }
  if (kUnary.count(t))
    return unary(op, a, out);
  if (t == "Cast")
    return cast(a, out);
  if (t == "Transpose")
    return transpose(op, a, out);
  if (t == "Concat")
    return concat(op, inputs, out);
  if (inputs.size() < 2 || !inputs[1] || inputs[1]->data.size() != inputs[1]->info.bytes())
    return std::nullopt;
  if (t == "Gather")
    return gather(op, a, *inputs[1], out);
  return binary(op, a, *inputs[1], out);
}

// --- element conversions ---------------------------------------------------

bool hostDTypeSupported(DType t) { return t != DType::F16; }

template <typename R> static std::vector<R> decodeAs(DType t, const Bytes &data) {
  size_t es = dtypeSize(t), n = data.size() / es;
  std::vector<R> v(n);
  const uint8_t *p = data.data();
  for (size_t i = 0; i < n; ++i, p += es) {
    switch (t) {
    case DType::F32: v[i] = R(load<float>(p)); break;
    case DType::F64: v[i] = R(load<double>(p)); break;
    case DType::I8: v[i] = R(load<int8_t>(p)); break;
    case DType::I16: v[i] = R(load<int16_t>(p)); break;
    case DType::I32: v[i] = R(load<int32_t>(p)); break;
    case DType::I64: v[i] = R(load<int64_t>(p)); break;
    case DType::U8: v[i] = R(load<uint8_t>(p)); break;
    case DType::Bool: v[i] = R(load<uint8_t>(p) != 0); break;
    case DType::F16: fail("internal error: host evaluator does not support float16");
    }
  }
  return v;
}

template <typename V> static Bytes encodeAs(DType t, const std::vector<V> &v) {
  size_t es = dtypeSize(t);
  Bytes data(v.size() * es);
  uint8_t *p = data.data();
  for (size_t i = 0; i < v.size(); ++i, p += es) {
    switch (t) {
    case DType::F32: store<float>(p, float(v[i])); break;
    case DType::F64: store<double>(p, double(v[i])); break;
    case DType::I8: store<int8_t>(p, int8_t(v[i])); break;
    case DType::I16: store<int16_t>(p, int16_t(v[i])); break;
    case DType::I32: store<int32_t>(p, int32_t(v[i])); break;
    case DType::I64: store<int64_t>(p, int64_t(v[i])); break;
    case DType::U8: store<uint8_t>(p, uint8_t(v[i])); break;
    case DType::Bool: store<uint8_t>(p, uint8_t(v[i] != 0)); break;
    case DType::F16: fail("internal error: host evaluator does not support float16");
    }
  }
  return data;
}

std::vector<double> decodeDoubles(DType t, const Bytes &data) { return decodeAs<double>(t, data); }
std::vector<int64_t> decodeInt64s(DType t, const Bytes &data) { return decodeAs<int64_t>(t, data); }
Bytes encodeDoubles(DType t, const std::vector<double> &v) { return encodeAs(t, v); }
Bytes encodeInt64s(DType t, const std::vector<int64_t> &v) { return encodeAs(t, v); }

} // namespace popc::passes
