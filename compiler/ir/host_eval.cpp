#include "compiler/ir/host_eval.h"

#include "compiler/ir/index_map.h"
#include "compiler/ir/op_attrs.h"
#include "compiler/ops/elementwise.h"
#include "support/element.h"
#include "support/error.h"
#include "support/float16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <set>

namespace popc::ir {

using Bytes = std::vector<uint8_t>;
using Result = HostResult;

namespace {

template <typename T> T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

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

bool hasData(const Tensor *t) { return t && t->data.size() == t->info.bytes(); }

// --- elementwise: the Host column of compiler/ops/elementwise.def --------

struct HostFn {
  double (*real)(double, double) = nullptr;       // float types, in double
  int64_t (*integer)(int64_t, int64_t) = nullptr; // integers and bool, in int64
  bool divides = false;                           // integers: refused for a 0 divisor
  bool custom = false;                            // code of its own below
};

#define POPC_HOST_LAMBDA(T, e) []([[maybe_unused]] T x, [[maybe_unused]] T y) -> T { return T(e); }
#define HOST_NONE HostFn{}
#define HOST_CUSTOM HostFn{nullptr, nullptr, false, true}
#define HOST_FLOAT(e) HostFn{POPC_HOST_LAMBDA(double, e)}
#define HOST_ANY(e) HostFn{POPC_HOST_LAMBDA(double, e), POPC_HOST_LAMBDA(int64_t, e)}
#define HOST_DIVIDE(e) HostFn{POPC_HOST_LAMBDA(double, e), POPC_HOST_LAMBDA(int64_t, e), true}

const HostFn &hostFn(ops::Elementwise op) {
  static const std::vector<HostFn> fns = {
#define POPC_ELEMENTWISE(Name, Arity, Types, Sig, Cost, Params, Infer, MinIn, MaxIn, Grad, Host, Lower) Host,
#include "compiler/ops/elementwise.def"
  };
  return fns.at(size_t(op));
}

#undef HOST_NONE
#undef HOST_CUSTOM
#undef HOST_FLOAT
#undef HOST_ANY
#undef HOST_DIVIDE
#undef POPC_HOST_LAMBDA

// x / y and x % y on int64 that constant folding leaves to run time: a zero
// divisor, and the one quotient that overflows (INT64_MIN / -1 traps on x86).
bool integerDivisionTraps(int64_t x, int64_t y) {
  return y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min());
}

// out = op(inputs...) with numpy broadcasting (a variadic op folds from the
// left). Floats are evaluated in double and rounded once to the output type;
// integers stay exact in int64.
Result elementwise(ops::Elementwise e, const std::vector<const Tensor *> &ins, const TensorInfo &out) {
  const HostFn &fn = hostFn(e);
  const ops::ElementwiseInfo &info = ops::info(e);
  if (ins.empty() || (info.arity != ops::kVariadic && ins.size() != info.arity))
    return std::nullopt;
  const DType t = ins[0]->info.dtype;
  for (const Tensor *in : ins)
    if (!in || in->info.dtype != t)
      return std::nullopt;
  if (info.signature != ops::Signature::ToBool && out.dtype != t)
    return std::nullopt;
  const bool real = isFloatingPoint(t);
  if (real ? !fn.real : !fn.integer)
    return std::nullopt;
  std::vector<std::vector<int64_t>> index;
  for (const Tensor *in : ins)
    index.push_back(broadcastIndex(in->info.shape, out.shape));
  const size_t n = size_t(out.elements());
  auto apply = [&](auto decode, auto f, auto refuse) -> std::optional<std::vector<decltype(f(0, 0))>> {
    using V = decltype(f(0, 0));
    std::vector<std::vector<V>> values;
    for (const Tensor *in : ins)
      values.push_back(decode(t, in->data));
    std::vector<V> r(n);
    for (size_t i = 0; i < n; ++i) {
      V acc = values[0][size_t(index[0][i])];
      if (ins.size() == 1)
        acc = f(acc, V(0));
      for (size_t k = 1; k < ins.size(); ++k) {
        const V v = values[k][size_t(index[k][i])];
        if (refuse(acc, v))
          return std::nullopt;
        acc = f(acc, v);
      }
      r[i] = acc;
    }
    return r;
  };
  if (real) {
    auto r = apply(decodeDoubles, fn.real, [](double, double) { return false; });
    return std::vector<Bytes>{encodeDoubles(out.dtype, *r)};
  }
  auto refuse = [&](int64_t x, int64_t y) { return fn.divides && integerDivisionTraps(x, y); };
  auto r = apply(decodeInt64s, fn.integer, refuse);
  if (!r)
    return std::nullopt;
  return std::vector<Bytes>{encodeInt64s(out.dtype, *r)};
}

// Integer Mod with the divisor's sign (Python); fmod = 1 and floats are left to run time.
Result mod(const Op &op, const Tensor &a, const Tensor &b, const TensorInfo &out) {
  if (op.attrs.getInt("fmod", 0) != 0 || isFloatingPoint(a.info.dtype) || a.info.dtype != b.info.dtype ||
      a.info.dtype != out.dtype)
    return std::nullopt;
  const std::vector<int64_t> ia = broadcastIndex(a.info.shape, out.shape), ib = broadcastIndex(b.info.shape, out.shape);
  const std::vector<int64_t> x = decodeInt64s(a.info.dtype, a.data), y = decodeInt64s(b.info.dtype, b.data);
  std::vector<int64_t> r(ia.size());
  for (size_t i = 0; i < r.size(); ++i) {
    const int64_t u = x[size_t(ia[i])], v = y[size_t(ib[i])];
    if (integerDivisionTraps(u, v))
      return std::nullopt;
    const int64_t m = u % v;
    r[i] = m != 0 && ((m < 0) != (v < 0)) ? m + v : m;
  }
  return std::vector<Bytes>{encodeInt64s(out.dtype, r)};
}

Result where(const Tensor &c, const Tensor &a, const Tensor &b, const TensorInfo &out) {
  if (a.info.dtype != out.dtype || b.info.dtype != out.dtype)
    return std::nullopt;
  std::vector<int64_t> ic = broadcastIndex(c.info.shape, out.shape);
  std::vector<int64_t> ia = broadcastIndex(a.info.shape, out.shape);
  std::vector<int64_t> ib = broadcastIndex(b.info.shape, out.shape);
  const std::vector<int64_t> cond = decodeInt64s(c.info.dtype, c.data);
  const size_t es = dtypeSize(out.dtype);
  Bytes r(ic.size() * es);
  for (size_t i = 0; i < ic.size(); ++i) {
    const Tensor &src = cond[size_t(ic[i])] ? a : b;
    const size_t at = size_t(cond[size_t(ic[i])] ? ia[i] : ib[i]);
    std::memcpy(&r[i * es], &src.data[at * es], es);
  }
  return std::vector<Bytes>{r};
}

Result cast(const Tensor &a, const TensorInfo &out) {
  DType from = a.info.dtype, to = out.dtype;
  if (isFloatingPoint(to))
    return std::vector<Bytes>{encodeDoubles(to, decodeDoubles(from, a.data))};
  if (!isFloatingPoint(from)) {
    std::vector<int64_t> v = decodeInt64s(from, a.data);
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
      if (!hasData(t) || t->info.shape.size() != r || t->info.dtype != out.dtype)
        return std::nullopt;
      size_t block = size_t(t->info.shape[size_t(axis)] * inner) * es;
      const uint8_t *p = t->data.data() + size_t(o) * block;
      res.insert(res.end(), p, p + block);
    }
  if (res.size() != out.bytes())
    return std::nullopt;
  return std::vector<Bytes>{res};
}

Result movement(const Op &op, const Graph &graph, const std::vector<const Tensor *> &ins) {
  const MovementResult m = resolveMovement(op, graph, true);
  if (!m.maps)
    return std::nullopt;
  std::vector<Bytes> outs;
  for (size_t k = 0; k < m.outputs.size(); ++k) {
    const IndexMap &map = (*m.maps)[k];
    const TensorInfo &info = m.outputs[k];
    const Tensor *src = map.input < ins.size() ? ins[map.input] : nullptr;
    if (!hasData(src))
      return std::nullopt;
    const uint8_t *fill = map.fillBytes.empty() ? nullptr : map.fillBytes.data();
    if (map.fillInput) {
      const Tensor *f = *map.fillInput < ins.size() ? ins[*map.fillInput] : nullptr;
      if (!hasData(f) || f->data.empty())
        return std::nullopt;
      fill = f->data.data();
    }
    outs.push_back(applyIndexMap(map, src->data, fill, dtypeSize(info.dtype), size_t(info.elements())));
  }
  return outs;
}

// --- ops computing from shapes / attributes ---------------------------------

Result constantOp(const Op &op, const TensorInfo &out) {
  const auto &a = op.attrs;
  if (a.has("value")) {
    auto t = a.getTensor("value");
    if (!t || t->info != out || t->data.size() != out.bytes())
      return std::nullopt;
    return std::vector<Bytes>{t->data};
  }
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

Result constantOfShape(const Op &op, const TensorInfo &out) {
  Bytes value = encodeDoubles(out.dtype, {0.0});
  if (op.attrs.has("value")) {
    auto t = op.attrs.getTensor("value");
    if (!t || t->data.size() != dtypeSize(out.dtype))
      return std::nullopt;
    value = t->data;
  }
  Bytes res;
  res.reserve(out.bytes());
  for (int64_t i = 0; i < out.elements(); ++i)
    res.insert(res.end(), value.begin(), value.end());
  return std::vector<Bytes>{res};
}

Result range(const std::vector<const Tensor *> &ins, const TensorInfo &out) {
  const DType t = out.dtype;
  const int64_t n = out.elements();
  if (isFloatingPoint(t)) {
    const double start = decodeDoubles(t, ins[0]->data)[0], delta = decodeDoubles(t, ins[2]->data)[0];
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[size_t(i)] = start + double(i) * delta;
    return std::vector<Bytes>{encodeDoubles(t, v)};
  }
  const int64_t start = decodeInt64s(t, ins[0]->data)[0], delta = decodeInt64s(t, ins[2]->data)[0];
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = start + i * delta;
  return std::vector<Bytes>{encodeInt64s(t, v)};
}

Result eyeLike(const Op &op, const TensorInfo &out) {
  const int64_t k = op.attrs.getInt("k", 0);
  const int64_t rows = out.shape.at(0), cols = out.shape.at(1);
  std::vector<double> v(size_t(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols)
      v[size_t(i * cols + i + k)] = 1.0;
  return std::vector<Bytes>{encodeDoubles(out.dtype, v)};
}

// Ops whose output bytes equal their first input's bytes.
const std::set<std::string> kCopy = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"};
const std::set<std::string> kInfoOnly = {"Shape", "Size", "EyeLike"};
const std::set<std::string> kOther = {"Constant", "Transpose", "Concat", "ConstantOfShape", "Range", "Dropout"};

bool foldsElementwise(const std::string &t) {
  const auto e = ops::elementwiseFromName(t);
  if (!e || !ops::info(*e).isOnnxOp)
    return false;
  const HostFn &fn = hostFn(*e);
  return fn.real || fn.integer || fn.custom;
}

} // namespace

bool hostEvalSupports(const std::string &t) {
  return foldsElementwise(t) || kCopy.count(t) || kInfoOnly.count(t) || kOther.count(t) || isMovementOp(t);
}

bool hostEvalNeedsOnlyInfo(const std::string &t) { return kInfoOnly.count(t) != 0; }

Result hostEvaluate(const Op &op, const Graph &graph, const std::vector<const Tensor *> &inputs,
                    const std::vector<TensorInfo> &outputInfos) {
  const std::string &t = op.type;
  if (!(op.domain.empty() || op.domain == "ai.onnx") || !hostEvalSupports(t) ||
      outputInfos.size() != op.outputs.size() || outputInfos.empty())
    return std::nullopt;
  const TensorInfo &out = outputInfos[0];
  if (t == "Constant")
    return constantOp(op, out);
  if (t == "EyeLike")
    return eyeLike(op, out);
  if (inputs.empty() || !inputs[0])
    return std::nullopt;
  const Tensor &a = *inputs[0];
  if (t == "Shape")
    return shapeOp(op, a, out);
  if (t == "Size")
    return std::vector<Bytes>{encodeInt64s(out.dtype, {a.info.elements()})};
  for (const Tensor *in : inputs)
    if (in && !hasData(in))
      return std::nullopt; // not constant data
  if (isMovementOp(t))
    return movement(op, graph, inputs);
  if (t == "Dropout") { // inference: the data, and a mask of all true
    std::vector<Bytes> r{a.data};
    for (size_t k = 1; k < outputInfos.size(); ++k)
      r.push_back(encodeInt64s(outputInfos[k].dtype, std::vector<int64_t>(size_t(outputInfos[k].elements()), 1)));
    return r;
  }
  if (outputInfos.size() != 1)
    return std::nullopt;
  if (kCopy.count(t)) {
    if (a.info.dtype != out.dtype || a.data.size() != out.bytes())
      return std::nullopt;
    return std::vector<Bytes>{a.data};
  }
  if (t == "Cast" || t == "CastLike")
    return cast(a, out);
  if (t == "Where")
    return inputs.size() == 3 && hasData(inputs[1]) && hasData(inputs[2]) ? where(a, *inputs[1], *inputs[2], out)
                                                                          : std::nullopt;
  if (t == "Mod")
    return inputs.size() == 2 && hasData(inputs[1]) ? mod(op, a, *inputs[1], out) : std::nullopt;
  if (auto e = ops::elementwiseFromName(t))
    return elementwise(*e, inputs, out);
  if (t == "Transpose")
    return transpose(op, a, out);
  if (t == "Concat")
    return concat(op, inputs, out);
  if (t == "ConstantOfShape")
    return constantOfShape(op, out);
  if (t == "Range")
    return inputs.size() == 3 && hasData(inputs[1]) && hasData(inputs[2]) ? range(inputs, out) : std::nullopt;
  return std::nullopt;
}

Result hostEvaluate(const Op &op, const std::vector<const Tensor *> &inputs,
                    const std::vector<TensorInfo> &outputInfos) {
  Graph scratch;
  Op copy = op;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      if (i < copy.inputs.size())
        copy.inputs[i].clear();
      continue;
    }
    if (!scratch.hasTensor(inputs[i]->name))
      scratch.addTensor(*inputs[i]);
    if (i < copy.inputs.size())
      copy.inputs[i] = inputs[i]->name;
  }
  return hostEvaluate(copy, scratch, inputs, outputInfos);
}

