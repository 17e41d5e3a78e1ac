// A model's state under a local strategy (values, optimizer slots, steps,
// hash rows, the global step) must come back bit for bit from a checkpoint
// and arrive bit for bit on every worker of a broadcast; checkpoints written
// by workers and by ps tasks must be interchangeable; and every failure must
// leave the variables as they were (and, in a broadcast, fail every rank
// rather than leave one waiting).
//
// The model is wide_deep, which has all three kinds of variable (row-sparse
// wide weights, dense deep layers, a hash embedding), trained with Adagrad
// so that every float32 variable and hash row has a slot.

#include "runtime/training/model_state.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/ps_checkpoint.h"
#include "runtime/collective/gloo_group.h"
#include "runtime/collective/kv_store.h"
#include "runtime/collective/test_group_prefix.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/strategy.h"
#include "runtime/distribute/variable.h"
#include "runtime/input/batch.h"
#include "runtime/input/example.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/models/model.h"
#include "runtime/models/model_config.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/ps/variable_store.h"
#include "runtime/tensor/dtype.h"
#include "runtime/training/model_variables.h"
#include "runtime/training/train_step.h"
#include "runtime/util/status_macros.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNumFeatures = 40;
constexpr int kReplicas = 2;

ModelConfig Config() {
  ModelConfig config;
  config.name = "wide_deep";
  config.num_features = kNumFeatures;
  config.hidden_units = {8, 4};
  config.embedding_dim = 4;
  config.seed = 42;
  config.optimizer.kind = OptimizerKind::kAdagrad;
  config.optimizer.learning_rate = 0.1f;
  return config;
}

// One worker: a MirroredStrategy over two CPU devices and the model's
// variables under it.
struct Job {
  LocalDevices devices;
  std::unique_ptr<Strategy> strategy;
  std::unique_ptr<Model> model;
  ModelVariables variables;
};

absl::StatusOr<std::unique_ptr<Job>> NewJob(const ModelConfig& config) {
  auto job = std::make_unique<Job>();
  LocalDevicesOptions options;
  options.num_cpu_devices = kReplicas;
  options.use_gpus = false;
  ASSIGN_OR_RETURN(LocalDevices devices, CreateLocalDevices(options));
  job->devices = std::move(devices);
  ASSIGN_OR_RETURN(std::unique_ptr<MirroredStrategy> strategy,
                   MirroredStrategy::Create(job->devices.pointers()));
  job->strategy = std::move(strategy);
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model, CreateModel(config));
  job->model = std::move(model);
  ASSIGN_OR_RETURN(ModelVariables variables,
                   ModelVariables::Create(*job->strategy, *job->model));
  job->variables = std::move(variables);
  return job;
}

// One batch per replica of four examples with random features below
// kNumFeatures (at least one each) and random binary labels; a function of
// the seed only.
std::vector<Batch> RandomBatches(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
  std::vector<Batch> batches;
  for (int r = 0; r < kReplicas; ++r) {
    std::vector<Example> examples(4);
    for (Example& e : examples) {
      for (int64_t id = 0; id < kNumFeatures; ++id) {
        if (rng() % 8 != 0) continue;
        e.ids.push_back(id);
        e.values.push_back(uniform(rng));
      }
      if (e.ids.empty()) {
        e.ids.push_back(static_cast<int64_t>(rng() % kNumFeatures));
        e.values.push_back(1.0f);
      }
      e.label = static_cast<float>(rng() % 2);
    }
    absl::StatusOr<Batch> batch = MakeBatch(examples);
    EXPECT_TRUE(batch.ok()) << batch.status();
    batches.push_back(*std::move(batch));
  }
  return batches;
}

// `steps` training steps, step s on RandomBatches(seed + s).
absl::Status Train(Job& job, int steps, uint64_t seed) {
  for (int s = 0; s < steps; ++s) {
    RETURN_IF_ERROR((TrainStep(*job.strategy, *job.model, job.variables,
                               RandomBatches(seed + static_cast<uint64_t>(s))))
                        .status());
  }
  return absl::OkStatus();
}

