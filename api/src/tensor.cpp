// Tensor views: every view is a list of element runs of variables; view
// operations work on element positions and re-compress them into runs.
#include "popc/Tensor.hpp"

#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace popc::api {

std::size_t typeSize(Type t) {
  switch (t) {
  case Type::FLOAT: case Type::INT: case Type::UNSIGNED_INT: return 4;
  case Type::HALF: case Type::SHORT: case Type::UNSIGNED_SHORT: return 2;
  case Type::DOUBLE: case Type::LONGLONG: case Type::UNSIGNED_LONGLONG: return 8;
  case Type::CHAR: case Type::UNSIGNED_CHAR: case Type::BOOL: return 1;
  }
  return 1;
}

std::string typeName(Type t) {
  static const char *names[] = {"float", "half", "double", "char", "short", "int", "long long",
                                "unsigned char", "bool", "unsigned short", "unsigned int", "unsigned long long"};
  return names[static_cast<unsigned>(t)];
}

namespace {
std::size_t product(const std::vector<std::size_t> &s) {
  return std::accumulate(s.begin(), s.end(), std::size_t(1), std::multiplies<>());
}
std::string shapeStr(const std::vector<std::size_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += fmt::format("{}{}", i ? "," : "", s[i]);
  return r + "]";
}
std::vector<std::size_t> stridesOf(const std::vector<std::size_t> &s) {
  std::vector<std::size_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}
} // namespace

Tensor::Tensor(uint32_t var, Type type, std::vector<std::size_t> shape)
    : type_(type), shape_(std::move(shape)), valid_(true) {
  if (product(shape_))
    regions_.push_back({var, 0, product(shape_)});
}

Tensor::Tensor(Type type, std::vector<std::size_t> shape, std::vector<Region> regions)
    : type_(type), shape_(std::move(shape)), regions_(std::move(regions)), valid_(true) {}

std::size_t Tensor::dim(std::size_t d) const {
  if (d >= shape_.size())
    fail("Tensor::dim: dimension {} out of range for shape {}", d, shapeString());
  return shape_[d];
}
std::size_t Tensor::numElements() const { return product(shape_); }
std::string Tensor::shapeString() const { return shapeStr(shape_); }

bool Tensor::isWholeVariable(uint32_t var, std::size_t varElements) const {
  return (varElements == 0 && regions_.empty()) ||
         (regions_.size() == 1 && regions_[0].var == var && regions_[0].begin == 0 && regions_[0].count == varElements);
}

std::vector<std::pair<uint32_t, uint64_t>> Tensor::elements() const {
  std::vector<std::pair<uint32_t, uint64_t>> e;
  e.reserve(numElements());
  for (const Region &r : regions_)
    for (uint64_t i = 0; i < r.count; ++i)
      e.emplace_back(r.var, r.begin + i);
  return e;
}

Tensor Tensor::fromElements(Type t, std::vector<std::size_t> shape,
                            const std::vector<std::pair<uint32_t, uint64_t>> &elems) {
  std::vector<Region> regions;
  for (const auto &[var, e] : elems) {
    if (!regions.empty() && regions.back().var == var && regions.back().begin + regions.back().count == e)
      ++regions.back().count;
    else
      regions.push_back({var, e, 1});
  }
  return Tensor(t, std::move(shape), std::move(regions));
}

// Generic gather: out element i comes from view element source(i); view
// elements are found by binary search over the regions (no expansion).
template <typename F> static Tensor gatherView(const Tensor &t, Type type, std::vector<std::size_t> shape, F source) {
  const auto &regs = t.regions();
  std::vector<uint64_t> starts(regs.size());
  uint64_t pos = 0;
  for (size_t r = 0; r < regs.size(); ++r) {
    starts[r] = pos;
    pos += regs[r].count;
  }
  std::vector<Region> regions;
  const size_t n = product(shape);
  size_t r = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t e = source(i);
    if (!(r < regs.size() && e >= starts[r] && e < starts[r] + regs[r].count))
      r = size_t(std::upper_bound(starts.begin(), starts.end(), e) - starts.begin()) - 1;
    const uint32_t var = regs[r].var;
    const uint64_t elem = regs[r].begin + (e - starts[r]);
    if (!regions.empty() && regions.back().var == var && regions.back().begin + regions.back().count == elem)
      ++regions.back().count;
    else
      regions.push_back({var, elem, 1});
  }
  return Tensor(type, std::move(shape), std::move(regions));
}

Tensor Tensor::slice(std::vector<std::size_t> begin, std::vector<std::size_t> end) const {
  if (begin.size() != shape_.size() || end.size() != shape_.size())
    fail("Tensor::slice: begin/end have {} and {} entries, the tensor has rank {} ({})", begin.size(), end.size(),
         rank(), shapeString());
  std::vector<std::size_t> shape(rank());
  for (size_t d = 0; d < rank(); ++d) {
    if (begin[d] > end[d] || end[d] > shape_[d])
      fail("Tensor::slice: [{}, {}) out of range for dimension {} of {}", begin[d], end[d], d, shapeString());
    shape[d] = end[d] - begin[d];
  }
  const auto inStride = stridesOf(shape_), outStride = stridesOf(shape);
  return gatherView(*this, type_, shape, [&](size_t i) {
    size_t src = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      src += ((i / outStride[d]) % shape[d] + begin[d]) * inStride[d];
    return src;
  });
}

