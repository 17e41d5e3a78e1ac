// Delta checkpoints (docs/checkpoint_format.md, "Delta checkpoints"): a
// chain of a full save and deltas restores the live state, into any number
// of ps tasks; a crash at each point of a delta save leaves the last
// committed state restorable; a damaged or missing chain member is refused
// by name; retention keeps what kept chains need.

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/ps_checkpoint.h"
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

using ::testing::HasSubstr;

struct Ps {
  VariableStore store;
  HashTableSet tables;
};

constexpr int kDim = 4;

HashEmbeddingSpec TableSpec() {
  HashEmbeddingSpec spec;
  spec.name = "t";
  spec.dim = kDim;
  spec.initializer.kind = InitializerSpec::Kind::kUniform;
  spec.initializer.seed = 23;
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.policy.eviction.ttl_steps = 20;
  return spec;
}

VariableSpec DenseSpec() {
  VariableSpec spec;
  spec.name = "w";
  spec.shape = {3, 2};
  spec.initializer.kind = InitializerSpec::Kind::kUniform;
  spec.initializer.seed = 17;
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  return spec;
}

std::vector<std::unique_ptr<Ps>> MakeTasks(int n) {
  std::vector<std::unique_ptr<Ps>> tasks;
  for (int i = 0; i < n; ++i) {
    auto ps = std::make_unique<Ps>();
    EXPECT_TRUE(ps->tables.Create(TableSpec()).ok());
    // Task 0 holds the dense variable.
    if (i == 0) EXPECT_TRUE(ps->store.Create(DenseSpec(), {0, 3}).ok());
    tasks.push_back(std::move(ps));
  }
  return tasks;
}

HashEmbeddingTable* Table(Ps& ps) { return *ps.tables.Find("t"); }

// Pushes gradients of `ids` (routed by HashShardOf) at `global_step`.
void Train(std::vector<std::unique_ptr<Ps>>& tasks,
           const std::vector<int64_t>& ids, int64_t global_step) {
  const int n = tasks.size();
  for (int64_t id : ids) {
    std::vector<float> grad(kDim);
    for (int d = 0; d < kDim; ++d) grad[d] = 0.01f * (id % 7) + d - global_step;
    ASSERT_TRUE(Table(*tasks[HashShardOf(id, n)])
                    ->Push({id}, grad, SparseIds::kMayRepeat, global_step)
                    .ok());
  }
  ASSERT_TRUE(
      tasks[0]->store.PushRows("w", {0, 3}, std::vector<float>(6, 0.5f)).ok());
}

// One row of a table, everything a checkpoint keeps of it.
struct Row {
  std::vector<float> values;
  std::vector<std::vector<float>> slots;
  int64_t step = 0;
  int64_t last_updated = 0;
  bool operator==(const Row& o) const {
    return values == o.values && slots == o.slots && step == o.step &&
           last_updated == o.last_updated;
  }
};

std::map<int64_t, Row> Rows(std::vector<std::unique_ptr<Ps>>& tasks) {
  std::map<int64_t, Row> rows;
  for (auto& ps : tasks) {
    const HashTableState s = Table(*ps)->Export();
    for (size_t r = 0; r < s.ids.size(); ++r) {
      Row row;
      row.values.assign(s.values.begin() + r * kDim,
                        s.values.begin() + (r + 1) * kDim);
      for (const auto& slot : s.slots) {
        row.slots.emplace_back(slot.begin() + r * kDim,
                               slot.begin() + (r + 1) * kDim);
      }
      row.step = s.steps[r];
      row.last_updated = s.last_updated[r];
      EXPECT_TRUE(rows.emplace(s.ids[r], row).second) << s.ids[r];
    }
  }
  return rows;
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> ids;
  for (int64_t id = begin; id < end; ++id) ids.push_back(id * 7919 - 50);
  return ids;
}

class DeltaCheckpointTest : public ::testing::Test {
 protected:
  // Every task saves shard i of checkpoint `step` (a delta of `previous`
  // from `base` when given), then it is committed.
  void Save(std::vector<std::unique_ptr<Ps>>& tasks, int64_t step,
            const std::string& previous = "", const std::string& base = "",
            int keep_last = 0) {
    SaveShards(tasks, step, previous, base, tasks.size());
    absl::StatusOr<CommitInfo> commit =
        CommitCheckpoint(root_, step, tasks.size(), keep_last);
    ASSERT_TRUE(commit.ok()) << commit.status();
  }