// Everything ExportState shows of a model: every copy of every variable
// (the global step first) and every hash table, by name.
struct ModelSnapshot {
  std::map<std::string, std::vector<VariableState>> variables;
  std::map<std::string, HashTableState> tables;
};

ModelSnapshot Snapshot(const ModelVariables& variables) {
  ModelSnapshot snapshot;
  auto add = [&](const DistributedVariable& v) {
    std::vector<VariableState>& copies = snapshot.variables[v.name()];
    for (int c = 0; c < v.num_copies(); ++c) {
      absl::StatusOr<VariableState> state = v.ExportState(c);
      EXPECT_TRUE(state.ok()) << state.status();
      copies.push_back(state.ok() ? *std::move(state) : VariableState());
    }
  };
  add(variables.global_step());
  for (int i = 0; i < variables.size(); ++i) {
    if (variables.variable(i) != nullptr) {
      add(*variables.variable(i));
      continue;
    }
    absl::StatusOr<HashTableState> state =
        variables.hash_table(i)->ExportState();
    EXPECT_TRUE(state.ok()) << state.status();
    snapshot.tables[variables.hash_table(i)->spec().name] =
        state.ok() ? *std::move(state) : HashTableState();
  }
  return snapshot;
}

// Bit for bit (so -0 and 0 differ, as they would in a later update).
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool SameSlots(const std::vector<std::vector<float>>& a,
               const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameBits(a[i], b[i])) return false;
  }
  return true;
}

// Empty when equal; otherwise which part differs.
std::string StateDifference(const VariableState& a, const VariableState& b) {
  if (a.step != b.step) return absl::StrCat("step ", a.step, " vs ", b.step);
  if (a.ints != b.ints) return "int64 values";
  if (!SameBits(a.values, b.values)) return "values";
  if (!SameSlots(a.slots, b.slots)) return "slots";
  return "";
}

std::string TableDifference(const HashTableState& a, const HashTableState& b) {
  if (a.ids != b.ids) {
    return absl::StrCat("ids (", a.ids.size(), " vs ", b.ids.size(), ")");
  }
  if (a.steps != b.steps) return "row steps";
  if (!SameBits(a.values, b.values)) return "rows";
  if (!SameSlots(a.slots, b.slots)) return "slots";
  return "";
}

testing::AssertionResult SameState(const ModelSnapshot& want,
                                   const ModelSnapshot& got) {
  if (want.variables.size() != got.variables.size() ||
      want.tables.size() != got.tables.size()) {
    return testing::AssertionFailure() << "different numbers of variables";
  }
  for (const auto& [name, copies] : want.variables) {
    auto it = got.variables.find(name);
    if (it == got.variables.end()) {
      return testing::AssertionFailure() << "no variable " << name;
    }
    if (copies.size() != it->second.size()) {
      return testing::AssertionFailure() << name << ": number of copies";
    }
    for (size_t c = 0; c < copies.size(); ++c) {
      std::string d = StateDifference(copies[c], it->second[c]);
      if (!d.empty()) {
        return testing::AssertionFailure()
               << name << " copy " << c << " differs: " << d;
      }
    }
  }
  for (const auto& [name, table] : want.tables) {
    auto it = got.tables.find(name);
    if (it == got.tables.end()) {
      return testing::AssertionFailure() << "no table " << name;
    }
    std::string d = TableDifference(table, it->second);
    if (!d.empty()) {
      return testing::AssertionFailure() << name << " differs: " << d;
    }
  }
  return testing::AssertionSuccess();
}

