#include "runtime/export/serving_export.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/ps_checkpoint.h"
#include "runtime/checkpoint/shard_file.h"
#include "runtime/export/checkpoint_reader.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_store.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kShards = 2;
constexpr int64_t kStep = 40;
constexpr int64_t kDim = 3;

// What one ps task holds.
struct Ps {
  VariableStore store;
  HashTableSet tables;
};

VariableSpec FloatSpec(const std::string& name, std::vector<int64_t> shape) {
  VariableSpec spec;
  spec.name = name;
  spec.shape = std::move(shape);
  spec.initializer.kind = InitializerSpec::Kind::kUniform;
  spec.optimizer.kind = OptimizerKind::kAdagrad;  // slots, not exported
  return spec;
}

HashEmbeddingSpec TableSpec(const std::string& name) {
  HashEmbeddingSpec spec;
  spec.name = name;
  spec.dim = kDim;
  spec.initializer.kind = InitializerSpec::Kind::kUniform;
  spec.initializer.seed = 5;
  spec.optimizer.kind = OptimizerKind::kAdam;
  return spec;
}

// An array read back from a .npy file: the dict of its header and its data.
struct Npy {
  std::string dict;
  std::string data;

  template <typename T>
  std::vector<T> As() const {
    std::vector<T> out(data.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), data.data(), data.size());
    return out;
  }
};

Npy ReadNpy(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileToString(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok() || bytes->size() < 10) return {};
  EXPECT_EQ(bytes->substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t length = static_cast<unsigned char>((*bytes)[8]) |
                        static_cast<unsigned char>((*bytes)[9]) << 8;
  return {bytes->substr(10, length), bytes->substr(10 + length)};
}

// The test's checkpoint, as two ps tasks would save it:
//   "dense/kernel"  float32 [7, 2], rows [0, 3) on task 0, [3, 7) on task 1
//   "dense.kernel"  float32 [2] on task 1 (its file name meets the other's)
//   "scalar"        float32 [] on task 0
//   "global_step"   int64 [1] on task 0
//   "emb/users"     hash table of dim 3, ids on the task HashShardOf picks,
//                   trained by pushes
class ServingExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path() + "/ckpt";
    out_ = dir_.path() + "/export";
    ASSERT_TRUE(
        ps_[0].store.Create(FloatSpec("dense/kernel", {7, 2}), {0, 3}).ok());
    ASSERT_TRUE(
        ps_[1].store.Create(FloatSpec("dense/kernel", {7, 2}), {3, 7}).ok());
    ASSERT_TRUE(
        ps_[1].store.Create(FloatSpec("dense.kernel", {2}), {0, 2}).ok());
    ASSERT_TRUE(ps_[0].store.Create(FloatSpec("scalar", {}), {0, 1}).ok());
    VariableSpec step;
    step.name = "global_step";
    step.dtype = DType::kInt64;
    step.shape = {1};
    ASSERT_TRUE(ps_[0].store.Create(step, {0, 1}).ok());
    for (int i = 0; i < 14; ++i) kernel_.push_back(0.5f * i - 3.0f);
    ASSERT_TRUE(ps_[0]
                    .store
                    .AssignRows("dense/kernel", {0, 3},
                                absl::MakeSpan(kernel_).first(6))
                    .ok());
    ASSERT_TRUE(ps_[1]
                    .store
                    .AssignRows("dense/kernel", {3, 7},
                                absl::MakeSpan(kernel_).subspan(6))
                    .ok());
    const std::vector<float> small = {7.5f, -1.25f};
    ASSERT_TRUE(ps_[1].store.AssignRows("dense.kernel", {0, 2}, small).ok());
    const std::vector<float> scalar = {42.0f};
    ASSERT_TRUE(ps_[0].store.AssignRows("scalar", {0, 1}, scalar).ok());
    const std::vector<int64_t> global_step = {kStep};
    ASSERT_TRUE(
        ps_[0].store.AssignInt64("global_step", {0, 1}, global_step).ok());
    for (Ps& ps : ps_) {
      ASSERT_TRUE(ps.tables.Create(TableSpec("emb/users")).ok());
    }
    // Ids far apart and negative too, each on the task that owns it.
    for (int64_t id : {-9000000000LL, -3LL, 0LL, 5LL, 17LL, 99LL, 123456789LL,
                       4LL, 1000LL, 77LL}) {
      HashEmbeddingTable* table =
          *ps_[HashShardOf(id, kShards)].tables.Find("emb/users");
      std::vector<float> row(kDim);
      ASSERT_TRUE(table->Pull({id}, absl::MakeSpan(row)).ok());
      const std::vector<float> grad = {0.1f * id, -0.2f, 0.3f};
      ASSERT_TRUE(table->Push({id}, grad).ok());
    }
  }

  // Saves both shards at `step`, and commits unless told not to.
  void Save(int64_t step, bool commit = true) {
    for (int i = 0; i < kShards; ++i) {
      ASSERT_TRUE(
          SaveShard(ps_[i].store, ps_[i].tables, root_, step, i, kShards).ok());
    }
    if (commit) {
      ASSERT_TRUE(CommitCheckpoint(root_, step, kShards, 0).ok());
    }
  }

  std::string ShardPath(int64_t step, int shard) const {
    return JoinPath(JoinPath(root_, CheckpointDirName(step)),
                    ShardFileName(shard, kShards));
  }

  absl::StatusOr<ServingExport> Export(const std::string& checkpoint,
                                       bool allow_uncommitted = false,
                                       bool overwrite = false) {
    ServingExportOptions options;
    options.checkpoint = checkpoint;
    options.out_dir = out_;
    options.allow_uncommitted = allow_uncommitted;
    options.overwrite = overwrite;
    progress_.clear();
    return ExportForServing(options, [this](absl::string_view line) {
      progress_.emplace_back(line);
    });
  }

  // Nothing left by a failed export: no export and no temporary beside it.
  void ExpectNothingWritten() {
    EXPECT_FALSE(*PathExists(out_));
    absl::StatusOr<std::vector<std::string>> entries =
        ListDirectory(dir_.path());
    ASSERT_TRUE(entries.ok()) << entries.status();
    for (const std::string& entry : *entries) {
      EXPECT_THAT(entry, ::testing::Not(HasSubstr("export")));
    }
  }

  TestDir dir_;
  std::string root_;
  std::string out_;
  Ps ps_[kShards];
  std::vector<float> kernel_;
  std::vector<std::string> progress_;
};

