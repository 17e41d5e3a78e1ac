// CreateNcclAllReduce for binaries built without --config=cuda.
#include "runtime/distribute/nccl_all_reduce.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CreateNcclAllReduce(
    absl::Span<Device* const>) {
  return absl::UnavailableError(
      "cross-device ops \"nccl\" needs a binary built with --config=cuda");
}

}  // namespace distrt