TEST(ModelCheckpointTest, RestoreGivesBackEveryCopySlotRowAndStep) {
  absl::StatusOr<std::unique_ptr<Job>> job = NewJob(Config());
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(Train(**job, 3, /*seed=*/1).ok());
  const ModelSnapshot saved_state = Snapshot((*job)->variables);
  // What makes the comparison mean something: slots, hash rows, a step.
  ASSERT_EQ(saved_state.variables.at("wide_deep/wide/weights").size(),
            static_cast<size_t>(kReplicas));
  EXPECT_EQ(saved_state.variables.at("wide_deep/wide/weights")[0].slots.size(),
            1u);
  EXPECT_GT(saved_state.tables.at("wide_deep/embedding").ids.size(), 0u);
  EXPECT_EQ(*(*job)->variables.ReadGlobalStep(*(*job)->strategy), 3);

  TestDir dir;
  absl::StatusOr<ModelCheckpointSaved> saved =
      SaveModelCheckpoint((*job)->variables, dir.path(), 3, /*keep_last=*/2);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->checkpoint, dir.path() + "/" + CheckpointDirName(3));
  EXPECT_GT(saved->bytes, 0);

  // More steps, with other ids, so that values, slots, steps and the set of
  // hash rows all change.
  ASSERT_TRUE(Train(**job, 2, /*seed=*/100).ok());
  ASSERT_FALSE(SameState(saved_state, Snapshot((*job)->variables)));

  absl::StatusOr<ModelCheckpointRestored> restored =
      RestoreModelCheckpoint((*job)->variables, dir.path());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->checkpoint, saved->checkpoint);
  EXPECT_EQ(restored->step, 3);
  EXPECT_TRUE(SameState(saved_state, Snapshot((*job)->variables)));
  EXPECT_EQ(*(*job)->variables.ReadGlobalStep(*(*job)->strategy), 3);

  // A new job (a restarted worker) restores the same, from the ckpt dir.
  absl::StatusOr<std::unique_ptr<Job>> fresh = NewJob(Config());
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  restored = RestoreModelCheckpoint((*fresh)->variables, saved->checkpoint);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TRUE(SameState(saved_state, Snapshot((*fresh)->variables)));
}

TEST(ModelCheckpointTest, KeepsTheLastCheckpoints) {
  absl::StatusOr<std::unique_ptr<Job>> job = NewJob(Config());
  ASSERT_TRUE(job.ok()) << job.status();
  TestDir dir;
  for (int64_t step = 1; step <= 3; ++step) {
    absl::StatusOr<ModelCheckpointSaved> saved = SaveModelCheckpoint(
        (*job)->variables, dir.path(), step, /*keep_last=*/2);
    ASSERT_TRUE(saved.ok()) << saved.status();
    EXPECT_THAT(saved->cleanup_errors, testing::IsEmpty());
    if (step == 3) {
      EXPECT_THAT(saved->deleted,
                  testing::ElementsAre(HasSubstr(CheckpointDirName(1))));
    }
  }
  absl::StatusOr<std::vector<std::string>> index =
      ReadCheckpointIndex(dir.path());
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_THAT(*index,
              testing::ElementsAre(CheckpointDirName(2), CheckpointDirName(3)));

  absl::StatusOr<ModelCheckpointSaved> negative =
      SaveModelCheckpoint((*job)->variables, dir.path(), 4, /*keep_last=*/-1);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.status().message(), HasSubstr("keep_last -1"));
}

// What two ps tasks would hold of a model: each variable split by rows
// (the global step and one-row variables on task 0), hash rows by
// HashShardOf.
struct PsTask {
  VariableStore store;
  HashTableSet tables;
};

RowRange PartOf(const VariableSpec& spec, int task) {
  const int64_t rows = NumRows(spec);
  const int64_t split = (rows + 1) / 2;
  return task == 0 ? RowRange{0, split} : RowRange{split, rows};
}

// Creates the model's variables and tables on the two tasks.
void CreateOnPsTasks(const ModelVariables& variables, PsTask (&ps)[2]) {
  std::vector<const DistributedVariable*> all = {&variables.global_step()};
  for (int i = 0; i < variables.size(); ++i) {
    if (variables.variable(i) != nullptr) {
      all.push_back(variables.variable(i));
      continue;
    }
    for (PsTask& task : ps) {
      ASSERT_TRUE(task.tables.Create(variables.hash_table(i)->spec()).ok());
    }
  }
  for (const DistributedVariable* v : all) {
    for (int task = 0; task < 2; ++task) {
      RowRange rows = PartOf(v->spec(), task);
      if (rows.size() == 0) continue;
      absl::StatusOr<VariableInfo> created =
          ps[task].store.Create(v->spec(), rows);
      ASSERT_TRUE(created.ok()) << created.status();
    }
  }
}

