// A PyTorch model of the user's own (examples/torch/mlp.py, saved as
// TorchScript) trained by real jobs that `launch` starts on 127.0.0.1: with
// 2 ps tasks, a chief and a worker, and multi-worker mirrored with an
// evaluator. It must reach the quality gen_data says the data allows, as
// the built-in MLP does, and the evaluator must score the same final
// checkpoint as the chief. A wide & deep module with embedding tables
// (examples/torch/wide_deep.py) trains against a real ps_server as
// well as the built-in wide_deep does, and only its batches' rows move. Bad
// flags are refused before training.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"
#include "tests/util/launch_jobs.h"
#include "tests/util/ps_processes.h"
#include "tests/util/subprocess.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kModule[] = "examples/torch/mlp_20x4.pt";
constexpr char kWideDeepModule[] = "examples/torch/wide_deep_16.pt";
constexpr char kWorkerBinary[] = "worker/worker";

// The value of the sample `name` (with its labels) in a Prometheus
// exposition; -1 and a test failure when it has none.
double Sample(const std::string& exposition, const std::string& name) {
  const size_t at = exposition.find("\n" + name + " ");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no " << name << " in:\n" << exposition;
    return -1;
  }
  return std::stod(exposition.substr(at + name.size() + 2));
}

class TorchScriptTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GenerateData(dir_.path() + "/data", "d",
                 {"--task=multiclass", "--rows=20000", "--features=20",
                  "--features_per_row=20", "--classes=4"});
  }
  std::vector<std::string> Flags() const {
    return {"--model=torchscript",
            std::string("--torchscript_file=") + kModule,
            "--loss=softmax_cross_entropy",
            "--train_data=" + dir_.path() + "/data/d.train.svm",
            "--eval_data=" + dir_.path() + "/data/d.eval.svm",
            "--optimizer=adam",
            "--learning_rate=0.01",
            "--global_batch_size=64",
            "--log_every_secs=2",
            "--wait_secs=120"};
  }
  TestDir dir_;
};

TEST_F(TorchScriptTrainingTest, TrainsOnParameterServers) {
  std::vector<std::string> flags = Flags();
  flags.push_back("--train_steps=2000");
  const std::string job_dir = dir_.path() + "/job";
  absl::StatusOr<SubprocessResult> result = RunSubprocess(LaunchProcess(
      {"--ps=2", "--workers=1", "--chief", "--job_dir=" + job_dir}, flags));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stdout_text << result->stderr_text;
  // The module's parameters, by their PyTorch names, on the ps tasks.
  EXPECT_THAT(result->stdout_text,
              HasSubstr("variable hidden.weight: float32[32, 20]"));
  EXPECT_THAT(result->stdout_text, HasSubstr("variable logits.bias"));
  const nlohmann::json metrics = ReadJson(job_dir + "/metrics.json");
  EXPECT_GE(metrics["eval_accuracy"].get<double>(), 0.80) << metrics.dump();
  EXPECT_GE(metrics["global_step"].get<int64_t>(), 2000);
}

// examples/torch/cnn.py: convolutions over 8x8 images given as 64
// features, on its own shapes data (PyTorch itself reaches 0.98 on it in
// 250 steps of the same batch and optimizer).
TEST_F(TorchScriptTrainingTest, TheCnnExampleTrainsOnParameterServers) {
  const std::string data = "examples/torch/shapes/shapes";
  const std::string job_dir = dir_.path() + "/cnn_job";
  absl::StatusOr<SubprocessResult> result = RunSubprocess(LaunchProcess(
      {"--ps=1", "--workers=1", "--chief", "--job_dir=" + job_dir},
      {"--model=torchscript", "--torchscript_file=examples/torch/cnn.pt",
       "--loss=softmax_cross_entropy", "--num_features=64",
       "--train_data=" + data + ".train.svm",
       "--eval_data=" + data + ".eval.svm", "--optimizer=adam",
       "--learning_rate=0.01", "--global_batch_size=64", "--train_steps=600",
       "--log_every_secs=5", "--wait_secs=120"}));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stdout_text << result->stderr_text;
  EXPECT_THAT(result->stdout_text,
              HasSubstr("variable conv1.weight: float32[8, 1, 3, 3]"));
  const nlohmann::json metrics = ReadJson(job_dir + "/metrics.json");
  EXPECT_GE(metrics["eval_accuracy"].get<double>(), 0.95) << metrics.dump();
}

