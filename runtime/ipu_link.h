// The one seam for exchange between the IPUs of one replica. Everything else
// in the runtime works on global tile numbers; at the sync point of an
// exchange step this is handed that step's cross-IPU copies. (Replicas in
// other processes go through ReplicaLink instead: replica_link.h.)
#pragma once
#include <cstdint>
#include <memory>
#include <span>

namespace popc::runtime {

class DeviceMemory;

struct RemoteCopy {
  uint32_t srcTile, srcOffset, dstTile, dstOffset, bytes; // global tiles, verified ranges
};

class IpuLink {
public:
  virtual ~IpuLink() = default;
  // Performs all cross-IPU copies of one exchange step. Called from the
  // engine's control thread; returns when every destination byte is written.
  virtual void exchange(std::span<const RemoteCopy> copies, DeviceMemory &memory) = 0;
};

// All IPUs in this process: a copy is a memcpy inside the arena.
std::shared_ptr<IpuLink> makeInProcessIpuLink();

} // namespace popc::runtime
