// Checkpoints of real ps_server processes: save, kill the servers, restart
// them, restore, and get identical bits; restore into a different number of
// ps tasks; corrupt checkpoints are refused everywhere with nothing changed.

#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/ps_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/ps_processes.h"

namespace distrt {
namespace {

using ::distrt::testing::AddressesOf;
using ::distrt::testing::PsProcess;
using ::distrt::testing::StartPsProcesses;
using ::testing::HasSubstr;

const std::vector<int64_t> kHashIds = {3, -8, int64_t{1} << 45, 77, 1000001};

// A small model with every kind of state a ps task holds: a partitioned
// embedding with Adam slots (one part per ps task: saved in 2 parts,
// restored into 1 or 3), a Nesterov momentum vector, a global step and a
// hash table with FTRL slots.
struct Model {
  std::vector<VariablePlacement> dense;
  VariablePlacement global_step;
  HashEmbeddingSpec table;
};

Model CreateModel(PsClient& client) {
  Model model;
  VariableSpec emb{"emb", DType::kFloat32, {9, 3}, {}, {}};
  emb.initializer.kind = InitializerSpec::Kind::kUniform;
  emb.initializer.seed = 11;
  emb.optimizer.kind = OptimizerKind::kAdam;
  VariableSpec bias{"bias", DType::kFloat32, {4}, {}, {}};
  bias.initializer.kind = InitializerSpec::Kind::kTruncatedNormal;
  bias.optimizer.kind = OptimizerKind::kMomentum;
  bias.optimizer.momentum = 0.9f;
  bias.optimizer.nesterov = true;
  for (auto [spec, policy] : {std::pair{emb, PartitionPolicy::FixedShards(3)},
                              std::pair{bias, PartitionPolicy::None()}}) {
    absl::StatusOr<VariablePlacement> placed =
        client.CreateVariable(spec, policy);
    EXPECT_TRUE(placed.ok()) << placed.status();
    if (placed.ok()) model.dense.push_back(*placed);
  }
  absl::StatusOr<VariablePlacement> step = client.CreateVariable(
      VariableSpec{"global_step", DType::kInt64, {}, {}, {}});
  EXPECT_TRUE(step.ok()) << step.status();
  if (step.ok()) model.global_step = *step;
  model.table.name = "ids";
  model.table.dim = 2;
  model.table.initializer.kind = InitializerSpec::Kind::kUniform;
  model.table.optimizer.kind = OptimizerKind::kFtrl;
  model.table.optimizer.l1_regularization = 0.01f;
  EXPECT_TRUE(client.CreateHashTable(model.table).ok());
  return model;
}

// One training step's worth of updates with gradients that depend on `seed`.
void Train(PsClient& client, const Model& model, int seed) {
  for (const VariablePlacement& v : model.dense) {
    std::vector<float> grad(NumRows(v.spec) * RowWidth(v.spec));
    for (size_t i = 0; i < grad.size(); ++i) {
      grad[i] = 0.1f * ((i * 7 + seed) % 5) - 0.2f;
    }
    ASSERT_TRUE(client.Push(v, grad).ok());
  }
  ASSERT_TRUE(client
                  .PushSparse(model.dense[0], {1, 8, 1},
                              std::vector<float>(9, 0.3f * seed))
                  .ok());
  std::vector<float> hash_grads(kHashIds.size() * 2);
  for (size_t i = 0; i < hash_grads.size(); ++i) {
    hash_grads[i] = 0.05f * ((i + seed) % 3) + 0.01f;
  }
  ASSERT_TRUE(client.PushHash(model.table, kHashIds, hash_grads).ok());
  ASSERT_TRUE(client.AddInt64(model.global_step, std::vector<int64_t>{1}).ok());
}

// Everything observable, as bits.
struct Snapshot {
  std::vector<std::vector<float>> dense;
  std::vector<float> hash_rows;
  int64_t global_step = 0;

