#include "runtime/input/input_context.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// "st", "nd", "rd" or "th": "every 2nd record".
absl::string_view OrdinalSuffix(int n) {
  if (n % 100 >= 11 && n % 100 <= 13) return "th";
  switch (n % 10) {
    case 1:
      return "st";
    case 2:
      return "nd";
    case 3:
      return "rd";
    default:
      return "th";
  }
}

}  // namespace

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

absl::StatusOr<AutoShardPolicy> ParseAutoShardPolicy(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "auto") return AutoShardPolicy::kAuto;
  if (lower == "file") return AutoShardPolicy::kFile;
  if (lower == "data") return AutoShardPolicy::kData;
  if (lower == "off") return AutoShardPolicy::kOff;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown auto-shard policy \"", name, "\"; use auto, file, data or off"));
}

absl::string_view AutoShardPolicyName(AutoShardPolicy policy) {
  switch (policy) {
    case AutoShardPolicy::kAuto:
      return "AUTO";
    case AutoShardPolicy::kFile:
      return "FILE";
    case AutoShardPolicy::kData:
      return "DATA";
    case AutoShardPolicy::kOff:
      return "OFF";
  }
  return "unknown";
}

absl::StatusOr<InputShard> ShardInput(std::vector<std::string> files,
                                      const InputContext& context,
                                      AutoShardPolicy policy) {
  RETURN_IF_ERROR(context.Validate());
  if (files.empty()) {
    return absl::InvalidArgumentError("no input files to read");
  }
  std::sort(files.begin(), files.end());
  InputShard shard;
  shard.index = context.input_pipeline_id;
  shard.count = context.num_input_pipelines;
  shard.total_files = static_cast<int>(files.size());
  if (policy == AutoShardPolicy::kAuto) {
    policy = shard.total_files >= shard.count ? AutoShardPolicy::kFile
                                              : AutoShardPolicy::kData;
  }
  shard.policy = policy;
  switch (policy) {
    case AutoShardPolicy::kFile:
      if (shard.total_files < shard.count) {
        return absl::InvalidArgumentError(absl::StrCat(
            "FILE sharding needs at least as many files as input pipelines: ",
            shard.total_files, " files, ", shard.count,
            " pipelines; use DATA or AUTO sharding"));
      }
      for (size_t i = shard.index; i < files.size(); i += shard.count) {
        shard.files.push_back(files[i]);
      }
      break;
    case AutoShardPolicy::kData:
      shard.by_record = true;
      shard.files = std::move(files);
      break;
    case AutoShardPolicy::kOff:
    case AutoShardPolicy::kAuto:  // resolved above
      shard.files = std::move(files);
      break;
  }
  return shard;
}

std::string DescribeShard(const InputShard& shard) {
  const std::string pipeline =
      absl::StrCat("pipeline ", shard.index + 1, " of ", shard.count);
  switch (shard.policy) {
    case AutoShardPolicy::kFile:
      return absl::StrCat("FILE sharding: ", pipeline, " reads ",
                          shard.files.size(), " of ", shard.total_files,
                          " files");
    case AutoShardPolicy::kData:
      return absl::StrCat("DATA sharding: ", pipeline, " keeps every ",
                          shard.count, OrdinalSuffix(shard.count),
                          " record of ", shard.files.size(), " files");
    case AutoShardPolicy::kOff:
    case AutoShardPolicy::kAuto:
      break;
  }
  return absl::StrCat("OFF (no sharding): ", pipeline, " reads all ",
                      shard.files.size(), " files");
}

}  // namespace distrt
