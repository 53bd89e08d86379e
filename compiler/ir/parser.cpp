#include "compiler/ir/parser.h"

#include "compiler/ir/op_helpers.h"
#include "compiler/ir/text_syntax.h"
#include "support/error.h"
#include "support/element.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace popc::ir {

namespace {

// Elements a tensor type may declare: its bytes (up to 8 per element) stay
// far from overflowing 64 bits.
constexpr uint64_t kMaxElements = uint64_t(1) << 59;

bool isWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}
bool isNumberChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '+' ||
         c == '.';
}
// How the printer tells a float from an int: floatStr always leaves a '.', an
// exponent, "inf" or "nan" in the text.
bool looksFloat(std::string_view tok) { return tok.find_first_of(".eEinIN") != std::string_view::npos; }

class Parser {
public:
  Parser(std::string_view text, const std::string &source, uint64_t maxTensorBytes)
      : text_(text), source_(source), maxTensorBytes_(maxTensorBytes) {}

  Ir run() {
    Ir ir;
    skipLines();
    const bool header = acceptWord("ir");
    if (header) {
      ir.modelName = quoted("the model name");
      ir.opsetVersion = opsetClause();
      endLine();
    }
    bool first = true;
    for (skipLines(); !atEnd(); skipLines()) {
      const size_t at = pos_;
      if (!acceptWord("graph"))
        error(at, "expected 'graph ID (opset N) {'", "every op, tensor and output line belongs inside a graph");
      std::string id = name("a graph id");
      Graph g(id);
      g.opset = opsetClause();
      expect("{", "after the graph's opset");
      endLine();
      graphBody(g, at);
      if (first) {
        ir.main = std::move(g);
        first = false;
      } else if (!ir.subgraphs.emplace(id, std::move(g)).second) {
        error(at, fmt::format("graph '{}' is defined twice", id), "give each subgraph its own id");
      }
    }
    if (first)
      error(pos_, "no graph in the text", "write at least 'graph main (opset 13) {' ... '}'");
    if (!header)
      ir.opsetVersion = ir.main.opset;
    return ir;
  }

private:
  // --- errors and positions ---------------------------------------------------
  [[noreturn]] void error(size_t at, const std::string &what, const std::string &fix) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    fail("{}:{}:{}: {}; {}", source_, line, column, what, fix);
  }
  size_t lineOf(size_t at) const {
    return size_t(std::count(text_.begin(), text_.begin() + std::ptrdiff_t(std::min(at, text_.size())), '\n')) + 1;
  }
  std::string found() const {
    if (atEnd())
      return "the end of the text";
    if (peek() == '\n')
      return "the end of the line";
    size_t end = pos_;
    while (end < text_.size() && end - pos_ < 16 && text_[end] != '\n' && text_[end] != ' ')
      ++end;
    return fmt::format("'{}'", text_.substr(pos_, std::max<size_t>(1, end - pos_)));
  }

  // --- characters --------------------------------------------------------------
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  void skipBlanks() {
    while (!atEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }
  // Blank lines and comment lines ("//" or "#" first on the line).
  void skipLines() {
    for (;;) {
      skipBlanks();
      if (peek() == '\n') {
        ++pos_;
      } else if (text_.substr(pos_, 2) == "//" || peek() == '#') {
        while (!atEnd() && text_[pos_] != '\n')
          ++pos_;
      } else {
        return;
      }
    }
  }
  bool accept(std::string_view token) {
    skipBlanks();
    if (text_.substr(pos_, token.size()) != token)
      return false;
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token, const std::string &context) {
    if (!accept(token))
      error(pos_, fmt::format("expected '{}' {}, found {}", token, context, found()),
            "write the line as printIr does (docs/ir-text.md)");
  }
  void endLine() {
    skipBlanks();
    if (atEnd())
      return;
    if (peek() != '\n')
      error(pos_, fmt::format("expected the end of the line, found {}", found()),
            "put one tensor, op or output per line");
    ++pos_;
  }

  // --- tokens ------------------------------------------------------------------
  std::string word(const std::string &what) {
    skipBlanks();
    const size_t start = pos_;
    while (!atEnd() && isWordChar(text_[pos_]))
      ++pos_;
    if (pos_ == start)
      error(pos_, fmt::format("expected {}, found {}", what, found()), "write the line as printIr does (docs/ir-text.md)");
    return std::string(text_.substr(start, pos_ - start));
  }
  bool acceptWord(std::string_view w) {
    skipBlanks();
    const size_t save = pos_;
    if (text_.substr(pos_, w.size()) == w && (pos_ + w.size() >= text_.size() || !isWordChar(text_[pos_ + w.size()]))) {
      pos_ += w.size();
      return true;
    }
    pos_ = save;
    return false;
  }
  int64_t integer(const std::string &what) {
    const std::string tok = numberToken(what);
    return wholeNumber(tok, pos_ - tok.size(), fmt::format("expected {} (an integer), found '{}'", what, tok),
                       "write a whole number such as 3 or -1");
  }
  // `tok` (which starts at `at`) as an int64, or the error `what` with `fix`.
  int64_t wholeNumber(const std::string &tok, size_t at, const std::string &what, const char *fix) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (ec != std::errc() || end != tok.data() + tok.size())
      error(at, what, fix);
    return v;
  }
  std::string numberToken(const std::string &what) {
    skipBlanks();
    const size_t start = pos_;
    while (!atEnd() && isNumberChar(text_[pos_]))
      ++pos_;
    if (pos_ == start)
      error(pos_, fmt::format("expected {}, found {}", what, found()), "write a number such as 2, -1 or 0.5");
    return std::string(text_.substr(start, pos_ - start));
  }
  double floating(const std::string &tok, size_t at) {
    errno = 0;
    char *end = nullptr;
    const double v = std::strtod(tok.c_str(), &end);
    if (end != tok.c_str() + tok.size() || (errno == ERANGE && std::isinf(v)))
      error(at, fmt::format("'{}' is not a number", tok), "write a number such as 0.5, 1e-08, inf or nan");
    return v;
  }
  std::string quoted(const std::string &what) {
    skipBlanks();
    if (peek() != '"')
      error(pos_, fmt::format("expected {} in double quotes, found {}", what, found()), "quote it: \"...\"");
    const size_t start = pos_++;
    std::string out;
    for (;;) {
      if (atEnd() || peek() == '\n')
        error(start, fmt::format("{} has no closing quote", what), "end the string with '\"' on the same line");
      char c = text_[pos_++];
      if (c == '"')
        return out;
      if (c == '\\') {
        if (atEnd())
          error(start, fmt::format("{} has no closing quote", what), "end the string with '\"'");
        char e = text_[pos_++];
        if (e == 'n')
          out += '\n';
        else if (e == '"' || e == '\\')
          out += e;
        else
          error(pos_ - 2, fmt::format("unknown escape '\\{}' in {}", e, what), "only \\\", \\\\ and \\n are escapes");
      } else {
        out += c;
      }
    }
  }
  // A bare name, or a quoted one. A bare name never ends in ':' (text_syntax.h):
  // a trailing ':' belongs to the ": type" after it.
  std::string name(const std::string &what) {
    skipBlanks();
    if (peek() == '"')
      return quoted(what);
    const size_t start = pos_;
    while (!atEnd() && text::isPlainNameChar(text_[pos_]))
      ++pos_;
    while (pos_ > start && text_[pos_ - 1] == ':')
      --pos_;
    if (pos_ == start)
      error(pos_, fmt::format("expected {}, found {}", what, found()), "names are bare (letters, digits, _./:-+@$) or quoted");
    return std::string(text_.substr(start, pos_ - start));
  }
  std::string ref(const std::string &what) {
    skipBlanks();
    if (peek() != '%')
      error(pos_, fmt::format("expected {} ('%name'), found {}", what, found()), "tensors are written %name");
    ++pos_;
    return name(what);
  }
  // "_" (an omitted optional tensor) or %name.
  std::string optionalRef(const std::string &what) {
    skipBlanks();
    if (peek() == '_') {
      ++pos_;
      return "";
    }
    return ref(what);
  }
  int64_t opsetClause() {
    expect("(", "before 'opset'");
    if (!acceptWord("opset"))
      error(pos_, fmt::format("expected 'opset', found {}", found()), "write '(opset N)'");
    const int64_t v = integer("the opset version");
    expect(")", "after the opset version");
    return v;
  }
  TensorInfo type(const std::string &what) {
    const size_t at = (skipBlanks(), pos_);
    const std::string dt = word("a dtype (f32, i64, ...)");
    auto dtype = detail::dtypeFromShort(dt);
    if (!dtype)
      error(at, fmt::format("unknown dtype '{}' in the type of {}", dt, what),
            "use f32, f16, bf16, f64, i8, i16, i32, i64, u8, u16, u32, u64 or bool");
    TensorInfo info;
    info.dtype = *dtype;
    expect("[", "to open the shape of " + what);
    uint64_t elements = 1;
    if (!accept("]")) {
      do {
        const size_t dimAt = (skipBlanks(), pos_);
        const int64_t d = integer("a dimension");
        if (d < 0)
          error(dimAt, fmt::format("dimension {} of {} is negative", d, what), "dimensions are 0 or more");
        elements = d == 0 || elements == 0 ? 0 : (elements > kMaxElements / uint64_t(d) ? kMaxElements : elements * uint64_t(d));
        info.shape.push_back(d);
      } while (accept(","));
      expect("]", "to close the shape of " + what);
    }
    if (elements >= kMaxElements)
      error(at, fmt::format("the shape of {} has too many elements", what), "use a shape of fewer than 2^59 elements");
    return info;
  }
  // Allocates t's bytes, zeroed, within the limit.
  void allocate(Tensor &t, const std::string &what, size_t at) {
    if (t.info.bytes() > maxTensorBytes_)
      error(at, fmt::format("{} is {} bytes, over the parser's limit of {}", what, t.info.bytes(), maxTensorBytes_),
            "split the constant, or raise the limit");
    t.data.assign(t.info.bytes(), 0);
  }

  // --- values ------------------------------------------------------------------
  // [v,v,...] into t.data, converted to t's dtype.
  void values(Tensor &t, const std::string &what) {
    const size_t at = (skipBlanks(), pos_);
    expect("[", "to open the values of " + what);
    std::vector<std::pair<std::string, size_t>> toks;
    if (!accept("]")) {
      do {
        skipBlanks();
        toks.push_back({numberToken("a value"), pos_});
      } while (accept(","));
      expect("]", "to close the values of " + what);
    }
    if (int64_t(toks.size()) != t.info.elements())
      error(at, fmt::format("{} has {} values for {} elements", what, toks.size(), t.info.elements()),
            "write one value per element, or none for a large constant");
    const size_t es = dtypeSize(t.info.dtype);
    allocate(t, what, at);
    for (size_t i = 0; i < toks.size(); ++i) {
      const std::string &tok = toks[i].first;
      const size_t tokAt = toks[i].second - tok.size();
      uint8_t *dst = t.data.data() + i * es;
      if (isFloatingPoint(t.info.dtype))
        storeElement(t.info.dtype, dst, floating(tok, tokAt));
      else
        storeElement(t.info.dtype, dst,
                     wholeNumber(tok, tokAt,
                                 fmt::format("'{}' is not an integer, in {} of dtype {}", tok, what,
                                             dtypeName(t.info.dtype)),
                                 "write whole numbers for integer and bool constants"));
    }
  }

  AttrValue attrValue(const std::string &key) {
    skipBlanks();
    const size_t at = pos_;
    if (peek() == '"')
      return quoted("attribute " + key);
    if (accept("tensor<")) {
      if (accept("null>"))
        return std::shared_ptr<const Tensor>();
      auto t = std::make_shared<Tensor>();
      t->kind = TensorKind::Constant;
      t->info = type("attribute " + key);
      expect(">", "to close the tensor type of attribute " + key);
      skipBlanks();
      if (peek() == '[')
        values(*t, "attribute " + key);
      else
        allocate(*t, "attribute " + key, at);
      return std::shared_ptr<const Tensor>(std::move(t));
    }
    if (accept("[")) {
      if (accept("]"))
        return std::vector<int64_t>{}; // the getters read an empty list as any list type
      skipBlanks();
      if (peek() == '"') {
        std::vector<std::string> v;
        do
          v.push_back(quoted("an element of attribute " + key));
        while (accept(","));
        expect("]", "to close the list of attribute " + key);
        return v;
      }
      std::vector<std::pair<std::string, size_t>> toks;
      bool anyFloat = false;
      do {
        skipBlanks();
        toks.push_back({numberToken("an element of attribute " + key), pos_});
        anyFloat = anyFloat || looksFloat(toks.back().first);
      } while (accept(","));
      expect("]", "to close the list of attribute " + key);
      if (anyFloat) {
        std::vector<double> v;
        for (const auto &[tok, end] : toks)
          v.push_back(floating(tok, end - tok.size()));
        return v;
      }
      std::vector<int64_t> v;
      for (const auto &[tok, end] : toks)
        v.push_back(wholeNumber(tok, end - tok.size(), fmt::format("'{}' is not a number, in attribute {}", tok, key),
                                "write integers such as 1 or -1, or floats such as 0.5"));
      return v;
    }
    const std::string tok = numberToken("the value of attribute " + key);
    if (looksFloat(tok))
      return floating(tok, at);
    return wholeNumber(tok, at, fmt::format("'{}' is not a value for attribute {}", tok, key),
                       "write an integer, a float, a \"string\", a [list] or tensor<TYPE>[values]");
  }

  // --- graph lines ---------------------------------------------------------------
  void addTensor(Graph &g, Tensor t, size_t at) {
    if (g.hasTensor(t.name))
      error(at, fmt::format("tensor %{} is defined twice in graph '{}'", t.name, g.id()),
            "give every input, constant and op output its own name");
    g.addTensor(std::move(t));
  }

  void graphBody(Graph &g, size_t opened) {
    for (;;) {
      skipLines();
      const size_t at = pos_;
      if (atEnd())
        error(at, fmt::format("the text ends inside graph '{}' (opened on line {}): it has no closing '}}'", g.id(),
                              lineOf(opened)),
              "end the graph with '}' on its own line");
      if (accept("}")) {
        endLine();
        return;
      }
      const char c = peek();
      if (c == '%' || c == '_' || c == '=') {
        opLine(g, at);
      } else if (acceptWord("input")) {
        const std::string n = ref("the input's name");
        expect(":", "after the input's name");
        if (!accept("?")) {
          Tensor t;
          t.name = n;
          t.kind = TensorKind::Input;
          t.info = type("input %" + n);
          addTensor(g, std::move(t), at);
        }
        g.inputs.push_back(n);
      } else if (acceptWord("const") || acceptWord("var")) {
        const bool variable = text_.substr(at, 3) == "var";
        Tensor t;
        t.name = ref("the constant's name");
        t.kind = variable ? TensorKind::Variable : TensorKind::Constant;
        expect(":", "after the name of %" + t.name);
        t.info = type("%" + t.name);
        if (accept("="))
          values(t, "%" + t.name);
        else
          allocate(t, "%" + t.name, at);
        addTensor(g, std::move(t), at);
      } else if (acceptWord("output")) {
        g.outputs.push_back(ref("the output's name"));
      } else if (acceptWord("update")) {
        VariableUpdate u;
        u.variable = ref("the variable's name");
        expect("=", "after the updated variable");
        u.value = ref("the new value's name");
        if (acceptWord("phase"))
          u.phase = integer("the update's phase");
        g.updates.push_back(u);
      } else {
        error(at, fmt::format("expected a graph line, found {}", found()),
              "lines are 'input', 'const', 'var', an op ('%y: f32[2] = Relu[name=r](%x)'), 'output', 'update' or '}'");
      }
      endLine();
    }
  }

  void opLine(Graph &g, size_t at) {
    Op op;
    std::vector<std::pair<Tensor, size_t>> defined;
    skipBlanks();
    if (peek() != '=') {
      do {
        skipBlanks();
        const size_t outAt = pos_;
        std::string n = optionalRef("an output name");
        if (!n.empty() && accept(":")) {
          Tensor t;
          t.name = n;
          t.info = type("%" + n);
          defined.push_back({std::move(t), outAt});
        }
        op.outputs.push_back(n);
      } while (accept(","));
    }
    expect("=", "between the op's outputs and its type");
    std::string w = word("an op type");
    if (accept("::")) {
      op.domain = w;
      w = word("an op type after its domain");
    }
    op.type = w;
    expect("[", "after op type " + op.type);
    if (!acceptWord("name"))
      error(pos_, fmt::format("expected 'name=' after '{}[', found {}", op.type, found()), "every op has a name");
    expect("=", "after 'name'");
    op.name = name("the op's name");
    while (accept(",")) {
      const size_t keyAt = (skipBlanks(), pos_);
      const std::string key = word("ipu, stage or phase");
      expect("=", "after " + key);
      const int64_t v = integer(key);
      if (key == "ipu")
        op.ipu = v;
      else if (key == "stage")
        op.pipelineStage = v;
      else if (key == "phase")
        op.phase = v;
      else
        error(keyAt, fmt::format("unknown op field '{}' of op '{}'", key, op.name), "the fields are name, ipu, stage and phase");
    }
    expect("]", "after the fields of op '" + op.name + "'");
    expect("(", "to open the inputs of op '" + op.name + "'");
    if (!accept(")")) {
      do
        op.inputs.push_back(optionalRef("an input of op '" + op.name + "'"));
      while (accept(","));
      expect(")", "to close the inputs of op '" + op.name + "'");
    }
    if (accept("{")) {
      do {
        const size_t keyAt = (skipBlanks(), pos_);
        const std::string key = word("an attribute name");
        expect("=", "after attribute " + key);
        if (op.attrs.has(key))
          error(keyAt, fmt::format("attribute {} of op '{}' is given twice", key, op.name), "give each attribute once");
        op.attrs.set(key, attrValue(key));
      } while (accept(","));
      expect("}", "to close the attributes of op '" + op.name + "'");
    }
    for (auto &[t, tAt] : defined)
      addTensor(g, std::move(t), tAt);
    g.appendOp(std::move(op));
    (void)at;
  }

  std::string_view text_;
  std::string source_;
  uint64_t maxTensorBytes_;
  size_t pos_ = 0;
};

} // namespace

Ir parseIr(std::string_view text, const std::string &source, uint64_t maxTensorBytes) {
  return Parser(text, source, maxTensorBytes).run();
}

} // namespace popc::ir