// The whole variable `name` from its parts on the tasks: rows
// concatenated, the largest step (as RestoreShard assembles it).
VariableState Assemble(PsTask (&ps)[2], const std::string& name) {
  VariableState whole;
  for (PsTask& task : ps) {
    if (!task.store.Lookup(name).ok()) continue;
    absl::StatusOr<VariableState> part = task.store.Snapshot(name);
    EXPECT_TRUE(part.ok()) << part.status();
    whole.step = std::max(whole.step, part->step);
    whole.ints.insert(whole.ints.end(), part->ints.begin(), part->ints.end());
    whole.values.insert(whole.values.end(), part->values.begin(),
                        part->values.end());
    whole.slots.resize(part->slots.size());
    for (size_t s = 0; s < part->slots.size(); ++s) {
      whole.slots[s].insert(whole.slots[s].end(), part->slots[s].begin(),
                            part->slots[s].end());
    }
  }
  return whole;
}

// The rows of table `name` on both tasks, in ascending id order.
HashTableState MergeTables(PsTask (&ps)[2], const std::string& name) {
  std::map<int64_t, std::pair<const HashTableState*, size_t>> rows;
  std::vector<HashTableState> parts;
  parts.reserve(2);
  for (PsTask& task : ps) parts.push_back((*task.tables.Find(name))->Export());
  int64_t dim = (*ps[0].tables.Find(name))->spec().dim;
  for (const HashTableState& part : parts) {
    for (size_t i = 0; i < part.ids.size(); ++i) {
      rows[part.ids[i]] = {&part, i};
    }
  }
  HashTableState merged;
  merged.slots.resize(parts[0].slots.size());
  for (const auto& [id, where] : rows) {
    const HashTableState& part = *where.first;
    const size_t i = where.second;
    merged.ids.push_back(id);
    merged.steps.push_back(part.steps[i]);
    merged.values.insert(merged.values.end(), part.values.begin() + i * dim,
                         part.values.begin() + (i + 1) * dim);
    for (size_t s = 0; s < part.slots.size(); ++s) {
      merged.slots[s].insert(merged.slots[s].end(),
                             part.slots[s].begin() + i * dim,
                             part.slots[s].begin() + (i + 1) * dim);
    }
  }
  return merged;
}

TEST(ModelCheckpointTest, RestoresACheckpointThatTwoPsTasksWrote) {
  absl::StatusOr<std::unique_ptr<Job>> job = NewJob(Config());
  ASSERT_TRUE(job.ok()) << job.status();
  const ModelVariables& variables = (*job)->variables;
  PsTask ps[2];
  CreateOnPsTasks(variables, ps);
  // Updates that differ per task, and more of them on task 0, so that the
  // parts' steps differ.
  for (int task = 0; task < 2; ++task) {
    for (const VariableInfo& info : ps[task].store.List()) {
      const std::string& name = info.spec.name;
      if (info.spec.dtype == DType::kInt64) {
        ASSERT_TRUE(ps[task].store.AddInt64(name, info.rows_held, {17}).ok());
        continue;
      }
      const int64_t n = info.rows_held.size() * RowWidth(info.spec);
      for (int push = 0; push < 2 - task; ++push) {
        std::vector<float> grad(n);
        for (int64_t k = 0; k < n; ++k) {
          grad[k] = 0.01f * static_cast<float>(k + 7 * task + push) - 0.2f;
        }
        ASSERT_TRUE(ps[task].store.PushRows(name, info.rows_held, grad).ok());
      }
    }
    for (HashEmbeddingTable* table : ps[task].tables.List()) {
      for (int64_t id = 0; id < 30; ++id) {
        if (HashShardOf(id, 2) != task) continue;
        std::vector<float> grad(table->spec().dim, 0.1f * (id % 5) - 0.2f);
        ASSERT_TRUE(table->Push({id}, grad).ok());
      }
    }
  }
  TestDir dir;
  for (int task = 0; task < 2; ++task) {
    ASSERT_TRUE(
        SaveShard(ps[task].store, ps[task].tables, dir.path(), 7, task, 2)
            .ok());
  }
  ASSERT_TRUE(CommitCheckpoint(dir.path(), 7, 2, /*keep_last=*/0).ok());

  absl::StatusOr<ModelCheckpointRestored> restored =
      RestoreModelCheckpoint(variables, dir.path());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->step, 7);

  ModelSnapshot want;
  ModelSnapshot got = Snapshot(variables);
  for (const auto& [name, copies] : got.variables) {
    want.variables[name].assign(copies.size(), Assemble(ps, name));
  }
  for (const auto& [name, table] : got.tables) {
    want.tables[name] = MergeTables(ps, name);
    EXPECT_EQ(want.tables[name].ids.size(), 30u);
  }
  EXPECT_EQ(want.variables.at(kGlobalStepName)[0].ints,
            std::vector<int64_t>{17});
  EXPECT_TRUE(SameState(want, got));
}

