// User codelets: C++ vertex classes compiled by clang-19 to bitcode with one
// generic entry per class (__popc_run_<Class>(void* const* fields, const
// uint32_t* bytes)) and, when the class has getCycleEstimate, an estimator.
// At graph compile time each (class, field sizes) gets a small IR wrapper
// with the vertex ABI that calls the generic entry with constant sizes; the
// optimiser inlines and specialises it.
#pragma once
#include "popc/Tensor.hpp"

#include "compiler/codegen/kernels.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace popc::runtime {
class Jit;
}

namespace popc::api::detail {

struct CodeletField {
  std::string name;
  codegen::FieldAccess access = codegen::FieldAccess::Input;
  bool vector = false;
  Type elemType = Type::FLOAT;
};

struct CodeletClass {
  std::string name;
  std::string cppName; // with its namespaces, for the generated entries (compile time only, not in the .gp)
  std::vector<CodeletField> fields; // declaration order
  bool hasEstimate = false;
  size_t module = 0;
  const CodeletField *field(const std::string &n) const;
  std::string describeFields() const; // " (fields: in, out)"
};

// Compiles a codelet source file to a .gp: bitcode with the generic entries
// and the class descriptions (named metadata "popc.codelets"). `displayName`
// is how diagnostics name the file. Throws popc::Error with clang's
// diagnostics (file:line: error: ...).
std::vector<uint8_t> compileCodeletFile(const std::string &path, const std::string &flags);

struct UserVertexType {
  std::string cls;
  std::vector<uint32_t> fieldBytes; // class field order
  std::string symbol;
};

class CodeletLibrary {
public:
  CodeletLibrary();
  ~CodeletLibrary();
  void addFile(const std::string &path, const std::string &flags); // .cpp (compiled) or .gp
  void addSource(const std::string &source, const std::string &name);
  const CodeletClass *find(const std::string &name) const;
  std::string describeClasses() const; // " (loaded: A, B)" or ""
  bool empty() const { return modules_.empty(); }

  // Cycle estimate of one run with these field byte sizes (class order).
  uint64_t estimate(const CodeletClass &c, const std::vector<uint32_t> &fieldBytes);
  // Bitcode of a module with one vertex-ABI entry per type (portable: no
  // triple or layout, every helper inlined).
  std::vector<uint8_t> buildVertexModule(const std::vector<UserVertexType> &types) const;

private:
  void addBitcode(std::vector<uint8_t> bitcode, const std::string &where);
  std::vector<std::vector<uint8_t>> modules_;
  std::vector<CodeletClass> classes_;
  std::map<std::pair<std::string, std::vector<uint32_t>>, uint64_t> estimates_;
  std::vector<std::unique_ptr<runtime::Jit>> jits_; // per module, for getCycleEstimate
  std::map<std::string, void *> estimateFns_;
};

// Links two bitcode modules into one (vertex code of the generator + user codelets).
std::vector<uint8_t> linkBitcode(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b);

} // namespace popc::api::detail
