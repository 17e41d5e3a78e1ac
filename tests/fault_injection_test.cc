// Faults injected into whole jobs that `launch` runs on 127.0.0.1: a ps task
// killed mid-training and restarted by the launcher, a worker killed, the
// chief killed and restarted, and a ps task stopped (SIGSTOP) for longer
// than --ps_failure_timeout. Each job is bounded by Subprocess's limit, and
// launch stops every task it started before it exits.

#include <signal.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"
#include "tests/util/launch_jobs.h"
#include "tests/util/subprocess.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kLineTimeout = absl::Minutes(1);

class FaultInjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GenerateData(dir_.path() + "/data", "d",
                 {"--task=binary", "--rows=10000", "--features=200",
                  "--features_per_row=10"});
  }

  std::vector<std::string> TrainingFlags() const {
    return {"--model=logreg",
            "--train_data=" + dir_.path() + "/data/d.train.svm",
            "--eval_data=" + dir_.path() + "/data/d.eval.svm",
            "--train_steps=2500",
            "--global_batch_size=64",
            "--checkpoint_every_steps=100",
            "--log_every_secs=0.5",
            "--wait_secs=60"};
  }

  std::string JobDir(const std::string& name) const {
    return dir_.path() + "/" + name;
  }

  // Starts launch with `launch_flags` (and a job dir named `name`).
  std::unique_ptr<Subprocess> StartJob(const std::string& name,
                                       std::vector<std::string> launch_flags,
                                       std::vector<std::string> task_flags) {
    launch_flags.push_back("--job_dir=" + JobDir(name));
    absl::StatusOr<std::unique_ptr<Subprocess>> launch =
        Subprocess::Start(LaunchProcess(launch_flags, task_flags));
    EXPECT_TRUE(launch.ok()) << launch.status();
    return launch.ok() ? *std::move(launch) : nullptr;
  }

  // Reads until the chief saved a checkpoint of at least `step` (its
  // checkpoints come every 100 steps, the first before training).
  void ReadUntilSavedAtLeast(Subprocess& launch, int64_t step) {
    for (int saves = 0; saves < 100; ++saves) {
      const std::string line =
          ReadUntilLineWith(launch, "[chief:0] saved ", kLineTimeout);
      if (line.empty()) return;
      const size_t at = line.find("ckpt-");
      int64_t saved = -1;
      if (at != std::string::npos &&
          absl::SimpleAtoi(line.substr(at + 5, 12), &saved) && saved >= step) {
        return;
      }
    }
    ADD_FAILURE() << "no checkpoint of step " << step;
  }

  TestDir dir_;
};

TEST_F(FaultInjectionTest,
       KilledPsTaskIsRestartedAndTheJobReachesCleanQuality) {
  absl::StatusOr<SubprocessResult> clean = RunSubprocess(LaunchProcess(
      {"--ps=2", "--workers=1", "--chief", "--job_dir=" + JobDir("clean")},
      TrainingFlags()));
  ASSERT_TRUE(clean.ok()) << clean.status();
  ASSERT_EQ(clean->exit_code, 0) << clean->stdout_text;
  const double clean_accuracy =
      ReadJson(JobDir("clean") + "/metrics.json")["eval_accuracy"]
          .get<double>();

  std::unique_ptr<Subprocess> launch = StartJob(
      "faulty", {"--ps=2", "--workers=1", "--chief", "--max_restarts=2"},
      TrainingFlags());
  ASSERT_NE(launch, nullptr);
  const int ps1 = PidOf(
      ReadUntilLineWith(*launch, "launch: started ps:1 at ", kLineTimeout));
  ReadUntilSavedAtLeast(*launch, 200);
  ASSERT_EQ(kill(ps1, SIGKILL), 0);

  absl::StatusOr<SubprocessResult> result = launch->Wait(absl::Minutes(3));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string& out = result->stdout_text;
  ASSERT_EQ(result->exit_code, 0) << out;
  EXPECT_THAT(out, HasSubstr("launch: ps:1 killed by signal 9"));
  EXPECT_THAT(out, HasSubstr("launch: restarted ps:1"));
  EXPECT_THAT(out, HasSubstr("[ps:1] ps_server: took back this task's shard"));
  EXPECT_THAT(out, HasSubstr("[chief:0] ps task 1 ("));
  EXPECT_THAT(out, HasSubstr(") restarted (incarnation "));
  const nlohmann::json metrics = ReadJson(JobDir("faulty") + "/metrics.json");
  EXPECT_GE(metrics["global_step"].get<int64_t>(), 2500);
  // Not exactly the clean run's: the restarted task's shard went back to the
  // checkpoint (up to 100 steps of its updates gone, the other task's
  // kept), and two training tasks' asynchronous steps interleave
  // differently each run (seen: 0.843 against a clean 0.8575 once in ~10
  // runs, every other run within 0.01).
  EXPECT_NEAR(metrics["eval_accuracy"].get<double>(), clean_accuracy, 0.025)
      << metrics.dump();
}