TEST_F(ServingExportTest, WritesEveryTableAndVariableWhole) {
  Save(kStep);
  absl::StatusOr<ServingExport> exported = Export(root_);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->step, kStep);
  EXPECT_EQ(exported->num_shards, kShards);
  // A first line, then one per table and variable.
  ASSERT_EQ(progress_.size(), 1u + 1 + 4)
      << ::testing::PrintToString(progress_);
  EXPECT_THAT(progress_[0], HasSubstr(CheckpointDirName(kStep)));
  EXPECT_THAT(progress_[1], HasSubstr("table emb/users: 10 rows of dim 3"));

  // The table: every row of both tasks, in id order.
  std::map<int64_t, std::vector<float>> expected_rows;
  for (Ps& ps : ps_) {
    HashTableState state = (*ps.tables.Find("emb/users"))->Export();
    for (size_t r = 0; r < state.ids.size(); ++r) {
      expected_rows[state.ids[r]].assign(state.values.begin() + r * kDim,
                                         state.values.begin() + (r + 1) * kDim);
    }
  }
  ASSERT_EQ(expected_rows.size(), 10u);
  const Npy ids = ReadNpy(out_ + "/tables/emb.users/ids.npy");
  const Npy values = ReadNpy(out_ + "/tables/emb.users/values.npy");
  EXPECT_THAT(ids.dict, HasSubstr("'descr': '<i8'"));
  EXPECT_THAT(ids.dict, HasSubstr("'shape': (10,)"));
  EXPECT_THAT(values.dict, HasSubstr("'descr': '<f4'"));
  EXPECT_THAT(values.dict, HasSubstr("'shape': (10, 3)"));
  std::vector<int64_t> expected_ids;
  std::vector<float> expected_values;
  for (const auto& [id, row] : expected_rows) {
    expected_ids.push_back(id);
    expected_values.insert(expected_values.end(), row.begin(), row.end());
  }
  EXPECT_EQ(ids.As<int64_t>(), expected_ids);
  EXPECT_EQ(values.As<float>(), expected_values);

  // The partitioned variable put together; the others as they were.
  const Npy kernel = ReadNpy(out_ + "/variables/dense.kernel-2.npy");
  EXPECT_THAT(kernel.dict, HasSubstr("'shape': (7, 2)"));
  EXPECT_EQ(kernel.As<float>(), kernel_);
  const Npy small = ReadNpy(out_ + "/variables/dense.kernel.npy");
  EXPECT_EQ(small.As<float>(), (std::vector<float>{7.5f, -1.25f}));
  const Npy scalar = ReadNpy(out_ + "/variables/scalar.npy");
  EXPECT_THAT(scalar.dict, HasSubstr("'shape': ()"));
  EXPECT_EQ(scalar.As<float>(), (std::vector<float>{42.0f}));
  const Npy step = ReadNpy(out_ + "/variables/global_step.npy");
  EXPECT_THAT(step.dict, HasSubstr("'descr': '<i8'"));
  EXPECT_EQ(step.As<int64_t>(), (std::vector<int64_t>{kStep}));
}

