// popc graph API: control programs (Poplar's poplar::program). A program is a
// tree of steps run on the device; an Engine runs one of its programs.
#pragma once
#include "popc/Tensor.hpp"

#include <cstdint>
#include <memory>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

namespace popc::api {

class ComputeSet {
public:
  ComputeSet() = default;
  explicit ComputeSet(uint32_t id) : id_(id) {}
  uint32_t getId() const { return id_; }

private:
  uint32_t id_ = UINT32_MAX;
};

class DataStream {
public:
  DataStream() = default;
  DataStream(uint32_t id, std::string name) : id_(id), name_(std::move(name)) {}
  uint32_t getId() const { return id_; }
  const std::string &handle() const { return name_; }

private:
  uint32_t id_ = UINT32_MAX;
  std::string name_;
};

class Function {
public:
  Function() = default;
  explicit Function(uint32_t id) : id_(id) {}
  uint32_t getId() const { return id_; }

private:
  uint32_t id_ = UINT32_MAX;
};

namespace program {

// The tree node every program class fills in (read by the compiler).
struct ProgramNode {
  enum class Kind { Sequence, Execute, Copy, StreamToTensor, TensorToStream, Repeat, RepeatWhileTrue, If, Switch,
                    Call, PrintTensor, Sync,
                    Device }; // Device: steps a library call (popops, ...) built; index into the graph's list
  Kind kind = Kind::Sequence;
  std::vector<std::shared_ptr<const ProgramNode>> children;
  Tensor src, dst;          // Copy; predicate/control in src; PrintTensor src
  uint32_t index = 0;       // compute set, stream, function
  uint32_t count = 0;       // Repeat
  std::vector<int64_t> caseValues;
  std::string name;
};

class Program {
public:
  Program(); // an empty Sequence
  const std::shared_ptr<const ProgramNode> &node() const { return cnode_; }
  bool isEmpty() const;
  // A program around a node built by hand (library code).
  static Program fromNode(std::shared_ptr<ProgramNode> n) { return Program(std::move(n)); }

protected:
  explicit Program(std::shared_ptr<ProgramNode> n) : node_(n), cnode_(std::move(n)) {}
  std::shared_ptr<ProgramNode> node_;
  std::shared_ptr<const ProgramNode> cnode_;
};

class Sequence : public Program {
public:
  Sequence();
  Sequence(std::initializer_list<Program> programs, const std::string &name = "");
  template <typename... P>
    requires(sizeof...(P) > 0 && (std::is_base_of_v<Program, P> && ...))
  explicit Sequence(const P &...programs) : Sequence({Program(programs)...}) {}
  void add(const Program &p);
};

class Execute : public Program {
public:
  explicit Execute(const ComputeSet &cs, const std::string &name = "");
};

// Copies every element of src to dst (same number of elements and type);
// either may be any view, on any tiles. With a stream: one FIFO transfer.
class Copy : public Program {
public:
  Copy(const Tensor &src, const Tensor &dst, bool dontOutline = false, const std::string &name = "");
  Copy(const DataStream &stream, const Tensor &dst, bool dontOutline = false, const std::string &name = "");
  Copy(const Tensor &src, const DataStream &stream, bool dontOutline = false, const std::string &name = "");
};

class Repeat : public Program {
public:
  Repeat(unsigned count, const Program &body, const std::string &name = "");
};

// Runs cond; while the scalar `predicate` is non-zero: body, then cond again.
class RepeatWhileTrue : public Program {
public:
  RepeatWhileTrue(const Program &cond, const Tensor &predicate, const Program &body, const std::string &name = "");
};

// Runs thenBody if the scalar `predicate` is non-zero, else elseBody.
class If : public Program {
public:
  If(const Tensor &predicate, const Program &thenBody, const Program &elseBody = Sequence(),
     const std::string &name = "");
};

// Runs the case whose value equals the scalar integer `control`, else the default.
class Switch : public Program {
public:
  explicit Switch(const Tensor &control, const std::string &name = "");
  Switch(const Tensor &control, const std::vector<std::pair<int32_t, Program>> &cases,
         const Program &defaultCase = Sequence(), const std::string &name = "");
  Switch &add(int32_t value, const Program &body);
  Switch &setDefault(const Program &body);

private:
  std::shared_ptr<const ProgramNode> default_;
  void rebuild();
  std::vector<std::pair<int32_t, std::shared_ptr<const ProgramNode>>> cases_;
};

class Call : public Program {
public:
  explicit Call(const Function &f, const std::string &name = "");
};

// Prints "title: {1,1.5,2}" (a matrix: one row per line) when it runs.
class PrintTensor : public Program {
public:
  explicit PrintTensor(const Tensor &t);
  PrintTensor(const std::string &title, const Tensor &t);
};

enum class SyncType { INTERNAL, EXTERNAL, GLOBAL };
class Sync : public Program {
public:
  explicit Sync(SyncType type = SyncType::INTERNAL, const std::string &name = "");
};

} // namespace program
} // namespace popc::api
