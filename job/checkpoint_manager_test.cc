// CheckpointManager over a program's own variables (FromVariables, no
// Model): in this process under MirroredStrategy, and on two ps tasks under
// ParameterServerStrategy (ps servers over gRPC, and in-memory ones). Saves
// keep the newest max_to_keep, a restore brings back values and global
// step, SaveFinal saves only what is new and writes the marker that
// RestoreLatest removes.

#include "job/checkpoint_manager.h"

#include <memory>
#include <string>
#include <vector>

#include "client/ps_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/in_process_ps_tasks.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/parameter_server_strategy.h"
#include "runtime/in_memory_ps/in_memory_parameter_servers.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

// Which strategy the variables live under.
enum class Where { kThisProcess, kPsTasks, kInMemoryPsTasks };

class CheckpointManagerTest : public ::testing::TestWithParam<Where> {
 protected:
  void SetUp() override {
    LocalDevicesOptions device_options;
    device_options.num_cpu_devices = 2;
    device_options.use_gpus = false;
    devices_ =
        std::make_unique<LocalDevices>(*CreateLocalDevices(device_options));
    if (GetParam() == Where::kPsTasks) {
      absl::StatusOr<rpc::InProcessPsTasks> tasks =
          rpc::StartInProcessPsTasks(2);
      ASSERT_TRUE(tasks.ok()) << tasks.status();
      ps_ = *std::move(tasks);
      client_ = *PsClient::Create(ps_.addresses, PsClient::Options());
      ps_servers_ = client_.get();
    } else if (GetParam() == Where::kInMemoryPsTasks) {
      in_memory_ = *InMemoryParameterServers::Create(2);
      ps_servers_ = in_memory_.get();
    }
    if (ps_servers_ != nullptr) {
      strategy_ =
          *ParameterServerStrategy::Create(devices_->pointers(), ps_servers_);
    } else {
      strategy_ = *MirroredStrategy::Create(devices_->pointers());
    }
    ASSERT_TRUE(strategy_->Initialize().ok());
    VariableOptions w;
    w.spec.name = "w";
    w.spec.shape = {3};
    w.aggregation = VariableAggregation::kSum;
    w_ = *strategy_->CreateVariable(w);
    variables_.emplace(*ModelVariables::FromVariables(*strategy_, {w_}));
  }
  void TearDown() override {
    for (auto& server : ps_.servers) server->Stop();
  }

  CheckpointManager Manager(int max_to_keep) {
    CheckpointManager::Options options;
    options.directory = dir_.path() + "/ckpt";
    options.max_to_keep = max_to_keep;
    options.log = [this](absl::string_view line) { log_.emplace_back(line); };
    return CheckpointManager(ps_servers_, &*variables_, options);
  }
  void SetW(std::vector<float> values) {
    ASSERT_TRUE(strategy_->Assign(*w_, *Tensor::FromFloats(values, {3})).ok());
  }
  std::vector<float> W() {
    Tensor value = *strategy_->ReadVar(*w_);
    return {value.flat<float>().begin(), value.flat<float>().end()};
  }
  void SetStep(int64_t step) {
    ASSERT_TRUE(strategy_
                    ->Assign(variables_->global_step(),
                             *Tensor::FromValues<int64_t>({step}, {}))
                    .ok());
  }
  std::vector<std::string> Index() {
    return *ReadCheckpointIndex(dir_.path() + "/ckpt");
  }

  TestDir dir_;
  std::unique_ptr<LocalDevices> devices_;
  rpc::InProcessPsTasks ps_;
  std::unique_ptr<PsClient> client_;
  std::unique_ptr<InMemoryParameterServers> in_memory_;
  ParameterServers* ps_servers_ = nullptr;  // null: in this process
  std::unique_ptr<Strategy> strategy_;
  DistributedVariable* w_ = nullptr;
  std::optional<ModelVariables> variables_;
  std::vector<std::string> log_;
};

TEST_P(CheckpointManagerTest, SavesKeepsAndRestoresTheNewest) {
  CheckpointManager checkpoints = Manager(/*max_to_keep=*/2);
  absl::StatusOr<std::optional<CheckpointManager::Restored>> none =
      checkpoints.RestoreLatest();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, std::nullopt);
  EXPECT_TRUE(*checkpoints.Empty());

  SetW({1, 2, 3});
  SetStep(5);
  absl::StatusOr<CheckpointManager::Saved> saved = checkpoints.Save(5);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_THAT(saved->checkpoint, HasSubstr("ckpt-"));
  EXPECT_GT(saved->bytes, 0);
  SetW({7, 7, 7});
  SetStep(7);
  ASSERT_TRUE(checkpoints.Save(7).ok());
  SetW({9, 8, 7});
  SetStep(9);
  ASSERT_TRUE(checkpoints.Save(9).ok());
  EXPECT_THAT(Index(), ElementsAre(CheckpointDirName(7), CheckpointDirName(9)));
  EXPECT_FALSE(*checkpoints.Empty());

  SetW({0, 0, 0});
  SetStep(100);
  absl::StatusOr<std::optional<CheckpointManager::Restored>> restored =
      checkpoints.RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 9);
  EXPECT_THAT(W(), ElementsAre(9, 8, 7));
  EXPECT_EQ(*variables_->ReadGlobalStep(*strategy_), 9);
  EXPECT_THAT(log_, testing::Contains(HasSubstr("restored ")));
}

