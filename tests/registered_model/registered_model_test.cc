// A model registered from a test-only target (registered_model.cc) trains
// under --model=test_scaled_logreg in the build of the worker that links it,
// as a user's model in their own build of the worker would; the stock worker
// refuses the name, listing the models it has.

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

class RegisteredModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GenerateData(dir_.path(), "d",
                 {"--task=binary", "--rows=10000", "--features=100",
                  "--features_per_row=10"});
  }
  SubprocessOptions Worker(const std::string& binary) const {
    SubprocessOptions options;
    options.argv = {binary,
                    "--model=test_scaled_logreg",
                    "--train_data=" + dir_.path() + "/d.train.svm",
                    "--eval_data=" + dir_.path() + "/d.eval.svm",
                    "--train_steps=600",
                    "--global_batch_size=64",
                    "--num_cpu_replicas=2",
                    "--optimizer=adagrad",
                    "--learning_rate=0.1",
                    "--log_every_secs=5",
                    "--metrics_out=" + dir_.path() + "/metrics.json"};
    options.timeout = absl::Minutes(3);
    return options;
  }
  TestDir dir_;
};

TEST_F(RegisteredModelTest, TrainsInTheWorkerThatLinksIt) {
  absl::StatusOr<SubprocessResult> result = RunSubprocess(
      Worker("tests/registered_model/worker_with_registered_model"));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stdout_text << result->stderr_text;
  // Its own variables, named by it, not logreg's.
  EXPECT_THAT(result->stdout_text,
              HasSubstr("variable test_scaled_logreg/logreg/weights: "
                        "float32[100, 1]"));
  const nlohmann::json metrics = ReadJson(dir_.path() + "/metrics.json");
  EXPECT_EQ(metrics["global_step"].get<int64_t>(), 600);
  EXPECT_GE(metrics["eval_accuracy"].get<double>(), 0.80) << metrics.dump();
}

TEST_F(RegisteredModelTest, TheStockWorkerDoesNotKnowIt) {
  absl::StatusOr<SubprocessResult> result =
      RunSubprocess(Worker("worker/worker"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 2);
  EXPECT_THAT(result->stderr_text,
              HasSubstr("unknown model name \"test_scaled_logreg\"; known: "
                        "linear, logreg, mlp, torchscript, wide_deep"));
}

}  // namespace
}  // namespace distrt::testing
