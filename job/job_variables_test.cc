// SetUpJobVariables over in-memory ps tasks (and, without them, in this
// process): the chief initialises, checkpoints at once and announces; a
// worker waits for it and takes the same variables; a restarted chief
// restores the latest checkpoint; only the chief checkpoints.

#include "job/job_variables.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/parameter_server_strategy.h"
#include "runtime/in_memory_ps/in_memory_parameter_servers.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/models/model_config.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kFeatures = 6;

std::unique_ptr<Model> Logreg() {
  ModelConfig config;
  config.name = "logreg";
  config.num_features = kFeatures;
  return *CreateModel(config);
}

std::vector<float> Values(Strategy& strategy, DistributedVariable& variable) {
  Tensor value = *strategy.ReadVar(variable);
  return {value.flat<float>().begin(), value.flat<float>().end()};
}

class JobVariablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalDevicesOptions device_options;
    device_options.num_cpu_devices = 1;
    device_options.use_gpus = false;
    devices_ =
        std::make_unique<LocalDevices>(*CreateLocalDevices(device_options));
    ps_ = *InMemoryParameterServers::Create(2);
  }

  // A ParameterServerStrategy of the chief or of another worker over ps_.
  std::unique_ptr<Strategy> OnPs(bool chief) {
    StrategyOptions options;
    options.is_chief = chief;
    std::unique_ptr<Strategy> strategy = *ParameterServerStrategy::Create(
        devices_->pointers(), ps_.get(), options);
    EXPECT_TRUE(strategy->Initialize().ok());
    return strategy;
  }

  JobVariablesOptions Options(bool with_ps) {
    JobVariablesOptions options;
    options.ps = with_ps ? ps_.get() : nullptr;
    options.checkpoint_dir = dir_.path() + "/ckpt";
    options.coordination.wait = absl::Seconds(30);
    options.log = [this](absl::string_view line) {
      absl::MutexLock lock(&log_mu_);
      log_.emplace_back(line);
    };
    return options;
  }

  std::vector<std::string> Index() {
    return *ReadCheckpointIndex(dir_.path() + "/ckpt");
  }

  TestDir dir_;
  std::unique_ptr<LocalDevices> devices_;
  std::unique_ptr<InMemoryParameterServers> ps_;
  std::unique_ptr<Model> model_ = Logreg();
  absl::Mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(JobVariablesTest, WorkersWaitForTheChiefWhichCheckpointsAtOnce) {
  std::unique_ptr<Strategy> chief = OnPs(true);
  std::unique_ptr<Strategy> worker = OnPs(false);
  // The worker starts first: it must wait for the chief's announcement.
  absl::StatusOr<std::unique_ptr<JobVariables>> on_worker;
  std::thread waiting(
      [&] { on_worker = SetUpJobVariables(*worker, *model_, Options(true)); });
  absl::StatusOr<std::unique_ptr<JobVariables>> on_chief =
      SetUpJobVariables(*chief, *model_, Options(true));
  waiting.join();
  ASSERT_TRUE(on_chief.ok()) << on_chief.status();
  ASSERT_TRUE(on_worker.ok()) << on_worker.status();

  // Only the chief checkpoints; its first checkpoint is of step 0.
  EXPECT_TRUE((*on_chief)->checkpoints.has_value());
  EXPECT_FALSE((*on_worker)->checkpoints.has_value());
  EXPECT_EQ((*on_chief)->restored, std::nullopt);
  EXPECT_THAT(Index(), ElementsAre(CheckpointDirName(0)));
  EXPECT_THAT(log_, Contains(HasSubstr("variable ")));

  // Both see the same variables on the ps tasks: a change by the chief is
  // what the worker reads.
  ModelVariables& chief_vars = (*on_chief)->variables;
  ModelVariables& worker_vars = (*on_worker)->variables;
  ASSERT_EQ(chief_vars.size(), worker_vars.size());
  DistributedVariable& w = *chief_vars.variable(0);
  std::vector<float> changed(Values(*chief, w).size(), 0.25f);
  absl::Status assigned =
      chief->Assign(w, *Tensor::FromFloats(changed, w.spec().shape));
  ASSERT_TRUE(assigned.ok()) << assigned;
  EXPECT_EQ(Values(*worker, *worker_vars.variable(0)), changed);
}

TEST_F(JobVariablesTest, ARestartedChiefRestoresTheLatestCheckpoint) {
  std::vector<float> saved;
  {
    std::unique_ptr<Strategy> chief = OnPs(true);
    std::unique_ptr<JobVariables> job =
        *SetUpJobVariables(*chief, *model_, Options(true));
    DistributedVariable& w = *job->variables.variable(0);
    saved.assign(Values(*chief, w).size(), 0.5f);
    absl::Status assigned =
        chief->Assign(w, *Tensor::FromFloats(saved, w.spec().shape));
    ASSERT_TRUE(assigned.ok()) << assigned;
    ASSERT_TRUE(chief
                    ->Assign(job->variables.global_step(),
                             *Tensor::FromValues<int64_t>({7}, {}))
                    .ok());
    ASSERT_TRUE(job->checkpoints->Save(7).ok());
  }
  // A new job on new ps tasks, the same directory.
  ps_ = *InMemoryParameterServers::Create(2);
  std::unique_ptr<Strategy> chief = OnPs(true);
  absl::StatusOr<std::unique_ptr<JobVariables>> job =
      SetUpJobVariables(*chief, *model_, Options(true));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE((*job)->restored.has_value());
  EXPECT_EQ((*job)->restored->step, 7);
  EXPECT_EQ(Values(*chief, *(*job)->variables.variable(0)), saved);
  EXPECT_EQ(*(*job)->variables.ReadGlobalStep(*chief), 7);
  // No first checkpoint over the restored one.
  EXPECT_THAT(Index(), ElementsAre(CheckpointDirName(0), CheckpointDirName(7)));
}

TEST_F(JobVariablesTest, WithoutPsTasksTheChiefCheckpointsThisProcess) {
  std::unique_ptr<Strategy> mirrored =
      *MirroredStrategy::Create(devices_->pointers());
  ASSERT_TRUE(mirrored->Initialize().ok());
  absl::StatusOr<std::unique_ptr<JobVariables>> job =
      SetUpJobVariables(*mirrored, *model_, Options(false));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE((*job)->checkpoints.has_value());
  // No ps task can restart and need a shard: no checkpoint before training.
  EXPECT_TRUE(Index().empty());
  ASSERT_TRUE((*job)->checkpoints->Save(3).ok());
  EXPECT_THAT(Index(), ElementsAre(CheckpointDirName(3)));
}

TEST_F(JobVariablesTest, AWorkerWithoutItsChiefGivesUpNamingTheWait) {
  std::unique_ptr<Strategy> worker = OnPs(false);
  JobVariablesOptions options = Options(true);
  options.coordination.wait = absl::Milliseconds(300);
  options.coordination.wait_flag = "--wait_secs";
  absl::StatusOr<std::unique_ptr<JobVariables>> job =
      SetUpJobVariables(*worker, *model_, options);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(job.status().message(), HasSubstr("--wait_secs"));
}

}  // namespace
}  // namespace distrt
