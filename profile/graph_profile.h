// The graph profile (Poplar's graph profile, docs/profile-format.md) of a
// popef executable: everything that is known without running it.
#pragma once
#include "formats/popef/popef.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <vector>

namespace popc::profile {

using Json = nlohmann::ordered_json;

// Poplar's flattened program list: ids in pre-order over `main` (id 0, the
// only control program), then over each function in order.
class ProgramIndex {
public:
  explicit ProgramIndex(const ::popef::fb::Executable &exe);
  size_t size() const { return programs_.size(); }
  const ::popef::fb::Program &program(uint32_t id) const { return *programs_[id]; }
  // Id of a program node of this executable (a lookup only; ids never
  // depend on addresses).
  uint32_t id(const ::popef::fb::Program *p) const { return ids_.at(p); }
  const std::vector<uint32_t> &functionIds() const { return functionIds_; }

private:
  void add(const ::popef::fb::Program &p);
  std::vector<const ::popef::fb::Program *> programs_;
  std::map<const ::popef::fb::Program *, uint32_t> ids_;
  std::vector<uint32_t> functionIds_;
};

// Builds graph.json's document from the executable alone.
Json graphProfile(const popef::Executable &exe);

// --save-tensor-map: {tensor name: {"dtype", "shape", "role", "tiles": [...],
// "intervals": [[begin, end, tile, offset], ...]}} in popef tensor order: bytes
// [begin, end) of the tensor live on `tile` at byte `offset` of its memory.
Json tensorMap(const popef::Executable &exe);

// Whether an exchange step crosses IPUs (a GlobalExchange) or not (DoExchange).
bool isInterIpu(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step);

} // namespace popc::profile
