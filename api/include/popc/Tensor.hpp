// popc graph API: element types and Tensor, a view of device data.
//
// A Tensor is a value: a shape plus, for every element in row-major order,
// where it lives (which variable, which element). slice / reshape /
// transpose / concat make new views of the same variables without copying.
#pragma once
#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace popc::api {

// Element types; values match popc::DType and popef.
enum class Type : uint8_t {
  FLOAT = 0, HALF = 1, DOUBLE = 2, CHAR = 3, SHORT = 4, INT = 5, LONGLONG = 6,
  UNSIGNED_CHAR = 7, BOOL = 8, UNSIGNED_SHORT = 9, UNSIGNED_INT = 10, UNSIGNED_LONGLONG = 11,
};
inline constexpr Type FLOAT = Type::FLOAT, HALF = Type::HALF, DOUBLE = Type::DOUBLE, CHAR = Type::CHAR,
                      SHORT = Type::SHORT, INT = Type::INT, LONGLONG = Type::LONGLONG,
                      UNSIGNED_CHAR = Type::UNSIGNED_CHAR, BOOL = Type::BOOL,
                      UNSIGNED_SHORT = Type::UNSIGNED_SHORT, UNSIGNED_INT = Type::UNSIGNED_INT,
                      UNSIGNED_LONGLONG = Type::UNSIGNED_LONGLONG;
std::size_t typeSize(Type t);
std::string typeName(Type t); // "float", "int", ...

// Contiguous elements [begin, begin+count) of variable `var`.
struct Region {
  uint32_t var = 0;
  uint64_t begin = 0, count = 0;
  bool operator==(const Region &) const = default;
  auto operator<=>(const Region &) const = default;
};

class Tensor {
public:
  Tensor() = default;
  // A whole variable (used by Graph).
  Tensor(uint32_t var, Type type, std::vector<std::size_t> shape);
  Tensor(Type type, std::vector<std::size_t> shape, std::vector<Region> regions);

  Type elementType() const { return type_; }
  const std::vector<std::size_t> &shape() const { return shape_; }
  std::size_t rank() const { return shape_.size(); }
  std::size_t dim(std::size_t d) const;
  std::size_t numElements() const;
  bool valid() const { return valid_; }
  // Where each run of elements lives, in row-major order of this view.
  const std::vector<Region> &regions() const { return regions_; }
  // True when this view is one whole variable in its own order.
  bool isWholeVariable(uint32_t var, std::size_t varElements) const;

  // Views (no data moves).
  Tensor operator[](std::size_t i) const;                 // index dimension 0
  Tensor index(std::vector<std::size_t> indices) const;    // several leading dims
  Tensor slice(std::size_t begin, std::size_t end, unsigned dim = 0) const;
  Tensor slice(std::vector<std::size_t> begin, std::vector<std::size_t> end) const;
  Tensor reshape(std::vector<std::size_t> shape) const;
  Tensor flatten() const;
  Tensor transpose() const;                                // 2-D
  Tensor dimShuffle(std::vector<unsigned> permutation) const;
  Tensor expand(std::vector<std::size_t> dims) const;     // insert size-1 dims at these positions
  Tensor squeeze(std::vector<std::size_t> dims) const;    // remove size-1 dims
  Tensor reverse(unsigned dim) const;
  Tensor broadcast(unsigned times, unsigned dim) const;    // repeat along dim

  std::string shapeString() const; // "[2,3]"

private:
  // Element positions (var, element) of this view, in row-major order.
  std::vector<std::pair<uint32_t, uint64_t>> elements() const;
  static Tensor fromElements(Type t, std::vector<std::size_t> shape,
                             const std::vector<std::pair<uint32_t, uint64_t>> &elems);
  friend Tensor concat(const std::vector<Tensor> &, unsigned);

  Type type_ = Type::FLOAT;
  std::vector<std::size_t> shape_;
  std::vector<Region> regions_;
  bool valid_ = false;
};

// Concatenation along `dim` (all other dims equal).
Tensor concat(const std::vector<Tensor> &tensors, unsigned dim = 0);
inline Tensor concat(const Tensor &a, const Tensor &b, unsigned dim = 0) { return concat({a, b}, dim); }

} // namespace popc::api