TEST(ModelCheckpointTest, PsTasksRestoreACheckpointThatAWorkerWrote) {
  absl::StatusOr<std::unique_ptr<Job>> job = NewJob(Config());
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(Train(**job, 3, /*seed=*/5).ok());
  const ModelSnapshot state = Snapshot((*job)->variables);
  TestDir dir;
  ASSERT_TRUE(SaveModelCheckpoint((*job)->variables, dir.path(), 3, 0).ok());

  PsTask ps[2];
  CreateOnPsTasks((*job)->variables, ps);
  for (int task = 0; task < 2; ++task) {
    absl::StatusOr<RestoreInfo> restored =
        RestoreShard(ps[task].store, ps[task].tables, dir.path(), task, 2,
                     /*verify_only=*/false);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(restored->step, 3);
    // Each task keeps only its own hash rows.
    for (HashEmbeddingTable* table : ps[task].tables.List()) {
      for (int64_t id : table->Export().ids) {
        EXPECT_EQ(HashShardOf(id, 2), task) << id;
      }
    }
  }
  for (const auto& [name, copies] : state.variables) {
    EXPECT_EQ(StateDifference(copies[0], Assemble(ps, name)), "") << name;
  }
  for (const auto& [name, table] : state.tables) {
    EXPECT_EQ(TableDifference(table, MergeTables(ps, name)), "") << name;
  }
}

TEST(ModelCheckpointTest, NoCheckpointInTheDirectoryChangesNothing) {
  absl::StatusOr<std::unique_ptr<Job>> job = NewJob(Config());
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(Train(**job, 1, /*seed=*/3).ok());
  const ModelSnapshot before = Snapshot((*job)->variables);
  TestDir dir;
  absl::StatusOr<ModelCheckpointRestored> restored =
      RestoreModelCheckpoint((*job)->variables, dir.path());
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(restored.status().message(), HasSubstr(dir.path()));
  EXPECT_TRUE(SameState(before, Snapshot((*job)->variables)));
}

TEST(ModelCheckpointTest, ACheckpointOfAnotherModelChangesNothing) {
  absl::StatusOr<std::unique_ptr<Job>> other = NewJob(Config());
  ASSERT_TRUE(other.ok()) << other.status();
  TestDir dir;
  ASSERT_TRUE(SaveModelCheckpoint((*other)->variables, dir.path(), 1, 0).ok());

  ModelConfig narrower = Config();
  narrower.hidden_units = {8, 3};
  absl::StatusOr<std::unique_ptr<Job>> job = NewJob(narrower);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(Train(**job, 1, /*seed=*/3).ok());
  const ModelSnapshot before = Snapshot((*job)->variables);
  absl::StatusOr<ModelCheckpointRestored> restored =
      RestoreModelCheckpoint((*job)->variables, dir.path());
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kFailedPrecondition);
  // The first differing variable in name order.
  EXPECT_THAT(restored.status().message(),
              HasSubstr("variable \"wide_deep/dense_1/bias\""));
  EXPECT_THAT(restored.status().message(), HasSubstr("shape [4] vs [3]"));
  EXPECT_TRUE(SameState(before, Snapshot((*job)->variables)));
}

