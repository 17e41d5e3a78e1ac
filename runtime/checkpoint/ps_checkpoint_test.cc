#include "runtime/checkpoint/ps_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/shard_file.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/table_policy.h"
#include "runtime/ps/variable_store.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What one ps task holds.
struct Ps {
  VariableStore store;
  HashTableSet tables;
};

VariableSpec Spec(const std::string& name, std::vector<int64_t> shape,
                  OptimizerKind kind) {
  VariableSpec spec;
  spec.name = name;
  spec.shape = std::move(shape);
  spec.initializer.kind = InitializerSpec::Kind::kUniform;
  spec.initializer.seed = 17;
  spec.optimizer.kind = kind;
  spec.optimizer.learning_rate = 0.1f;
  return spec;
}

VariableSpec Int64Spec(const std::string& name) {
  VariableSpec spec;
  spec.name = name;
  spec.dtype = DType::kInt64;
  spec.shape = {1};
  return spec;
}

HashEmbeddingSpec TableSpec(const std::string& name, int64_t dim,
                            OptimizerKind kind) {
  HashEmbeddingSpec spec;
  spec.name = name;
  spec.dim = dim;
  spec.initializer.kind = InitializerSpec::Kind::kUniform;
  spec.initializer.seed = 23;
  spec.optimizer.kind = kind;
  return spec;
}

// A gradient that differs per element and per call.
std::vector<float> Grad(int64_t n, float seed) {
  std::vector<float> g(n);
  for (int64_t i = 0; i < n; ++i) g[i] = seed * 0.37f + i * 0.11f - 1.0f;
  return g;
}

void ExpectSameBits(const std::vector<float>& a, const std::vector<float>& b,
                    const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  if (a.empty()) return;  // memcmp must not get the null data() of an empty
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
      << what;
}

void ExpectSameState(const VariableState& a, const VariableState& b,
                     const std::string& what) {
  EXPECT_EQ(a.step, b.step) << what;
  ExpectSameBits(a.values, b.values, what + " values");
  EXPECT_EQ(a.ints, b.ints) << what;
  ASSERT_EQ(a.slots.size(), b.slots.size()) << what;
  for (size_t s = 0; s < a.slots.size(); ++s) {
    ExpectSameBits(a.slots[s], b.slots[s], what + " slot");
  }
}

void ExpectSameRows(const HashTableState& a, const HashTableState& b) {
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.steps, b.steps);
  ExpectSameBits(a.values, b.values, "table values");
  ASSERT_EQ(a.slots.size(), b.slots.size());
  for (size_t s = 0; s < a.slots.size(); ++s) {
    ExpectSameBits(a.slots[s], b.slots[s], "table slot");
  }
}

// Every kind of state: dense and partitioned float32 variables with several
// optimizers, an int64 variable and a hash table.
void CreateModel(Ps& ps) {
  ASSERT_TRUE(
      ps.store.Create(Spec("dense", {4, 3}, OptimizerKind::kAdam), {0, 4})
          .ok());
  ASSERT_TRUE(
      ps.store.Create(Spec("emb", {10, 2}, OptimizerKind::kAdagrad), {0, 10})
          .ok());
  ASSERT_TRUE(
      ps.store.Create(Spec("bias", {3}, OptimizerKind::kMomentum), {0, 3})
          .ok());
  ASSERT_TRUE(ps.store.Create(Int64Spec("global_step"), {0, 1}).ok());
  ASSERT_TRUE(
      ps.tables.Create(TableSpec("users", 3, OptimizerKind::kFtrl)).ok());
}

void Train(Ps& ps, int steps) {
  for (int i = 0; i < steps; ++i) {
    ASSERT_TRUE(ps.store.PushRows("dense", {0, 4}, Grad(12, i)).ok());
    ASSERT_TRUE(ps.store.PushSparse("emb", {i % 10, 7}, Grad(4, i)).ok());
    ASSERT_TRUE(ps.store.PushRows("bias", {0, 3}, Grad(3, i)).ok());
    ASSERT_TRUE(ps.store.AddInt64("global_step", {0, 1}, {1}).ok());
    ASSERT_TRUE(
        ps.tables.Create(TableSpec("users", 3, OptimizerKind::kFtrl)).ok());
    HashEmbeddingTable* users = *ps.tables.Find("users");
    ASSERT_TRUE(
        users->Push({i * 1000003LL, -5, int64_t{1} << 60}, Grad(9, i)).ok());
  }
}

class PsCheckpointTest : public ::testing::Test {
 protected:
  // Saves `ps` as shard i of n at `step` and commits when i == n - 1.
  void SaveAndCommit(const Ps& ps, int64_t step, int i = 0, int n = 1,
                     int keep_last = 0) {
    absl::StatusOr<SavedShardInfo> saved =
        SaveShard(ps.store, ps.tables, root_, step, i, n);
    ASSERT_TRUE(saved.ok()) << saved.status();
    if (i == n - 1) {
      absl::StatusOr<CommitInfo> commit =
          CommitCheckpoint(root_, step, n, keep_last);
      ASSERT_TRUE(commit.ok()) << commit.status();
    }
  }

  std::string ShardPath(int64_t step, int i, int n) const {
    return JoinPath(JoinPath(root_, CheckpointDirName(step)),
                    ShardFileName(i, n));
  }

  // Rewrites the file with `edit` applied to its bytes.
  static void EditFile(const std::string& path,
                       const std::function<void(std::string&)>& edit) {
    absl::StatusOr<std::string> bytes = ReadFileToString(path);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    edit(*bytes);
    ASSERT_TRUE(WriteFileAtomically(path, {*bytes}).ok());
  }

  // The byte offset in the file of the first byte of a tensor.
  static int64_t FileOffset(const std::string& path,
                            const std::function<const ps::SavedTensor&(
                                const ps::CheckpointShardHeader&)>& tensor) {
    std::unique_ptr<ShardFileReader> reader = *ShardFileReader::Open(path);
    absl::StatusOr<std::string> bytes = ReadFileToString(path);
    const int64_t data_start = bytes->size() - reader->data_bytes();
    return data_start + tensor(reader->header()).offset();
  }

  TestDir test_dir_;
  const std::string root_ = JoinPath(test_dir_.path(), "ckpts");
};

