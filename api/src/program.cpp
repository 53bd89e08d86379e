// Program classes: each fills a ProgramNode; the compiler (compile.cpp)
// turns the tree into device programs, exchanges and streams.
#include "popc/Program.hpp"

#include "support/error.h"

namespace popc::api::program {

using Kind = ProgramNode::Kind;

namespace {
std::shared_ptr<ProgramNode> make(Kind k, std::string name = {}) {
  auto n = std::make_shared<ProgramNode>();
  n->kind = k;
  n->name = std::move(name);
  return n;
}
void checkScalar(const Tensor &t, const char *what) {
  if (!t.valid() || t.numElements() != 1)
    fail("{}: the {} must be a tensor of one element, got shape {}", what,
         std::string(what) == "Switch" ? "control value" : "predicate", t.shapeString());
}
} // namespace

Program::Program() : Program(make(Kind::Sequence)) {}

bool Program::isEmpty() const { return cnode_->kind == Kind::Sequence && cnode_->children.empty(); }

Sequence::Sequence() : Program(make(Kind::Sequence)) {}

Sequence::Sequence(std::initializer_list<Program> programs, const std::string &name)
    : Program(make(Kind::Sequence, name)) {
  for (const Program &p : programs)
    add(p);
}

void Sequence::add(const Program &p) {
  if (p.node().get() == node_.get())
    fail("Sequence::add: a sequence cannot contain itself");
  node_->children.push_back(p.node());
}

Execute::Execute(const ComputeSet &cs, const std::string &name) : Program(make(Kind::Execute, name)) {
  node_->index = cs.getId();
}

Copy::Copy(const Tensor &src, const Tensor &dst, bool, const std::string &name) : Program(make(Kind::Copy, name)) {
  if (!src.valid() || !dst.valid())
    fail("Copy: a tensor is empty (default-constructed)");
  if (src.numElements() != dst.numElements() || src.elementType() != dst.elementType())
    fail("Copy: source {} {} and destination {} {} differ in type or number of elements",
         typeName(src.elementType()), src.shapeString(), typeName(dst.elementType()), dst.shapeString());
  node_->src = src;
  node_->dst = dst;
}

Copy::Copy(const DataStream &stream, const Tensor &dst, bool, const std::string &name)
    : Program(make(Kind::StreamToTensor, name)) {
  node_->index = stream.getId();
  node_->dst = dst;
}

Copy::Copy(const Tensor &src, const DataStream &stream, bool, const std::string &name)
    : Program(make(Kind::TensorToStream, name)) {
  node_->index = stream.getId();
  node_->src = src;
}

Repeat::Repeat(unsigned count, const Program &body, const std::string &name) : Program(make(Kind::Repeat, name)) {
  node_->count = count;
  node_->children.push_back(body.node());
}

RepeatWhileTrue::RepeatWhileTrue(const Program &cond, const Tensor &predicate, const Program &body,
                                 const std::string &name)
    : Program(make(Kind::RepeatWhileTrue, name)) {
  checkScalar(predicate, "RepeatWhileTrue");
  node_->src = predicate;
  node_->children = {cond.node(), body.node()};
}

If::If(const Tensor &predicate, const Program &thenBody, const Program &elseBody, const std::string &name)
    : Program(make(Kind::If, name)) {
  checkScalar(predicate, "If");
  node_->src = predicate;
  node_->children = {thenBody.node(), elseBody.node()};
}

Switch::Switch(const Tensor &control, const std::string &name) : Program(make(Kind::Switch, name)) {
  checkScalar(control, "Switch");
  node_->src = control;
  default_ = Sequence().node();
  rebuild();
}

Switch::Switch(const Tensor &control, const std::vector<std::pair<int32_t, Program>> &cases,
               const Program &defaultCase, const std::string &name)
    : Switch(control, name) {
  for (const auto &[v, p] : cases)
    add(v, p);
  setDefault(defaultCase);
}

Switch &Switch::add(int32_t value, const Program &body) {
  for (const auto &c : cases_)
    if (c.first == value)
      fail("Switch::add: case {} is already present", value);
  cases_.emplace_back(value, body.node());
  rebuild();
  return *this;
}

Switch &Switch::setDefault(const Program &body) {
  default_ = body.node();
  rebuild();
  return *this;
}

void Switch::rebuild() {
  node_->children.clear();
  node_->caseValues.clear();
  for (const auto &[v, n] : cases_) {
    node_->caseValues.push_back(v);
    node_->children.push_back(n);
  }
  node_->children.push_back(default_);
}

Call::Call(const Function &f, const std::string &name) : Program(make(Kind::Call, name)) { node_->index = f.getId(); }

PrintTensor::PrintTensor(const Tensor &t) : PrintTensor("", t) {}

PrintTensor::PrintTensor(const std::string &title, const Tensor &t) : Program(make(Kind::PrintTensor, title)) {
  if (!t.valid())
    fail("PrintTensor '{}': the tensor is empty (default-constructed)", title);
  node_->src = t;
}

Sync::Sync(SyncType, const std::string &name) : Program(make(Kind::Sync, name)) {}

} // namespace popc::api::program