TEST_F(ServingExportTest, ManifestMapsNamesToFilesShapesAndDtypes) {
  Save(kStep);
  ASSERT_TRUE(Export(root_).ok());
  absl::StatusOr<std::string> text = ReadFileToString(out_ + "/manifest.json");
  ASSERT_TRUE(text.ok()) << text.status();
  const nlohmann::json manifest = nlohmann::json::parse(*text);
  EXPECT_EQ(manifest["format"], "distrt-serving-export");
  EXPECT_EQ(manifest["format_version"], 1);
  EXPECT_EQ(manifest["step"], kStep);
  EXPECT_EQ(manifest["num_shards"], kShards);
  EXPECT_THAT(manifest["checkpoint"].get<std::string>(),
              HasSubstr(CheckpointDirName(kStep)));
  ASSERT_EQ(manifest["hash_tables"].size(), 1u);
  const nlohmann::json& table = manifest["hash_tables"][0];
  EXPECT_EQ(table["name"], "emb/users");
  EXPECT_EQ(table["dim"], kDim);
  EXPECT_EQ(table["rows"], 10);
  EXPECT_EQ(table["ids"], "tables/emb.users/ids.npy");
  EXPECT_EQ(table["values"], "tables/emb.users/values.npy");
  EXPECT_EQ(table["unknown_row"], "zeros");
  EXPECT_EQ(table["unknown_row_values"], "tables/emb.users/unknown_row.npy");
  std::map<std::string, nlohmann::json> variables;
  for (const nlohmann::json& v : manifest["variables"]) {
    variables[v["name"].get<std::string>()] = v;
  }
  ASSERT_EQ(variables.size(), 4u);
  EXPECT_EQ(variables["dense/kernel"]["file"], "variables/dense.kernel-2.npy");
  EXPECT_EQ(variables["dense/kernel"]["shape"], nlohmann::json({7, 2}));
  EXPECT_EQ(variables["dense/kernel"]["dtype"], "float32");
  EXPECT_EQ(variables["dense.kernel"]["file"], "variables/dense.kernel.npy");
  EXPECT_EQ(variables["scalar"]["shape"], nlohmann::json::array());
  EXPECT_EQ(variables["global_step"]["dtype"], "int64");
  // Optimizer slots stay out: only the files the manifest names are there.
  EXPECT_THAT(*ListDirectory(out_),
              ElementsAre("manifest.json", "tables", "variables"));
  EXPECT_EQ(ListDirectory(out_ + "/variables")->size(), 4u);
  EXPECT_THAT(*ListDirectory(out_ + "/tables/emb.users"),
              ElementsAre("ids.npy", "unknown_row.npy", "values.npy"));
}