  bool BitwiseEquals(const Snapshot& other) const {
    if (dense.size() != other.dense.size() ||
        global_step != other.global_step ||
        hash_rows.size() != other.hash_rows.size()) {
      return false;
    }
    for (size_t i = 0; i < dense.size(); ++i) {
      if (dense[i].size() != other.dense[i].size() ||
          std::memcmp(dense[i].data(), other.dense[i].data(),
                      dense[i].size() * sizeof(float)) != 0) {
        return false;
      }
    }
    return std::memcmp(hash_rows.data(), other.hash_rows.data(),
                       hash_rows.size() * sizeof(float)) == 0;
  }
};

Snapshot PullAll(PsClient& client, const Model& model) {
  Snapshot snapshot;
  for (const VariablePlacement& v : model.dense) {
    std::vector<float>& values =
        snapshot.dense.emplace_back(NumRows(v.spec) * RowWidth(v.spec));
    EXPECT_TRUE(client.Pull(v, absl::MakeSpan(values)).ok());
  }
  snapshot.hash_rows.resize(kHashIds.size() * 2);
  EXPECT_TRUE(
      client.PullHash(model.table, kHashIds, absl::MakeSpan(snapshot.hash_rows))
          .ok());
  EXPECT_TRUE(client
                  .PullInt64(model.global_step,
                             absl::MakeSpan(&snapshot.global_step, 1))
                  .ok());
  return snapshot;
}

std::unique_ptr<PsClient> ClientOf(const std::vector<PsProcess>& tasks) {
  PsClient::Options options;
  options.rpc_timeout = absl::Seconds(30);
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(AddressesOf(tasks), options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

std::string NewTestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
  std::filesystem::remove_all(dir);
  return dir;
}

class PsCheckpointTest : public ::testing::Test {
 protected:
  // Trains a little on 2 ps tasks, saves at step 10, trains one more step
  // (recording the state after it), then kills the servers.
  void SetUp() override {
    dir_ = NewTestDir("ckpt");
    absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(2);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    std::unique_ptr<PsClient> client = ClientOf(*tasks);
    ASSERT_TRUE(client->WaitForServers(absl::Seconds(30)).ok());
    const Model model = CreateModel(*client);
    for (int seed = 1; seed <= 3; ++seed) Train(*client, model, seed);
    saved_ = PullAll(*client, model);
    absl::StatusOr<CheckpointSaved> saved = client->Save(dir_, 10, 3);
    ASSERT_TRUE(saved.ok()) << saved.status();
    checkpoint_ = saved->checkpoint;
    EXPECT_GT(saved->bytes, 0);
    Train(*client, model, 4);
    after_one_more_step_ = PullAll(*client, model);
    ASSERT_FALSE(saved_.BitwiseEquals(after_one_more_step_));
    for (PsProcess& ps : *tasks) {
      ps.process->Signal(SIGKILL);
      ASSERT_TRUE(ps.process->Wait(absl::Seconds(30)).ok());
    }
  }

  std::string dir_;
  std::string checkpoint_;
  Snapshot saved_;
  Snapshot after_one_more_step_;
};

TEST_F(PsCheckpointTest, RestartedServersRestoreIdenticalBits) {
  absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(2);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  std::unique_ptr<PsClient> client = ClientOf(*tasks);
  const Model model = CreateModel(*client);
  absl::StatusOr<CheckpointRestored> restored = client->Restore(dir_);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->checkpoint, checkpoint_);
  EXPECT_EQ(restored->step, 10);
  EXPECT_EQ(restored->variables_restored, 2 + 1 + 1);  // emb in 2 parts
  EXPECT_EQ(restored->hash_table_rows_restored,
            static_cast<int64_t>(kHashIds.size()));
  EXPECT_TRUE(PullAll(*client, model).BitwiseEquals(saved_));
  // Optimizer slots and step counts came back too: the same next step gives
  // the same bits as before the kill.
  Train(*client, model, 4);
  EXPECT_TRUE(PullAll(*client, model).BitwiseEquals(after_one_more_step_));
}

TEST_F(PsCheckpointTest, RestartedServersTakeBackTheirShards) {
  // As a launcher or Kubernetes restarts them: same tasks, same
  // --checkpoint_dir, nothing else.
  absl::StatusOr<std::vector<PsProcess>> tasks =
      StartPsProcesses(2, {absl::StrCat("--checkpoint_dir=", dir_)});
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  for (PsProcess& ps : *tasks) {
    absl::StatusOr<std::string> line =
        ps.process->ReadStdoutLine(absl::Seconds(30));
    ASSERT_TRUE(line.ok()) << line.status();
    EXPECT_THAT(*line, HasSubstr(absl::StrCat("took back this task's shard of ",
                                              checkpoint_, " (step 10)")));
  }
  std::unique_ptr<PsClient> client = ClientOf(*tasks);
  // The chief creating the variables again finds them there, restored.
  const Model model = CreateModel(*client);
  EXPECT_TRUE(PullAll(*client, model).BitwiseEquals(saved_));
  Train(*client, model, 4);
  EXPECT_TRUE(PullAll(*client, model).BitwiseEquals(after_one_more_step_));
}

TEST_F(PsCheckpointTest, TakingBackAShardNeedsTheSameNumberOfTasks) {
  absl::StatusOr<PsProcess> ps =
      testing::StartPsProcess(0, 3, {absl::StrCat("--checkpoint_dir=", dir_)});
  ASSERT_FALSE(ps.ok());
  EXPECT_THAT(ps.status().message(),
              HasSubstr("was saved by 2 ps tasks, this cluster has 3"));
}

TEST_F(PsCheckpointTest, RestoresIntoOneOrThreeServers) {
  for (int num_ps : {1, 3}) {
    SCOPED_TRACE(absl::StrCat(num_ps, " ps tasks"));
    absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(num_ps);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    std::unique_ptr<PsClient> client = ClientOf(*tasks);
    const Model model = CreateModel(*client);
    absl::StatusOr<CheckpointRestored> restored = client->Restore(dir_);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(restored->hash_table_rows_restored,
              static_cast<int64_t>(kHashIds.size()));
    EXPECT_TRUE(PullAll(*client, model).BitwiseEquals(saved_));
    Train(*client, model, 4);
    EXPECT_TRUE(PullAll(*client, model).BitwiseEquals(after_one_more_step_));
  }
}

TEST_F(PsCheckpointTest, CorruptCheckpointChangesNothingAnywhere) {
  // Flip one byte near the end of shard 1: inside a tensor, not the header.
  const std::string shard = checkpoint_ + "/shard-00001-of-00002.ckpt";
  ASSERT_TRUE(std::filesystem::exists(shard));
  {
    std::fstream file(shard, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-3, std::ios::end);
    char byte = 0;
    file.get(byte);
    file.seekp(-3, std::ios::end);
    file.put(static_cast<char>(byte ^ 0x40));
  }
  absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(2);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  std::unique_ptr<PsClient> client = ClientOf(*tasks);
  const Model model = CreateModel(*client);
  const Snapshot fresh = PullAll(*client, model);
  absl::StatusOr<CheckpointRestored> restored = client->Restore(dir_);
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(restored.status().message(), HasSubstr("shard-00001-of-00002"));
  // The task whose own shard was fine did not load it either.
  EXPECT_TRUE(PullAll(*client, model).BitwiseEquals(fresh));
  // A restarted task refuses to serve from it, naming the file.
  for (int index : {0, 1}) {
    absl::StatusOr<PsProcess> restarted = testing::StartPsProcess(
        index, 2, {absl::StrCat("--checkpoint_dir=", dir_)});
    ASSERT_FALSE(restarted.ok());
    EXPECT_THAT(restarted.status().message(),
                HasSubstr("shard-00001-of-00002.ckpt"));
    EXPECT_THAT(restarted.status().message(),
                HasSubstr("cannot take back this task's shard"));
  }
}

TEST_F(PsCheckpointTest, KeepsTheLastCheckpointsAndRefusesMissingVariables) {
  absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(2);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  std::unique_ptr<PsClient> client = ClientOf(*tasks);
  const Model model = CreateModel(*client);
  ASSERT_TRUE(client->Restore(dir_).ok());
  std::vector<std::string> deleted;
  for (int64_t step : {20, 30, 40}) {
    absl::StatusOr<CheckpointSaved> saved = client->Save(dir_, step, 3);
    ASSERT_TRUE(saved.ok()) << saved.status();
    deleted.insert(deleted.end(), saved->deleted.begin(), saved->deleted.end());
  }
  EXPECT_THAT(deleted, ::testing::ElementsAre(HasSubstr("ckpt-000000000010")));
  EXPECT_FALSE(std::filesystem::exists(checkpoint_));
  absl::StatusOr<CheckpointRestored> latest = client->Restore(dir_);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->step, 40);

  // A variable the checkpoint does not have: refused, naming it.
  ASSERT_TRUE(client
                  ->CreateVariable(
                      VariableSpec{"new_one", DType::kFloat32, {2}, {}, {}})
                  .ok());
  absl::StatusOr<CheckpointRestored> missing = client->Restore(dir_);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("\"new_one\""));
}

}  // namespace
}  // namespace distrt