TEST_F(FaultInjectionTest, KilledWorkerIsRestartedAndTheJobFinishes) {
  std::unique_ptr<Subprocess> launch =
      StartJob("job", {"--ps=1", "--workers=2", "--chief", "--max_restarts=1"},
               TrainingFlags());
  ASSERT_NE(launch, nullptr);
  const int worker1 = PidOf(
      ReadUntilLineWith(*launch, "launch: started worker:1 at ", kLineTimeout));
  ReadUntilSavedAtLeast(*launch, 200);
  ASSERT_EQ(kill(worker1, SIGKILL), 0);

  absl::StatusOr<SubprocessResult> result = launch->Wait(absl::Minutes(3));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string& out = result->stdout_text;
  ASSERT_EQ(result->exit_code, 0) << out;
  EXPECT_THAT(out, HasSubstr("launch: restarted worker:1"));
  EXPECT_THAT(out, HasSubstr("[chief:0] all workers finished"));
  const nlohmann::json metrics = ReadJson(JobDir("job") + "/metrics.json");
  EXPECT_GE(metrics["global_step"].get<int64_t>(), 2500);
  EXPECT_GT(metrics["eval_accuracy"].get<double>(), 0.8) << metrics.dump();
}

TEST_F(FaultInjectionTest, RestartedChiefContinuesTheGlobalStep) {
  std::unique_ptr<Subprocess> launch =
      StartJob("job", {"--ps=1", "--workers=1", "--chief", "--max_restarts=1"},
               TrainingFlags());
  ASSERT_NE(launch, nullptr);
  const int chief = PidOf(
      ReadUntilLineWith(*launch, "launch: started chief:0 at ", kLineTimeout));
  ReadUntilSavedAtLeast(*launch, 300);
  ASSERT_EQ(kill(chief, SIGKILL), 0);

  // The restarted chief restores the latest checkpoint and trains on from
  // its global step, not from 0.
  const std::string restored =
      ReadUntilLineWith(*launch, "[chief:0] restored ", kLineTimeout);
  int64_t restored_step = -1;
  const size_t at = restored.rfind("(step ");
  ASSERT_NE(at, std::string::npos) << restored;
  ASSERT_TRUE(absl::SimpleAtoi(
      restored.substr(at + 6, restored.size() - at - 7), &restored_step));
  EXPECT_GE(restored_step, 300);
  const std::string training = ReadUntilLineWith(
      *launch, "[chief:0] training from global step ", kLineTimeout);
  int64_t from = -1;
  const std::string prefix = "training from global step ";
  const size_t from_at = training.find(prefix) + prefix.size();
  ASSERT_TRUE(absl::SimpleAtoi(
      training.substr(from_at, training.find(' ', from_at) - from_at), &from))
      << training;
  EXPECT_GE(from, restored_step);

  absl::StatusOr<SubprocessResult> result = launch->Wait(absl::Minutes(3));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stdout_text;
  const nlohmann::json metrics = ReadJson(JobDir("job") + "/metrics.json");
  EXPECT_GE(metrics["global_step"].get<int64_t>(), 2500);
}

