#ifndef DISTRT_RUNTIME_DISTRIBUTE_NCCL_ALL_REDUCE_H_
#define DISTRT_RUNTIME_DISTRIBUTE_NCCL_ALL_REDUCE_H_

// NcclAllReduce ("nccl"): the in-replica all-reduce of GPU replicas by NCCL,
// TensorFlow's default for GPUs. One communicator per group of local GPUs,
// made on the first all-reduce (ncclCommInitAll); at each all-reduce the
// replicas meet, and replica 0 queues one grouped call (ncclGroupStart /
// ncclAllReduce per GPU / ncclGroupEnd) on every replica's own stream, so
// the reduction is ordered after each replica's gradient kernels and before
// whatever it queues next. Cross-replica Reduce and Broadcast use the
// CrossDeviceOps defaults.
//
// Built only with --config=cuda; without it, CreateNcclAllReduce says so.

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "runtime/collective/cross_worker_collective.h"
#include "runtime/distribute/cross_device_ops.h"

namespace distrt {

// INVALID_ARGUMENT when a device is not a GPU (or the same GPU twice), and
// always in a build without CUDA.
absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CreateNcclAllReduce(
    absl::Span<Device* const> devices);

// "nccl_multi_worker": one NCCL communicator over every GPU of every worker
// (TF's MultiWorkerMirroredStrategy with NCCL), so a step's gradients are
// reduced over all of them in one grouped call. Worker 0 makes the NCCL id
// and sends it to the others over `workers` (the group they formed at the
// rendezvous) at the first all-reduce; every worker must have as many GPUs
// (MultiWorkerMirroredStrategy::Initialize checks), and no GPU may serve two
// workers. `host` (the Gloo path, MultiWorkerAllReduce) reduces values in
// host memory and cross-replica Reduce calls.
//
// NCCL waits for every rank without a timeout of its own, so a lost worker
// would hang the others: setting up the communicator and each all-reduce
// are bounded by `timeout`, after which the communicators are aborted and
// the call fails with DEADLINE_EXCEEDED. Any failure is final: every later
// all-reduce returns it (the workers' collectives no longer pair up).
// Errors as CreateNcclAllReduce.
absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CreateMultiWorkerNcclAllReduce(
    absl::Span<Device* const> devices, CrossWorkerCollective* workers,
    std::unique_ptr<CrossDeviceOps> host, absl::Duration timeout);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_NCCL_ALL_REDUCE_H_