  // Saves the first `count` shards only.
  void SaveShards(std::vector<std::unique_ptr<Ps>>& tasks, int64_t step,
                  const std::string& previous, const std::string& base,
                  int count) {
    SaveShardOptions options;
    options.mark = true;
    if (!previous.empty()) {
      options.delta.emplace();
      options.delta->set_previous(previous);
      options.delta->set_base(base);
    }
    for (int i = 0; i < count; ++i) {
      absl::StatusOr<SavedShardInfo> saved =
          SaveShard(tasks[i]->store, tasks[i]->tables, root_, step, i,
                    tasks.size(), options);
      ASSERT_TRUE(saved.ok()) << saved.status();
    }
  }

  // The rows of `dir` restored into `n` fresh tasks.
  absl::StatusOr<std::map<int64_t, Row>> Restore(const std::string& dir,
                                                 int n) {
    std::vector<std::unique_ptr<Ps>> tasks = MakeTasks(n);
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<RestoreInfo> restored =
          RestoreShard(tasks[i]->store, tasks[i]->tables, dir, i, n,
                       /*verify_only=*/false);
      if (!restored.ok()) return restored.status();
    }
    return Rows(tasks);
  }

  std::string Dir(int64_t step) const {
    return JoinPath(root_, CheckpointDirName(step));
  }
  std::string Shard(int64_t step, int i, int n) const {
    return JoinPath(Dir(step), ShardFileName(i, n));
  }

  // A chain: full 10, delta 20, delta 30 of two tasks, with rows created,
  // updated and removed between saves. Returns the rows at each save.
  std::map<int64_t, std::map<int64_t, Row>> MakeChain(
      std::vector<std::unique_ptr<Ps>>& tasks) {
    std::map<int64_t, std::map<int64_t, Row>> at;
    Train(tasks, Range(0, 200), 1);
    Save(tasks, 10);
    at[10] = Rows(tasks);
    Train(tasks, Range(150, 260), 12);  // updates and new rows
    Save(tasks, 20, CheckpointDirName(10), CheckpointDirName(10));
    at[20] = Rows(tasks);
    // Rows not updated since step 1 are evicted (TTL 20): removed ids.
    Train(tasks, Range(240, 300), 25);
    Save(tasks, 30, CheckpointDirName(20), CheckpointDirName(10));
    at[30] = Rows(tasks);
    return at;
  }

  TestDir test_dir_;
  const std::string root_ = JoinPath(test_dir_.path(), "ckpts");
};

TEST_F(DeltaCheckpointTest, AChainRestoresTheLiveStateIntoAnyTaskCount) {
  std::vector<std::unique_ptr<Ps>> tasks = MakeTasks(2);
  auto at = MakeChain(tasks);
  ASSERT_NE(at[20], at[30]);
  ASSERT_LT(at[30].size(), at[20].size() + 60);  // some rows were removed
  // The delta holds only what changed: fewer rows than the table.
  std::unique_ptr<ShardFileReader> delta =
      *ShardFileReader::Open(Shard(20, 0, 2));
  EXPECT_TRUE(delta->header().has_delta());
  EXPECT_EQ(delta->header().delta().base(), CheckpointDirName(10));
  EXPECT_LT(delta->header().hash_tables(0).num_rows(),
            static_cast<int64_t>(at[20].size()) / 2);
  std::unique_ptr<ShardFileReader> last =
      *ShardFileReader::Open(Shard(30, 0, 2));
  EXPECT_GT(last->header().hash_tables(0).num_removed(), 0);
  for (int n : {1, 2, 3}) {
    for (int64_t step : {10, 20, 30}) {
      absl::StatusOr<std::map<int64_t, Row>> rows = Restore(Dir(step), n);
      ASSERT_TRUE(rows.ok()) << rows.status();
      EXPECT_TRUE(*rows == at[step]) << "step " << step << " into " << n;
    }
    absl::StatusOr<std::map<int64_t, Row>> latest = Restore(root_, n);
    ASSERT_TRUE(latest.ok()) << latest.status();
    EXPECT_TRUE(*latest == at[30]) << "latest into " << n;
  }
}