TEST(VariableStateTest, ImportStateChecksSizesBeforeChangingAnyCopy) {
  absl::StatusOr<std::unique_ptr<Job>> job = NewJob(Config());
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(Train(**job, 1, /*seed=*/3).ok());
  const ModelSnapshot before = Snapshot((*job)->variables);
  DistributedVariable& weights = *(*job)->variables.variable(0);
  ASSERT_EQ(weights.name(), "wide_deep/wide/weights");
  absl::StatusOr<VariableState> state = weights.ExportState(0);
  ASSERT_TRUE(state.ok()) << state.status();

  VariableState short_values = *state;
  short_values.values.pop_back();
  absl::Status s = weights.ImportState(short_values);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"wide_deep/wide/weights\""));
  EXPECT_THAT(s.message(), HasSubstr("39 elements, expected 40"));

  VariableState short_slot = *state;
  short_slot.slots[0].pop_back();
  s = weights.ImportState(short_slot);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("slot \"accumulator\""));

  VariableState no_slots = *state;
  no_slots.slots.clear();
  s = weights.ImportState(no_slots);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("0 optimizer slots, expected 1"));

  VariableState negative = *state;
  negative.step = -1;
  EXPECT_EQ(weights.ImportState(negative).code(),
            absl::StatusCode::kInvalidArgument);

  VariableState ints = *state;
  ints.ints = {1};
  EXPECT_EQ(weights.ImportState(ints).code(),
            absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(weights.ExportState(kReplicas).status().code(),
            absl::StatusCode::kInvalidArgument);

  DistributedHashTable& embedding = *(*job)->variables.hash_table(2);
  absl::StatusOr<HashTableState> rows = embedding.ExportState();
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_GE(rows->ids.size(), 2u);
  rows->ids[1] = rows->ids[0];
  s = embedding.ImportState(*rows);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("wide_deep/embedding"));

  EXPECT_TRUE(SameState(before, Snapshot((*job)->variables)));
}

// A variable and a table that keep their state elsewhere (as those on
// parameter servers do): only the defaults of ExportState / ImportState.
class RemoteVariable : public DistributedVariable {
 public:
  explicit RemoteVariable(VariableOptions options)
      : DistributedVariable(std::move(options)) {}
  int num_copies() const override { return 1; }
  int CopyOfReplica(int) const override { return 0; }
  std::string DescribePlacement() const override { return "on ps task 0"; }
  absl::StatusOr<Tensor> ReadCopy(int) const override {
    return absl::UnimplementedError("not in this test");
  }
  absl::Status ReadRows(int, absl::Span<const int64_t>,
                        absl::Span<float>) const override {
    return absl::UnimplementedError("not in this test");
  }
  absl::Status WriteCopy(int, const Tensor&) override {
    return absl::UnimplementedError("not in this test");
  }
  absl::Status AddToCopy(int, const Tensor&) override {
    return absl::UnimplementedError("not in this test");
  }
  absl::Status ApplyGradient(int, absl::Span<const float>) override {
    return absl::UnimplementedError("not in this test");
  }
  absl::Status ApplySparseGradient(int, absl::Span<const int64_t>,
                                   absl::Span<const float>) override {
    return absl::UnimplementedError("not in this test");
  }
};

class RemoteHashTable : public DistributedHashTable {
 public:
  explicit RemoteHashTable(HashEmbeddingSpec spec) : spec_(std::move(spec)) {}
  const HashEmbeddingSpec& spec() const override { return spec_; }
  std::string DescribePlacement() const override { return "on 2 ps tasks"; }
  absl::Status Pull(absl::Span<const int64_t>, absl::Span<float>) override {
    return absl::UnimplementedError("not in this test");
  }
  absl::Status Push(absl::Span<const int64_t>,
                    absl::Span<const float>) override {
    return absl::UnimplementedError("not in this test");
  }

