#ifndef DISTRT_RUNTIME_DISTRIBUTE_MULTI_WORKER_ALL_REDUCE_H_
#define DISTRT_RUNTIME_DISTRIBUTE_MULTI_WORKER_ALL_REDUCE_H_

// MultiWorkerAllReduce: the cross-device ops of a multi-worker mirrored
// strategy, hierarchical as in Horovod and TF's CollectiveAllReduce:
//
//   1. the replicas of this worker sum their values with the local
//      CrossDeviceOps (e.g. the chunked CPU all-reduce, NCCL on GPUs);
//   2. replica 0 all-reduces that sum with the other workers
//      (CrossWorkerCollective), in buckets of at most bucket_bytes (one
//      collective each, one after another; Gloo's ring already splits each
//      into segments of GlooGroup's max_segment_bytes and pipelines those);
//   3. every local replica takes the result (divided by the total number of
//      replicas for MEAN).
//
// Only one replica per worker talks to the other workers, so the
// cross-worker traffic per step is one copy of the gradients, whatever the
// number of local replicas.
//
// Fusion: the training step already packs every dense gradient, the loss
// and the example count into one tensor and all-reduces it once per step
// (runtime/training/train_step.h), so a model of many small variables pays
// one collective latency per bucket, not per variable.
//
// Errors: a cross-worker failure (a lost worker, a timeout) is returned to
// every local replica, naming the collective. Thread-safety: as for every
// CrossDeviceOps, AllReduce is called by all replicas of one group at once.

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/collective/cross_worker_collective.h"
#include "runtime/distribute/cross_device_ops.h"

namespace distrt {

class MultiWorkerAllReduce : public CrossDeviceOps {
 public:
  // Default bucket: Horovod's fusion buffer, 64 MiB (PyTorch DDP's buckets
  // are 25 MiB). Buckets go one after another, so a smaller one only adds
  // collective latencies: between 2 processes here, 4 MiB buckets reached
  // 0.82-0.96 GB/s on a 64 MiB gradient and 64 MiB ones 1.05-1.10
  // (bench/gloo_allreduce_bench --bucket_bytes, alternated).
  static constexpr int64_t kDefaultBucketBytes = int64_t{64} << 20;

  // `workers` (borrowed; must outlive this) connects this worker to the
  // others; `replicas_per_worker` is every worker's local replica count
  // (the same on all workers), so MEAN divides by
  // replicas_per_worker * workers->size().
  MultiWorkerAllReduce(std::unique_ptr<CrossDeviceOps> local,
                       CrossWorkerCollective* workers, int replicas_per_worker,
                       int64_t bucket_bytes = kDefaultBucketBytes);

  std::string name() const override;

  absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                         Tensor& value) override;

  // Cross-replica context: the local reduction, then summed over workers.
  absl::StatusOr<Tensor> Reduce(ReduceOp op,
                                absl::Span<const Tensor* const> per_replica,
                                Device* destination) override;

  int total_replicas() const;

 private:
  // Sums `values` over the workers, bucket by bucket.
  absl::Status SumOverWorkers(absl::Span<float> values);
  // `value` (on any device) reduced over the workers with `op`, in place.
  absl::Status OverWorkers(ReduceOp op, Tensor& value);

  const std::unique_ptr<CrossDeviceOps> local_;
  CrossWorkerCollective* const workers_;
  const int replicas_per_worker_;
  const int64_t bucket_elements_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_MULTI_WORKER_ALL_REDUCE_H_
