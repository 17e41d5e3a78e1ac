#include "runtime/collective/replica_barrier.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace distrt {

ReplicaBarrier::ReplicaBarrier(int num_replicas, absl::Duration timeout)
    : num_replicas_(num_replicas), timeout_(timeout) {
  if (num_replicas < 1) {
    std::fprintf(stderr, "ReplicaBarrier: %d replicas\n", num_replicas);
    std::abort();
  }
}

absl::Status ReplicaBarrier::FailLocked(absl::Status status) {
  if (failure_.ok()) failure_ = std::move(status);
  return failure_;
}

absl::Status ReplicaBarrier::Wait(absl::string_view what) {
  absl::MutexLock lock(&mu_);
  if (!failure_.ok()) return failure_;
  if (!left_.empty()) {
    // Somebody left, so this barrier can never be complete.
    return FailLocked(absl::FailedPreconditionError(absl::StrCat(
        what, ": ", absl::StrJoin(left_, ", "),
        " before the others reached it; every replica must make the same "
        "collective calls in the same order")));
  }
  const int64_t generation = generation_;
  if (++arrived_ == num_replicas_) {
    arrived_ = 0;
    ++generation_;
    return absl::OkStatus();
  }
  // Runs with mu_ held, inside Await.
  auto released = [this, generation]() {
    return generation_ != generation || !failure_.ok();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&released), timeout_)) {
    return FailLocked(absl::DeadlineExceededError(absl::StrCat(
        what, ": not every one of the ", num_replicas_,
        " replicas arrived within ", absl::FormatDuration(timeout_))));
  }
  return generation_ != generation ? absl::OkStatus() : failure_;
}

void ReplicaBarrier::Leave(int replica, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  left_.push_back(absl::StrCat(
      "replica ", replica, " returned",
      status.ok() ? "" : absl::StrCat(" with error: ", status.ToString())));
  if (arrived_ > 0) {
    // Those waiting now can never be joined. They return the failure;
    // this replica has left and has nobody to tell.
    FailLocked(
        absl::FailedPreconditionError(absl::StrCat(
            "a collective: ", absl::StrJoin(left_, ", "),
            " while other replicas waited in it; every replica must make the "
            "same collective calls in the same order")))
        .IgnoreError();
  }
}

void ReplicaBarrier::Reset() {
  absl::MutexLock lock(&mu_);
  arrived_ = 0;
  left_.clear();
  failure_ = absl::OkStatus();
}

absl::Status ReplicaBarrier::failure() const {
  absl::MutexLock lock(&mu_);
  return failure_;
}

}  // namespace distrt
