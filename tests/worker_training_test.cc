// Training jobs of real processes on 127.0.0.1: two ps_server tasks, a chief
// and a worker, over gRPC. Every process is stopped by the test, also when
// it fails (Subprocess kills what is still running).

#include <signal.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/summary/event_file_reader.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"
#include "tests/util/ps_processes.h"
#include "tests/util/separable_libsvm.h"
#include "tests/util/subprocess.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kWorkerBinary[] = "worker/worker";
// The data: 100 features, each in a row with probability 1/10.
constexpr int kFeatures = 100;
constexpr int kFeatureOneIn = 10;

// How to run task 0 of `type` (chief, worker or evaluator) with `flags`,
// with the TF_CONFIG that Kubeflow's TFJob operator writes, byte for byte
// in its shape: Go marshals the cluster map with sorted keys, the task, and
// "environment": "cloud"; the evaluator outside the cluster, as older
// operators wrote it (launch_test has it inside). The cluster
// has a chief, a worker when `with_worker`, and the ps tasks `ps`; only the
// ps addresses are real (chief and worker tasks serve nothing).
SubprocessOptions WorkerProcess(const std::vector<PsProcess>& ps,
                                const std::string& type,
                                const std::vector<std::string>& flags,
                                bool with_worker = true) {
  nlohmann::ordered_json cluster;
  cluster["chief"] = {"127.0.0.1:1"};
  if (!ps.empty()) cluster["ps"] = AddressesOf(ps);
  if (with_worker) cluster["worker"] = {"127.0.0.1:2"};
  nlohmann::ordered_json tf_config;
  tf_config["cluster"] = cluster;
  tf_config["task"] = {{"type", type}, {"index", 0}};
  tf_config["environment"] = "cloud";
  SubprocessOptions options;
  options.argv = {kWorkerBinary};
  options.argv.insert(options.argv.end(), flags.begin(), flags.end());
  options.env["TF_CONFIG"] = tf_config.dump();
  options.timeout = absl::Minutes(3);
  return options;
}

std::unique_ptr<Subprocess> StartWorker(const std::vector<PsProcess>& ps,
                                        const std::string& type,
                                        const std::vector<std::string>& flags) {
  absl::StatusOr<std::unique_ptr<Subprocess>> process =
      Subprocess::Start(WorkerProcess(ps, type, flags));
  EXPECT_TRUE(process.ok()) << process.status();
  return process.ok() ? *std::move(process) : nullptr;
}

class WorkerTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    train_ = dir_.path() + "/train.svm";
    eval_ = dir_.path() + "/eval.svm";
    WriteSeparableLibsvm(train_, 4000, 1, kFeatures, kFeatureOneIn);
    WriteSeparableLibsvm(eval_, 1000, 2, kFeatures, kFeatureOneIn);
  }
  std::vector<std::string> Flags(int train_steps) {
    return {"--model=logreg",
            "--train_data=" + train_,
            "--eval_data=" + eval_,
            absl::StrCat("--train_steps=", train_steps),
            "--global_batch_size=64",
            "--num_cpu_replicas=2",
            "--checkpoint_dir=" + dir_.path() + "/ckpt",
            "--checkpoint_every_steps=50",
            "--metrics_out=" + dir_.path() + "/metrics.json",
            "--log_every_secs=1",
            "--wait_secs=60"};
  }
  nlohmann::json Metrics(const std::string& name = "metrics.json") {
    absl::StatusOr<std::string> text =
        ReadFileToString(dir_.path() + "/" + name);
    EXPECT_TRUE(text.ok()) << text.status();
    return nlohmann::json::parse(text.ok() ? *text : "{}");
  }

  TestDir dir_;
  std::string train_, eval_;
};

