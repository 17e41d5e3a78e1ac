#ifndef DISTRT_RUNTIME_COLLECTIVE_CROSS_WORKER_COLLECTIVE_H_
#define DISTRT_RUNTIME_COLLECTIVE_CROSS_WORKER_COLLECTIVE_H_

// CrossWorkerCollective: the collectives that worker processes run with
// each other, one caller per worker (rank). What MultiWorkerAllReduce needs
// from the transport, so that it can be written and tested against any:
// GlooGroup (Gloo's TCP pairs, between processes) and
// rpc::TlsRingCollective (a ring over the job's mutual TLS, for jobs that
// have it) implement it.
//
// Every rank makes the same calls in the same order with the same sizes.
// A rank that does not arrive within the implementation's timeout fails the
// call on the others: an error, never a hang.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace distrt {

class CrossWorkerCollective {
 public:
  virtual ~CrossWorkerCollective() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Replaces `values` with the element-wise sum of every rank's `values`.
  virtual absl::Status AllReduceSum(absl::Span<float> values) = 0;
  virtual absl::Status AllReduceSum(absl::Span<int64_t> values) = 0;
  virtual absl::Status AllReduceSum(absl::Span<double> values) = 0;
  // Replaces `values` on every rank with those of rank `root`
  // (INVALID_ARGUMENT unless 0 <= root < size()).
  virtual absl::Status Broadcast(absl::Span<float> values, int root) = 0;
  virtual absl::Status Broadcast(absl::Span<int64_t> values, int root) = 0;
  // Every rank's `mine` concatenated in rank order, on every rank; ranks may
  // give different numbers of elements (an all-gather-v: sparse gradients).
  virtual absl::StatusOr<std::vector<float>> AllGather(
      absl::Span<const float> mine) = 0;
  virtual absl::StatusOr<std::vector<int64_t>> AllGather(
      absl::Span<const int64_t> mine) = 0;
  // Returns once every rank has called Barrier.
  virtual absl::Status Barrier() = 0;
  // Ends the group now, so that peers blocked in a collective with this
  // rank fail at once instead of at their timeout; every later call fails.
  // For a rank that has given up on the group after an error. Idempotent.
  virtual void Close() = 0;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_COLLECTIVE_CROSS_WORKER_COLLECTIVE_H_
