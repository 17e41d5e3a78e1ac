#ifndef DISTRT_RUNTIME_COLLECTIVE_REPLICA_BARRIER_H_
#define DISTRT_RUNTIME_COLLECTIVE_REPLICA_BARRIER_H_

// ReplicaBarrier: the meeting point of the replicas of one process, each on
// its own thread, for collectives (all-reduce) and MergeCall.
//
// Every replica must make the same collective calls in the same order. When
// one does not, the others must not hang: a replica that returns from its
// step function Leave()s, and a barrier that can no longer complete fails at
// once for everyone waiting (FAILED_PRECONDITION naming the replica that
// left). A replica that neither arrives nor leaves (stuck, or a bug) fails
// the barrier after the timeout (DEADLINE_EXCEEDED). Once failed, the barrier
// stays failed until Reset, so every replica stops at its next collective.

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace distrt {

class ReplicaBarrier {
 public:
  // `num_replicas` >= 1 (a programming error otherwise: it comes from the
  // strategy's device list).
  explicit ReplicaBarrier(int num_replicas,
                          absl::Duration timeout = absl::Minutes(10));
  ReplicaBarrier(const ReplicaBarrier&) = delete;
  ReplicaBarrier& operator=(const ReplicaBarrier&) = delete;

  int num_replicas() const { return num_replicas_; }

  // Returns once every replica has called Wait (the same number of times);
  // `what` names the collective in errors ("all-reduce", "MergeCall").
  absl::Status Wait(absl::string_view what);

  // Replica `replica` will make no more collective calls until Reset, having
  // finished with `status`.
  void Leave(int replica, const absl::Status& status);

  // Readies the barrier for a new round of replica functions: nobody has
  // left, nothing has failed. Only while no replica thread is running.
  void Reset();

  // The error the barrier failed with; OK while it has not.
  absl::Status failure() const;

 private:
  absl::Status FailLocked(absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int num_replicas_;
  const absl::Duration timeout_;
  mutable absl::Mutex mu_;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // "replica 2 (returned OK)", for the error of a barrier it cannot join.
  std::vector<std::string> left_ ABSL_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_COLLECTIVE_REPLICA_BARRIER_H_
