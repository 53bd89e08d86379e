#include "formats/npz/npy_header.h"

#include "support/error.h"

#include <bit>
#include <cctype>
#include <optional>

namespace popc::npz::detail {

namespace {

// Recursive-descent parser for the small Python-literal subset numpy writes:
// a dict of string keys whose values are strings, True/False or int tuples.
class DictParser {
public:
  DictParser(std::string_view text, const std::string &label) : text_(text), label_(label) {}

  NpyHeader parse() {
    NpyHeader header;
    bool haveDescr = false, haveFortran = false, haveShape = false;
    expect('{');
    while (!consume('}')) {
      std::string key = parseString();
      expect(':');
      if (key == "descr") {
        once(haveDescr, key);
        skipSpace();
        if (peek() == '[')
          fail("{}: structured dtypes (a list 'descr') are not supported; fix: save each field "
               "as its own array",
               label_);
        header.descr = parseString();
      } else if (key == "fortran_order") {
        once(haveFortran, key);
        header.fortranOrder = parseBool();
      } else if (key == "shape") {
        once(haveShape, key);
        header.shape = parseShape();
      } else {
        bad(fmt::format("unexpected header key '{}' (expected descr, fortran_order, shape)", key));
      }
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    skipSpace();
    if (pos_ != text_.size())
      bad("trailing characters after the header dict");
    if (!haveDescr || !haveFortran || !haveShape)
      bad("header dict lacks one of 'descr', 'fortran_order', 'shape'");
    return header;
  }

private:
  [[noreturn]] void bad(const std::string &what) const {
    fail("{}: invalid .npy header: {}; fix: re-save the array with numpy.save", label_, what);
  }
  void once(bool &seen, const std::string &key) {
    if (seen)
      bad(fmt::format("duplicate key '{}'", key));
    seen = true;
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                    text_[pos_] == '\r'))
      ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    skipSpace();
    if (peek() != c)
      return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!consume(c))
      bad(fmt::format("expected '{}' at offset {}", c, pos_));
  }
  std::string parseString() {
    skipSpace();
    char quote = peek();
    if (quote != '\'' && quote != '"')
      bad(fmt::format("expected a quoted string at offset {}", pos_));
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos)
      bad("unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    if (s.find('\\') != std::string::npos)
      bad("escaped characters in a header string");
    pos_ = end + 1;
    return s;
  }
  bool parseBool() {
    skipSpace();
    static constexpr std::pair<std::string_view, bool> kWords[] = {{"True", true}, {"False", false}};
    for (auto [word, value] : kWords) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    bad("'fortran_order' must be True or False");
  }
  Shape parseShape() {
    Shape shape;
    expect('(');
    while (!consume(')')) {
      skipSpace();
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        bad(fmt::format("shape entries must be non-negative integers (offset {})", pos_));
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (v > (int64_t{1} << 56))
          bad("shape dimension too large");
        v = v * 10 + (text_[pos_++] - '0');
      }
      if (peek() == 'L') // Python 2 long suffix, still found in old files.
        ++pos_;
      shape.push_back(v);
      if (shape.size() > 64)
        bad("more than 64 dimensions");
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  std::string_view text_;
  const std::string &label_;
  size_t pos_ = 0;
};

struct DescrInfo {
  std::string_view code; // kind + size, e.g. "f4"
  DType dtype;
};
constexpr DescrInfo kDescrs[] = {
    {"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16}, {"i1", DType::I8},  {"i2", DType::I16},
    {"i4", DType::I32}, {"i8", DType::I64}, {"u1", DType::U8}, {"u2", DType::U16}, {"u4", DType::U32}, {"u8", DType::U64},  {"b1", DType::Bool},
    // numpy has no bfloat16: ml_dtypes and JAX save it as 2-byte void ('|V2').
    {"V2", DType::BF16},
};

} // namespace

NpyHeader parseHeaderDict(std::string_view text, const std::string &label) {
  return DictParser(text, label).parse();
}

static std::string pythonTupleRepr(const Shape &shape) {
  if (shape.empty())
    return "()";
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string formatHeaderDict(const NpyHeader &header) {
  std::string s = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}", header.descr,
                              header.fortranOrder ? "True" : "False", pythonTupleRepr(header.shape));
  // numpy >= 1.23 leaves room for the growth axis to be rewritten in place.
  constexpr size_t kGrowthAxisMaxDigits = 21;
  if (!header.shape.empty()) {
    size_t axis = header.fortranOrder ? header.shape.size() - 1 : 0;
    size_t digits = std::to_string(header.shape[axis]).size();
    if (digits < kGrowthAxisMaxDigits)
      s.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  return s;
}

DType parseDescr(std::string_view descr, const std::string &label) {
  static_assert(std::endian::native == std::endian::little, "npz assumes a little-endian host");
  constexpr std::string_view kFix = "fix: convert with arr.astype(np.float32) (or another of float32/"
                                    "float64/float16/int8/int16/int32/int64/uint8/bool) before saving";
  if (descr.size() >= 2 && descr[1] == 'O')
    fail("{}: object arrays (dtype '{}') are not supported; fix: save a numeric array, e.g. "
         "np.asarray(x, dtype=np.float32)",
         label, descr);
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '=' || descr[0] == '|' || descr[0] == '>')) {
    for (const auto &d : kDescrs) {
      if (descr.substr(1) != d.code)
        continue;
      bool oneByte = d.code[1] == '1' || d.code[0] == 'V'; // no byte order
      if (descr[0] == '>' && !oneByte)
        fail("{}: big-endian dtype '{}' is not supported; fix: save with arr.astype('<{}')", label,
             descr, d.code);
      if (descr[0] == '|' && !oneByte)
        fail("{}: dtype '{}' has no byte order; fix: re-save with numpy.save", label, descr);
      return d.dtype;
    }
  }
  fail("{}: unsupported dtype '{}'; {}", label, descr, kFix);
}

std::string formatDescr(DType dtype) {
  for (const auto &d : kDescrs)
    if (d.dtype == dtype)
      return std::string(d.code[1] == '1' || d.code[0] == 'V' ? "|" : "<") + std::string(d.code);
  fail("internal error: no .npy descr for dtype {}", static_cast<int>(dtype));
}

} // namespace popc::npz::detail
