#include "runtime/collective/cpu_all_reduce.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"

namespace distrt {

CpuAllReduce::CpuAllReduce(int num_replicas, absl::Duration timeout)
    : owned_barrier_(std::make_unique<ReplicaBarrier>(num_replicas, timeout)),
      barrier_(owned_barrier_.get()),
      num_replicas_(num_replicas),
      buffers_(num_replicas),
      ops_(num_replicas) {}

CpuAllReduce::CpuAllReduce(ReplicaBarrier* barrier)
    : barrier_(barrier),
      num_replicas_(barrier->num_replicas()),
      buffers_(num_replicas_),
      ops_(num_replicas_) {}

absl::Status CpuAllReduce::AllReduce(int replica, absl::Span<float> values,
                                     ReduceOp op) {
  if (replica < 0 || replica >= num_replicas_) {
    return absl::InvalidArgumentError(
        absl::StrCat("replica ", replica, " is not one of ", num_replicas_));
  }
  buffers_[replica] = values;
  ops_[replica] = op;
  if (absl::Status s = barrier_->Wait("all-reduce"); !s.ok()) return s;

  // Every replica checks the same things and so returns the same error.
  for (int r = 0; r < num_replicas_; ++r) {
    if (buffers_[r].size() != buffers_[0].size() || ops_[r] != ops_[0]) {
      absl::Status mismatch = absl::InvalidArgumentError(
          absl::StrCat("all-reduce: replica ", r, " has ", buffers_[r].size(),
                       " values (", ReduceOpName(ops_[r]), "), replica 0 has ",
                       buffers_[0].size(), " (", ReduceOpName(ops_[0]), ")"));
      // Nobody may leave while others still read the buffers.
      absl::Status s = barrier_->Wait("all-reduce");
      return s.ok() ? mismatch : s;
    }
  }

  // Reduce-scatter: this replica's chunk, summed into its own buffer.
  const size_t n = values.size();
  const size_t begin = n * replica / num_replicas_;
  const size_t end = n * (replica + 1) / num_replicas_;
  float* own = values.data();
  for (int r = 0; r < num_replicas_; ++r) {
    if (r == replica) continue;
    const float* other = buffers_[r].data();
    for (size_t i = begin; i < end; ++i) own[i] += other[i];
  }
  if (op == ReduceOp::kMean) {
    const float scale = 1.0f / num_replicas_;
    for (size_t i = begin; i < end; ++i) own[i] *= scale;
  }
  if (absl::Status s = barrier_->Wait("all-reduce"); !s.ok()) return s;

  // All-gather: this replica's reduced chunk into every other buffer.
  for (int r = 0; r < num_replicas_; ++r) {
    if (r == replica) continue;
    std::copy(own + begin, own + end, buffers_[r].data() + begin);
  }
  // Nobody returns (and reuses its buffer) before every chunk is in place.
  return barrier_->Wait("all-reduce");
}

}  // namespace distrt
