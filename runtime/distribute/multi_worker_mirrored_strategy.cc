#include "runtime/distribute/multi_worker_mirrored_strategy.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/distribute/nccl_all_reduce.h"
#include "runtime/tensor/host_floats.h"
#include "runtime/util/status_macros.h"

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
  ASSIGN_OR_RETURN(std::unique_ptr<CrossDeviceOps> local,
                   CrossDeviceOpsFor(devices, options));
  const int replicas = static_cast<int>(devices.size());
  std::unique_ptr<CrossDeviceOps> ops = std::make_unique<MultiWorkerAllReduce>(
      std::move(local), workers, replicas, bucket_bytes);
  // Asked for by name only: one NCCL communicator over every GPU of every
  // worker, with the Gloo path above for values in host memory. Not the
  // default because NCCL cannot share a GPU between two workers (several
  // workers on one host with --devices=auto would) and a lost worker is
  // found only by its timeout; Gloo through host memory always works.
  if (options.cross_device_ops == "nccl") {
    ASSIGN_OR_RETURN(
        std::unique_ptr<CrossDeviceOps> nccl,
        CreateMultiWorkerNcclAllReduce(devices, workers, std::move(ops),
                                       options.collective_timeout));
    ops = std::move(nccl);
  }
  return std::unique_ptr<MultiWorkerMirroredStrategy>(
      new MultiWorkerMirroredStrategy(std::move(devices), std::move(ops),
                                      std::move(options), workers));
}

std::string MultiWorkerMirroredStrategy::Describe() const {
  const int replicas = num_local_replicas();
  return absl::StrCat(name(), ": worker ", worker_rank(), " of ", num_workers(),
                      ", ", replicas, " replica", replicas == 1 ? "" : "s",
                      " on ", DescribeDevices(), " (", num_replicas_in_sync(),
                      " in sync over all workers), cross-device ops ",
                      cross_device_ops().name());
}

absl::Status MultiWorkerMirroredStrategy::Initialize() {
  // Per worker: its replicas, and whether it reduces over NCCL across
  // workers (then all must: their collectives would not pair up).
  const int workers = workers_->size();
  std::vector<int64_t> counts(2 * workers, 0);
  counts[workers_->rank()] = num_local_replicas();
  counts[workers + workers_->rank()] =
      cross_device_ops().name() == "nccl_multi_worker" ? 1 : 0;
  RETURN_IF_ERROR(workers_->AllReduceSum(absl::MakeSpan(counts)));
  const std::vector<int64_t> replicas(counts.begin(), counts.begin() + workers);
  const std::vector<int64_t> nccl(counts.begin() + workers, counts.end());
  if (std::count(nccl.begin(), nccl.end(), nccl[0]) != workers) {
    std::vector<std::string> which;
    for (int rank = 0; rank < workers; ++rank) {
      which.push_back(
          absl::StrCat("worker ", rank, ": ", nccl[rank] ? "nccl" : "gloo"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "MultiWorkerMirroredStrategy needs every worker to reduce across "
        "workers the same way (--cross_device_ops=nccl on all GPU workers "
        "or on none); they use ",
        absl::StrJoin(which, ", ")));
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

absl::Status MultiWorkerMirroredStrategy::SumOverWorkers(Tensor& value) {
  if (num_workers() == 1) return absl::OkStatus();
  absl::Status summed;
  if (value.dtype() == DType::kInt64) {
    summed = workers_->AllReduceSum(value.flat<int64_t>());
  } else if (value.dtype() == DType::kFloat64) {
    summed = workers_->AllReduceSum(value.flat<double>());
  } else {
    // Gloo reduces host memory: a GPU's value goes through the host.
    ASSIGN_OR_RETURN(HostFloats host, HostFloats::Edit(value));
    summed = workers_->AllReduceSum(host.mutable_values());
    if (summed.ok()) summed = host.Commit();
  }
  if (!summed.ok()) {
    return absl::Status(summed.code(),
                        absl::StrCat("sum across workers: ", summed.message()));
  }
  return absl::OkStatus();
}

// One all-gather (two collectives: counts, then the data) instead of one
// for the ids and one for the rows: a step is latency-bound when gradients
// are small. Each worker's part is [number of ids, row width, ids, rows
// packed two floats per int64 (zero-padded to a whole int64)], and the
// parts are read back one after another in rank order. Each part says its
// own width, because a worker whose batch touched no rows cannot know it.
absl::Status MultiWorkerMirroredStrategy::GatherFromOtherWorkers(
    SparseGradient& gathered) {
  if (num_workers() == 1) return absl::OkStatus();
  const size_t ids = gathered.ids.size();
  const size_t floats = gathered.rows.size();
  std::vector<int64_t> mine(2 + ids + (floats + 1) / 2, 0);
  mine[0] = static_cast<int64_t>(ids);
  mine[1] = ids > 0 ? static_cast<int64_t>(floats / ids) : 0;
  std::copy(gathered.ids.begin(), gathered.ids.end(), mine.begin() + 2);
  if (floats > 0) {
    std::memcpy(mine.data() + 2 + ids, gathered.rows.data(),
                floats * sizeof(float));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> all,
                   workers_->AllGather(absl::MakeConstSpan(mine)));

  // The parts come from our own peers, but a damaged one must be an error,
  // not a read out of bounds.
  auto damaged = [&](int rank, absl::string_view what) {
    return absl::InternalError(absl::StrCat(
        "worker ", rank,
        "'s part of a gathered sparse gradient is damaged: ", what));
  };
  SparseGradient result;
  size_t at = 0;
  for (int rank = 0; rank < num_workers(); ++rank) {
    if (all.size() - at < 2) return damaged(rank, "no header");
    const int64_t n = (all)[at];
    const int64_t width = (all)[at + 1];
    at += 2;
    if (n < 0 || width < 0 || static_cast<uint64_t>(n) > all.size() - at ||
        (n > 0 && width == 0)) {
      return damaged(rank, absl::StrCat(n, " ids of width ", width, " with ",
                                        all.size() - at, " values left"));
    }
    const size_t count = static_cast<size_t>(n);
    result.ids.insert(result.ids.end(), all.begin() + at,
                      all.begin() + at + count);
    at += count;
    const size_t row_floats = count * static_cast<size_t>(width);
    const size_t words = (row_floats + 1) / 2;
    if (width > 0 && row_floats / static_cast<size_t>(width) != count) {
      return damaged(rank, "row sizes overflow");
    }
    if (words > all.size() - at) {
      return damaged(rank, absl::StrCat(words, " words of rows expected, ",
                                        all.size() - at, " left"));
    }
    if (row_floats > 0) {
      const size_t old_size = result.rows.size();
      result.rows.resize(old_size + row_floats);
      std::memcpy(result.rows.data() + old_size, all.data() + at,
                  row_floats * sizeof(float));
    }
    at += words;
  }
  if (at != all.size()) {
    return absl::InternalError(
        absl::StrCat("a gathered sparse gradient has ", all.size() - at,
                     " values beyond the last worker's part"));
  }
  gathered = std::move(result);
  return absl::OkStatus();
}

}  // namespace distrt
