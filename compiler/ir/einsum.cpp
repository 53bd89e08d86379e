#include "compiler/ir/einsum.h"

#include "compiler/ir/op_helpers.h"

#include <algorithm>
#include <cctype>

namespace popc::ir {

using detail::failOp;

namespace {

// Indices "..." stands for: characters no equation letter can be.
constexpr char kEllipsisBase = '0';

// One term of the equation: its letters with "..." expanded to `ellipsisRank`
// placeholder indices (the last ones of the placeholder range when shorter).
std::string expandTerm(const Op &op, const std::string &term, size_t rank, size_t &ellipsisRank, bool isOutput) {
  const size_t dots = term.find("...");
  std::string letters = term;
  if (dots != std::string::npos)
    letters.erase(dots, 3);
  // A second "..." is left in `letters` and refused here too.
  for (char c : letters)
    if (!std::isalpha(static_cast<unsigned char>(c)))
      failOp(op, "equation term '{}' has '{}': indices are letters, plus one '...'", term, c);
  if (dots == std::string::npos) {
    if (!isOutput && letters.size() != rank)
      failOp(op, "equation term '{}' has {} indices for an input of rank {}", term, letters.size(), rank);
    return letters;
  }
  if (!isOutput) {
    if (letters.size() > rank)
      failOp(op, "equation term '{}' has {} indices for an input of rank {}", term, letters.size(), rank);
    ellipsisRank = std::max(ellipsisRank, rank - letters.size());
  }
  const size_t n = isOutput ? ellipsisRank : rank - letters.size();
  std::string expanded;
  for (size_t i = ellipsisRank - n; i < ellipsisRank; ++i)
    expanded += char(kEllipsisBase + i);
  return letters.substr(0, dots) + expanded + letters.substr(dots);
}

} // namespace

EinsumSpec parseEinsum(const Op &op, const Graph &graph) {
  std::string equation;
  for (char c : op.attrs.getString("equation", ""))
    if (!std::isspace(static_cast<unsigned char>(c)))
      equation += c;
  if (equation.empty())
    failOp(op, "attribute 'equation' is missing or empty");
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != op.inputs.size())
    failOp(op, "equation '{}' has {} operand terms for {} inputs", equation, terms.size(), op.inputs.size());

  EinsumSpec spec;
  // The first pass finds the longest "..." (expandTerm raises ellipsisRank);
  // the second expands every operand's "..." right-aligned to it, so the same
  // trailing positions get the same placeholder indices.
  size_t ellipsisRank = 0;
  for (int pass = 0; pass < 2; ++pass) {
    spec.inputs.clear();
    for (size_t i = 0; i < terms.size(); ++i)
      spec.inputs.push_back(
          expandTerm(op, terms[i], detail::inputInfo(op, graph, i).shape.size(), ellipsisRank, false));
  }

  for (size_t i = 0; i < terms.size(); ++i) {
    const Shape &shape = detail::inputInfo(op, graph, i).shape;
    for (size_t a = 0; a < shape.size(); ++a) {
      const char c = spec.inputs[i][a];
      auto [it, added] = spec.dims.emplace(c, shape[a]);
      if (!added && it->second != shape[a])
        failOp(op, "index '{}' has size {} in one operand and {} in input {}",
               c >= 'A' ? std::string(1, c) : std::string("..."), it->second, shape[a], i);
    }
  }
  if (arrow != std::string::npos) {
    const std::string rhs = equation.substr(arrow + 2);
    spec.output = expandTerm(op, rhs, 0, ellipsisRank, true);
    std::string seen;
    for (char c : spec.output) {
      if (!spec.dims.count(c))
        failOp(op, "output index '{}' occurs in no operand", c);
      if (seen.find(c) != std::string::npos)
        failOp(op, "output index '{}' occurs twice", c);
      seen += c;
    }
  } else {
    for (size_t i = 0; i < ellipsisRank; ++i)
      spec.output += char(kEllipsisBase + i);
    std::map<char, int> count;
    for (const auto &t : spec.inputs)
      for (char c : t)
        count[c]++;
    for (const auto &[c, n] : count)
      if (n == 1 && std::isalpha(static_cast<unsigned char>(c)))
        spec.output += c;
  }
  return spec;
}

} // namespace popc::ir
