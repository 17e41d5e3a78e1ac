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
// buffers of the same size. A replica that does not arrive within the
// timeout fails the round for everyone, and the object stays failed (the
// other replicas' buffers are then in an unknown state).

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "runtime/collective/reduce_op.h"

namespace distrt {

class CpuAllReduce {
 public:
  // `num_replicas` >= 1 (a programming error otherwise: it comes from the
  // strategy's device list).
  explicit CpuAllReduce(int num_replicas,
                        absl::Duration timeout = absl::Minutes(10));

  int num_replicas() const { return num_replicas_; }

  // Replaces `values` of replica `replica` with the sum (or mean) of every
  // replica's values. INVALID_ARGUMENT, for every replica of the round, when
  // the sizes differ; DEADLINE_EXCEEDED when a replica does not arrive.
  absl::Status AllReduce(int replica, absl::Span<float> values, ReduceOp op);

 private:
  // Waits until all replicas have arrived at this barrier. False when the
  // timeout passed or the object failed earlier.
  bool Barrier();

  const int num_replicas_;
  const absl::Duration timeout_;

  absl::Mutex mu_;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  // This round's buffers and ops; written before the first barrier of a
  // round, read after it.
  std::vector<absl::Span<float>> buffers_;
  std::vector<ReduceOp> ops_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_COLLECTIVE_CPU_ALL_REDUCE_H_