// A user's PyTorch module with embedding tables on the ps tasks
// (examples/torch/wide_deep.py): a ps task and the chief killed together
// after a checkpoint. The ps task comes back holding its shard (dense
// parameters and table rows), the chief from the checkpoint, and the job
// finishes.
TEST_F(FaultInjectionTest, TorchScriptJobSurvivesAKilledPsTaskAndChief) {
  std::vector<std::string> flags = TrainingFlags();
  flags[0] = "--model=torchscript";
  flags.insert(flags.end(),
               {"--torchscript_file=examples/torch/wide_deep_16.pt",
                "--loss=sigmoid_cross_entropy", "--optimizer=adagrad",
                "--learning_rate=0.1"});
  std::unique_ptr<Subprocess> launch = StartJob(
      "torch", {"--ps=2", "--workers=1", "--chief", "--max_restarts=2"}, flags);
  ASSERT_NE(launch, nullptr);
  // launch starts the ps tasks, then the chief.
  const int ps1 = PidOf(
      ReadUntilLineWith(*launch, "launch: started ps:1 at ", kLineTimeout));
  const int chief = PidOf(
      ReadUntilLineWith(*launch, "launch: started chief:0 at ", kLineTimeout));
  ReadUntilSavedAtLeast(*launch, 300);
  ASSERT_EQ(kill(ps1, SIGKILL), 0);
  ASSERT_EQ(kill(chief, SIGKILL), 0);

  absl::StatusOr<SubprocessResult> result = launch->Wait(absl::Minutes(3));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string& out = result->stdout_text;
  ASSERT_EQ(result->exit_code, 0) << out;
  EXPECT_THAT(out, HasSubstr("launch: restarted ps:1"));
  EXPECT_THAT(out, HasSubstr("launch: restarted chief:0"));
  EXPECT_THAT(out, HasSubstr("[ps:1] ps_server: took back this task's shard"));
  EXPECT_THAT(out, HasSubstr("[chief:0] restored "));
  const nlohmann::json metrics = ReadJson(JobDir("torch") + "/metrics.json");
  EXPECT_GE(metrics["global_step"].get<int64_t>(), 2500);
  EXPECT_GE(metrics["eval_accuracy"].get<double>(), 0.75) << metrics.dump();
}

TEST_F(FaultInjectionTest, StoppedPsTaskFailsTheJobWithAClearError) {
  std::vector<std::string> flags = TrainingFlags();
  flags[3] = "--train_steps=100000000";
  flags.push_back("--ps_failure_timeout=3s");
  std::unique_ptr<Subprocess> launch = StartJob(
      "job", {"--ps=1", "--workers=1", "--chief", "--stop_secs=2"}, flags);
  ASSERT_NE(launch, nullptr);
  const int ps0 = PidOf(
      ReadUntilLineWith(*launch, "launch: started ps:0 at ", kLineTimeout));
  ReadUntilSavedAtLeast(*launch, 100);
  const nlohmann::json tasks = ReadJson(JobDir("job") + "/tasks.json");
  ASSERT_EQ(tasks["tasks"].size(), 3u);
  ASSERT_EQ(kill(ps0, SIGSTOP), 0);

  absl::StatusOr<SubprocessResult> result = launch->Wait(absl::Minutes(2));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string& out = result->stdout_text;
  EXPECT_EQ(result->exit_code, 1) << out;
  EXPECT_THAT(out, HasSubstr("ps task 0 (127.0.0.1:"));
  EXPECT_THAT(out, HasSubstr("for 3s (--ps_failure_timeout)"));
  EXPECT_THAT(out, HasSubstr("launch: job failed: "));
  for (const nlohmann::json& task : tasks["tasks"]) {
    EXPECT_FALSE(ProcessExists(task["pid"].get<int>())) << task.dump();
  }
}

}  // namespace
}  // namespace distrt::testing