TEST_F(WorkerTrainingTest, ChiefAndWorkerTrainLogisticRegressionOnTwoPs) {
  absl::StatusOr<std::vector<PsProcess>> ps = StartPsProcesses(2);
  ASSERT_TRUE(ps.ok()) << ps.status();
  std::unique_ptr<Subprocess> worker = StartWorker(*ps, "worker", Flags(300));
  std::vector<std::string> chief_flags = Flags(300);
  chief_flags.push_back("--log_dir=" + dir_.path() + "/logs");
  std::unique_ptr<Subprocess> chief = StartWorker(*ps, "chief", chief_flags);
  ASSERT_TRUE(worker && chief);
  absl::StatusOr<SubprocessResult> chief_result = chief->Wait(absl::Minutes(3));
  absl::StatusOr<SubprocessResult> worker_result =
      worker->Wait(absl::Minutes(1));
  ASSERT_TRUE(chief_result.ok()) << chief_result.status();
  ASSERT_TRUE(worker_result.ok()) << worker_result.status();
  EXPECT_EQ(chief_result->exit_code, 0) << chief_result->stderr_text;
  EXPECT_EQ(worker_result->exit_code, 0) << worker_result->stderr_text;
  EXPECT_THAT(chief_result->stdout_text,
              HasSubstr("ParameterServerStrategy: 2 replicas"));
  EXPECT_THAT(chief_result->stdout_text, HasSubstr("stopping the ps tasks"));
  EXPECT_THAT(worker_result->stdout_text, HasSubstr("input pipeline 2 of 2"));

  nlohmann::json metrics = Metrics();
  EXPECT_GE(metrics["global_step"].get<int64_t>(), 300);
  EXPECT_GT(metrics["eval_accuracy"].get<double>(), 0.8);
  EXPECT_GT(metrics["eval_auc"].get<double>(), 0.85);
  EXPECT_TRUE(metrics["eval_rmse"].is_null());
  // TensorBoard summaries: the eval metrics at the final step.
  absl::StatusOr<std::vector<std::string>> logs =
      ListDirectory(dir_.path() + "/logs");
  ASSERT_TRUE(logs.ok()) << logs.status();
  ASSERT_EQ(logs->size(), 1u);
  absl::StatusOr<std::vector<ScalarPoint>> scalars =
      ReadScalars(dir_.path() + "/logs/" + (*logs)[0]);
  ASSERT_TRUE(scalars.ok()) << scalars.status();
  bool saw_accuracy = false;
  for (const ScalarPoint& point : *scalars) {
    if (point.tag != "eval/accuracy") continue;
    saw_accuracy = true;
    EXPECT_NEAR(point.value, metrics["eval_accuracy"].get<double>(), 1e-6);
  }
  EXPECT_TRUE(saw_accuracy);
  // The chief told the ps tasks to exit, and they did, cleanly.
  for (PsProcess& p : *ps) {
    absl::StatusOr<SubprocessResult> exited =
        p.process->Wait(absl::Seconds(30));
    ASSERT_TRUE(exited.ok()) << exited.status();
    EXPECT_EQ(exited->exit_code, 0);
  }
}

TEST_F(WorkerTrainingTest, ARestartedChiefResumesFromItsCheckpoint) {
  {
    absl::StatusOr<std::vector<PsProcess>> ps = StartPsProcesses(2);
    ASSERT_TRUE(ps.ok()) << ps.status();
    // A job of a chief and the ps tasks only.
    absl::StatusOr<SubprocessResult> first = RunSubprocess(
        WorkerProcess(*ps, "chief", Flags(100), /*with_worker=*/false));
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_EQ(first->exit_code, 0) << first->stderr_text;
    EXPECT_EQ(Metrics()["global_step"].get<int64_t>(), 100);
  }
  // New, empty ps tasks; the chief restores step 100 and goes on to 200.
  absl::StatusOr<std::vector<PsProcess>> ps = StartPsProcesses(2);
  ASSERT_TRUE(ps.ok()) << ps.status();
  absl::StatusOr<SubprocessResult> second = RunSubprocess(
      WorkerProcess(*ps, "chief", Flags(200), /*with_worker=*/false));
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->exit_code, 0) << second->stderr_text;
  EXPECT_THAT(second->stdout_text, HasSubstr("(step 100)"));
  EXPECT_THAT(second->stdout_text, HasSubstr("training from global step 100"));
  EXPECT_EQ(Metrics()["global_step"].get<int64_t>(), 200);
}

// With --push_in_background (and --read_ahead) each step's push lands
// during the next step; the last one has landed before the final
// checkpoint, which therefore holds every step: a chief restarted on new ps
// tasks resumes from exactly the step the first run ended at.
TEST_F(WorkerTrainingTest, PushesInTheBackgroundLandBeforeTheFinalCheckpoint) {
  {
    absl::StatusOr<std::vector<PsProcess>> ps = StartPsProcesses(2);
    ASSERT_TRUE(ps.ok()) << ps.status();
    std::vector<std::string> flags = Flags(100);
    flags.push_back("--push_in_background");
    flags.push_back("--read_ahead");
    absl::StatusOr<SubprocessResult> first = RunSubprocess(
        WorkerProcess(*ps, "chief", flags, /*with_worker=*/false));
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_EQ(first->exit_code, 0) << first->stderr_text;
    nlohmann::json metrics = Metrics();
    EXPECT_EQ(metrics["global_step"].get<int64_t>(), 100);
    EXPECT_GT(metrics["eval_accuracy"].get<double>(), 0.8);
  }
  absl::StatusOr<std::vector<PsProcess>> ps = StartPsProcesses(2);
  ASSERT_TRUE(ps.ok()) << ps.status();
  absl::StatusOr<SubprocessResult> second = RunSubprocess(
      WorkerProcess(*ps, "chief", Flags(150), /*with_worker=*/false));
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->exit_code, 0) << second->stderr_text;
  EXPECT_THAT(second->stdout_text, HasSubstr("training from global step 100"));
  EXPECT_EQ(Metrics()["global_step"].get<int64_t>(), 150);
}