TEST_F(TorchScriptTrainingTest, TrainsMultiWorkerMirroredWithAnEvaluator) {
  std::vector<std::string> flags = Flags();
  flags.push_back("--train_steps=1000");
  flags.push_back("--strategy=multi_worker_mirrored");
  flags.push_back("--checkpoint_every_steps=500");
  const std::string job_dir = dir_.path() + "/job";
  absl::StatusOr<SubprocessResult> result = RunSubprocess(LaunchProcess(
      {"--ps=0", "--workers=2", "--evaluator", "--job_dir=" + job_dir}, flags));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stdout_text << result->stderr_text;
  EXPECT_THAT(result->stdout_text,
              HasSubstr("[evaluator:0] evaluated the final checkpoint"));
  const nlohmann::json chief = ReadJson(job_dir + "/metrics.json");
  EXPECT_GE(chief["eval_accuracy"].get<double>(), 0.80) << chief.dump();
  EXPECT_EQ(chief["global_step"].get<int64_t>(), 1000);
  const nlohmann::json evaluator =
      ReadJson(job_dir + "/metrics.evaluator.json");
  EXPECT_NEAR(evaluator["eval_accuracy"].get<double>(),
              chief["eval_accuracy"].get<double>(), 1e-9);
}

// TF_CONFIG of the chief of a cluster of the chief (which serves nothing)
// and the ps task `ps`.
nlohmann::json ChiefWithOnePs(const PsProcess& ps) {
  nlohmann::json tf_config;
  tf_config["cluster"] = {{"chief", {"127.0.0.1:1"}}, {"ps", {ps.address()}}};
  tf_config["task"] = {{"type", "chief"}, {"index", 0}};
  return tf_config;
}

// What a chief alone with one real ps task (run with --metrics_file) did.
struct ChiefRun {
  nlohmann::json metrics;  // the chief's --metrics_out
  std::string ps_metrics;  // the ps task's exposition when it stopped
};

ChiefRun RunChiefWithOnePs(const std::string& dir,
                           const std::vector<std::string>& flags) {
  ChiefRun run;
  absl::StatusOr<PsProcess> ps =
      StartPsProcess(0, 1, {"--metrics_file=" + dir + "/ps.prom"});
  EXPECT_TRUE(ps.ok()) << ps.status();
  if (!ps.ok()) return run;
  const nlohmann::json tf_config = ChiefWithOnePs(*ps);
  SubprocessOptions options;
  options.argv = {kWorkerBinary, "--metrics_out=" + dir + "/metrics.json"};
  options.argv.insert(options.argv.end(), flags.begin(), flags.end());
  options.env["TF_CONFIG"] = tf_config.dump();
  options.timeout = absl::Minutes(4);
  absl::StatusOr<SubprocessResult> chief = RunSubprocess(options);
  EXPECT_TRUE(chief.ok()) << chief.status();
  if (!chief.ok()) return run;
  EXPECT_EQ(chief->exit_code, 0) << chief->stdout_text << chief->stderr_text;
  // The chief stops the ps task at the end; it then writes its metrics.
  absl::StatusOr<SubprocessResult> stopped =
      ps->process->Wait(absl::Seconds(30));
  EXPECT_TRUE(stopped.ok()) << stopped.status();
  run.metrics = ReadJson(dir + "/metrics.json");
  absl::StatusOr<std::string> exposition = ReadFileToString(dir + "/ps.prom");
  EXPECT_TRUE(exposition.ok()) << exposition.status();
  if (exposition.ok()) run.ps_metrics = *exposition;
  return run;
}

