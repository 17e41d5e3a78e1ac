#ifndef DISTRT_RUNTIME_INPUT_INPUT_CONTEXT_H_
#define DISTRT_RUNTIME_INPUT_INPUT_CONTEXT_H_

// InputContext: what one input pipeline needs to know about the job, as
// tf.distribute.InputContext: how many pipelines there are (one per worker),
// which one this is, and how many replicas consume batches in sync.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distrt {

struct InputContext {
  int num_input_pipelines = 1;
  int input_pipeline_id = 0;
  int num_replicas_in_sync = 1;

  // INVALID_ARGUMENT unless 0 <= input_pipeline_id < num_input_pipelines
  // and num_replicas_in_sync >= 1.
  absl::Status Validate() const;

  // The batch each replica gets when a step consumes `global_batch_size`
  // examples over all replicas. INVALID_ARGUMENT when it does not divide
  // evenly, saying what would.
  absl::StatusOr<int64_t> GetPerReplicaBatchSize(
      int64_t global_batch_size) const;
};

// How the input files are divided among the input pipelines, as TF's
// tf.data.experimental.AutoShardPolicy. Files are taken sorted by name, so
// every worker divides them the same way.
//   kFile: whole files, round-robin: pipeline i reads files i, i + n, ...
//          Needs at least as many files as pipelines.
//   kData: every pipeline reads every file and keeps the records i, i + n,
//          ... of each (0-based record index within its file); spreads
//          fewer, larger files evenly, at the cost of each pipeline reading
//          (not parsing) every record.
//   kOff:  every pipeline reads everything (e.g. evaluation on every
//          worker, or input that is already per-worker).
//   kAuto: kFile when there are at least as many files as pipelines, else
//          kData.
enum class AutoShardPolicy { kAuto, kFile, kData, kOff };

// "auto", "file", "data" or "off", case-insensitive; INVALID_ARGUMENT
// listing those otherwise.
absl::StatusOr<AutoShardPolicy> ParseAutoShardPolicy(absl::string_view name);

// "AUTO", "FILE", "DATA" or "OFF".
absl::string_view AutoShardPolicyName(AutoShardPolicy policy);

// Which part of the input one pipeline reads (see AutoShardPolicy).
struct InputShard {
  std::vector<std::string> files;  // what this pipeline opens, in order
  bool by_record = false;          // kData: keep every count-th record
  int index = 0;                   // this pipeline's index, among `count`
  int count = 1;
  // The policy applied (never kAuto) and how many files there were in all,
  // for DescribeShard.
  AutoShardPolicy policy = AutoShardPolicy::kFile;
  int total_files = 0;

  // Whether the record at `record_index` (0-based, within its file) is this
  // pipeline's.
  bool Keeps(int64_t record_index) const {
    return !by_record || record_index % count == index;
  }
};

// This pipeline's shard of `files` under `policy`. INVALID_ARGUMENT for an
// invalid context, no files, or kFile with fewer files than pipelines
// (some pipeline would read nothing; kData or kAuto would not).
absl::StatusOr<InputShard> ShardInput(
    std::vector<std::string> files, const InputContext& context,
    AutoShardPolicy policy = AutoShardPolicy::kAuto);

// One line for the start-up log saying what this pipeline reads, e.g.
// "FILE sharding: pipeline 1 of 4 reads 3 of 12 files",
// "DATA sharding: pipeline 1 of 4 keeps every 4th record of 2 files",
// "OFF (no sharding): pipeline 1 of 4 reads all 12 files".
std::string DescribeShard(const InputShard& shard);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_INPUT_CONTEXT_H_
