#include "runtime/distribute/multi_worker_mirrored_strategy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>>
MultiWorkerMirroredStrategy::Create(std::vector<Device*> devices,
                                    CrossWorkerCollective* workers,
                                    StrategyOptions options,
                                    int64_t bucket_bytes) {
  if (workers == nullptr) {
    return absl::InvalidArgumentError(
        "MultiWorkerMirroredStrategy needs the workers' collective group");
  }
  if (bucket_bytes < static_cast<int64_t>(sizeof(float))) {
    return absl::InvalidArgumentError(
        absl::StrCat("MultiWorkerMirroredStrategy: bucket size ", bucket_bytes,
                     " bytes is less than one float"));
  }
  absl::StatusOr<std::unique_ptr<CrossDeviceOps>> local =
      CrossDeviceOpsFor(devices, options);
  if (!local.ok()) return local.status();
  const int replicas = static_cast<int>(devices.size());
  auto ops = std::make_unique<MultiWorkerAllReduce>(*std::move(local), workers,
                                                    replicas, bucket_bytes);
  return std::unique_ptr<MultiWorkerMirroredStrategy>(
      new MultiWorkerMirroredStrategy(std::move(devices), std::move(ops),
                                      std::move(options), workers));
}

std::string MultiWorkerMirroredStrategy::Describe() const {
  const int replicas = num_replicas_in_sync();
  return absl::StrCat(name(), ": worker ", worker_rank(), " of ", num_workers(),
                      ", ", replicas, " replica", replicas == 1 ? "" : "s",
                      " on ", DescribeDevices(), " (", replicas * num_workers(),
                      " in sync over all workers), cross-device ops ",
                      cross_device_ops().name());
}

absl::Status MultiWorkerMirroredStrategy::Initialize() {
  std::vector<int64_t> replicas(workers_->size(), 0);
  replicas[workers_->rank()] = num_replicas_in_sync();
  if (absl::Status s = workers_->AllReduceSum(absl::MakeSpan(replicas));
      !s.ok()) {
    return s;
  }
  for (int64_t count : replicas) {
    if (count != replicas[0]) {
      std::vector<std::string> counts;
      for (size_t rank = 0; rank < replicas.size(); ++rank) {
        counts.push_back(absl::StrCat("worker ", rank, ": ", replicas[rank]));
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "MultiWorkerMirroredStrategy needs the same number of replicas "
          "(devices) on every worker; they have ",
          absl::StrJoin(counts, ", ")));
    }
  }
  return absl::OkStatus();
}

absl::Status MultiWorkerMirroredStrategy::GatherFromOtherWorkers(
    SparseGradient& gathered) {
  if (num_workers() == 1) return absl::OkStatus();
  absl::StatusOr<std::vector<int64_t>> ids =
      workers_->AllGather(absl::MakeConstSpan(gathered.ids));
  if (!ids.ok()) return ids.status();
  absl::StatusOr<std::vector<float>> rows =
      workers_->AllGather(absl::MakeConstSpan(gathered.rows));
  if (!rows.ok()) return rows.status();
  gathered.ids = *std::move(ids);
  gathered.rows = *std::move(rows);
  return absl::OkStatus();
}

}  // namespace distrt