TEST_F(PsCheckpointTest, RestoreGivesIdenticalBitsAndTheSameNextUpdate) {
  Ps original, restored;
  CreateModel(original);
  CreateModel(restored);
  Train(original, 5);
  // Rows the restore must drop: not in the checkpoint.
  std::vector<float> row(3);
  ASSERT_TRUE(
      (*restored.tables.Find("users"))->Pull({999}, absl::MakeSpan(row)).ok());

  absl::StatusOr<SavedShardInfo> saved =
      SaveShard(original.store, original.tables, root_, 100, 0, 1);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->path, ShardPath(100, 0, 1));
  EXPECT_EQ(saved->bytes, ReadFileToString(saved->path)->size());
  absl::StatusOr<CommitInfo> commit = CommitCheckpoint(root_, 100, 1, 0);
  ASSERT_TRUE(commit.ok()) << commit.status();
  EXPECT_EQ(commit->checkpoint_dir, JoinPath(root_, "ckpt-000000000100"));
  EXPECT_THAT(commit->deleted, ElementsAre());

  absl::StatusOr<RestoreInfo> info =
      RestoreShard(restored.store, restored.tables, root_, 0, 1, false);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->checkpoint_dir, commit->checkpoint_dir);
  EXPECT_EQ(info->step, 100);
  EXPECT_EQ(info->variables_restored, 4);
  EXPECT_EQ(info->hash_tables_restored, 1);
  EXPECT_EQ(info->hash_table_rows_restored, 7);  // 5 + two shared ids
  EXPECT_EQ(info->variables_not_here, 0);

  for (const std::string name : {"dense", "emb", "bias", "global_step"}) {
    ExpectSameState(*restored.store.Snapshot(name),
                    *original.store.Snapshot(name), name);
  }
  EXPECT_EQ(restored.store.Snapshot("global_step")->ints,
            std::vector<int64_t>{5});
  ExpectSameRows((*restored.tables.Find("users"))->Export(),
                 (*original.tables.Find("users"))->Export());
  EXPECT_EQ((*restored.tables.Find("users"))->Export().last_updated,
            (*original.tables.Find("users"))->Export().last_updated);

  // Slots and steps came along: the next updates agree too.
  Train(original, 2);
  Train(restored, 2);
  for (const std::string name : {"dense", "emb", "bias", "global_step"}) {
    ExpectSameState(*restored.store.Snapshot(name),
                    *original.store.Snapshot(name), name);
  }
  ExpectSameRows((*restored.tables.Find("users"))->Export(),
                 (*original.tables.Find("users"))->Export());
}

TEST_F(PsCheckpointTest, SavingLeavesNoTemporaryFiles) {
  Ps ps;
  CreateModel(ps);
  SaveAndCommit(ps, 7);
  Train(ps, 1);
  SaveAndCommit(ps, 7);  // again, over the first
  EXPECT_THAT(*ListDirectory(root_),
              ElementsAre("checkpoints", "ckpt-000000000007"));
  EXPECT_THAT(*ListDirectory(JoinPath(root_, "ckpt-000000000007")),
              ElementsAre("shard-00000-of-00001.ckpt"));
  EXPECT_THAT(*ReadCheckpointIndex(root_), ElementsAre("ckpt-000000000007"));
  Ps restored;
  CreateModel(restored);
  ASSERT_TRUE(
      RestoreShard(restored.store, restored.tables, root_, 0, 1, false).ok());
  EXPECT_EQ(restored.store.Snapshot("global_step")->ints,
            std::vector<int64_t>{1});
}

// Two ps tasks each hold half of "emb" and the hash rows HashShardOf gives
// them; restored into one task and into three.
class RepartitionTest : public PsCheckpointTest {
 protected:
  static constexpr int kIds = 60;

  void SetUp() override {
    const VariableSpec emb = Spec("emb", {10, 4}, OptimizerKind::kAdam);
    const HashEmbeddingSpec table = TableSpec("t", 2, OptimizerKind::kAdagrad);
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(old_[i].store.Create(emb, {i * 5, i * 5 + 5}).ok());
      ASSERT_TRUE(old_[i].tables.Create(table).ok());
    }
    ASSERT_TRUE(old_[0].store.Create(Int64Spec("global_step"), {0, 1}).ok());
    // Different numbers of pushes, so the two halves' steps differ.
    for (int i = 0; i < 2; ++i) {
      for (int push = 0; push < 5 - 2 * i; ++push) {
        ASSERT_TRUE(
            old_[i]
                .store
                .PushRows("emb", {i * 5, i * 5 + 5}, Grad(20, push + 10 * i))
                .ok());
      }
    }
    ASSERT_TRUE(old_[0].store.AddInt64("global_step", {0, 1}, {42}).ok());
    for (int64_t id = 0; id < kIds; ++id) {
      const int64_t spread = id * 7919 - 100;
      HashEmbeddingTable* t = *old_[HashShardOf(spread, 2)].tables.Find("t");
      ASSERT_TRUE(t->Push({spread}, Grad(2, id)).ok());
      if (id % 3 == 0) {
        ASSERT_TRUE(t->Push({spread}, Grad(2, -id)).ok());
      }
    }
    for (int i = 0; i < 2; ++i) SaveAndCommit(old_[i], 500, i, 2);

