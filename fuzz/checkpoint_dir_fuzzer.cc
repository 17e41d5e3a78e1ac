// Fuzzes a directory of checkpoints (runtime/checkpoint/checkpoint_dir.h):
// the index, the final-checkpoint marker, which checkpoint a directory
// designates, and restoring and committing a checkpoint of several shard
// files (runtime/checkpoint/ps_checkpoint.h).
//
// Input: one byte of options, then chunks (each a 2-byte little-endian
// length and that many bytes):
//   options  bit 0     fix the shard files' checksums (FixShardChecksums)
//            bit 1     restore with verify_only
//            bit 2     restore from the root (else from ckpt-000000000007)
//            bit 3     then commit checkpoint 7 (keep_last 1) and read back
//            bits 4-5  restore and commit as num_shards 1-4 ...
//            bits 6-7  ... restore as shard_index (modulo num_shards)
//   chunk    the index file "checkpoints" (none when empty)
//   chunk    the marker "final_checkpoint" (none when empty)
//   then up to 8 shard files, each: 3 bytes, then a chunk for its contents.
//   The file is named ShardFileName(byte 0, byte 1) in the directory of
//   byte 2 (modulo 4): ckpt-000000000007, ckpt-000000000009, the root
//   itself, or the non-canonical ckpt-7. A byte 1 of 255 stands for the
//   largest shard count a name can hold, 2147483647.
//
// Everything is written under a scratch root that is emptied first.
// Checked beyond "no crash": errors have the codes the headers promise;
// every name that the index or the marker yields, and every name the
// parsers accept, is canonical (prints back as the same name); a directory
// resolves to itself or to a checkpoint inside it; a successful commit
// leaves the committed checkpoint last in the index.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "fuzz/checkpoint_fuzz_util.h"
#include "fuzz/fuzz_util.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/ps_checkpoint.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/variable_store.h"
#include "runtime/util/file_system.h"

