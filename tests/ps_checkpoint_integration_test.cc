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
#include "tests/util/checkpoint_model.h"
#include "tests/util/ps_processes.h"

namespace distrt {
namespace {

using ::distrt::testing::CheckpointModel;
using ::distrt::testing::CheckpointModelHashIds;
using ::distrt::testing::ClientOf;
using ::distrt::testing::CreateCheckpointModel;
using ::distrt::testing::ModelSnapshot;
using ::distrt::testing::PsProcess;
using ::distrt::testing::PullModel;
using ::distrt::testing::StartPsProcesses;
using ::distrt::testing::TrainCheckpointModel;
using ::testing::HasSubstr;

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
    const CheckpointModel model = CreateCheckpointModel(*client, 3);
    for (int seed = 1; seed <= 3; ++seed)
      TrainCheckpointModel(*client, model, seed);
    saved_ = PullModel(*client, model);
    absl::StatusOr<CheckpointSaved> saved = client->Save(dir_, 10, 3);
    ASSERT_TRUE(saved.ok()) << saved.status();
    checkpoint_ = saved->checkpoint;
    EXPECT_GT(saved->bytes, 0);
    TrainCheckpointModel(*client, model, 4);
    after_one_more_step_ = PullModel(*client, model);
    ASSERT_FALSE(saved_.BitwiseEquals(after_one_more_step_));
    for (PsProcess& ps : *tasks) {
      ps.process->Signal(SIGKILL);
      ASSERT_TRUE(ps.process->Wait(absl::Seconds(30)).ok());
    }
  }

  std::string dir_;
  std::string checkpoint_;
  ModelSnapshot saved_;
  ModelSnapshot after_one_more_step_;
};

TEST_F(PsCheckpointTest, RestartedServersRestoreIdenticalBits) {
  absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(2);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  std::unique_ptr<PsClient> client = ClientOf(*tasks);
  const CheckpointModel model = CreateCheckpointModel(*client, 3);
  absl::StatusOr<CheckpointRestored> restored = client->Restore(dir_);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->checkpoint, checkpoint_);
  EXPECT_EQ(restored->step, 10);
  EXPECT_EQ(restored->variables_restored, 2 + 1 + 1);  // emb in 2 parts
  EXPECT_EQ(restored->hash_table_rows_restored,
            static_cast<int64_t>(CheckpointModelHashIds().size()));
  EXPECT_TRUE(PullModel(*client, model).BitwiseEquals(saved_));
  // Optimizer slots and step counts came back too: the same next step gives
  // the same bits as before the kill.
  TrainCheckpointModel(*client, model, 4);
  EXPECT_TRUE(PullModel(*client, model).BitwiseEquals(after_one_more_step_));
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
  const CheckpointModel model = CreateCheckpointModel(*client, 3);
  EXPECT_TRUE(PullModel(*client, model).BitwiseEquals(saved_));
  TrainCheckpointModel(*client, model, 4);
  EXPECT_TRUE(PullModel(*client, model).BitwiseEquals(after_one_more_step_));
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
    const CheckpointModel model = CreateCheckpointModel(*client, 3);
    absl::StatusOr<CheckpointRestored> restored = client->Restore(dir_);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(restored->hash_table_rows_restored,
              static_cast<int64_t>(CheckpointModelHashIds().size()));
    EXPECT_TRUE(PullModel(*client, model).BitwiseEquals(saved_));
    TrainCheckpointModel(*client, model, 4);
    EXPECT_TRUE(PullModel(*client, model).BitwiseEquals(after_one_more_step_));
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
  const CheckpointModel model = CreateCheckpointModel(*client, 3);
  const ModelSnapshot fresh = PullModel(*client, model);
  absl::StatusOr<CheckpointRestored> restored = client->Restore(dir_);
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(restored.status().message(), HasSubstr("shard-00001-of-00002"));
  // The task whose own shard was fine did not load it either.
  EXPECT_TRUE(PullModel(*client, model).BitwiseEquals(fresh));
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
  const CheckpointModel model = CreateCheckpointModel(*client, 3);
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