    // The whole variable and all rows, as the old tasks hold them.
    for (int i = 0; i < 2; ++i) {
      VariableState part = *old_[i].store.Snapshot("emb");
      whole_.values.insert(whole_.values.end(), part.values.begin(),
                           part.values.end());
      whole_.slots.resize(part.slots.size());
      for (size_t s = 0; s < part.slots.size(); ++s) {
        whole_.slots[s].insert(whole_.slots[s].end(), part.slots[s].begin(),
                               part.slots[s].end());
      }
      HashTableState rows = (*old_[i].tables.Find("t"))->Export();
      for (size_t r = 0; r < rows.ids.size(); ++r) {
        all_rows_[rows.ids[r]] = {
            rows.values[2 * r], rows.values[2 * r + 1], rows.slots[0][2 * r],
            rows.slots[0][2 * r + 1], static_cast<float>(rows.steps[r])};
      }
    }
    ASSERT_EQ(all_rows_.size(), kIds);
  }

  // Creates what a new task holds: rows `rows` of "emb", the table, and
  // global_step on task 0.
  void CreateNew(Ps& ps, RowRange rows, bool with_step) {
    ASSERT_TRUE(
        ps.store.Create(Spec("emb", {10, 4}, OptimizerKind::kAdam), rows).ok());
    ASSERT_TRUE(
        ps.tables.Create(TableSpec("t", 2, OptimizerKind::kAdagrad)).ok());
    if (with_step) {
      ASSERT_TRUE(ps.store.Create(Int64Spec("global_step"), {0, 1}).ok());
    }
  }

  // Checks the new task's rows of "emb" against the whole variable, and its
  // hash rows against those HashShardOf gives it.
  void ExpectRestored(Ps& ps, RowRange rows, int shard, int num_shards,
                      int64_t expected_step) {
    VariableState state = *ps.store.Snapshot("emb");
    EXPECT_EQ(state.step, expected_step);
    const std::vector<float> want(whole_.values.begin() + rows.begin * 4,
                                  whole_.values.begin() + rows.end * 4);
    ExpectSameBits(state.values, want, "emb values");
    ASSERT_EQ(state.slots.size(), 2u);
    for (int s = 0; s < 2; ++s) {
      ExpectSameBits(
          state.slots[s],
          std::vector<float>(whole_.slots[s].begin() + rows.begin * 4,
                             whole_.slots[s].begin() + rows.end * 4),
          "emb slot");
    }
    HashTableState got = (*ps.tables.Find("t"))->Export();
    std::vector<int64_t> want_ids;
    for (const auto& [id, row] : all_rows_) {
      if (HashShardOf(id, num_shards) == shard) want_ids.push_back(id);
    }
    EXPECT_EQ(got.ids, want_ids);  // Export sorts, and so does std::map
    for (size_t r = 0; r < got.ids.size(); ++r) {
      const std::vector<float>& want_row = all_rows_.at(got.ids[r]);
      EXPECT_EQ(got.values[2 * r], want_row[0]);
      EXPECT_EQ(got.values[2 * r + 1], want_row[1]);
      EXPECT_EQ(got.slots[0][2 * r], want_row[2]);
      EXPECT_EQ(got.slots[0][2 * r + 1], want_row[3]);
      EXPECT_EQ(got.steps[r], want_row[4]);
    }
  }

  Ps old_[2];
  VariableState whole_;
  // id -> values, accumulator, step.
  std::map<int64_t, std::vector<float>> all_rows_;
};

TEST_F(RepartitionTest, IntoOneTask) {
  Ps ps;
  CreateNew(ps, {0, 10}, true);
  absl::StatusOr<RestoreInfo> info =
      RestoreShard(ps.store, ps.tables, root_, 0, 1, false);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->hash_table_rows_restored, kIds);
  // Steps 5 and 3: the larger (see AssembleVariable).
  ExpectRestored(ps, {0, 10}, 0, 1, 5);
  EXPECT_EQ(ps.store.Snapshot("global_step")->ints, std::vector<int64_t>{42});
}

TEST_F(RepartitionTest, IntoThreeTasks) {
  // As placement.h partitions 10 rows into 3.
  const RowRange rows[3] = {{0, 4}, {4, 7}, {7, 10}};
  // [0, 4) is all in the first half (step 5), [4, 7) in both (5 and 3),
  // [7, 10) in the second (3).
  const int64_t steps[3] = {5, 5, 3};
  Ps ps[3];
  int64_t total_rows = 0;
  for (int i = 0; i < 3; ++i) {
    CreateNew(ps[i], rows[i], i == 0);
    absl::StatusOr<RestoreInfo> info =
        RestoreShard(ps[i].store, ps[i].tables, root_, i, 3, false);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->variables_not_here, i == 0 ? 0 : 1);  // global_step
    total_rows += info->hash_table_rows_restored;
    ExpectRestored(ps[i], rows[i], i, 3, steps[i]);
  }
  EXPECT_EQ(total_rows, kIds);
}

TEST_F(RepartitionTest, RowsMissingFromTheCheckpoint) {
  // Shard 0 of 2 alone, its header rewritten to say "shard 0 of 1": a
  // checkpoint in which rows [5, 10) are nowhere.
  const std::string alone = JoinPath(test_dir_.path(), "alone");
  ASSERT_TRUE(CreateDirectories(alone).ok());
  const std::string bytes = *ReadFileToString(ShardPath(500, 0, 2));
  std::unique_ptr<ShardFileReader> reader =
      *ShardFileReader::Open(ShardPath(500, 0, 2));
  ps::CheckpointShardHeader header = reader->header();
  header.set_num_shards(1);
  const std::string data = bytes.substr(bytes.size() - reader->data_bytes());
  ShardDataSection section;
  ps::SavedTensor whole_section;  // same bytes, so the same offsets
  section.Add(ps::FLOAT32, data, &whole_section);
  ASSERT_TRUE(
      WriteShardFile(JoinPath(alone, ShardFileName(0, 1)), header, section)
          .ok());
  Ps ps;
  CreateNew(ps, {3, 8}, false);
  absl::StatusOr<RestoreInfo> info =
      RestoreShard(ps.store, ps.tables, alone, 0, 1, false);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(info.status().message(),
            "checkpoint " + alone +
                " does not have rows [5, 8) of variable "
                "\"emb\"");
}

TEST_F(PsCheckpointTest, RowsSavedTwiceAreRefused) {
  // The same task saved as both shards: every row is there twice.
  Ps half;
  ASSERT_TRUE(
      half.store.Create(Spec("emb", {10, 2}, OptimizerKind::kSgd), {0, 5})
          .ok());
  ASSERT_TRUE(half.tables.Create(TableSpec("t", 2, OptimizerKind::kSgd)).ok());
  ASSERT_TRUE((*half.tables.Find("t"))->Push({77}, {1, 1}).ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(SaveShard(half.store, half.tables, root_, 9, i, 2).ok());
  }
  const std::string dir = JoinPath(root_, "ckpt-000000000009");

  Ps variable;
  ASSERT_TRUE(
      variable.store.Create(Spec("emb", {10, 2}, OptimizerKind::kSgd), {3, 5})
          .ok());
  absl::StatusOr<RestoreInfo> info =
      RestoreShard(variable.store, variable.tables, dir, 0, 1, false);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(info.status().message(),
            "checkpoint " + dir +
                " has rows [3, 5) of variable \"emb\" more than once (again "
                "in " +
                ShardPath(9, 1, 2) + ")");

  Ps table;
  ASSERT_TRUE(table.tables.Create(TableSpec("t", 2, OptimizerKind::kSgd)).ok());
  EXPECT_EQ(RestoreShard(table.store, table.tables, dir, 0, 1, false)
                .status()
                .message(),
            "checkpoint " + dir +
                " has row 77 of hash embedding table \"t\" more than once");
}