namespace distrt::fuzz {
namespace {

constexpr int kMaxShardFiles = 8;

void ExpectOneOf(const absl::Status& status,
                 std::initializer_list<absl::StatusCode> codes,
                 absl::string_view what) {
  for (absl::StatusCode code : codes) {
    if (status.code() == code) return;
  }
  FuzzFail(absl::StrCat(what, ": unexpected error ", status.ToString()));
}

// The name parsers accept only what their printers print.
void CheckNameParsers(absl::string_view text) {
  for (absl::string_view name : absl::StrSplit(text, '\n')) {
    if (std::optional<int64_t> step = ParseCheckpointDirName(name)) {
      if (*step < 0 || CheckpointDirName(*step) != name) {
        FuzzFail(
            absl::StrCat("ParseCheckpointDirName(\"", name, "\") = ", *step));
      }
    }
    if (std::optional<ShardFileId> id = ParseShardFileName(name)) {
      if (id->shard_index < 0 || id->shard_index >= id->num_shards ||
          ShardFileName(id->shard_index, id->num_shards) != name) {
        FuzzFail(absl::StrCat("ParseShardFileName(\"", name, "\") = ",
                              id->shard_index, " of ", id->num_shards));
      }
    }
  }
}

void CheckIndexAndMarker(const std::string& root) {
  absl::StatusOr<std::vector<std::string>> index = ReadCheckpointIndex(root);
  if (index.ok()) {
    for (const std::string& name : *index) {
      if (!ParseCheckpointDirName(name).has_value()) {
        FuzzFail(absl::StrCat("the index lists \"", name, "\""));
      }
    }
  } else {
    ExpectCode(index.status(), absl::StatusCode::kDataLoss,
               "ReadCheckpointIndex");
  }
  absl::StatusOr<std::optional<std::string>> marker =
      ReadFinalCheckpointMarker(root);
  if (marker.ok()) {
    if (marker->has_value() && !ParseCheckpointDirName(**marker).has_value()) {
      FuzzFail(absl::StrCat("the marker names \"", **marker, "\""));
    }
  } else {
    ExpectCode(marker.status(), absl::StatusCode::kDataLoss,
               "ReadFinalCheckpointMarker");
  }
  absl::StatusOr<std::string> resolved = ResolveCheckpointDir(root);
  if (resolved.ok()) {
    absl::string_view rest = *resolved;
    if (*resolved != root && !(absl::ConsumePrefix(&rest, root + "/") &&
                               ParseCheckpointDirName(rest).has_value())) {
      FuzzFail(absl::StrCat(root, " resolves to ", *resolved));
    }
  } else {
    ExpectOneOf(resolved.status(),
                {absl::StatusCode::kNotFound, absl::StatusCode::kDataLoss,
                 absl::StatusCode::kFailedPrecondition},
                "ResolveCheckpointDir");
  }
}

void Run(const uint8_t* data, size_t size) {
  ByteReader input(data, size);
  const uint8_t flags = input.Byte();
  const bool fix_checksums = (flags & 1) != 0;
  const bool verify_only = (flags & 2) != 0;
  const bool from_root = (flags & 4) != 0;
  const bool commit = (flags & 8) != 0;
  const int num_shards = 1 + ((flags >> 4) & 3);
  const int shard_index = ((flags >> 6) & 3) % num_shards;

  const std::string root = JoinPath(ScratchDir(), "root");
  ResetScratchDirectory(root);
  const std::string dirs[4] = {JoinPath(root, CheckpointDirName(7)),
                               JoinPath(root, CheckpointDirName(9)), root,
                               JoinPath(root, "ckpt-7")};
  for (const std::string& dir : dirs) {
    if (absl::Status s = CreateDirectories(dir); !s.ok()) {
      FuzzFail(absl::StrCat("cannot create ", dir, ": ", s.ToString()));
    }
  }

  const absl::string_view index = input.Chunk();
  if (!index.empty()) {
    WriteScratchFile(JoinPath(root, kCheckpointIndexName), index);
  }
  const absl::string_view marker = input.Chunk();
  if (!marker.empty()) {
    WriteScratchFile(JoinPath(root, kFinalCheckpointMarkerName), marker);
  }
  CheckNameParsers(index);
  CheckNameParsers(marker);
  for (int i = 0; i < kMaxShardFiles && !input.empty(); ++i) {
    const int file_index = input.Byte();
    const uint8_t count_byte = input.Byte();
    const int file_count = count_byte == 255 ? std::numeric_limits<int>::max()
                                             : static_cast<int>(count_byte);
    const std::string& dir = dirs[input.Byte() % 4];
    const absl::string_view contents = input.Chunk();
    const std::string name = ShardFileName(file_index, file_count);
    CheckNameParsers(name);
    WriteScratchFile(JoinPath(dir, name), fix_checksums
                                              ? FixShardChecksums(contents)
                                              : std::string(contents));
  }

  CheckIndexAndMarker(root);

  VariableStore store;
  HashTableSet tables;
  CreateFuzzModel(store, tables);
  absl::StatusOr<RestoreInfo> restored =
      RestoreShard(store, tables, from_root ? root : dirs[0], shard_index,
                   num_shards, verify_only);
  if (!restored.ok()) {
    ExpectOneOf(restored.status(),
                {absl::StatusCode::kNotFound, absl::StatusCode::kDataLoss,
                 absl::StatusCode::kFailedPrecondition},
                "RestoreShard");
  }

  if (!commit) return;
  absl::StatusOr<CommitInfo> committed =
      CommitCheckpoint(root, 7, num_shards, /*keep_last=*/1);
  if (!committed.ok()) {
    ExpectOneOf(committed.status(),
                {absl::StatusCode::kFailedPrecondition,
                 absl::StatusCode::kDataLoss, absl::StatusCode::kNotFound},
                "CommitCheckpoint");
    return;
  }
  absl::StatusOr<std::vector<std::string>> after = ReadCheckpointIndex(root);
  if (!after.ok() || after->empty() || after->back() != CheckpointDirName(7)) {
    FuzzFail(absl::StrCat("after a commit of step 7 the index reads ",
                          after.ok() ? absl::StrCat(after->size(), " names")
                                     : after.status().ToString()));
  }
  absl::StatusOr<std::string> resolved = ResolveCheckpointDir(root);
  if (!resolved.ok() || *resolved != dirs[0]) {
    // Shard files in the root itself make the root the checkpoint.
    if (!(resolved.ok() && *resolved == root)) {
      FuzzFail(absl::StrCat(
          "after a commit of step 7 the root resolves to ",
          resolved.ok() ? *resolved : resolved.status().ToString()));
    }
  }
}

}  // namespace
}  // namespace distrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  distrt::fuzz::Run(data, size);
  return 0;
}
