// A big model's constant bytes, moved out of the compiler's heap into an
// unlinked temporary file while its schedule is resolved and packed: they are
// not read again until the popef's data segment is written, and are then
// read from the page cache, whose pages the kernel may write back and reclaim
// (ViT-B/16: 330 MB that would otherwise stand beside the exchange records,
// the compiler's peak). On a tmpfs TMPDIR this saves nothing.
#pragma once
#include "compiler/graph/device_graph.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace popc::graph {

class ConstantSpill {
public:
  // Writes every constant's bytes of `g` to one temporary file in `dir`, then
  // empties each constData and points its `spilled` span into a read-only
  // mapping of the file. Returns null, with every byte left where it was, if
  // `g` holds fewer than `minBytes` (or no) constant bytes, or if the file
  // cannot be written (the reason is logged).
  static std::unique_ptr<ConstantSpill> spill(DeviceGraph &g, const std::string &dir, uint64_t minBytes = 1);
  ~ConstantSpill();
  ConstantSpill(const ConstantSpill &) = delete;
  ConstantSpill &operator=(const ConstantSpill &) = delete;

  uint64_t bytes() const { return size_; }
  // Drops the resident pages of `bytes` (inside the mapping): the file keeps them.
  static void drop(std::span<const uint8_t> bytes);

private:
  ConstantSpill(uint8_t *base, uint64_t size) : base_(base), size_(size) {}
  uint8_t *base_;
  uint64_t size_;
};

} // namespace popc::graph