TEST_F(ServingExportTest, RootExportsItsLatestCommittedCheckpoint) {
  Save(10);
  Save(kStep);
  Save(99, /*commit=*/false);  // a save that never finished
  absl::StatusOr<ServingExport> exported = Export(root_ + "/");
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->step, kStep);
  EXPECT_THAT(exported->checkpoint_dir, HasSubstr(CheckpointDirName(kStep)));
}

TEST_F(ServingExportTest, RefusesAnUncommittedCheckpointUnlessAllowed) {
  Save(kStep);
  Save(99, /*commit=*/false);
  const std::string uncommitted = JoinPath(root_, CheckpointDirName(99));
  absl::StatusOr<ServingExport> refused = Export(uncommitted);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("checkpoint " + uncommitted + " is not committed"));
  EXPECT_THAT(refused.status().message(), HasSubstr("--allow_uncommitted"));
  ExpectNothingWritten();
  absl::StatusOr<ServingExport> allowed = Export(uncommitted, true);
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ(allowed->step, 99);
  // A committed one by name is fine.
  ASSERT_TRUE(
      Export(JoinPath(root_, CheckpointDirName(kStep)), false, true).ok());
}

TEST_F(ServingExportTest, MissingDirectoriesAreNamed) {
  absl::StatusOr<ServingExport> missing = Export(dir_.path() + "/nowhere");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("checkpoint directory " + dir_.path() +
                        "/nowhere does not exist"));
  ASSERT_TRUE(CreateDirectories(root_).ok());
  absl::StatusOr<ServingExport> empty = Export(root_);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(empty.status().message(),
              HasSubstr(root_ + " holds no checkpoint"));
  ExpectNothingWritten();
}

TEST_F(ServingExportTest, DamagedTableValuesAreDataLossNamingFileAndTable) {
  Save(kStep);
  const std::string shard = ShardPath(kStep, 1);
  std::string bytes = *ReadFileToString(shard);
  int64_t at = 0;
  {
    absl::StatusOr<std::unique_ptr<ShardFileReader>> reader =
        ShardFileReader::Open(shard);
    ASSERT_TRUE(reader.ok()) << reader.status();
    ASSERT_EQ((*reader)->header().hash_tables_size(), 1);
    const int64_t data_start =
        static_cast<int64_t>(bytes.size()) - (*reader)->data_bytes();
    at = data_start + (*reader)->header().hash_tables(0).values().offset();
  }
  bytes[at] ^= 0x40;
  ASSERT_TRUE(WriteFileAtomically(shard, {bytes}).ok());
  absl::StatusOr<ServingExport> damaged = Export(root_);
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(damaged.status().message(), HasSubstr(shard));
  EXPECT_THAT(damaged.status().message(),
              HasSubstr("hash embedding table \"emb/users\" values"));
  ExpectNothingWritten();
}

TEST_F(ServingExportTest, MissingShardFileIsNamed) {
  Save(kStep);
  ASSERT_TRUE(RemoveDirectoryTree(ShardPath(kStep, 1)).ok());
  absl::StatusOr<ServingExport> missing = Export(root_);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("is missing " + ShardFileName(1, kShards)));
  ExpectNothingWritten();
}

