// The lexical rules the IR printer and parser share (docs/ir-text.md): which
// names print bare and how strings are escaped, so that parseIr reads back
// exactly what printIr writes.
#pragma once
#include <string>
#include <string_view>

namespace popc::ir::text {

// Characters a tensor, op or graph name may use unquoted (ONNX names such as
// "/0/Gemm_output_0", "onnx::Add_5", "input.1").
inline bool isPlainNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '/' || c == ':' || c == '-' || c == '+' || c == '@' || c == '$';
}

// A name prints bare when every character is plain and it does not end in ':'
// (the parser gives a trailing ':' back to the ": type" that follows a name).
inline bool printsBare(std::string_view name) {
  if (name.empty() || name.back() == ':')
    return false;
  for (char c : name)
    if (!isPlainNameChar(c))
      return false;
  return true;
}

// "..." with '"' and '\' escaped and a newline as \n.
inline std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

// A name as printed: bare, or quoted.
inline std::string name(std::string_view n) { return printsBare(n) ? std::string(n) : quote(n); }

} // namespace popc::ir::text
