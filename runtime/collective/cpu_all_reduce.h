#ifndef DISTRT_RUNTIME_COLLECTIVE_CPU_ALL_REDUCE_H_
#define DISTRT_RUNTIME_COLLECTIVE_CPU_ALL_REDUCE_H_

// CpuAllReduce: all-reduce of the replicas of one process that run on CPU
// devices, each replica calling from its own thread with its own buffer.
//
// The index range is cut into one contiguous chunk per worker, and each
// worker walks its chunk a tile at a time: it sums the tile of every buffer
// (buffer 0 + buffer 1 + ... in that order) into a small array that stays in
// the core's cache, then copies the result into the tile of every buffer.
// The sum is memory-bound, so what matters is how often each byte crosses the
// memory bus: once read and once written per buffer here (2N·S for N buffers
// of S bytes, the minimum when all N must end up with the result), where a
// reduce-scatter into one's own buffer followed by an all-gather reads and
// writes every chunk again in each of its passes (about 5(N-1)·S). The
// tile's lines in every buffer are still in cache when it is written back, so
// the writes need no second read from memory either. No chunk is touched by
// two workers, so the only synchronisation is a barrier before (every buffer
// is known) and after (every buffer holds the result).
//
// There are at most as many workers as cores: more threads than cores only
// take turns at the same memory bus, and a worker descheduled mid-chunk keeps
// everyone at the final barrier. Replicas beyond the workers only wait at the
// barriers. Every element is summed in the same order whichever worker does
// it, so the replicas' results are bit-identical.
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
  // strategy's device list). At most `max_workers` replicas do the reduction;
  // 0 means one per core (std::thread::hardware_concurrency()).
  explicit CpuAllReduce(int num_replicas,
                        absl::Duration timeout = absl::Minutes(10),
                        int max_workers = 0);
  // Meets at `barrier` (not owned), shared with the replicas' other
  // collectives, so that a replica leaving fails this one too.
  explicit CpuAllReduce(ReplicaBarrier* barrier, int max_workers = 0);
  CpuAllReduce(const CpuAllReduce&) = delete;
  CpuAllReduce& operator=(const CpuAllReduce&) = delete;

  int num_replicas() const { return num_replicas_; }
  // Replicas 0 .. num_workers() - 1 do the reduction: min(num_replicas(),
  // max_workers), at least 1.
  int num_workers() const { return num_workers_; }

  // Replaces `values` of replica `replica` with the sum (or mean) of every
  // replica's values. INVALID_ARGUMENT, for every replica of the round, when
  // the sizes differ; the barrier's error (DEADLINE_EXCEEDED when a replica
  // does not arrive, FAILED_PRECONDITION when one left).
  absl::Status AllReduce(int replica, absl::Span<float> values, ReduceOp op);

 private:
  std::unique_ptr<ReplicaBarrier> owned_barrier_;  // when not given one
  ReplicaBarrier* const barrier_;
  const int num_replicas_;
  const int num_workers_;
  // This round's buffers and ops; written before the first barrier of a
  // round, read after it.
  std::vector<absl::Span<float>> buffers_;
  std::vector<ReduceOp> ops_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_COLLECTIVE_CPU_ALL_REDUCE_H_