// --- element conversions ---------------------------------------------------


template <typename R> static std::vector<R> decodeAs(DType t, const Bytes &data) {
  size_t es = dtypeSize(t), n = data.size() / es;
  std::vector<R> v(n);
  const uint8_t *p = data.data();
  for (size_t i = 0; i < n; ++i, p += es) {
    switch (t) {
    case DType::F32: v[i] = R(load<float>(p)); break;
    case DType::F64: v[i] = R(load<double>(p)); break;
    case DType::F16: v[i] = R(halfToFloat(load<uint16_t>(p))); break;
    case DType::BF16: v[i] = R(bfloat16ToFloat(load<uint16_t>(p))); break;
    case DType::I8: v[i] = R(load<int8_t>(p)); break;
    case DType::I16: v[i] = R(load<int16_t>(p)); break;
    case DType::I32: v[i] = R(load<int32_t>(p)); break;
    case DType::I64: v[i] = R(load<int64_t>(p)); break;
    case DType::U8: v[i] = R(load<uint8_t>(p)); break;
    case DType::U16: v[i] = R(load<uint16_t>(p)); break;
    case DType::U32: v[i] = R(load<uint32_t>(p)); break;
    case DType::U64: v[i] = R(load<uint64_t>(p)); break;
    case DType::Bool: v[i] = R(load<uint8_t>(p) != 0); break;
    }
  }
  return v;
}

template <typename V> static Bytes encodeAs(DType t, const std::vector<V> &v) {
  const size_t es = dtypeSize(t);
  Bytes data(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i)
    storeElement(t, data.data() + i * es, v[i]);
  return data;
}

std::vector<double> decodeDoubles(DType t, const Bytes &data) { return decodeAs<double>(t, data); }
std::vector<int64_t> decodeInt64s(DType t, const Bytes &data) { return decodeAs<int64_t>(t, data); }
Bytes encodeDoubles(DType t, const std::vector<double> &v) { return encodeAs(t, v); }
Bytes encodeInt64s(DType t, const std::vector<int64_t> &v) { return encodeAs(t, v); }

} // namespace popc::ir
