#include "runtime/collective/cpu_all_reduce.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace distrt {

CpuAllReduce::CpuAllReduce(int num_replicas, absl::Duration timeout)
    : num_replicas_(num_replicas),
      timeout_(timeout),
      buffers_(num_replicas),
      ops_(num_replicas) {
  if (num_replicas < 1) {
    std::fprintf(stderr, "CpuAllReduce: %d replicas\n", num_replicas);
    std::abort();
  }
}

bool CpuAllReduce::Barrier() {
  absl::MutexLock lock(&mu_);
  if (failed_) return false;
  const int64_t generation = generation_;
  if (++arrived_ == num_replicas_) {
    arrived_ = 0;
    ++generation_;
    return true;
  }
  // Runs with mu_ held, inside Await.
  auto next_generation = [this, generation]() {
    return generation_ != generation || failed_;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&next_generation), timeout_)) {
    failed_ = true;
  }
  return !failed_;
}

absl::Status CpuAllReduce::AllReduce(int replica, absl::Span<float> values,
                                     ReduceOp op) {
  if (replica < 0 || replica >= num_replicas_) {
    return absl::InvalidArgumentError(
        absl::StrCat("replica ", replica, " is not one of ", num_replicas_));
  }
  const absl::Status timed_out = absl::DeadlineExceededError(absl::StrCat(
      "all-reduce: not every one of the ", num_replicas_,
      " replicas arrived within ", absl::FormatDuration(timeout_)));
  buffers_[replica] = values;
  ops_[replica] = op;
  if (!Barrier()) return timed_out;

  // Every replica checks the same things and so returns the same error.
  for (int r = 0; r < num_replicas_; ++r) {
    if (buffers_[r].size() != buffers_[0].size() || ops_[r] != ops_[0]) {
      absl::Status mismatch = absl::InvalidArgumentError(
          absl::StrCat("all-reduce: replica ", r, " has ", buffers_[r].size(),
                       " values (", ReduceOpName(ops_[r]), "), replica 0 has ",
                       buffers_[0].size(), " (", ReduceOpName(ops_[0]), ")"));
      // Nobody may leave while others still read the buffers.
      return Barrier() ? mismatch : timed_out;
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
  if (!Barrier()) return timed_out;

  // All-gather: this replica's reduced chunk into every other buffer.
  for (int r = 0; r < num_replicas_; ++r) {
    if (r == replica) continue;
    std::copy(own + begin, own + end, buffers_[r].data() + begin);
  }
  // Nobody returns (and reuses its buffer) before every chunk is in place.
  if (!Barrier()) return timed_out;
  return absl::OkStatus();
}

}  // namespace distrt
