#ifndef DISTRT_RUNTIME_INPUT_INPUT_CONTEXT_H_
#define DISTRT_RUNTIME_INPUT_INPUT_CONTEXT_H_

// InputContext: what one input pipeline needs to know about the job, as
// tf.distribute.InputContext: how many pipelines there are (one per worker),
// which one this is, and how many replicas consume batches in sync.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

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

// Which part of the input one pipeline reads. With at least as many files
// as pipelines, whole files are split (pipeline i reads files i, i + n, ...
// of the list sorted by name, so every worker agrees); otherwise every
// pipeline reads every file and keeps records i, i + n, ... of each, so
// that fewer, larger files still spread evenly.
struct InputShard {
  std::vector<std::string> files;  // what this pipeline opens, in order
  bool by_record = false;
  int index = 0;  // this pipeline's index, among `count`
  int count = 1;

  // Whether the record at `record_index` (0-based, within its file) is this
  // pipeline's.
  bool Keeps(int64_t record_index) const {
    return !by_record || record_index % count == index;
  }
};

// INVALID_ARGUMENT for an invalid context or no files.
absl::StatusOr<InputShard> ShardInput(std::vector<std::string> files,
                                      const InputContext& context);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_INPUT_CONTEXT_H_
