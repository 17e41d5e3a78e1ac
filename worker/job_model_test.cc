#include "worker/job_model.h"

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

WorkerOptions OptionsFor(const std::string& model, const std::string& train) {
  WorkerOptions options;
  options.model = model;
  options.train_data = train;
  options.train_steps = 10;
  return options;
}

TEST(JobModelTest, DenseModelsTakeLibsvmRowsAsDenseRows) {
  TestDir dir;
  const std::string train = dir.path() + "/train.svm";
  std::ofstream(train) << "1 1:0.5 3:2\n0 2:-1\n2 4:1\n";
  absl::StatusOr<JobModel> job = BuildJobModel(OptionsFor("mlp", train));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->config.num_features, 4);
  EXPECT_EQ(job->config.num_classes, 3);
  ASSERT_EQ(job->all_examples.size(), 3u);
  EXPECT_THAT(job->all_examples[0].dense, ElementsAre(0.5f, 0, 2, 0));
  EXPECT_THAT(job->all_examples[1].dense, ElementsAre(0, -1, 0, 0));
  EXPECT_TRUE(job->all_examples[0].ids.empty());

  // Eval rows are fitted to the model the training data gave.
  const std::string eval = dir.path() + "/eval.svm";
  std::ofstream(eval) << "1 2:3\n0 5:1\n";
  WorkerOptions options = OptionsFor("mlp", train);
  options.eval_data = eval;
  absl::StatusOr<std::vector<Example>> examples =
      ReadEvalData(options, job->config, job->format, *job->model);
  EXPECT_EQ(examples.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(examples.status().message(),
              HasSubstr(eval + ":2: feature id 5 (1-based) but the model "
                               "has 4 features"));
}

TEST(JobModelTest, SparseModelsKeepSparseRows) {
  TestDir dir;
  const std::string train = dir.path() + "/train.svm";
  std::ofstream(train) << "1 1:1 30:1\n0 2:1\n";
  absl::StatusOr<JobModel> job = BuildJobModel(OptionsFor("logreg", train));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->config.num_features, 30);
  EXPECT_THAT(job->all_examples[0].ids, ElementsAre(0, 29));
  EXPECT_TRUE(job->all_examples[0].dense.empty());
}

TEST(JobModelTest, HiddenUnitsAreTheLayerWidths) {
  TestDir dir;
  const std::string train = dir.path() + "/train.svm";
  std::ofstream(train) << "1 1:1 2:1\n0 2:1\n";
  WorkerOptions options = OptionsFor("mlp", train);
  options.hidden_units = "16,8";
  absl::StatusOr<JobModel> job = BuildJobModel(options);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(job->config.hidden_units, ElementsAre(16, 8));
  options.hidden_units = "16,,8";
  job = BuildJobModel(options);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(job.status().message(), HasSubstr("--hidden_units: \"\""));
}

TEST(JobModelTest, NoFeaturesIsAClearError) {
  TestDir dir;
  const std::string train = dir.path() + "/train.svm";
  std::ofstream(train) << "1\n0\n";
  absl::StatusOr<JobModel> job = BuildJobModel(OptionsFor("linear", train));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(job.status().message(), HasSubstr("holds no features"));
}

}  // namespace
}  // namespace distrt
