#ifndef DISTRT_RUNTIME_CHECKPOINT_CHECKPOINT_DIR_H_
#define DISTRT_RUNTIME_CHECKPOINT_CHECKPOINT_DIR_H_

// The layout of a directory of checkpoints (docs/checkpoint_format.md):
//
//   <root>/checkpoints                  the index: committed checkpoints
//   <root>/final_checkpoint             the chief's last checkpoint, once
//                                       training has finished
//   <root>/ckpt-000000001000/           the checkpoint of step 1000
//       shard-00000-of-00002.ckpt       what ps task 0 of 2 saved
//       shard-00001-of-00002.ckpt       what ps task 1 of 2 saved
//
// The names of its parts, the index, and which checkpoint a directory
// designates. Functions are thread-safe; the index has one writer at a time
// (the task that commits).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace distrt {

// The index file in a root directory.
inline constexpr absl::string_view kCheckpointIndexName = "checkpoints";

// "ckpt-000000001000": the step zero-padded to 12 digits (more when larger).
std::string CheckpointDirName(int64_t step);
// The step of a name made by CheckpointDirName; nullopt for anything else.
std::optional<int64_t> ParseCheckpointDirName(absl::string_view name);

// "shard-00001-of-00002.ckpt": indices zero-padded to 5 digits (more when
// larger).
std::string ShardFileName(int shard_index, int num_shards);
struct ShardFileId {
  int shard_index = 0;
  int num_shards = 0;
};
// What a name made by ShardFileName says (with 0 <= shard_index <
// num_shards); nullopt for anything else, e.g. a writer's temporary file.
std::optional<ShardFileId> ParseShardFileName(absl::string_view name);

// The checkpoint directory names listed in <root_dir>/checkpoints, in commit
// order (the last is the latest); empty when there is no index. DATA_LOSS
// naming the file and line for a line that is not a checkpoint directory
// name.
absl::StatusOr<std::vector<std::string>> ReadCheckpointIndex(
    const std::string& root_dir);
// Replaces <root_dir>/checkpoints with `names` (checkpoint directory names,
// oldest first), atomically: a reader sees the old index or the new one.
absl::Status WriteCheckpointIndex(const std::string& root_dir,
                                  absl::Span<const std::string> names);

// The marker of a finished job: one line naming the checkpoint that the
// chief saved last, written after that checkpoint was committed. An
// evaluator that has evaluated it knows that no more will come.
inline constexpr absl::string_view kFinalCheckpointMarkerName =
    "final_checkpoint";

// Writes the marker naming `checkpoint_name` (a CheckpointDirName)
// atomically; INVALID_ARGUMENT for any other name.
absl::Status WriteFinalCheckpointMarker(const std::string& root_dir,
                                        absl::string_view checkpoint_name);
// The checkpoint name in the marker; nullopt when there is none. DATA_LOSS
// naming the file when it holds anything but a checkpoint name.
absl::StatusOr<std::optional<std::string>> ReadFinalCheckpointMarker(
    const std::string& root_dir);
// Removes the marker (a restarted job is not finished); OK when absent.
absl::Status RemoveFinalCheckpointMarker(const std::string& root_dir);

// The checkpoint directory `dir` designates: `dir` itself when it holds
// shard files, else the latest checkpoint in its index. NOT_FOUND saying
// what is missing otherwise; INVALID_ARGUMENT for an empty `dir`.
absl::StatusOr<std::string> ResolveCheckpointDir(const std::string& dir);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CHECKPOINT_CHECKPOINT_DIR_H_