TEST_F(TorchScriptTrainingTest, EmbeddingTablesLiveOnThePsTasks) {
  // 2000 feature ids; a batch of 32 examples of 10 features each names at
  // most 320 of them.
  GenerateData(dir_.path() + "/ctr", "ctr",
               {"--task=binary", "--rows=20000", "--features=2000",
                "--features_per_row=10", "--noise=0.05"});
  const std::vector<std::string> common = {
      "--train_data=" + dir_.path() + "/ctr/ctr.train.svm",
      "--eval_data=" + dir_.path() + "/ctr/ctr.eval.svm",
      "--optimizer=adagrad",
      "--learning_rate=0.1",
      "--global_batch_size=32",
      "--train_steps=1500",
      "--log_every_secs=5",
      "--wait_secs=120"};
  std::vector<std::string> torch_flags = common;
  torch_flags.insert(torch_flags.end(),
                     {"--model=torchscript",
                      std::string("--torchscript_file=") + kWideDeepModule,
                      "--loss=sigmoid_cross_entropy"});
  ASSERT_TRUE(CreateDirectories(dir_.path() + "/torch").ok());
  const ChiefRun torch = RunChiefWithOnePs(dir_.path() + "/torch", torch_flags);
  std::vector<std::string> builtin_flags = common;
  builtin_flags.insert(
      builtin_flags.end(),
      {"--model=wide_deep", "--embedding_dim=16", "--hidden_units=32,16"});
  ASSERT_TRUE(CreateDirectories(dir_.path() + "/builtin").ok());
  const ChiefRun builtin =
      RunChiefWithOnePs(dir_.path() + "/builtin", builtin_flags);

  const double accuracy = torch.metrics["eval_accuracy"].get<double>();
  EXPECT_GE(accuracy, 0.80) << torch.metrics.dump();
  EXPECT_NEAR(accuracy, builtin.metrics["eval_accuracy"].get<double>(), 0.01)
      << torch.metrics.dump() << builtin.metrics.dump();

  // The tables (dims 1 and 16) are hash tables on the ps task, holding a
  // row for each id seen; each pull brought far less than a whole table.
  const std::string& ps = torch.ps_metrics;
  EXPECT_EQ(Sample(ps, "distrt_ps_hash_tables"), 2) << ps;
  const double rows = Sample(ps, "distrt_ps_hash_table_rows");
  EXPECT_GT(rows, 2 * 1500) << ps;  // most of the 2 x 2000 ids
  const double pulls =
      Sample(ps, "distrt_rpc_requests_total{method=\"PullHash\",code=\"OK\"}");
  const double pulled_bytes =
      Sample(ps, "distrt_rpc_sent_bytes_total{method=\"PullHash\"}");
  ASSERT_GE(pulls, 1500);
  const double both_tables_bytes = rows / 2 * (1 + 16) * sizeof(float);
  EXPECT_LT(pulled_bytes / pulls, 0.3 * both_tables_bytes) << ps;
  std::printf(
      "accuracy %.4f (built-in wide_deep %.4f); %.0f rows held; a pull "
      "%.0f bytes of %.0f\n",
      accuracy, builtin.metrics["eval_accuracy"].get<double>(), rows,
      pulled_bytes / pulls, both_tables_bytes);
  const double pushed_bytes =
      Sample(ps, "distrt_rpc_received_bytes_total{method=\"PushHash\"}");
  const double pushes =
      Sample(ps, "distrt_rpc_requests_total{method=\"PushHash\",code=\"OK\"}");
  ASSERT_GE(pushes, 1500);
  EXPECT_LT(pushed_bytes / pushes, 0.3 * both_tables_bytes) << ps;
}