Tensor Tensor::slice(std::size_t begin, std::size_t end, unsigned dim) const {
  if (dim >= rank())
    fail("Tensor::slice: dimension {} out of range for {}", dim, shapeString());
  std::vector<std::size_t> b(rank(), 0), e = shape_;
  b[dim] = begin;
  e[dim] = end;
  return slice(b, e);
}

Tensor Tensor::operator[](std::size_t i) const {
  if (rank() == 0)
    fail("Tensor::operator[]: cannot index a scalar");
  if (i >= shape_[0])
    fail("Tensor::operator[]: index {} out of range for {}", i, shapeString());
  Tensor s = slice(i, i + 1, 0);
  s.shape_.erase(s.shape_.begin());
  return s;
}

Tensor Tensor::index(std::vector<std::size_t> indices) const {
  Tensor t = *this;
  for (std::size_t i : indices)
    t = t[i];
  return t;
}

Tensor Tensor::reshape(std::vector<std::size_t> shape) const {
  if (product(shape) != numElements())
    fail("Tensor::reshape: {} has {} elements, {} has {}", shapeString(), numElements(), shapeStr(shape),
         product(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::flatten() const { return reshape({numElements()}); }

Tensor Tensor::dimShuffle(std::vector<unsigned> perm) const {
  if (perm.size() != rank())
    fail("Tensor::dimShuffle: permutation has {} entries for rank {}", perm.size(), rank());
  std::vector<bool> seen(rank());
  std::vector<std::size_t> shape(rank());
  for (size_t d = 0; d < rank(); ++d) {
    if (perm[d] >= rank() || seen[perm[d]])
      fail("Tensor::dimShuffle: invalid permutation for {}", shapeString());
    seen[perm[d]] = true;
    shape[d] = shape_[perm[d]];
  }
  const auto inStride = stridesOf(shape_), outStride = stridesOf(shape);
  return gatherView(*this, type_, shape, [&](size_t i) {
    size_t src = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      src += ((i / outStride[d]) % shape[d]) * inStride[perm[d]];
    return src;
  });
}

Tensor Tensor::transpose() const {
  if (rank() != 2)
    fail("Tensor::transpose: needs a 2-D tensor, got {}", shapeString());
  return dimShuffle({1, 0});
}

Tensor Tensor::expand(std::vector<std::size_t> dims) const {
  std::vector<std::size_t> shape = shape_;
  for (std::size_t d : dims) {
    if (d > shape.size())
      fail("Tensor::expand: position {} out of range for {}", d, shapeString());
    shape.insert(shape.begin() + long(d), 1);
  }
  return reshape(shape);
}

Tensor Tensor::squeeze(std::vector<std::size_t> dims) const {
  std::vector<std::size_t> shape;
  for (size_t d = 0; d < rank(); ++d) {
    const bool drop = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (drop && shape_[d] != 1)
      fail("Tensor::squeeze: dimension {} of {} is not 1", d, shapeString());
    if (!drop)
      shape.push_back(shape_[d]);
  }
  return reshape(shape);
}

Tensor Tensor::reverse(unsigned dim) const {
  if (dim >= rank())
    fail("Tensor::reverse: dimension {} out of range for {}", dim, shapeString());
  const auto st = stridesOf(shape_);
  return gatherView(*this, type_, shape_, [&](size_t i) {
    const size_t k = (i / st[dim]) % shape_[dim];
    return i + (shape_[dim] - 1 - 2 * k) * st[dim];
  });
}

Tensor Tensor::broadcast(unsigned times, unsigned dim) const {
  if (dim >= rank())
    fail("Tensor::broadcast: dimension {} out of range for {}", dim, shapeString());
  std::vector<Tensor> parts(times, *this);
  return concat(parts, dim);
}

Tensor concat(const std::vector<Tensor> &ts, unsigned dim) {
  if (ts.empty())
    fail("concat: no tensors");
  const Tensor &first = ts[0];
  if (dim >= first.rank())
    fail("concat: dimension {} out of range for {}", dim, first.shapeString());
  std::vector<std::size_t> shape = first.shape();
  shape[dim] = 0;
  for (const Tensor &t : ts) {
    if (t.rank() != first.rank() || t.elementType() != first.elementType())
      fail("concat: {} {} does not match {} {}", typeName(t.elementType()), t.shapeString(),
           typeName(first.elementType()), first.shapeString());
    for (size_t d = 0; d < t.rank(); ++d)
      if (d != dim && t.dim(d) != first.dim(d))
        fail("concat: shapes {} and {} differ outside dimension {}", t.shapeString(), first.shapeString(), dim);
    shape[dim] += t.dim(dim);
  }
  // Row-major: for each outer index, the inner blocks of each tensor in turn.
  size_t outer = 1;
  for (size_t d = 0; d < dim; ++d)
    outer *= shape[d];
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> elems;
  for (const Tensor &t : ts)
    elems.push_back(t.elements());
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (size_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < ts.size(); ++k) {
      const size_t block = outer ? elems[k].size() / outer : 0;
      out.insert(out.end(), elems[k].begin() + long(o * block), elems[k].begin() + long((o + 1) * block));
    }
  return Tensor::fromElements(first.elementType(), shape, out);
}

} // namespace popc::api