TEST_F(PsCheckpointTest, ACorruptTensorIsNamedAndChangesNothing) {
  Ps original, target;
  CreateModel(original);
  Train(original, 3);
  SaveAndCommit(original, 10);
  CreateModel(target);
  Train(target, 1);
  const VariableState emb_before = *target.store.Snapshot("emb");
  const HashTableState users_before = (*target.tables.Find("users"))->Export();

  const std::string path = ShardPath(10, 0, 1);
  const std::string clean = *ReadFileToString(path);
  struct Case {
    std::string tensor;  // as named in the error
    std::function<const ps::SavedTensor&(const ps::CheckpointShardHeader&)>
        find;
  };
  const std::vector<Case> cases = {
      {"variable \"emb\" values",
       [](const ps::CheckpointShardHeader& h) -> const ps::SavedTensor& {
         for (const auto& v : h.variables()) {
           if (v.spec().name() == "emb") return v.values();
         }
         return h.variables(0).values();
       }},
      {"variable \"dense\" slot \"v\"",
       [](const ps::CheckpointShardHeader& h) -> const ps::SavedTensor& {
         for (const auto& v : h.variables()) {
           if (v.spec().name() == "dense") return v.slots(1);
         }
         return h.variables(0).values();
       }},
      {"hash embedding table \"users\" steps",
       [](const ps::CheckpointShardHeader& h) -> const ps::SavedTensor& {
         return h.hash_tables(0).steps();
       }},
      {"hash embedding table \"users\" last_updated",
       [](const ps::CheckpointShardHeader& h) -> const ps::SavedTensor& {
         return h.hash_tables(0).last_updated();
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tensor);
    ASSERT_TRUE(WriteFileAtomically(path, {clean}).ok());
    const int64_t offset = FileOffset(path, c.find);
    EditFile(path, [offset](std::string& bytes) { bytes[offset + 1] ^= 0x10; });
    for (bool verify_only : {true, false}) {
      absl::StatusOr<RestoreInfo> info =
          RestoreShard(target.store, target.tables, root_, 0, 1, verify_only);
      EXPECT_EQ(info.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(
          info.status().message(),
          HasSubstr(path + ": " + c.tensor + " is corrupt: its CRC32C is 0x"));
    }
    ExpectSameState(*target.store.Snapshot("emb"), emb_before, "emb");
    ExpectSameRows((*target.tables.Find("users"))->Export(), users_before);
  }
}

TEST_F(PsCheckpointTest, DamagedFilesAreDataLossNamingTheFile) {
  Ps original, target;
  CreateModel(original);
  SaveAndCommit(original, 10);
  CreateModel(target);
  Train(target, 1);
  const VariableState before = *target.store.Snapshot("dense");
  const std::string path = ShardPath(10, 0, 1);
  const std::string clean = *ReadFileToString(path);
  const std::vector<std::pair<std::string, std::function<void(std::string&)>>>
      damages = {
          {"truncated", [](std::string& b) { b.resize(b.size() - 3); }},
          {"bad magic", [](std::string& b) { b[0] = 'X'; }},
          {"huge header length",
           [](std::string& b) { std::memset(&b[8], 0x7F, 4); }},
          {"flipped header byte", [](std::string& b) { b[20] ^= 1; }},
      };
  for (const auto& [what, damage] : damages) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(WriteFileAtomically(path, {clean}).ok());
    EditFile(path, damage);
    absl::StatusOr<RestoreInfo> info =
        RestoreShard(target.store, target.tables, root_, 0, 1, false);
    EXPECT_EQ(info.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(info.status().message(), HasSubstr(path));
    ExpectSameState(*target.store.Snapshot("dense"), before, "dense");
  }
}

TEST_F(PsCheckpointTest, EveryFlippedByteIsDetected) {
  // Every byte of a shard file is covered by a checksum (the preamble's
  // fields by what they point at), so no flip goes unnoticed.
  Ps original, target;
  ASSERT_TRUE(
      original.store.Create(Spec("w", {2, 2}, OptimizerKind::kAdam), {0, 2})
          .ok());
  ASSERT_TRUE(original.store.Create(Int64Spec("global_step"), {0, 1}).ok());
  ASSERT_TRUE(
      original.tables.Create(TableSpec("t", 1, OptimizerKind::kSgd)).ok());
  ASSERT_TRUE((*original.tables.Find("t"))->Push({5}, {1}).ok());
  SaveAndCommit(original, 3);
  ASSERT_TRUE(
      target.store.Create(Spec("w", {2, 2}, OptimizerKind::kAdam), {0, 2})
          .ok());
  ASSERT_TRUE(target.store.Create(Int64Spec("global_step"), {0, 1}).ok());
  ASSERT_TRUE(
      target.tables.Create(TableSpec("t", 1, OptimizerKind::kSgd)).ok());
  const std::string path = ShardPath(3, 0, 1);
  const std::string clean = *ReadFileToString(path);
  for (size_t i = 0; i < clean.size(); ++i) {
    std::string flipped = clean;
    flipped[i] ^= 0x04;
    ASSERT_TRUE(WriteFileAtomically(path, {flipped}).ok());
    absl::Status s =
        RestoreShard(target.store, target.tables, root_, 0, 1, true).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "byte " << i << s;
  }
  ASSERT_TRUE(WriteFileAtomically(path, {clean}).ok());
  EXPECT_TRUE(
      RestoreShard(target.store, target.tables, root_, 0, 1, true).ok());
}

// A header with a valid checksum can still say anything: what it says is
// checked before anything is allocated or copied for it.
TEST_F(PsCheckpointTest, CraftedHeadersAreRefused) {
  Ps original, target;
  CreateModel(original);
  Train(original, 1);
  SaveAndCommit(original, 3);
  CreateModel(target);
  const std::string path = ShardPath(3, 0, 1);
  const std::string clean = *ReadFileToString(path);
  std::unique_ptr<ShardFileReader> reader = *ShardFileReader::Open(path);
  const ps::CheckpointShardHeader header = reader->header();
  const std::string data = clean.substr(clean.size() - reader->data_bytes());
  reader.reset();
  auto variable = [](ps::CheckpointShardHeader& h, absl::string_view name) {
    for (ps::SavedVariable& v : *h.mutable_variables()) {
      if (v.spec().name() == name) return &v;
    }
    return h.mutable_variables(0);
  };
  struct Case {
    std::string what;
    std::function<void(ps::CheckpointShardHeader&)> edit;
    absl::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"rows beyond the shape",
       [&](ps::CheckpointShardHeader& h) {
         variable(h, "emb")->mutable_rows()->set_end(int64_t{1} << 62);
       },
       absl::StatusCode::kDataLoss,
       "variable \"emb\" rows [0, 4611686018427387904) are not within its "
       "10 rows"},
      {"negative rows",
       [&](ps::CheckpointShardHeader& h) {
         variable(h, "emb")->mutable_rows()->set_begin(-1);
       },
       absl::StatusCode::kDataLoss, "are not within its 10 rows"},
      {"a huge tensor length",
       [&](ps::CheckpointShardHeader& h) {
         variable(h, "dense")->mutable_values()->set_length(int64_t{1} << 62);
       },
       absl::StatusCode::kDataLoss,
       "variable \"dense\" values has 4611686018427387904 bytes, expected "
       "48"},
      {"a negative offset",
       [&](ps::CheckpointShardHeader& h) {
         variable(h, "dense")->mutable_values()->set_offset(-8);
       },
       absl::StatusCode::kDataLoss,
       "variable \"dense\" values lies outside the data section"},
      {"a missing slot",
       [&](ps::CheckpointShardHeader& h) {
         variable(h, "dense")->mutable_slots()->RemoveLast();
       },
       absl::StatusCode::kDataLoss,
       "variable \"dense\" has 1 optimizer slots, expected 2"},
      {"a wrong dtype",
       [&](ps::CheckpointShardHeader& h) {
         variable(h, "global_step")->mutable_values()->set_dtype(ps::FLOAT32);
       },
       absl::StatusCode::kDataLoss,
       "variable \"global_step\" values is stored as FLOAT32, expected "
       "INT64"},
      {"a negative step",
       [&](ps::CheckpointShardHeader& h) { variable(h, "bias")->set_step(-3); },
       absl::StatusCode::kDataLoss, "variable \"bias\" has a negative step -3"},
      {"an unknown dtype",
       [&](ps::CheckpointShardHeader& h) {
         variable(h, "bias")->mutable_spec()->set_dtype(
             static_cast<ps::DataType>(99));
       },
       absl::StatusCode::kDataLoss, "unknown dtype 99"},
      {"a huge number of hash rows",
       [](ps::CheckpointShardHeader& h) {
         h.mutable_hash_tables(0)->set_num_rows(int64_t{1} << 60);
       },
       absl::StatusCode::kDataLoss,
       "hash embedding table \"users\" has 1152921504606846976 rows, more "
       "than the"},
      {"negative hash rows",
       [](ps::CheckpointShardHeader& h) {
         h.mutable_hash_tables(0)->set_num_rows(-1);
       },
       absl::StatusCode::kDataLoss, "has -1 rows"},
      {"a last_updated of another size",
       [](ps::CheckpointShardHeader& h) {
         ps::SavedTensor* t = h.mutable_hash_tables(0)->mutable_last_updated();
         t->set_length(t->length() - 8);
       },
       absl::StatusCode::kDataLoss,
       "hash embedding table \"users\" last_updated has 16 bytes, expected "
       "24 (3 INT64 elements)"},
      {"an unknown admission policy",
       [](ps::CheckpointShardHeader& h) {
         h.mutable_hash_tables(0)
             ->mutable_spec()
             ->mutable_admission()
             ->set_policy(static_cast<ps::TableAdmission::Policy>(9));
       },
       absl::StatusCode::kDataLoss,
       "hash embedding table \"users\": admission.policy is 9, not a known "
       "policy"},
      {"another shard index",
       [](ps::CheckpointShardHeader& h) { h.set_shard_index(1); },
       absl::StatusCode::kDataLoss,
       "its header says shard 1 of 1 at step 3, expected shard 0 of 1 at step "
       "3"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ps::CheckpointShardHeader edited = header;
    c.edit(edited);
    ShardDataSection section;
    ps::SavedTensor whole_section;  // same bytes, so the same offsets
    section.Add(ps::FLOAT32, data, &whole_section);
    ASSERT_TRUE(WriteShardFile(path, edited, section).ok());
    absl::Status s =
        RestoreShard(target.store, target.tables, root_, 0, 1, false).status();
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_THAT(s.message(), HasSubstr(c.message));
    EXPECT_THAT(s.message(), HasSubstr(path));
  }
  EXPECT_EQ((*target.tables.Find("users"))->num_rows(), 0);
  EXPECT_EQ(target.store.Snapshot("global_step")->ints,
            std::vector<int64_t>{0});
}

TEST_F(PsCheckpointTest, AMissingShardIsNamed) {
  Ps ps;
  CreateModel(ps);
  ASSERT_TRUE(SaveShard(ps.store, ps.tables, root_, 30, 0, 2).ok());
  const std::string dir = JoinPath(root_, "ckpt-000000000030");
  const std::string message =
      "checkpoint " + dir +
      " is missing shard-00001-of-00002.ckpt (1 of 2 shard files missing; did "
      "every ps task save?)";
  absl::StatusOr<CommitInfo> commit = CommitCheckpoint(root_, 30, 2, 0);
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(commit.status().message(), message);
  // Not committed, so not found from the root; directly, the same error.
  EXPECT_EQ(
      RestoreShard(ps.store, ps.tables, root_, 0, 1, true).status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(
      RestoreShard(ps.store, ps.tables, dir, 0, 1, true).status().message(),
      message);
  EXPECT_EQ(CommitCheckpoint(root_, 31, 1, 0).status().message(),
            "checkpoint " + JoinPath(root_, "ckpt-000000000031") +
                " is missing shard-00000-of-00001.ckpt: the directory does "
                "not exist (did every ps task save?)");
}

TEST_F(PsCheckpointTest, ShardFilesOfDifferentSavesAreRefused) {
  Ps ps;
  CreateModel(ps);
  ASSERT_TRUE(SaveShard(ps.store, ps.tables, root_, 30, 0, 1).ok());
  ASSERT_TRUE(SaveShard(ps.store, ps.tables, root_, 30, 0, 2).ok());
  ASSERT_TRUE(SaveShard(ps.store, ps.tables, root_, 30, 1, 2).ok());
  const std::string dir = JoinPath(root_, "ckpt-000000000030");
  absl::StatusOr<CommitInfo> commit = CommitCheckpoint(root_, 30, 2, 0);
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(commit.status().message(),
            "checkpoint " + dir +
                " also holds shard files of a save by 1 ps tasks (e.g. "
                "shard-00000-of-00001.ckpt), not 2; remove them or save to "
                "another directory");
  EXPECT_EQ(
      RestoreShard(ps.store, ps.tables, dir, 0, 1, true).status().message(),
      "checkpoint " + dir +
          " holds shard files of saves by different numbers of ps "
          "tasks: shard-00000-of-00001.ckpt and "
          "shard-00000-of-00002.ckpt");
}

TEST_F(PsCheckpointTest, SpecMismatchNamesTheVariableAndTheDifference) {
  Ps original;
  CreateModel(original);
  SaveAndCommit(original, 1);
  const std::string dir = JoinPath(root_, "ckpt-000000000001");

  Ps wider;
  ASSERT_TRUE(
      wider.store.Create(Spec("dense", {4, 8}, OptimizerKind::kAdam), {0, 4})
          .ok());
  absl::StatusOr<RestoreInfo> info =
      RestoreShard(wider.store, wider.tables, root_, 0, 1, false);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(info.status().message(),
            "variable \"dense\" in checkpoint " + dir +
                " differs from the one here: shape [4, 3] vs [4, 8] "
                "(checkpoint vs here)");

  Ps sgd;
  ASSERT_TRUE(
      sgd.store.Create(Spec("dense", {4, 3}, OptimizerKind::kSgd), {0, 4})
          .ok());
  EXPECT_EQ(RestoreShard(sgd.store, sgd.tables, root_, 0, 1, false)
                .status()
                .message(),
            "variable \"dense\" in checkpoint " + dir +
                " differs from the one here: optimizer adam vs sgd "
                "(checkpoint vs here)");

  Ps table;
  ASSERT_TRUE(
      table.tables.Create(TableSpec("users", 4, OptimizerKind::kFtrl)).ok());
  EXPECT_EQ(RestoreShard(table.store, table.tables, root_, 0, 1, false)
                .status()
                .message(),
            "hash embedding table \"users\" in checkpoint " + dir +
                " differs from the one here: dim 3 vs 4 (checkpoint vs here)");
}

TEST_F(PsCheckpointTest, WhatIsNotInTheCheckpoint) {
  Ps original;
  CreateModel(original);
  SaveAndCommit(original, 1);
  const std::string dir = JoinPath(root_, "ckpt-000000000001");

  Ps extra;
  CreateModel(extra);
  Train(extra, 1);
  ASSERT_TRUE(
      extra.store.Create(Spec("extra", {2}, OptimizerKind::kSgd), {0, 2}).ok());
  const VariableState before = *extra.store.Snapshot("dense");
  absl::StatusOr<RestoreInfo> info =
      RestoreShard(extra.store, extra.tables, root_, 0, 1, false);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(info.status().message(),
            "variable \"extra\" is not in checkpoint " + dir);
  ExpectSameState(*extra.store.Snapshot("dense"), before, "dense");

  Ps table;
  ASSERT_TRUE(
      table.tables.Create(TableSpec("items", 3, OptimizerKind::kSgd)).ok());
  EXPECT_EQ(RestoreShard(table.store, table.tables, root_, 0, 1, false)
                .status()
                .message(),
            "hash embedding table \"items\" is not in checkpoint " + dir);

  // Saved but not here: ignored and counted.
  Ps some;
  ASSERT_TRUE(
      some.store.Create(Spec("bias", {3}, OptimizerKind::kMomentum), {0, 3})
          .ok());
  info = RestoreShard(some.store, some.tables, root_, 0, 1, false);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->variables_restored, 1);
  EXPECT_EQ(info->variables_not_here, 3);
  EXPECT_EQ(info->hash_tables_not_here, 1);
}

TEST_F(PsCheckpointTest, VerifyOnlyChangesNothing) {
  Ps original, target;
  CreateModel(original);
  Train(original, 2);
  SaveAndCommit(original, 1);
  CreateModel(target);
  const VariableState before = *target.store.Snapshot("dense");
  absl::StatusOr<RestoreInfo> info =
      RestoreShard(target.store, target.tables, root_, 0, 1, true);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->variables_restored, 4);
  EXPECT_EQ(info->hash_table_rows_restored, 4);
  ExpectSameState(*target.store.Snapshot("dense"), before, "dense");
  EXPECT_EQ((*target.tables.Find("users"))->num_rows(), 0);
}

TEST_F(PsCheckpointTest, KeepLastKeepsTheNewestCommits) {
  Ps ps;
  CreateModel(ps);
  // Saved but never committed: not the commits' to delete.
  ASSERT_TRUE(SaveShard(ps.store, ps.tables, root_, 0, 0, 1).ok());
  for (int64_t step = 1; step <= 5; ++step) {
    ASSERT_TRUE(SaveShard(ps.store, ps.tables, root_, step, 0, 1).ok());
    absl::StatusOr<CommitInfo> commit = CommitCheckpoint(root_, step, 1, 2);
    ASSERT_TRUE(commit.ok()) << commit.status();
    EXPECT_THAT(commit->cleanup_errors, ElementsAre());
    if (step <= 2) {
      EXPECT_THAT(commit->deleted, ElementsAre());
    } else {
      EXPECT_THAT(commit->deleted,
                  ElementsAre(JoinPath(root_, CheckpointDirName(step - 2))));
    }
  }
  EXPECT_THAT(*ListDirectory(root_),
              ElementsAre("checkpoints", "ckpt-000000000000",
                          "ckpt-000000000004", "ckpt-000000000005"));
  EXPECT_THAT(*ReadCheckpointIndex(root_),
              ElementsAre("ckpt-000000000004", "ckpt-000000000005"));
  // Committing again is harmless; committing an older one makes it latest.
  ASSERT_TRUE(CommitCheckpoint(root_, 5, 1, 2).ok());
  EXPECT_THAT(*ReadCheckpointIndex(root_),
              ElementsAre("ckpt-000000000004", "ckpt-000000000005"));
  ASSERT_TRUE(CommitCheckpoint(root_, 4, 1, 0).ok());
  EXPECT_THAT(*ReadCheckpointIndex(root_),
              ElementsAre("ckpt-000000000005", "ckpt-000000000004"));
}

TEST_F(PsCheckpointTest, RestoreFromARootUsesTheLatestCommit) {
  Ps ps;
  CreateModel(ps);
  for (int64_t step : {100, 200}) {
    Train(ps, 1);
    SaveAndCommit(ps, step);
  }
  Train(ps, 1);
  ASSERT_TRUE(SaveShard(ps.store, ps.tables, root_, 300, 0, 1).ok());
  EXPECT_EQ(*ResolveCheckpointDir(root_), JoinPath(root_, "ckpt-000000000200"));
  Ps target;
  CreateModel(target);
  absl::StatusOr<RestoreInfo> info =
      RestoreShard(target.store, target.tables, root_, 0, 1, false);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->checkpoint_dir, JoinPath(root_, "ckpt-000000000200"));
  EXPECT_EQ(info->step, 200);
  EXPECT_EQ(target.store.Snapshot("global_step")->ints,
            std::vector<int64_t>{2});
  // A checkpoint directory names itself, committed or not.
  info = RestoreShard(target.store, target.tables,
                      JoinPath(root_, "ckpt-000000000300"), 0, 1, false);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->step, 300);
  EXPECT_EQ(target.store.Snapshot("global_step")->ints,
            std::vector<int64_t>{3});
}