TEST_F(ServingExportTest, MissingRowsAndRepeatedIdsAreDataLoss) {
  // Task 1 loses its part of "dense/kernel" (a store without it).
  Ps partial;
  ASSERT_TRUE(partial.tables.Create(TableSpec("emb/users")).ok());
  ASSERT_TRUE(SaveShard(ps_[0].store, ps_[0].tables, root_, 1, 0, 2).ok());
  ASSERT_TRUE(SaveShard(partial.store, partial.tables, root_, 1, 1, 2).ok());
  ASSERT_TRUE(CommitCheckpoint(root_, 1, 2, 0).ok());
  absl::StatusOr<ServingExport> rows = Export(root_);
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(rows.status().message(),
              HasSubstr("does not have rows [3, 7) of variable "
                        "\"dense/kernel\""));
  // Both tasks saving id 5 (tasks that disagreed on who owns it).
  std::vector<float> row(kDim);
  ASSERT_TRUE((*ps_[1 - HashShardOf(5, kShards)].tables.Find("emb/users"))
                  ->Pull({5}, absl::MakeSpan(row))
                  .ok());
  Save(2);
  absl::StatusOr<ServingExport> repeated = Export(root_);
  EXPECT_EQ(repeated.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(repeated.status().message(),
              HasSubstr("has row 5 of hash embedding table \"emb/users\" "
                        "more than once"));
  ExpectNothingWritten();
}

// Delta checkpoints (docs/checkpoint_format.md, "Delta checkpoints"): a
// chain of a full save and two deltas of the fixture's tasks, with a table
// whose rows expire (TTL) so that the second delta removes ids.
class DeltaExportTest : public ServingExportTest {
 protected:
  static constexpr char kTtlTable[] = "emb/ttl";

  void SetUp() override {
    ServingExportTest::SetUp();
    HashEmbeddingSpec spec = TableSpec(kTtlTable);
    spec.policy.eviction.ttl_steps = 20;
    for (Ps& ps : ps_) ASSERT_TRUE(ps.tables.Create(spec).ok());
  }

  // Pushes a gradient of each of `ids` (at the task that owns it) to
  // `table` at `global_step`.
  void Train(const std::string& table, const std::vector<int64_t>& ids,
             int64_t global_step) {
    for (int64_t id : ids) {
      const std::vector<float> grad = {0.01f * (id % 11), 1.0f - global_step,
                                       0.5f};
      ASSERT_TRUE((*ps_[HashShardOf(id, kShards)].tables.Find(table))
                      ->Push({id}, grad, SparseIds::kMayRepeat, global_step)
                      .ok());
    }
  }

  // Saves both shards at `step` (a delta of `previous` from the full save
  // `base` when given), marking the tables, and commits.
  void SaveChained(int64_t step, int64_t previous = -1, int64_t base = -1) {
    SaveShardOptions options;
    options.mark = true;
    if (previous >= 0) {
      options.delta.emplace();
      options.delta->set_previous(CheckpointDirName(previous));
      options.delta->set_base(CheckpointDirName(base));
    }
    for (int i = 0; i < kShards; ++i) {
      absl::StatusOr<SavedShardInfo> saved = SaveShard(
          ps_[i].store, ps_[i].tables, root_, step, i, kShards, options);
      ASSERT_TRUE(saved.ok()) << saved.status();
    }
    ASSERT_TRUE(CommitCheckpoint(root_, step, kShards, 0).ok());
  }

  // The live rows of `table` over both tasks, by id.
  std::map<int64_t, std::vector<float>> LiveRows(const std::string& table) {
    std::map<int64_t, std::vector<float>> rows;
    for (Ps& ps : ps_) {
      const HashTableState state = (*ps.tables.Find(table))->Export();
      for (size_t r = 0; r < state.ids.size(); ++r) {
        rows[state.ids[r]].assign(state.values.begin() + r * kDim,
                                  state.values.begin() + (r + 1) * kDim);
      }
    }
    return rows;
  }

  // The rows of `table` in the export in out_, by id, ids checked ascending.
  std::map<int64_t, std::vector<float>> ExportedRows(const std::string& table) {
    const std::string dir = out_ + "/tables/" + SafeFileName(table);
    const std::vector<int64_t> ids = ReadNpy(dir + "/ids.npy").As<int64_t>();
    const std::vector<float> values = ReadNpy(dir + "/values.npy").As<float>();
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << table;
    EXPECT_EQ(values.size(), ids.size() * kDim) << table;
    std::map<int64_t, std::vector<float>> rows;
    for (size_t r = 0; r < ids.size() && (r + 1) * kDim <= values.size(); ++r) {
      EXPECT_TRUE(rows.emplace(ids[r], std::vector<float>(
                                           values.begin() + r * kDim,
                                           values.begin() + (r + 1) * kDim))
                      .second)
          << table << " id " << ids[r];
    }
    return rows;
  }

  static std::vector<int64_t> Ids(int64_t begin, int64_t end) {
    std::vector<int64_t> ids;
    for (int64_t i = begin; i < end; ++i) ids.push_back(i * 7919 - 100);
    return ids;
  }

  // Full 10, delta 20 (rows updated and added, the scalar changed), delta
  // 30 (rows added; the rows not updated since step 1 expire). Returns the
  // live rows of kTtlTable at 20.
  std::map<int64_t, std::vector<float>> MakeChain() {
    Train(kTtlTable, Ids(0, 40), 1);
    SaveChained(10);
    Train(kTtlTable, Ids(30, 60), 12);
    Train("emb/users", {5, 4242}, 12);
    const std::vector<float> scalar = {43.0f};
    EXPECT_TRUE(ps_[0].store.AssignRows("scalar", {0, 1}, scalar).ok());
    SaveChained(20, 10, 10);
    std::map<int64_t, std::vector<float>> at_20 = LiveRows(kTtlTable);
    Train(kTtlTable, Ids(55, 70), 25);
    SaveChained(30, 20, 10);
    return at_20;
  }
};

TEST_F(DeltaExportTest, ExportsTheChainsRowsAndTheDeltasVariables) {
  const std::map<int64_t, std::vector<float>> at_20 = MakeChain();
  const std::map<int64_t, std::vector<float>> at_30 = LiveRows(kTtlTable);
  // The chain is what the test means: deltas hold fewer rows than the
  // table, the second removes ids, and rows were removed and added.
  std::unique_ptr<ShardFileReader> last =
      *ShardFileReader::Open(ShardPath(30, 0));
  ASSERT_TRUE(last->header().has_delta());
  int64_t removed = 0;
  int64_t changed = 0;
  for (int i = 0; i < kShards; ++i) {
    std::unique_ptr<ShardFileReader> shard =
        *ShardFileReader::Open(ShardPath(30, i));
    for (const ps::SavedHashTable& t : shard->header().hash_tables()) {
      if (t.spec().name() != kTtlTable) continue;
      removed += t.num_removed();
      changed += t.num_rows();
    }
  }
  EXPECT_GT(removed, 0);
  EXPECT_LT(changed, static_cast<int64_t>(at_30.size()));
  EXPECT_LT(at_30.size(), at_20.size() + 15);  // some rows were removed
  EXPECT_FALSE(at_30.count(Ids(0, 1)[0]));     // expired at step 25

  absl::StatusOr<ServingExport> exported = Export(root_);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->step, 30);
  EXPECT_THAT(exported->checkpoint_dir, HasSubstr(CheckpointDirName(30)));
  EXPECT_THAT(progress_[0], HasSubstr("a delta: base " +
                                      JoinPath(root_, CheckpointDirName(10)) +
                                      " and 2 delta(s) applied"));
  EXPECT_TRUE(ExportedRows(kTtlTable) == at_30);
  EXPECT_TRUE(ExportedRows("emb/users") == LiveRows("emb/users"));
  for (const ExportedTable& table : exported->tables) {
    EXPECT_EQ(table.rows, static_cast<int64_t>(LiveRows(table.name).size()))
        << table.name;
  }
  const Npy values =
      ReadNpy(out_ + "/tables/" + SafeFileName(kTtlTable) + "/values.npy");
  EXPECT_THAT(values.dict,
              HasSubstr(absl::StrCat("'shape': (", at_30.size(), ", 3)")));
  // Variables come from the delta itself.
  EXPECT_EQ(ReadNpy(out_ + "/variables/scalar.npy").As<float>(),
            (std::vector<float>{43.0f}));
  EXPECT_EQ(ReadNpy(out_ + "/variables/dense.kernel-2.npy").As<float>(),
            kernel_);

  // The middle of the chain: the base and the first delta.
  exported = Export(JoinPath(root_, CheckpointDirName(20)), false, true);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->step, 20);
  EXPECT_TRUE(ExportedRows(kTtlTable) == at_20);
}