TEST_F(DeltaCheckpointTest, ADeltaAfterARestoreFollowsTheRestoredOne) {
  std::vector<std::unique_ptr<Ps>> tasks = MakeTasks(2);
  auto at = MakeChain(tasks);
  // Fresh tasks restore the chain (and mark their tables saved), train, and
  // save a delta of it: it holds only the rows changed since.
  std::vector<std::unique_ptr<Ps>> again = MakeTasks(2);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(RestoreShard(again[i]->store, again[i]->tables, root_, i, 2,
                             /*verify_only=*/false)
                    .ok());
  }
  Train(again, Range(0, 5), 40);
  Save(again, 40, CheckpointDirName(30), CheckpointDirName(10));
  std::unique_ptr<ShardFileReader> delta =
      *ShardFileReader::Open(Shard(40, 0, 2));
  EXPECT_LE(delta->header().hash_tables(0).num_rows(), 5);
  absl::StatusOr<std::map<int64_t, Row>> rows = Restore(root_, 2);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TRUE(*rows == Rows(again));
}

// A crash at each point of a delta save: the last committed checkpoint
// (the delta of step 30) restores as it was.
TEST_F(DeltaCheckpointTest, ACrashAtEachPointOfADeltaSaveKeepsTheLastCommit) {
  std::vector<std::unique_ptr<Ps>> tasks = MakeTasks(2);
  auto at = MakeChain(tasks);
  const std::string previous = CheckpointDirName(30);
  const std::string base = CheckpointDirName(10);
  // Tasks as a restarted job has them: restored from the last commit
  // (marks set), then trained. A save that fails moves some marks, so each
  // crash point starts from tasks of its own.
  const auto restarted = [&]() {
    std::vector<std::unique_ptr<Ps>> fresh = MakeTasks(2);
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(RestoreShard(fresh[i]->store, fresh[i]->tables, root_, i, 2,
                               /*verify_only=*/false)
                      .ok());
    }
    Train(fresh, Range(0, 30), 35);
    return fresh;
  };
  const auto expect_last_commit = [&](const std::string& point) {
    for (int n : {2, 1}) {
      absl::StatusOr<std::map<int64_t, Row>> rows = Restore(root_, n);
      ASSERT_TRUE(rows.ok()) << point << ": " << rows.status();
      EXPECT_TRUE(*rows == at[30]) << point << " into " << n;
    }
  };
  // 1. A writer's temporary file only (killed while writing shard 0).
  ASSERT_TRUE(CreateDirectories(Dir(40)).ok());
  ASSERT_TRUE(WriteFileAtomically(JoinPath(Dir(40), ".shard-00000.tmp"),
                                  {std::string(100, 'x')})
                  .ok());
  expect_last_commit("a temporary file");
  // 2. One of two shards written.
  std::vector<std::unique_ptr<Ps>> one = restarted();
  SaveShards(one, 40, previous, base, 1);
  expect_last_commit("one shard written");
  EXPECT_EQ(CommitCheckpoint(root_, 40, 2, 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // 3. A torn second shard (a file system without atomic renames).
  ASSERT_TRUE(
      WriteFileAtomically(Shard(40, 1, 2), {std::string("DTCKPT01\x10")}).ok());
  expect_last_commit("a torn shard");
  EXPECT_EQ(CommitCheckpoint(root_, 40, 2, 0).status().code(),
            absl::StatusCode::kDataLoss);
  // 4. Every shard written, the commit not made (the index not updated).
  std::vector<std::unique_ptr<Ps>> all = restarted();
  SaveShards(all, 40, previous, base, 2);
  expect_last_commit("all shards, no commit");
  // Once committed, the new delta is what the root restores.
  ASSERT_TRUE(CommitCheckpoint(root_, 40, 2, 0).ok());
  for (int n : {2, 3}) {
    absl::StatusOr<std::map<int64_t, Row>> rows = Restore(root_, n);
    ASSERT_TRUE(rows.ok()) << rows.status();
    EXPECT_TRUE(*rows == Rows(all)) << n;
  }
}

TEST_F(DeltaCheckpointTest, ADamagedOrMissingDeltaIsRefusedNamingIt) {
  std::vector<std::unique_ptr<Ps>> tasks = MakeTasks(2);
  MakeChain(tasks);
  // A flipped byte in the middle delta's data.
  const std::string damaged = Shard(20, 1, 2);
  absl::StatusOr<std::string> bytes = ReadFileToString(damaged);
  ASSERT_TRUE(bytes.ok());
  (*bytes)[bytes->size() - 3] ^= 0x40;
  ASSERT_TRUE(WriteFileAtomically(damaged, {*bytes}).ok());
  for (int n : {2, 1}) {
    absl::StatusOr<std::map<int64_t, Row>> rows = Restore(root_, n);
    EXPECT_EQ(rows.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(rows.status().message(), HasSubstr(damaged));
  }
  // Restoring the full save before it is unaffected.
  EXPECT_TRUE(Restore(Dir(10), 2).ok());
  // The delta gone altogether.
  ASSERT_TRUE(RemoveDirectoryTree(Dir(20)).ok());
  absl::StatusOr<std::map<int64_t, Row>> rows = Restore(root_, 2);
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(rows.status().message(), HasSubstr(Dir(20)));
  // The base gone, restoring the first delta.
  ASSERT_TRUE(RemoveDirectoryTree(Dir(10)).ok());
  ASSERT_TRUE(RemoveDirectoryTree(Dir(30)).ok());
  SaveShards(tasks, 30, CheckpointDirName(10), CheckpointDirName(10), 2);
  rows = Restore(Dir(30), 2);
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(rows.status().message(), HasSubstr(Dir(10)));
}

TEST_F(DeltaCheckpointTest, ADeltaNamingALaterOrNonFullCheckpointIsRefused) {
  std::vector<std::unique_ptr<Ps>> tasks = MakeTasks(1);
  Train(tasks, Range(0, 10), 1);
  Save(tasks, 10);
  Train(tasks, Range(0, 10), 2);
  Save(tasks, 20, CheckpointDirName(10), CheckpointDirName(10));
  // A delta whose base is not the full save its chain reaches.
  Train(tasks, Range(0, 10), 3);
  Save(tasks, 30, CheckpointDirName(20), CheckpointDirName(20));
  absl::StatusOr<std::map<int64_t, Row>> rows = Restore(Dir(30), 1);
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(rows.status().message(), HasSubstr("base"));
  // SaveShard refuses a delta of a later step.
  SaveShardOptions options;
  options.delta.emplace();
  options.delta->set_previous(CheckpointDirName(50));
  options.delta->set_base(CheckpointDirName(10));
  EXPECT_EQ(
      SaveShard(tasks[0]->store, tasks[0]->tables, root_, 40, 0, 1, options)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_F(DeltaCheckpointTest, RetentionKeepsTheChainsOfKeptCheckpoints) {
  std::vector<std::unique_ptr<Ps>> tasks = MakeTasks(1);
  const auto exists = [&](int64_t step) { return *PathExists(Dir(step)); };
  Train(tasks, Range(0, 10), 1);
  Save(tasks, 10, "", "", /*keep_last=*/2);
  for (int64_t step : {20, 30, 40}) {
    Train(tasks, Range(0, 3), step);
    Save(tasks, step, CheckpointDirName(step - 10), CheckpointDirName(10),
         /*keep_last=*/2);
  }
  // 40 is kept and needs 10, 20 and 30.
  for (int64_t step : {10, 20, 30, 40}) EXPECT_TRUE(exists(step)) << step;
  Train(tasks, Range(0, 3), 50);
  Save(tasks, 50, "", "", /*keep_last=*/2);
  for (int64_t step : {10, 20, 30, 40, 50}) EXPECT_TRUE(exists(step)) << step;
  Train(tasks, Range(0, 3), 60);
  Save(tasks, 60, CheckpointDirName(50), CheckpointDirName(50),
       /*keep_last=*/2);
  for (int64_t step : {10, 20, 30, 40}) EXPECT_FALSE(exists(step)) << step;
  EXPECT_TRUE(exists(50));
  EXPECT_TRUE(exists(60));
  EXPECT_EQ(
      *ReadCheckpointIndex(root_),
      (std::vector<std::string>{CheckpointDirName(50), CheckpointDirName(60)}));
  absl::StatusOr<std::map<int64_t, Row>> rows = Restore(root_, 1);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TRUE(*rows == Rows(tasks));
}

}  // namespace
}  // namespace distrt