 private:
  HashEmbeddingSpec spec_;
};

TEST(VariableStateTest, VariablesElsewhereCannotExportOrImport) {
  VariableOptions options;
  options.spec.name = "w";
  options.spec.shape = {3};
  RemoteVariable variable(options);
  absl::StatusOr<VariableState> state = variable.ExportState(0);
  EXPECT_EQ(state.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(state.status().message(), HasSubstr("\"w\""));
  EXPECT_THAT(state.status().message(), HasSubstr("parameter servers"));
  absl::Status s = variable.ImportState(VariableState());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("\"w\""));

  HashEmbeddingSpec spec;
  spec.name = "emb";
  spec.dim = 4;
  RemoteHashTable table(spec);
  EXPECT_EQ(table.ExportState().status().code(),
            absl::StatusCode::kUnimplemented);
  s = table.ImportState(HashTableState());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("\"emb\""));
}

// --- BroadcastModelState over Gloo, one thread per rank ------------------

// What one rank saw.
struct RankResult {
  absl::Status status;  // of BroadcastModelState
  ModelSnapshot before;
  ModelSnapshot after;
};

// For ranks 0 ... size - 1, each on its own thread with its own GlooGroup
// and job (config_of(rank), trained by train(rank, job) first): snapshots
// the state, broadcasts it from `root`, snapshots it again.
std::vector<RankResult> BroadcastAmongRanks(
    int size, int root, const std::function<ModelConfig(int)>& config_of,
    const std::function<absl::Status(int, Job&)>& train) {
  InMemoryKvStore store;
  GlooGroup::Options base;
  base.prefix = UniqueGroupPrefix();
  base.timeout = absl::Seconds(30);
  std::vector<RankResult> results(size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      RankResult& result = results[rank];
      absl::StatusOr<std::unique_ptr<Job>> job = NewJob(config_of(rank));
      if (!job.ok()) {
        result.status = job.status();
        return;
      }
      if (absl::Status s = train(rank, **job); !s.ok()) {
        result.status = s;
        return;
      }
      GlooGroup::Options options = base;
      options.rank = rank;
      options.size = size;
      absl::StatusOr<std::unique_ptr<GlooGroup>> group =
          GlooGroup::Create(&store, options);
      if (!group.ok()) {
        result.status = group.status();
        return;
      }
      result.before = Snapshot((*job)->variables);
      result.status = BroadcastModelState(**group, (*job)->variables, root);
      result.after = Snapshot((*job)->variables);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

class BroadcastModelStateTest : public testing::TestWithParam<int> {};

TEST_P(BroadcastModelStateTest, EveryRankEndsWithTheRootsState) {
  const int root = GetParam();
  const std::vector<RankResult> results = BroadcastAmongRanks(
      3, root, [](int) { return Config(); },
      [&](int rank, Job& job) {
        // The root trains more, and every rank on other data, so that
        // values, slots, steps and hash ids all differ before.
        return Train(job, rank == root ? 3 : 1, /*seed=*/10 * (rank + 1));
      });
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(results[r].status.ok())
        << "rank " << r << ": " << results[r].status;
  }
  EXPECT_TRUE(SameState(results[root].before, results[root].after));
  for (int r = 0; r < 3; ++r) {
    if (r == root) continue;
    EXPECT_FALSE(SameState(results[root].before, results[r].before)) << r;
    EXPECT_TRUE(SameState(results[root].before, results[r].after))
        << "rank " << r;
  }
  EXPECT_EQ(results[root].after.variables.at(kGlobalStepName)[0].ints,
            std::vector<int64_t>{3});
}

INSTANTIATE_TEST_SUITE_P(Roots, BroadcastModelStateTest, testing::Values(0, 2));

// A model that differs from rank 0's on rank 2; every rank must return an
// error, rank 2 the one that says what differs.
struct Mismatch {
  std::string name;
  std::function<void(ModelConfig&)> change;
  std::string message;  // in rank 2's error
};

class BroadcastMismatchTest : public testing::TestWithParam<Mismatch> {};

TEST_P(BroadcastMismatchTest, FailsEveryRankAndChangesNothing) {
  const Mismatch& mismatch = GetParam();
  const std::vector<RankResult> results = BroadcastAmongRanks(
      3, /*root=*/0,
      [&](int rank) {
        ModelConfig config = Config();
        if (rank == 2) mismatch.change(config);
        return config;
      },
      [](int rank, Job& job) { return Train(job, rank + 1, 7); });
  for (int r = 0; r < 3; ++r) {
    const absl::Status& s = results[r].status;
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition)
        << "rank " << r << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr("rank 2's model differs from rank 0's"))
        << "rank " << r;
    EXPECT_TRUE(SameState(results[r].before, results[r].after)) << "rank " << r;
  }
  EXPECT_THAT(results[2].status.message(), HasSubstr(mismatch.message));
}

