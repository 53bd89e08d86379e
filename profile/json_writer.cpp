#include "profile/json_writer.h"
#include "support/file_io.h"

#include "support/error.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace popc::profile {

namespace {

bool allScalars(const nlohmann::ordered_json &j) {
  for (const auto &e : j)
    if (e.is_structured())
      return false;
  return true;
}

void write(std::string &out, const nlohmann::ordered_json &j, int depth) {
  const std::string pad(2 * (depth + 1), ' '), close(2 * depth, ' ');
  if (j.is_object() && !j.empty()) {
    out += "{\n";
    size_t i = 0;
    for (const auto &[key, value] : j.items()) {
      out += pad + nlohmann::ordered_json(key).dump() + ": ";
      write(out, value, depth + 1);
      out += ++i < j.size() ? ",\n" : "\n";
    }
    out += close + "}";
  } else if (j.is_array() && !j.empty() && !allScalars(j)) {
    out += "[\n";
    for (size_t i = 0; i < j.size(); ++i) {
      out += pad;
      write(out, j[i], depth + 1);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += close + "]";
  } else {
    out += j.dump(); // scalars, empty containers, arrays of scalars: one line
  }
}

} // namespace

std::string toJsonText(const nlohmann::ordered_json &j) {
  std::string out;
  write(out, j, 0);
  return out + "\n";
}

void writeJsonFile(const std::string &path, const nlohmann::ordered_json &j) {
  writeFileAtomically(path, toJsonText(j));
}

nlohmann::ordered_json readJsonFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    fail("{}: cannot open: check the path (a profile directory holds graph.json and execution.json)", path);
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return nlohmann::ordered_json::parse(ss.str());
  } catch (const nlohmann::json::exception &e) {
    fail("{}: not valid JSON ({}): regenerate it with popc-onnx/poprun-lite --profile-dir", path, e.what());
  }
}

} // namespace popc::profile