TEST_P(CheckpointManagerTest, SaveFinalMarksTheLastCheckpoint) {
  CheckpointManager checkpoints = Manager(/*max_to_keep=*/0);
  const std::string dir = dir_.path() + "/ckpt";
  SetW({1, 1, 1});
  ASSERT_TRUE(checkpoints.Save(3).ok());
  // The latest is step 3 already: no second save, only the marker.
  EXPECT_EQ(*checkpoints.SaveFinal(3), CheckpointDirName(3));
  EXPECT_THAT(Index(), ElementsAre(CheckpointDirName(3)));
  EXPECT_THAT(*ReadFinalCheckpointMarker(dir), Optional(CheckpointDirName(3)));
  // A later step is saved first.
  SetW({2, 2, 2});
  EXPECT_EQ(*checkpoints.SaveFinal(4), CheckpointDirName(4));
  EXPECT_THAT(Index(), ElementsAre(CheckpointDirName(3), CheckpointDirName(4)));
  EXPECT_THAT(*ReadFinalCheckpointMarker(dir), Optional(CheckpointDirName(4)));
  // A job that restores is not finished: evaluators wait again.
  ASSERT_TRUE(checkpoints.RestoreLatest().ok());
  EXPECT_EQ(*ReadFinalCheckpointMarker(dir), std::nullopt);
  EXPECT_THAT(W(), ElementsAre(2, 2, 2));
}

TEST_P(CheckpointManagerTest, ADamagedCheckpointChangesNothing) {
  CheckpointManager checkpoints = Manager(/*max_to_keep=*/0);
  SetW({4, 5, 6});
  ASSERT_TRUE(checkpoints.Save(1).ok());
  SetW({1, 1, 1});
  // Every shard file of the checkpoint, cut short.
  const std::string ckpt = dir_.path() + "/ckpt/" + CheckpointDirName(1);
  std::vector<std::string> files = *ListDirectory(ckpt);
  ASSERT_FALSE(files.empty());
  for (const std::string& name : files) {
    const std::string path = ckpt + "/" + name;
    std::string bytes = *ReadFileToString(path);
    ASSERT_TRUE(
        WriteFileAtomically(path, {bytes.substr(0, bytes.size() / 2)}).ok());
  }
  absl::StatusOr<std::optional<CheckpointManager::Restored>> restored =
      checkpoints.RestoreLatest();
  EXPECT_FALSE(restored.ok());
  EXPECT_THAT(W(), ElementsAre(1, 1, 1));
}

// Deltas every save but each third; a ps task whose marks are not those of
// the last save (here: it restored an older checkpoint, as a restarted
// task would) refuses a delta, and that save is made in full.
TEST_P(CheckpointManagerTest, DeltasBetweenFullSavesAndAFullSaveOnARefusal) {
  if (ps_servers_ == nullptr) GTEST_SKIP() << "deltas are for ps tasks";
  CheckpointManager::Options options;
  options.directory = dir_.path() + "/ckpt";
  options.max_to_keep = 2;
  options.full_checkpoint_every = 3;
  options.log = [this](absl::string_view line) { log_.emplace_back(line); };
  CheckpointManager checkpoints(ps_servers_, &*variables_, options);
  std::vector<bool> deltas;
  for (int64_t step = 1; step <= 5; ++step) {
    SetW({1.0f * step, 2, 3});
    SetStep(step);
    absl::StatusOr<CheckpointManager::Saved> saved = checkpoints.Save(step);
    ASSERT_TRUE(saved.ok()) << saved.status();
    deltas.push_back(saved->delta);
  }
  EXPECT_THAT(deltas, ElementsAre(false, true, true, false, true));
  // max_to_keep 2 keeps 4 and 5, and 5 needs nothing older than 4.
  EXPECT_THAT(Index(), ElementsAre(CheckpointDirName(4), CheckpointDirName(5)));
  ASSERT_TRUE(
      ps_servers_->Restore(dir_.path() + "/ckpt/" + CheckpointDirName(4)).ok());
  SetW({6, 6, 6});
  SetStep(6);
  absl::StatusOr<CheckpointManager::Saved> saved = checkpoints.Save(6);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_FALSE(saved->delta);
  EXPECT_THAT(log_, testing::Contains(HasSubstr("refused, saving in full")));
  SetW({0, 0, 0});
  ASSERT_TRUE(checkpoints.RestoreLatest().ok());
  EXPECT_THAT(W(), ElementsAre(6, 6, 6));
  // The next is a delta of 6 again.
  SetStep(7);
  saved = checkpoints.Save(7);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_FALSE(saved->delta);  // the first save after a restore is full
  saved = checkpoints.Save(8);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_TRUE(saved->delta);
}

INSTANTIATE_TEST_SUITE_P(Everywhere, CheckpointManagerTest,
                         ::testing::Values(Where::kThisProcess, Where::kPsTasks,
                                           Where::kInMemoryPsTasks),
                         [](const ::testing::TestParamInfo<Where>& info) {
                           switch (info.param) {
                             case Where::kPsTasks:
                               return "PsTasks";
                             case Where::kInMemoryPsTasks:
                               return "InMemoryPsTasks";
                             default:
                               return "ThisProcess";
                           }
                         });

}  // namespace
}  // namespace distrt