TEST_F(DeltaExportTest, AMissingChainMemberIsRefusedNamingIt) {
  MakeChain();
  const std::string middle = JoinPath(root_, CheckpointDirName(20));
  ASSERT_TRUE(RemoveDirectoryTree(ShardPath(20, 1)).ok());
  absl::StatusOr<ServingExport> missing = Export(root_);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(missing.status().message(), HasSubstr("needs " + middle));
  EXPECT_THAT(missing.status().message(), HasSubstr(ShardFileName(1, kShards)));
  ExpectNothingWritten();
}

TEST_F(DeltaExportTest, ADamagedChainMemberIsRefusedNamingIt) {
  MakeChain();
  // A flipped bit in the base's values of the TTL table, in a shard that
  // holds some of its rows.
  std::string shard;
  int64_t at = -1;
  std::string bytes;
  for (int i = 0; i < kShards && at < 0; ++i) {
    shard = ShardPath(10, i);
    bytes = *ReadFileToString(shard);
    std::unique_ptr<ShardFileReader> reader = *ShardFileReader::Open(shard);
    for (const ps::SavedHashTable& t : reader->header().hash_tables()) {
      if (t.spec().name() != kTtlTable || t.num_rows() == 0) continue;
      at = static_cast<int64_t>(bytes.size()) - reader->data_bytes() +
           t.values().offset();
    }
  }
  ASSERT_GE(at, 0);
  bytes[at] ^= 0x40;
  ASSERT_TRUE(WriteFileAtomically(shard, {bytes}).ok());
  absl::StatusOr<ServingExport> damaged = Export(root_);
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(damaged.status().message(), HasSubstr(shard));
  EXPECT_THAT(damaged.status().message(),
              HasSubstr("hash embedding table \"emb/ttl\" values"));
  ExpectNothingWritten();
}

