#include "distributed/instance_io.h"

#include <algorithm>

namespace popc::distributed {

namespace {

// The chunks rank r's replicas use, for one host array.
std::vector<runtime::ByteRange> rankChunks(const runtime::Engine &engine, const runtime::IoDesc &io, int rank) {
  const runtime::Report &rep = engine.report();
  return runtime::replicaChunks(io.bytes, io.chunkBytes, rep.totalReplicas, uint32_t(rank) * rep.replicas,
                                rep.replicas);
}

uint64_t total(const std::vector<runtime::ByteRange> &ranges) {
  uint64_t n = 0;
  for (const auto &r : ranges)
    n += r.bytes;
  return n;
}

} // namespace

runtime::HostTensorMap runOnInstances(MpiSession &session, runtime::Engine &engine,
                                      const runtime::HostTensorMap &inputs) {
  const int ranks = session.size(), me = session.rank();
  runtime::HostTensorMap local;
  for (const runtime::IoDesc &io : engine.inputs()) {
    runtime::HostTensor &mine = local[io.name];
    mine = {io.dtype, io.shape, std::vector<uint8_t>(io.bytes)};
    std::vector<std::vector<uint8_t>> perRank;
    if (me == 0) {
      const runtime::HostTensor &full = inputs.at(io.name);
      mine.shape = full.shape;
      for (int r = 0; r < ranks; ++r) {
        auto &packed = perRank.emplace_back();
        for (const auto &c : rankChunks(engine, io, r))
          packed.insert(packed.end(), full.data.begin() + c.offset, full.data.begin() + c.offset + c.bytes);
      }
    }
    const auto ranges = rankChunks(engine, io, me);
    std::vector<uint8_t> received(total(ranges));
    session.scatter(perRank, received, "sending the inputs");
    uint64_t at = 0;
    for (const auto &c : ranges) {
      std::copy_n(received.begin() + at, c.bytes, mine.data.begin() + c.offset);
      at += c.bytes;
    }
  }
  runtime::HostTensorMap outputs = engine.run(local);
  for (const runtime::IoDesc &io : engine.outputs()) {
    runtime::HostTensor &out = outputs.at(io.name);
    std::vector<uint8_t> packed;
    for (const auto &c : rankChunks(engine, io, me))
      packed.insert(packed.end(), out.data.begin() + c.offset, out.data.begin() + c.offset + c.bytes);
    std::vector<std::vector<uint8_t>> perRank(ranks);
    if (me == 0)
      for (int r = 0; r < ranks; ++r)
        perRank[r].resize(total(rankChunks(engine, io, r)));
    session.gather(packed, perRank, "collecting the outputs");
    if (me == 0)
      for (int r = 1; r < ranks; ++r) {
        uint64_t at = 0;
        for (const auto &c : rankChunks(engine, io, r)) {
          std::copy_n(perRank[r].begin() + at, c.bytes, out.data.begin() + c.offset);
          at += c.bytes;
        }
      }
  }
  return outputs;
}

void broadcastVariables(MpiSession &session, runtime::Engine &engine) {
  for (const runtime::IoDesc &v : engine.variables()) {
    runtime::HostTensor t = session.rank() == 0 ? engine.readVariable(v.name)
                                                : runtime::HostTensor{v.dtype, v.shape, std::vector<uint8_t>(v.bytes)};
    session.broadcast(t.data, 0, "broadcasting the initial weights");
    if (session.rank() != 0)
      engine.writeVariable(v.name, t);
  }
}

} // namespace popc::distributed
