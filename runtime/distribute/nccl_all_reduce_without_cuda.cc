// CreateNcclAllReduce for binaries built without --config=cuda.
#include "runtime/distribute/nccl_all_reduce.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CreateNcclAllReduce(
    absl::Span<Device* const>) {
  return absl::InvalidArgumentError(
      "cross-device ops \"nccl\" needs GPU devices, and this binary was "
      "built without CUDA (build with --config=cuda)");
}

absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CreateMultiWorkerNcclAllReduce(
    absl::Span<Device* const>, CrossWorkerCollective*,
    std::unique_ptr<CrossDeviceOps>, absl::Duration) {
  return absl::InvalidArgumentError(
      "cross-device ops \"nccl\" needs GPU devices, and this binary was "
      "built without CUDA (build with --config=cuda)");
}

}  // namespace distrt
