// A PyTorch model of the user's own (examples/torchscript/mlp.py, saved as
// TorchScript) trained by real jobs that `launch` starts on 127.0.0.1: with
// 2 ps tasks, a chief and a worker, and multi-worker mirrored with an
// evaluator. It must reach the quality gen_data says the data allows, as
// the built-in MLP does, and the evaluator must score the same final
// checkpoint as the chief. Bad flags are refused before training.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/util/test_dir.h"
#include "tests/util/launch_jobs.h"
#include "tests/util/subprocess.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kModule[] = "examples/torchscript/mlp_20x4.pt";
constexpr char kWorkerBinary[] = "worker/worker";

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
      {{"--model=torchscript", "--torchscript_file=" + data,
        "--loss=mean_squared_error"},
       "not a TorchScript file"},
      {{"--model=mlp", std::string("--torchscript_file=") + kModule},
       "--torchscript_file and --loss are for --model=torchscript"},
  };
  for (const Case& c : cases) {
    SubprocessOptions options;
    options.argv = {kWorkerBinary, data, "--train_steps=10"};
    options.argv.insert(options.argv.end(), c.flags.begin(), c.flags.end());
    options.timeout = absl::Minutes(1);
    absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_NE(result->exit_code, 0) << c.message;
    EXPECT_THAT(result->stderr_text, HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace distrt::testing
