// Cross-replica collectives (Poplar's GCL, PopART's ReplicatedAllReduce):
// replicated training sums each gradient over the replicas. Every replica
// gathers every replica's copy over the IPU links (an exchange step with
// from_replica = k, one per replica k) and adds them in replica order, so all
// replicas compute the same bits and their weights never drift apart.
#include "compiler/lib/ops.h"

#include "support/error.h"

#include <fmt/format.h>

namespace popc::lib {

namespace {

void lowerReplicatedAllReduce(const ir::Op &op, const ir::Graph &, Lowering &L) {
  const int64_t replicas = op.attrs.getInt("replicas", 1);
  if (replicas < 1)
    fail("{} '{}': attribute 'replicas' must be at least 1, got {}", op.type, op.name, replicas);
  const Value &x = L.value(op.inputs[0]);
  auto &dg = L.graph;
  std::optional<Value> sum;
  for (int64_t k = 0; k < replicas; ++k) {
    Value part = L.newValue(fmt::format("{}/replica{}", op.name, k), x.info);
    L.mapLike(part, x);
    {
      OpBuilder b(L, fmt::format("{}/from_replica{}", op.name, k));
      graph::ExchangeStep &ex = dg.exchange(b.preExchange());
      ex.copies.push_back({x.tensor, 0, part.tensor, 0, dg.tensor(x.tensor).bytes});
      ex.fromReplica = int32_t(k);
    }
    sum = sum ? lowerElementwise(L, fmt::format("{}/sum{}", op.name, k), ops::Elementwise::Add, {*sum, part}, x.info) : part;
  }
  L.bind(op.outputs[0], *sum);
}

} // namespace

void registerCollectiveLowerings(LoweringTable &t) { t["ReplicatedAllReduce"] = lowerReplicatedAllReduce; }

} // namespace popc::lib