// As TF's: --strategy=parameter_server without ps tasks trains in the one
// process, and checkpoints and resumes like any local job; with several
// training tasks and no ps tasks it is refused, saying what to do.
TEST_F(WorkerTrainingTest, ParameterServerStrategyWithoutPsTasksTrainsLocally) {
  const std::vector<PsProcess> no_ps;
  std::vector<std::string> flags = Flags(100);
  flags.push_back("--strategy=parameter_server");
  absl::StatusOr<SubprocessResult> first = RunSubprocess(
      WorkerProcess(no_ps, "chief", flags, /*with_worker=*/false));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->exit_code, 0) << first->stderr_text;
  EXPECT_THAT(first->stdout_text, HasSubstr("ParameterServerStrategy: 2"));
  EXPECT_THAT(first->stdout_text, HasSubstr("no ps tasks"));
  nlohmann::json metrics = Metrics();
  EXPECT_EQ(metrics["global_step"].get<int64_t>(), 100);
  EXPECT_GT(metrics["eval_accuracy"].get<double>(), 0.75);

  flags = Flags(150);
  flags.push_back("--strategy=parameter_server");
  absl::StatusOr<SubprocessResult> second = RunSubprocess(
      WorkerProcess(no_ps, "chief", flags, /*with_worker=*/false));
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->exit_code, 0) << second->stderr_text;
  EXPECT_THAT(second->stdout_text, HasSubstr("(step 100)"));
  EXPECT_EQ(Metrics()["global_step"].get<int64_t>(), 150);

  absl::StatusOr<SubprocessResult> refused =
      RunSubprocess(WorkerProcess(no_ps, "chief", flags, /*with_worker=*/true));
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_NE(refused->exit_code, 0);
  EXPECT_THAT(refused->stderr_text, HasSubstr("2 training tasks and no ps"));
}

TEST_F(WorkerTrainingTest, TheEvaluatorEvaluatesCheckpointsUntilTheFinalOne) {
  absl::StatusOr<std::vector<PsProcess>> ps = StartPsProcesses(2);
  ASSERT_TRUE(ps.ok()) << ps.status();
  std::vector<std::string> flags = Flags(300);
  flags.push_back("--log_dir=" + dir_.path() + "/logs");
  // Started first: it waits for the first checkpoint.
  std::unique_ptr<Subprocess> evaluator = StartWorker(*ps, "evaluator", flags);
  std::unique_ptr<Subprocess> worker = StartWorker(*ps, "worker", flags);
  std::unique_ptr<Subprocess> chief = StartWorker(*ps, "chief", flags);
  ASSERT_TRUE(evaluator && worker && chief);
  absl::StatusOr<SubprocessResult> chief_result = chief->Wait(absl::Minutes(3));
  ASSERT_TRUE(chief_result.ok()) << chief_result.status();
  ASSERT_EQ(chief_result->exit_code, 0) << chief_result->stderr_text;
  absl::StatusOr<SubprocessResult> result = evaluator->Wait(absl::Minutes(1));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stderr_text;
  EXPECT_THAT(result->stdout_text, HasSubstr("evaluated the final checkpoint"));

  // The chief evaluates the state its final checkpoint holds, so the
  // evaluator's metrics of that checkpoint are the same.
  const nlohmann::json chief_metrics = Metrics();
  const nlohmann::json metrics = Metrics("metrics.evaluator.json");
  EXPECT_EQ(metrics["global_step"], chief_metrics["global_step"]);
  EXPECT_NEAR(metrics["eval_accuracy"].get<double>(),
              chief_metrics["eval_accuracy"].get<double>(), 1e-9);
  EXPECT_NEAR(metrics["eval_auc"].get<double>(),
              chief_metrics["eval_auc"].get<double>(), 1e-9);
  EXPECT_TRUE(metrics["train_loss"].is_null());
  EXPECT_GT(metrics["eval_accuracy"].get<double>(), 0.8);
  // Its summaries, in logs/eval, end at the final step.
  absl::StatusOr<std::vector<std::string>> files =
      ListDirectory(dir_.path() + "/logs/eval");
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 1u);
  absl::StatusOr<std::vector<ScalarPoint>> scalars =
      ReadScalars(dir_.path() + "/logs/eval/" + (*files)[0]);
  ASSERT_TRUE(scalars.ok()) << scalars.status();
  int64_t last_step = -1;
  for (const ScalarPoint& point : *scalars) {
    if (point.tag == "eval/accuracy") last_step = point.step;
  }
  EXPECT_EQ(last_step, metrics["global_step"].get<int64_t>());
}

