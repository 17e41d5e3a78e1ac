#include "runtime/checkpoint/open_checkpoint.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// The number of shards of checkpoint `dir`, whose files are `entries`:
// `num_shards` where given (a commit), and then no files of another count
// may be there; otherwise (a restore) the one count the files name.
absl::StatusOr<int> ShardCountOf(const std::string& dir,
                                 const std::vector<std::string>& entries,
                                 std::optional<int> num_shards) {
  // Shard counts present, with one file name of each as an example.
  std::map<int, std::string> counts;
  for (const std::string& entry : entries) {
    std::optional<ShardFileId> id = ParseShardFileName(entry);
    if (!id.has_value()) continue;  // e.g. a crashed writer's temporary
    counts.emplace(id->num_shards, entry);
  }
  if (num_shards.has_value()) {
    counts.erase(*num_shards);
    if (!counts.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", dir, " also holds shard files of a save by ",
          counts.begin()->first, " ps tasks (e.g. ", counts.begin()->second,
          "), not ", *num_shards,
          "; remove them or save to another directory"));
    }
    return *num_shards;
  }
  if (counts.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "checkpoint ", dir, " holds no shard files (shard-*-of-*.ckpt)"));
  }
  if (counts.size() > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", dir,
                     " holds shard files of saves by different numbers "
                     "of ps tasks: ",
                     counts.begin()->second, " and ", counts.rbegin()->second));
  }
  return counts.begin()->first;
}

// Checks that `entries` hold every one of the `num_shards` shard files.
absl::Status CheckNoShardMissing(const std::string& dir,
                                 const std::vector<std::string>& entries,
                                 int num_shards) {
  // The shard indices present, from the listing: the count comes from a
  // file name (or a request) and may be huge, so nothing loops over it.
  std::vector<int> present;
  for (const std::string& entry : entries) {
    std::optional<ShardFileId> id = ParseShardFileName(entry);
    if (id.has_value() && id->num_shards == num_shards) {
      present.push_back(id->shard_index);
    }
  }
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  const int64_t num_missing =
      int64_t{num_shards} - static_cast<int64_t>(present.size());
  if (num_missing <= 0) return absl::OkStatus();
  int first = 0;
  while (first < static_cast<int>(present.size()) && present[first] == first) {
    ++first;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "checkpoint ", dir, " is missing ", ShardFileName(first, num_shards),
      " (", num_missing, " of ", num_shards,
      " shard files missing; did every ps task save?)"));
}

// Opens shard `index` of `num_shards` in `dir` and checks its header. The
// step is `*step` where known; otherwise the header's, which it becomes.
absl::StatusOr<std::unique_ptr<ShardFileReader>> OpenShardFile(
    const std::string& dir, int index, int num_shards,
    std::optional<int64_t>& step) {
  ASSIGN_OR_RETURN(
      std::unique_ptr<ShardFileReader> reader,
      ShardFileReader::Open(JoinPath(dir, ShardFileName(index, num_shards))));
  const ps::CheckpointShardHeader& header = reader->header();
  if (!step.has_value()) step = header.step();
  if (header.step() < 0) {
    return absl::DataLossError(
        absl::StrCat(reader->path(), ": its header says step ", header.step(),
                     "; steps are never negative"));
  }
  if (header.shard_index() != index || header.num_shards() != num_shards ||
      header.step() != *step) {
    return absl::DataLossError(absl::StrCat(
        reader->path(), ": its header says shard ", header.shard_index(),
        " of ", header.num_shards(), " at step ", header.step(),
        ", expected shard ", index, " of ", num_shards, " at step ", *step));
  }
  return reader;
}

// The delta link every shard of `checkpoint` names (none for a full one);
// DATA_LOSS naming the first file that disagrees with shard 0.
absl::Status ReadDeltaLink(OpenCheckpoint& checkpoint) {
  const ps::CheckpointShardHeader& first = checkpoint.shards[0]->header();
  for (const auto& shard : checkpoint.shards) {
    const ps::CheckpointShardHeader& header = shard->header();
    if (header.has_delta() != first.has_delta() ||
        header.delta().previous() != first.delta().previous() ||
        header.delta().base() != first.delta().base()) {
      return absl::DataLossError(absl::StrCat(
          shard->path(), ": its header says ",
          header.has_delta() ? "a delta of " + header.delta().previous()
                             : std::string("a full save"),
          ", shard 0's says ",
          first.has_delta() ? "a delta of " + first.delta().previous()
                            : std::string("a full save")));
    }
  }
  if (first.has_delta()) checkpoint.delta = first.delta();
  return absl::OkStatus();
}

