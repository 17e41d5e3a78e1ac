#ifndef DISTRT_RUNTIME_COLLECTIVE_CPU_ALL_REDUCE_H_
#define DISTRT_RUNTIME_COLLECTIVE_CPU_ALL_REDUCE_H_

// CpuAllReduce: all-reduce of the replicas of one process that run on CPU
// devices, each replica calling from its own thread with its own buffer.
//
// The buffers are cut into one chunk per replica; replica r sums chunk r of
// every buffer into its own buffer (reduce-scatter), then copies its reduced
// chunk into every other buffer (all-gather). Every replica works on a
// different chunk, so all cores share the work, and no buffer is copied
// whole: each element is read N times and written N times, the minimum for
// N buffers that must all end up with the result.
//
// Calls come in rounds: every replica calls AllReduce once per round, with
// buffers of the same size. The replicas meet at a ReplicaBarrier: one that
// does not arrive within the timeout (or leaves the barrier) fails the round
// for everyone, and the barrier stays failed until it is Reset (the other
// replicas' buffers are then in an unknown state).

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "runtime/collective/reduce_op.h"
#include "runtime/collective/replica_barrier.h"

namespace distrt {

class CpuAllReduce {
 public:
  // `num_replicas` >= 1 (a programming error otherwise: it comes from the
  // strategy's device list).
  explicit CpuAllReduce(int num_replicas,
                        absl::Duration timeout = absl::Minutes(10));
  // Meets at `barrier` (not owned), shared with the replicas' other
  // collectives, so that a replica leaving fails this one too.
  explicit CpuAllReduce(ReplicaBarrier* barrier);
  CpuAllReduce(const CpuAllReduce&) = delete;
  CpuAllReduce& operator=(const CpuAllReduce&) = delete;

  int num_replicas() const { return num_replicas_; }

  // Replaces `values` of replica `replica` with the sum (or mean) of every
  // replica's values. INVALID_ARGUMENT, for every replica of the round, when
  // the sizes differ; the barrier's error (DEADLINE_EXCEEDED when a replica
  // does not arrive, FAILED_PRECONDITION when one left).
  absl::Status AllReduce(int replica, absl::Span<float> values, ReduceOp op);

 private:
  std::unique_ptr<ReplicaBarrier> owned_barrier_;  // when not given one
  ReplicaBarrier* const barrier_;
  const int num_replicas_;
  // This round's buffers and ops; written before the first barrier of a
  // round, read after it.
  std::vector<absl::Span<float>> buffers_;
  std::vector<ReduceOp> ops_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_COLLECTIVE_CPU_ALL_REDUCE_H_
