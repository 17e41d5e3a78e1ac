#include "runtime/input/input_context.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::Status InputContext::Validate() const {
  if (num_input_pipelines < 1 || input_pipeline_id < 0 ||
      input_pipeline_id >= num_input_pipelines) {
    return absl::InvalidArgumentError(
        absl::StrCat("input pipeline ", input_pipeline_id, " of ",
                     num_input_pipelines, " is not a pipeline"));
  }
  if (num_replicas_in_sync < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_replicas_in_sync must be at least 1, not ", num_replicas_in_sync));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> InputContext::GetPerReplicaBatchSize(
    int64_t global_batch_size) const {
  RETURN_IF_ERROR(Validate());
  if (global_batch_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the global batch size must be at least 1, not ", global_batch_size));
  }
  if (global_batch_size % num_replicas_in_sync != 0) {
    const int64_t lower =
        global_batch_size / num_replicas_in_sync * num_replicas_in_sync;
    return absl::InvalidArgumentError(
        absl::StrCat("the global batch size ", global_batch_size,
                     " does not divide evenly over ", num_replicas_in_sync,
                     " replicas; use a multiple of ", num_replicas_in_sync,
                     " such as ", lower > 0 ? absl::StrCat(lower, " or ") : "",
                     lower + num_replicas_in_sync));
  }
  return global_batch_size / num_replicas_in_sync;
}

absl::StatusOr<InputShard> ShardInput(std::vector<std::string> files,
                                      const InputContext& context) {
  RETURN_IF_ERROR(context.Validate());
  if (files.empty()) {
    return absl::InvalidArgumentError("no input files to read");
  }
  std::sort(files.begin(), files.end());
  InputShard shard;
  shard.index = context.input_pipeline_id;
  shard.count = context.num_input_pipelines;
  if (static_cast<int>(files.size()) >= shard.count) {
    for (size_t i = shard.index; i < files.size(); i += shard.count) {
      shard.files.push_back(files[i]);
    }
  } else {
    shard.by_record = true;
    shard.files = std::move(files);
  }
  return shard;
}

}  // namespace distrt