TEST_F(WorkerTrainingTest, AKilledChiefRestartsFromItsCheckpoint) {
  absl::StatusOr<std::vector<PsProcess>> ps = StartPsProcesses(2);
  ASSERT_TRUE(ps.ok()) << ps.status();
  std::unique_ptr<Subprocess> chief = nullptr;
  {
    absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(
        WorkerProcess(*ps, "chief", Flags(1000000), /*with_worker=*/false));
    ASSERT_TRUE(started.ok()) << started.status();
    chief = *std::move(started);
  }
  // Reads the chief's lines until it has saved a checkpoint of step >= 100.
  int64_t saved_step = -1;
  for (int line_count = 0; line_count < 10000 && saved_step < 100;
       ++line_count) {
    absl::StatusOr<std::string> line = chief->ReadStdoutLine(absl::Minutes(1));
    ASSERT_TRUE(line.ok()) << line.status();
    const size_t at = line->find("saved ");
    const size_t ckpt = line->find("ckpt-");
    if (at != std::string::npos && ckpt != std::string::npos) {
      saved_step = std::stoll(line->substr(ckpt + 5, 12));
    }
  }
  ASSERT_GE(saved_step, 100);

  // Meanwhile the variables are spread over both ps tasks.
  const std::string cluster_file = dir_.path() + "/cluster.json";
  std::ofstream(cluster_file)
      << nlohmann::json({{"cluster", {{"ps", AddressesOf(*ps)}}}});
  absl::StatusOr<SubprocessResult> vars = RunSubprocess(
      {{"client/distctl", "vars", "--cluster_spec=" + cluster_file}});
  ASSERT_TRUE(vars.ok()) << vars.status();
  EXPECT_EQ(vars->exit_code, 0) << vars->stderr_text;
  EXPECT_THAT(vars->stdout_text, HasSubstr("global_step"));
  EXPECT_THAT(vars->stdout_text, HasSubstr("logreg/"));
  EXPECT_THAT(vars->stdout_text, HasSubstr("ps 0"));
  EXPECT_THAT(vars->stdout_text, HasSubstr("ps 1"));

  chief->Signal(SIGKILL);
  ASSERT_TRUE(chief->Wait(absl::Seconds(30)).ok());
  // The same ps tasks (still holding later values); the new chief rolls
  // back to its latest checkpoint, at or after the one seen, and goes on.
  absl::StatusOr<SubprocessResult> restarted =
      RunSubprocess(WorkerProcess(*ps, "chief", Flags(saved_step + 1000),
                                  /*with_worker=*/false));
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  ASSERT_EQ(restarted->exit_code, 0) << restarted->stderr_text;
  const size_t from = restarted->stdout_text.find("training from global step ");
  ASSERT_NE(from, std::string::npos) << restarted->stdout_text;
  const int64_t resumed_at = std::stoll(restarted->stdout_text.substr(
      from + std::string("training from global step ").size()));
  EXPECT_GE(resumed_at, saved_step);
  EXPECT_THAT(restarted->stdout_text,
              HasSubstr(absl::StrCat("(step ", resumed_at, ")")));
  EXPECT_GE(Metrics()["global_step"].get<int64_t>(), saved_step + 1000);
}

TEST_F(WorkerTrainingTest, BadFlagsAndDataAreClearErrors) {
  SubprocessOptions options;
  options.argv = {kWorkerBinary, "--model=logreg", "--train_data=" + train_};
  absl::StatusOr<SubprocessResult> no_steps = RunSubprocess(options);
  ASSERT_TRUE(no_steps.ok());
  EXPECT_EQ(no_steps->exit_code, 2);
  EXPECT_THAT(no_steps->stderr_text, HasSubstr("--train_steps"));

  const std::string bad = dir_.path() + "/bad.svm";
  std::ofstream(bad) << "1 3:1\n0 2:x\n";
  options.argv = {kWorkerBinary, "--model=logreg", "--train_data=" + bad,
                  "--epochs=1"};
  absl::StatusOr<SubprocessResult> bad_data = RunSubprocess(options);
  ASSERT_TRUE(bad_data.ok());
  EXPECT_NE(bad_data->exit_code, 0);
  EXPECT_THAT(bad_data->stderr_text, HasSubstr("bad.svm:2"));
}

}  // namespace
}  // namespace distrt::testing