// The parent directory of `dir` (a checkpoint directory).
std::string ParentOf(const std::string& dir) {
  std::string trimmed = dir;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const size_t slash = trimmed.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : trimmed.substr(0, slash);
}

// Checks the link from `later` (a delta) to `earlier`, the checkpoint it
// names as previous.
absl::Status CheckLink(const OpenCheckpoint& later,
                       const OpenCheckpoint& earlier) {
  const std::string& file = later.shards[0]->path();
  if (earlier.step >= later.step) {
    return absl::DataLossError(absl::StrCat(
        file, ": a delta at step ", later.step, " follows ", earlier.dir,
        " at step ", earlier.step, ", which is not older"));
  }
  if (!earlier.delta.has_value() &&
      later.delta->previous() != later.delta->base()) {
    return absl::DataLossError(
        absl::StrCat(file, ": its base is ", later.delta->base(),
                     " but it follows ", earlier.dir, ", a full save"));
  }
  if (earlier.delta.has_value() &&
      earlier.delta->base() != later.delta->base()) {
    return absl::DataLossError(absl::StrCat(
        file, ": its base is ", later.delta->base(), " but it follows ",
        earlier.dir, ", a delta of base ", earlier.delta->base()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<OpenCheckpoint>> OpenChain(const std::string& dir) {
  ASSIGN_OR_RETURN(OpenCheckpoint target,
                   OpenShards(dir, std::nullopt, std::nullopt));
  std::vector<OpenCheckpoint> chain;
  chain.push_back(std::move(target));
  const std::string root = ParentOf(dir);
  // Each link goes to an older step, so this ends.
  while (chain.back().delta.has_value()) {
    const OpenCheckpoint& later = chain.back();
    const std::string& previous = later.delta->previous();
    if (!ParseCheckpointDirName(previous).has_value()) {
      return absl::DataLossError(
          absl::StrCat(later.shards[0]->path(), ": it follows \"", previous,
                       "\", which is not a checkpoint directory name"));
    }
    const std::string previous_dir = JoinPath(root, previous);
    absl::StatusOr<OpenCheckpoint> earlier =
        OpenShards(previous_dir, std::nullopt, std::nullopt);
    if (!earlier.ok()) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint ", chain.front().dir, " is a delta that needs ",
          previous_dir, " (which ", later.dir,
          " follows), which cannot be read: ", earlier.status().message()));
    }
    RETURN_IF_ERROR(CheckLink(later, *earlier));
    chain.push_back(*std::move(earlier));
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

absl::StatusOr<OpenCheckpoint> OpenShards(const std::string& dir,
                                          std::optional<int> num_shards,
                                          std::optional<int64_t> step) {
  absl::StatusOr<std::vector<std::string>> entries = ListDirectory(dir);
  if (!entries.ok()) {
    if (entries.status().code() == absl::StatusCode::kNotFound &&
        num_shards.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", dir, " is missing ", ShardFileName(0, *num_shards),
          ": the directory does not exist (did every ps task save?)"));
    }
    return entries.status();
  }
  ASSIGN_OR_RETURN(const int count, ShardCountOf(dir, *entries, num_shards));
  RETURN_IF_ERROR(CheckNoShardMissing(dir, *entries, count));
  OpenCheckpoint checkpoint;
  checkpoint.dir = dir;
  for (int i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<ShardFileReader> reader,
                     OpenShardFile(dir, i, count, step));
    checkpoint.shards.push_back(std::move(reader));
  }
  checkpoint.step = *step;
  RETURN_IF_ERROR(ReadDeltaLink(checkpoint));
  return checkpoint;
}

}  // namespace distrt