INSTANTIATE_TEST_SUITE_P(
    Models, BroadcastMismatchTest,
    testing::Values(
        Mismatch{"HiddenUnits",
                 [](ModelConfig& c) {
                   c.hidden_units = {8, 3};
                 },
                 "variable \"wide_deep/dense_1/kernel\" has 8 rows of 3 here, "
                 "8 rows of 4 on rank 0"},
        Mismatch{"NumFeatures", [](ModelConfig& c) { c.num_features = 50; },
                 "variable \"wide_deep/wide/weights\" has 50 rows of 1 here, "
                 "40 rows of 1 on rank 0"},
        Mismatch{"FewerLayers", [](ModelConfig& c) { c.hidden_units = {8}; },
                 "numbers of variables and hash tables: 7 and 1 here (with "
                 "the global step), 9 and 1 on rank 0"},
        Mismatch{"EmbeddingDim", [](ModelConfig& c) { c.embedding_dim = 5; },
                 "hash table \"wide_deep/embedding\" has dim 5 here, 4 on "
                 "rank 0"},
        Mismatch{
            "Optimizer",
            [](ModelConfig& c) { c.optimizer.kind = OptimizerKind::kMomentum; },
            "is trained with momentum here, adagrad on rank 0"},
        Mismatch{"LearningRate",
                 [](ModelConfig& c) { c.optimizer.learning_rate = 0.2f; },
                 "optimizer (adagrad) has other hyper-parameters here than "
                 "on rank 0"}),
    [](const testing::TestParamInfo<Mismatch>& info) {
      return info.param.name;
    });

TEST(BroadcastModelStateErrorsTest, EveryDifferingRankIsNamed) {
  const std::vector<RankResult> results = BroadcastAmongRanks(
      3, /*root=*/0,
      [](int rank) {
        ModelConfig config = Config();
        if (rank > 0) config.num_features = 40 + rank;
        return config;
      },
      [](int, Job&) { return absl::OkStatus(); });
  EXPECT_EQ(results[0].status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(results[0].status.message(),
              HasSubstr("ranks 1, 2' models differ from rank 0's"));
  EXPECT_THAT(results[1].status.message(),
              HasSubstr("41 rows of 1 here, 40 rows of 1 on rank 0"));
  EXPECT_THAT(results[2].status.message(),
              HasSubstr("42 rows of 1 here, 40 rows of 1 on rank 0"));
}

TEST(BroadcastModelStateErrorsTest, ARootOutsideTheGroupIsInvalid) {
  absl::StatusOr<std::unique_ptr<Job>> job = NewJob(Config());
  ASSERT_TRUE(job.ok()) << job.status();
  InMemoryKvStore store;
  GlooGroup::Options options;
  options.prefix = UniqueGroupPrefix();
  absl::StatusOr<std::unique_ptr<GlooGroup>> group =
      GlooGroup::Create(&store, options);
  ASSERT_TRUE(group.ok()) << group.status();
  absl::Status s = BroadcastModelState(**group, (*job)->variables, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("root 1 is not a rank of the 1 workers"));
  // A group of one: nothing to send, nothing changes.
  EXPECT_TRUE(BroadcastModelState(**group, (*job)->variables, 0).ok());
}

}  // namespace
}  // namespace distrt
