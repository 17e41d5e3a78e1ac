#ifndef DISTRT_RUNTIME_CHECKPOINT_OPEN_CHECKPOINT_H_
#define DISTRT_RUNTIME_CHECKPOINT_OPEN_CHECKPOINT_H_

// OpenShards: every shard file of one checkpoint directory, open, with
// headers that agree on the step and the shard count. What restores, commits
// and `distctl export` read checkpoints through.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/checkpoint/shard_file.h"

namespace distrt {

// All the shard files of one checkpoint, open, with headers that agree.
struct OpenCheckpoint {
  std::string dir;
  int64_t step = 0;
  // Set for a delta checkpoint (docs/checkpoint_format.md): every shard's
  // header says the same.
  std::optional<ps::DeltaOf> delta;
  std::vector<std::unique_ptr<ShardFileReader>> shards;  // by shard index
};

// Opens every shard file of checkpoint directory `dir`. With `num_shards`
// and `step` given (a commit), the files must be those; otherwise (a
// restore) they are what the files say, and must be the same for all.
// FAILED_PRECONDITION naming a missing shard file or mixed shard counts,
// NOT_FOUND for a directory without shard files, DATA_LOSS naming a file
// whose header disagrees.
absl::StatusOr<OpenCheckpoint> OpenShards(const std::string& dir,
                                          std::optional<int> num_shards,
                                          std::optional<int64_t> step);

// What restoring checkpoint directory `dir` reads: for a full checkpoint,
// itself; for a delta, its base full save and then every delta after it,
// up to `dir` itself, in order (each found beside `dir`, by the names its
// header gives). A chain member that is missing or damaged is DATA_LOSS
// naming it and the checkpoint that needs it; a link that does not fit (a
// previous checkpoint that is not older, a base that is not full, a full
// previous checkpoint that is not the base) is DATA_LOSS naming the file.
// OpenShards' errors for `dir` itself.
absl::StatusOr<std::vector<OpenCheckpoint>> OpenChain(const std::string& dir);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CHECKPOINT_OPEN_CHECKPOINT_H_
