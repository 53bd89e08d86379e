// Device side of the popc graph API: what a codelet file includes (it is
// included automatically). A codelet is a class derived from poplar::Vertex
// with fields Input<T>, Output<T>, InOut<T> (T a scalar or Vector<T>) and
// `bool compute()`; optionally `uint64_t getCycleEstimate() const`, which
// may read the fields' sizes (never their values).
//
// Compiled freestanding by clang-19 (no libc, no exceptions); math through
// __builtin_expf, __builtin_sqrtf, ... Fields are bound to the vertex's
// bytes on its tile; sizes are fixed when the graph is compiled.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace poplar {

class Vertex {};

template <typename T> struct Vector {}; // a field element tag: Input<Vector<float>>
template <typename T> struct VectorList {}; // not supported (fails to bind)

namespace detail {
template <typename T> class Span {
public:
  T *data() const { return p_; }
  size_t size() const { return n_; }
  T *begin() const { return p_; }
  T *end() const { return p_ + n_; }
  T &operator[](size_t i) const { return p_[i]; }
  bool empty() const { return n_ == 0; }
  void popcBind(void *p, uint32_t bytes) {
    p_ = static_cast<T *>(p);
    n_ = bytes / sizeof(T);
  }

private:
  T *p_ = nullptr;
  size_t n_ = 0;
};

template <typename T> class ScalarIn {
public:
  const T &operator*() const { return *p_; }
  operator const T &() const { return *p_; }
  const T *operator->() const { return p_; }
  void popcBind(void *p, uint32_t) { p_ = static_cast<const T *>(p); }

private:
  const T *p_ = nullptr;
};

template <typename T> class ScalarOut {
public:
  T &operator*() const { return *p_; }
  operator T &() const { return *p_; }
  T *operator->() const { return p_; }
  ScalarOut &operator=(const T &v) {
    *p_ = v;
    return *this;
  }
  ScalarOut &operator+=(const T &v) {
    *p_ += v;
    return *this;
  }
  void popcBind(void *p, uint32_t) { p_ = static_cast<T *>(p); }

private:
  T *p_ = nullptr;
};
} // namespace detail

template <typename T> class Input : public detail::ScalarIn<T> {};
template <typename T> class Input<Vector<T>> : public detail::Span<const T> {};
template <typename T> class Output : public detail::ScalarOut<T> {
public:
  using detail::ScalarOut<T>::operator=;
};
template <typename T> class Output<Vector<T>> : public detail::Span<T> {};
template <typename T> class InOut : public detail::ScalarOut<T> {
public:
  using detail::ScalarOut<T>::operator=;
};
template <typename T> class InOut<Vector<T>> : public detail::Span<T> {};

} // namespace poplar

namespace popc_codelet {
template <typename F> inline __attribute__((always_inline)) void bind(F &field, void *p, uint32_t bytes) {
  field.popcBind(p, bytes);
}
} // namespace popc_codelet

using namespace poplar;