TEST_F(PsCheckpointTest, ArgumentsAreChecked) {
  Ps ps;
  auto save = [&](const std::string& root, int64_t step, int i, int n) {
    return SaveShard(ps.store, ps.tables, root, step, i, n).status();
  };
  EXPECT_EQ(save("", 1, 0, 1).message(),
            "cannot save a checkpoint shard: no checkpoint directory given");
  EXPECT_EQ(save(root_, -1, 0, 1).message(),
            "cannot save a checkpoint shard: step -1 is negative");
  EXPECT_EQ(save(root_, 1, 2, 2).message(),
            "cannot save a checkpoint shard: shard index 2 is not in [0, 2)");
  EXPECT_EQ(save(root_, 1, 0, 0).message(),
            "cannot save a checkpoint shard: the number of shards is 0, "
            "expected at least 1");
  EXPECT_EQ(save(root_, 1, -1, 2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CommitCheckpoint(root_, 1, 1, -1).status().message(),
            "cannot commit a checkpoint: keep_last -1 is negative (0 keeps "
            "all)");
  EXPECT_EQ(CommitCheckpoint(root_, 1, 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      RestoreShard(ps.store, ps.tables, root_, 3, 3, false).status().message(),
      "cannot restore a checkpoint: shard index 3 is not in [0, 3)");
  EXPECT_EQ(RestoreShard(ps.store, ps.tables, "", 0, 1, false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(*PathExists(root_));  // nothing was created
}

TEST_F(PsCheckpointTest, AnEmptyParameterServer) {
  Ps empty, target;
  SaveAndCommit(empty, 0);
  absl::StatusOr<RestoreInfo> info =
      RestoreShard(target.store, target.tables, root_, 0, 1, false);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->variables_restored, 0);
}

// Hash rows with metadata: four ps tasks train a table whose rows were
// last updated at different global steps (and pushed different numbers of
// times), save at step 40, and fewer tasks restore it.
class MetadataTest : public PsCheckpointTest {
 protected:
  static constexpr int kOldTasks = 4;
  static constexpr int kIds = 80;
  static constexpr int64_t kSaveStep = 40;
  static constexpr int64_t kTtl = 100;

  static HashEmbeddingSpec Table() {
    HashEmbeddingSpec spec = TableSpec("t", 2, OptimizerKind::kAdagrad);
    spec.policy.eviction.ttl_steps = kTtl;
    return spec;
  }

  // The global step at which id number `i` is last pushed: 1..40, and one
  // row after the save's step (a push that raced with the save).
  static int64_t LastStep(int i) { return i == 0 ? kSaveStep + 3 : 1 + i % 40; }
  static int64_t Id(int i) { return i * 104729 - 5000; }

  void SetUp() override {
    for (Ps& ps : old_) ASSERT_TRUE(ps.tables.Create(Table()).ok());
    // 1 to 3 pushes per id, the last at LastStep(i), all in global step
    // order, as training sends them (a table's clock never goes back, so a
    // push older than it would count as at the clock).
    std::vector<std::pair<int64_t, int>> pushes;  // global step, id number
    for (int i = 0; i < kIds; ++i) {
      for (int back = 0; back <= i % 3; ++back) {
        pushes.emplace_back(LastStep(i) - back, i);
      }
      want_[Id(i)] = {i % 3 + 1, LastStep(i)};
    }
    std::sort(pushes.begin(), pushes.end());
    for (const auto& [step, i] : pushes) {
      HashEmbeddingTable* t =
          *old_[HashShardOf(Id(i), kOldTasks)].tables.Find("t");
      ASSERT_TRUE(
          t->Push({Id(i)}, Grad(2, step), SparseIds::kMayRepeat, step).ok());
    }
    for (int i = 0; i < kOldTasks; ++i) {
      SaveAndCommit(old_[i], kSaveStep, i, kOldTasks);
    }
  }

  // Restores `num_tasks` new tasks and checks that each holds exactly its
  // rows, each with its steps and last-updated step, and the clock of the
  // newest row.
  void RestoreInto(int num_tasks) {
    int64_t total = 0;
    for (int shard = 0; shard < num_tasks; ++shard) {
      SCOPED_TRACE(absl::StrCat("task ", shard, " of ", num_tasks));
      Ps ps;
      ASSERT_TRUE(ps.tables.Create(Table()).ok());
      absl::StatusOr<RestoreInfo> info =
          RestoreShard(ps.store, ps.tables, root_, shard, num_tasks, false);
      ASSERT_TRUE(info.ok()) << info.status();
      total += info->hash_table_rows_restored;
      HashEmbeddingTable* t = *ps.tables.Find("t");
      const HashTableState got = t->Export();
      std::vector<int64_t> want_ids;
      for (const auto& [id, meta] : want_) {
        if (HashShardOf(id, num_tasks) == shard) want_ids.push_back(id);
      }
      ASSERT_EQ(got.ids, want_ids);
      ASSERT_EQ(got.last_updated.size(), got.ids.size());
      for (size_t r = 0; r < got.ids.size(); ++r) {
        EXPECT_EQ(got.steps[r], want_.at(got.ids[r]).first) << got.ids[r];
        EXPECT_EQ(got.last_updated[r], want_.at(got.ids[r]).second)
            << got.ids[r];
      }
      // Every task's clock: the newest row's, later than the save's step.
      EXPECT_EQ(t->counters().clock, kSaveStep + 3);
      EXPECT_EQ(t->counters().rows, static_cast<int64_t>(want_ids.size()));
    }
    EXPECT_EQ(total, kIds);
  }

  Ps old_[kOldTasks];
  // id -> pushes applied, last-updated step.
  std::map<int64_t, std::pair<int64_t, int64_t>> want_;
};

TEST_F(MetadataTest, RestoreIntoTwoTasks) { RestoreInto(2); }

TEST_F(MetadataTest, RestoreIntoOneTask) { RestoreInto(1); }

TEST_F(MetadataTest, RestoreIntoTheSameTasks) { RestoreInto(kOldTasks); }

TEST_F(MetadataTest, EvictionCarriesOnAfterARestore) {
  Ps ps;
  ASSERT_TRUE(ps.tables.Create(Table()).ok());
  ASSERT_TRUE(RestoreShard(ps.store, ps.tables, root_, 0, 1, false).ok());
  HashEmbeddingTable* t = *ps.tables.Find("t");
  // At step 130, rows last updated at step 30 or before are older than the
  // TTL of 100: the restored steps, not the restore, decide.
  const int64_t now = 30 + kTtl;
  const int64_t fresh = 1;  // not one of the ids above
  ASSERT_TRUE(t->Push({fresh}, Grad(2, 0), SparseIds::kMayRepeat, now).ok());
  std::vector<int64_t> want_ids = {fresh};
  for (const auto& [id, meta] : want_) {
    if (meta.second > 30) want_ids.push_back(id);
  }
  std::sort(want_ids.begin(), want_ids.end());
  EXPECT_EQ(t->Export().ids, want_ids);
  EXPECT_EQ(t->counters().evicted_by_ttl,
            kIds + 1 - static_cast<int64_t>(want_ids.size()));
}

TEST_F(MetadataTest, ACheckpointWithoutLastUpdatedGivesTheCheckpointStep) {
  // As written before rows had a last-updated step: the field is absent.
  for (int i = 0; i < kOldTasks; ++i) {
    const std::string path = ShardPath(kSaveStep, i, kOldTasks);
    const std::string bytes = *ReadFileToString(path);
    std::unique_ptr<ShardFileReader> reader = *ShardFileReader::Open(path);
    ps::CheckpointShardHeader header = reader->header();
    const std::string data = bytes.substr(bytes.size() - reader->data_bytes());
    reader.reset();
    header.mutable_hash_tables(0)->clear_last_updated();
    ShardDataSection section;
    ps::SavedTensor whole_section;  // same bytes, so the same offsets
    section.Add(ps::FLOAT32, data, &whole_section);
    ASSERT_TRUE(WriteShardFile(path, header, section).ok());
  }
  Ps ps;
  ASSERT_TRUE(ps.tables.Create(Table()).ok());
  absl::StatusOr<RestoreInfo> info =
      RestoreShard(ps.store, ps.tables, root_, 0, 1, false);
  ASSERT_TRUE(info.ok()) << info.status();
  HashEmbeddingTable* t = *ps.tables.Find("t");
  const HashTableState got = t->Export();
  ASSERT_EQ(got.ids.size(), static_cast<size_t>(kIds));
  EXPECT_EQ(got.last_updated, std::vector<int64_t>(kIds, kSaveStep));
  for (size_t r = 0; r < got.ids.size(); ++r) {
    EXPECT_EQ(got.steps[r], want_.at(got.ids[r]).first);
  }
  EXPECT_EQ(t->counters().clock, kSaveStep);
}

TEST_F(MetadataTest, APolicyChangeDoesNotStopARestore) {
  // Which rows exist and which go may change between runs; the data may not.
  HashEmbeddingSpec other = Table();
  other.policy.eviction.ttl_steps.reset();
  other.policy.eviction.max_rows = 1000;
  other.policy.admission.kind = AdmissionKind::kMinCount;
  other.policy.admission.min_count = 2;
  Ps ps;
  ASSERT_TRUE(ps.tables.Create(other).ok());
  absl::StatusOr<RestoreInfo> info =
      RestoreShard(ps.store, ps.tables, root_, 0, 1, false);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->hash_table_rows_restored, kIds);
  EXPECT_EQ((*ps.tables.Find("t"))->spec().policy.eviction.max_rows, 1000);

  // A task re-created from the checkpoint gets the saved policy.
  Ps recreated;
  ASSERT_TRUE(RecreateShard(recreated.store, recreated.tables,
                            JoinPath(root_, CheckpointDirName(kSaveStep)), 1,
                            kOldTasks)
                  .ok());
  const HashEmbeddingSpec spec = (*recreated.tables.Find("t"))->spec();
  EXPECT_EQ(DescribePolicyDifference(spec.policy, Table().policy), "");
}

TEST_F(PsCheckpointTest, ANegativeLastUpdatedIsDataLoss) {
  Ps ps;
  const HashEmbeddingSpec spec = TableSpec("t", 2, OptimizerKind::kSgd);
  ASSERT_TRUE(ps.tables.Create(spec).ok());
  HashTableState state;
  state.ids = {12};
  state.values = {1, 2};
  state.steps = {1};
  state.last_updated = {-4};
  ASSERT_TRUE((*ps.tables.Find("t"))->Replace(state).ok());
  SaveAndCommit(ps, 5);
  Ps target;
  ASSERT_TRUE(target.tables.Create(spec).ok());
  absl::Status s =
      RestoreShard(target.store, target.tables, root_, 0, 1, false).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), ShardPath(5, 0, 1) +
                             ": hash embedding table \"t\" row 12 has a "
                             "negative last-updated step -4");
}

}  // namespace
}  // namespace distrt