// A module whose forward raises on one example deep in the data: the chief
// fails naming the error and the step, and the ps task, which got every
// earlier step's update and none of the failed one's, keeps serving them.
TEST_F(TorchScriptTrainingTest, AForwardThatRaisesFailsTheTaskNotThePsTask) {
  std::string rows;
  for (int i = 0; i < 2000; ++i) {
    rows += i == 1200
                ? "1 4:5000\n"
                : absl::StrCat(i % 2, " 1:0.5 2:-0.25 3:", i % 7, " 4:0.3\n");
  }
  const std::string data = dir_.WriteFile("raises.svm", rows);
  absl::StatusOr<PsProcess> ps = StartPsProcess(0, 1);
  ASSERT_TRUE(ps.ok()) << ps.status();
  const nlohmann::json tf_config = ChiefWithOnePs(*ps);
  SubprocessOptions chief;
  chief.argv = {kWorkerBinary,
                "--model=torchscript",
                "--torchscript_file=runtime/torchscript/testdata/raises.pt",
                "--loss=softmax_cross_entropy",
                "--train_data=" + data,
                "--global_batch_size=4",
                "--train_steps=5000",
                "--wait_secs=60"};
  chief.env["TF_CONFIG"] = tf_config.dump();
  chief.timeout = absl::Minutes(2);
  absl::StatusOr<SubprocessResult> failed = RunSubprocess(chief);
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_NE(failed->exit_code, 0);
  EXPECT_THAT(failed->stderr_text,
              HasSubstr("an example with a feature beyond 1000"));
  EXPECT_THAT(failed->stderr_text, HasSubstr("the training step after global "
                                             "step "));

  // The ps task still serves the module's trained values.
  SubprocessOptions pull;
  pull.argv = {"client/distctl", "pull", "fc.weight"};
  pull.env["TF_CONFIG"] = tf_config.dump();
  pull.timeout = absl::Minutes(1);
  absl::StatusOr<SubprocessResult> values = RunSubprocess(pull);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->exit_code, 0) << values->stderr_text;
  EXPECT_THAT(values->stdout_text, HasSubstr("fc.weight"));
  EXPECT_THAT(values->stdout_text, ::testing::Not(HasSubstr("nan")));
  SubprocessOptions shutdown = pull;
  shutdown.argv = {"client/distctl", "shutdown"};
  absl::StatusOr<SubprocessResult> stopped = RunSubprocess(shutdown);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->exit_code, 0) << stopped->stderr_text;
  absl::StatusOr<SubprocessResult> exited =
      ps->process->Wait(absl::Seconds(30));
  ASSERT_TRUE(exited.ok()) << exited.status();
}

TEST_F(TorchScriptTrainingTest, BadFlagsAreRefusedBeforeTraining) {
  struct Case {
    std::vector<std::string> flags;
    const char* message;
  };
  const std::string data = "--train_data=" + dir_.path() + "/data/d.train.svm";
  const std::vector<Case> cases = {
      {{"--model=torchscript", "--loss=softmax_cross_entropy"},
       "--model=torchscript needs --torchscript_file"},
      {{"--model=torchscript", std::string("--torchscript_file=") + kModule},
       "--loss is required with --model=torchscript"},
      {{"--model=torchscript", std::string("--torchscript_file=") + kModule,
        "--loss=sigmoid_cross_entropy"},
       "sigmoid_cross_entropy needs 1 output per example; forward returns 4"},
      {{"--model=torchscript",
        "--torchscript_file=" + dir_.path() + "/data/d.train.svm",
        "--loss=mean_squared_error"},
       "d.train.svm: not a TorchScript file"},
      {{"--model=mlp", std::string("--torchscript_file=") + kModule},
       "--torchscript_file and --loss are for --model=torchscript"},
      {{"--model=torchscript", std::string("--torchscript_file=") + kModule,
        "--loss=softmax_cross_entropy", "--devices=gpu"},
       "--devices: \"gpu\" with --model=torchscript: TorchScript models "
       "compute on CPU devices"},
      {{"--model=torchscript", "--torchscript_file=/nonexistent/model.pt",
        "--loss=mean_squared_error"},
       "--torchscript_file=/nonexistent/model.pt: cannot read it: No such "
       "file or directory"},
      {{"--model=torchscript",
        "--torchscript_file=runtime/torchscript/testdata/newer.pt",
        "--loss=mean_squared_error"},
       "newer.pt: written by a newer PyTorch than this LibTorch (1.13) can "
       "read"},
      {{"--model=torchscript",
        "--torchscript_file=runtime/torchscript/testdata/two_arguments.pt",
        "--loss=mean_squared_error"},
       "forward() is missing value for argument 'y'"},
  };
  for (const Case& c : cases) {
    SubprocessOptions options;
    options.argv = {kWorkerBinary, data, "--train_steps=10"};
    options.argv.insert(options.argv.end(), c.flags.begin(), c.flags.end());
    options.timeout = absl::Minutes(1);
    absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
    ASSERT_TRUE(result.ok()) << result.status();
    // Bad input: exit status 2 and one line, before training.
    EXPECT_EQ(result->exit_code, 2) << c.message;
    EXPECT_THAT(result->stderr_text, HasSubstr(c.message));
    EXPECT_EQ(std::count(result->stderr_text.begin(), result->stderr_text.end(),
                         '\n'),
              1)
        << result->stderr_text;
    EXPECT_THAT(result->stdout_text,
                ::testing::Not(HasSubstr("training from global step")));
  }
}

}  // namespace
}  // namespace distrt::testing
