// Fuzzes the reading of one checkpoint shard file
// (runtime/checkpoint/shard_file.h) and restoring from it
// (runtime/checkpoint/ps_checkpoint.h).
//
// Input: one byte of options, then the file.
//   bit 0     fix the checksums first (FixShardChecksums), so that mutated
//             headers and tensors get past the CRC32C checks
//   bit 1     restore with verify_only
//   bits 2-3  restore as num_shards 1-4 ...
//   bits 4-5  ... shard_index (this value modulo num_shards)
//
// The file is written as <scratch>/ckpt-000000000007/shard-00000-of-00001
// .ckpt. ShardFileReader::Open reads it and every tensor its header
// describes is read (as the dtype it claims and as the other one);
// RestoreShard then restores it into the fuzz model (checkpoint_fuzz_util.h,
// which the seed files were saved from).
//
// Checked beyond "no crash": errors have the codes the headers promise
// (DATA_LOSS for a damaged file; NOT_FOUND, FAILED_PRECONDITION for a
// checkpoint of another model; never INTERNAL, which RestoreShard reserves
// for its own bugs); a tensor read has the elements asked for; and what was
// restored saves (SaveShard) as a checkpoint that restores to the same
// holdings.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/checkpoint_fuzz_util.h"
#include "fuzz/fuzz_util.h"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/ps_checkpoint.h"
#include "runtime/checkpoint/shard_file.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/variable_store.h"
#include "runtime/util/file_system.h"

namespace distrt::fuzz {
namespace {

// Reads `tensor` as float32 and as int64, as many elements as its length
// says (and, when given, `elements`).
void ReadBothWays(const ShardFileReader& reader, const ps::SavedTensor& tensor,
                  absl::string_view what, int64_t elements = -1) {
  const auto check = [&](const absl::Status& status, size_t got,
                         int64_t wanted) {
    if (status.ok()) {
      if (static_cast<int64_t>(got) != wanted) {
        FuzzFail(
            absl::StrCat(what, ": asked for ", wanted, " elements, got ", got));
      }
      return;
    }
    ExpectCode(status, absl::StatusCode::kDataLoss,
               absl::StrCat("reading ", what));
  };
  for (const int64_t n : {tensor.length() / 4, elements}) {
    absl::StatusOr<std::vector<float>> floats =
        reader.ReadFloat32(tensor, n, what);
    check(floats.status(), floats.ok() ? floats->size() : 0, n);
  }
  for (const int64_t n : {tensor.length() / 8, elements}) {
    absl::StatusOr<std::vector<int64_t>> ints =
        reader.ReadInt64(tensor, n, what);
    check(ints.status(), ints.ok() ? ints->size() : 0, n);
  }
}

void ReadEveryTensor(const ShardFileReader& reader) {
  const ps::CheckpointShardHeader& header = reader.header();
  if (reader.data_bytes() < 0) {
    FuzzFail(absl::StrCat("data section of ", reader.data_bytes(), " bytes"));
  }
  for (const ps::SavedVariable& variable : header.variables()) {
    ReadBothWays(reader, variable.values(), "values");
    for (const ps::SavedTensor& slot : variable.slots()) {
      ReadBothWays(reader, slot, "slot");
    }
  }
  for (const ps::SavedHashTable& table : header.hash_tables()) {
    ReadBothWays(reader, table.ids(), "ids", table.num_rows());
    ReadBothWays(reader, table.steps(), "steps", table.num_rows());
    ReadBothWays(reader, table.values(), "values");
    for (const ps::SavedTensor& slot : table.slots()) {
      ReadBothWays(reader, slot, "slot");
    }
  }
}

void ExpectRestoreError(const absl::Status& status, absl::string_view what) {
  switch (status.code()) {
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
      return;
    default:
      FuzzFail(absl::StrCat(what, ": unexpected error ", status.ToString()));
  }
}

// Saves what `store` and `tables` hold, restores it into a fresh model, and
// fails unless that gives the same holdings.
void CheckSavesAsItRestored(const VariableStore& store,
                            const HashTableSet& tables) {
  // Not the step restored: RestoreShard takes the header's step as it is,
  // negative too, and SaveShard refuses a negative one.
  constexpr int64_t step = 7;
  const std::string root = JoinPath(ScratchDir(), "again");
  ResetScratchDirectory(root);
  absl::StatusOr<SavedShardInfo> saved =
      SaveShard(store, tables, root, step, 0, 1);
  if (!saved.ok()) {
    FuzzFail(absl::StrCat("cannot save what was restored: ",
                          saved.status().ToString()));
  }
  VariableStore again_store;
  HashTableSet again_tables;
  CreateFuzzModel(again_store, again_tables);
  absl::StatusOr<RestoreInfo> restored =
      RestoreShard(again_store, again_tables,
                   JoinPath(root, CheckpointDirName(step)), 0, 1, false);
  if (!restored.ok()) {
    FuzzFail(absl::StrCat("cannot restore what was restored and saved: ",
                          restored.status().ToString()));
  }
  if (std::string diff =
          DescribeHoldingsDifference(store, tables, again_store, again_tables);
      !diff.empty()) {
    FuzzFail(
        absl::StrCat("restored, saved and restored again, ", diff, " differs"));
  }
}

void Run(const uint8_t* data, size_t size) {
  ByteReader input(data, size);
  const uint8_t flags = input.Byte();
  const std::string file =
      (flags & 1) ? FixShardChecksums(input.Rest()) : std::string(input.Rest());
  const bool verify_only = (flags & 2) != 0;
  const int num_shards = 1 + ((flags >> 2) & 3);
  const int shard_index = ((flags >> 4) & 3) % num_shards;

  const std::string dir = JoinPath(ScratchDir(), CheckpointDirName(7));
  if (absl::Status s = CreateDirectories(dir); !s.ok()) {
    FuzzFail(absl::StrCat("cannot create ", dir, ": ", s.ToString()));
  }
  WriteScratchFile(JoinPath(dir, ShardFileName(0, 1)), file);

  absl::StatusOr<std::unique_ptr<ShardFileReader>> reader =
      ShardFileReader::Open(JoinPath(dir, ShardFileName(0, 1)));
  if (reader.ok()) {
    ReadEveryTensor(**reader);
  } else {
    ExpectCode(reader.status(), absl::StatusCode::kDataLoss,
               "ShardFileReader::Open");
  }

  VariableStore store;
  HashTableSet tables;
  CreateFuzzModel(store, tables);
  absl::StatusOr<RestoreInfo> restored =
      RestoreShard(store, tables, dir, shard_index, num_shards, verify_only);
  if (!restored.ok()) {
    ExpectRestoreError(restored.status(), "RestoreShard");
    return;
  }
  if (!reader.ok()) {
    FuzzFail(absl::StrCat("restored from a file that does not open: ",
                          reader.status().ToString()));
  }
  if (restored->step != (*reader)->header().step()) {
    FuzzFail(absl::StrCat("restored step ", restored->step, ", the file says ",
                          (*reader)->header().step()));
  }
  if (!verify_only) CheckSavesAsItRestored(store, tables);
}

}  // namespace
}  // namespace distrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  distrt::fuzz::Run(data, size);
  return 0;
}