TEST_F(ServingExportTest, OutDirMustBeNewEmptyOrAnExportToOverwrite) {
  Save(kStep);
  ASSERT_TRUE(CreateDirectories(out_).ok());
  dir_.WriteFile("export/notes.txt", "mine");
  absl::StatusOr<ServingExport> occupied = Export(root_);
  EXPECT_EQ(occupied.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(occupied.status().message(),
              HasSubstr("export directory " + out_ + " is not empty"));
  EXPECT_EQ(*ReadFileToString(out_ + "/notes.txt"), "mine");
  ASSERT_TRUE(RemoveDirectoryTree(out_ + "/notes.txt").ok());
  ASSERT_TRUE(Export(root_).ok());  // into the empty directory
  absl::StatusOr<ServingExport> again = Export(root_);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("--overwrite"));
  Save(kStep + 1);
  absl::StatusOr<ServingExport> replaced = Export(root_, false, true);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(replaced->step, kStep + 1);
  // Only the export is left: no temporary, no old copy.
  EXPECT_THAT(*ListDirectory(dir_.path()), ElementsAre("ckpt", "export"));
}

TEST(SafeFileNameTest, MakesNamesSafeAndShort) {
  EXPECT_EQ(SafeFileName("wide_deep/dense_0/kernel"),
            "wide_deep.dense_0.kernel");
  EXPECT_EQ(SafeFileName("C1/wide"), "C1.wide");
  EXPECT_EQ(SafeFileName("a b:c*"), "a_b_c_");
  EXPECT_EQ(SafeFileName(".."), "_..");
  EXPECT_EQ(SafeFileName(""), "_");
  const std::string long_name(300, 'x');
  const std::string file = SafeFileName(long_name);
  EXPECT_EQ(file.size(), 128u);
  EXPECT_EQ(file, SafeFileName(long_name));
  EXPECT_NE(file, SafeFileName(long_name + "y"));
}

}  // namespace
}  // namespace distrt
