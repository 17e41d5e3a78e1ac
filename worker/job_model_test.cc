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

// Every example of `path` as the job's pipeline reads it (fitted).
std::vector<Example> ReadAll(const std::string& path, const JobModel& job) {
  std::vector<Example> all;
  const absl::Status read =
      ForEachExample(path, *job.records, [&](Example& example) {
        all.push_back(std::move(example));
        return absl::OkStatus();
      });
  EXPECT_TRUE(read.ok()) << read;
  return all;
}

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
  const std::vector<Example> all = ReadAll(train, *job);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_THAT(all[0].dense, ElementsAre(0.5f, 0, 2, 0));
  EXPECT_THAT(all[1].dense, ElementsAre(0, -1, 0, 0));
  EXPECT_TRUE(all[0].ids.empty());

  // Eval rows are fitted to the model the training data gave, as the
  // pipeline parses them.
  const std::string eval = dir.path() + "/eval.svm";
  std::ofstream(eval) << "1 2:3\n0 5:1\n";
  WorkerOptions options = OptionsFor("mlp", train);
  options.eval_data = eval;
  absl::StatusOr<std::vector<std::string>> files =
      CheckEvalData(options, *job->records);
  ASSERT_TRUE(files.ok()) << files.status();
  const absl::Status read = ForEachExample(
      eval, *job->records, [](Example&) { return absl::OkStatus(); });
  EXPECT_EQ(read.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.message(),
              HasSubstr(eval + ":2: feature id 5 (1-based) but the model "
                               "has 4 features"));
  options.eval_data = dir.path() + "/missing.svm";
  EXPECT_THAT(CheckEvalData(options, *job->records).status().message(),
              HasSubstr("--eval_data: "));
}

TEST(JobModelTest, SparseModelsKeepSparseRows) {
  TestDir dir;
  const std::string train = dir.path() + "/train.svm";
  std::ofstream(train) << "1 1:1 30:1\n0 2:1\n";
  absl::StatusOr<JobModel> job = BuildJobModel(OptionsFor("logreg", train));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->config.num_features, 30);
  const std::vector<Example> all = ReadAll(train, *job);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_THAT(all[0].ids, ElementsAre(0, 29));
  EXPECT_TRUE(all[0].dense.empty());
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

// A spec with one numeric feature "x" and one hashed categorical "c" in
// group "g", written to `dir`.
std::string WriteSpec(const TestDir& dir, bool with_group) {
  const std::string path = dir.path() + "/spec.json";
  std::ofstream(path)
      << R"({"label": "y", "numeric": [{"name": "x", "length": 2}])"
      << (with_group ? R"(, "categorical": [{"name": "c", "kind": "hashed"}],
             "embedding_groups": [{"name": "g", "features": ["c"], "dim": 4}])"
                     : "")
      << "}";
  return path;
}

TEST(JobModelTest, AFeatureSpecGivesTheShapesAndNamedCsvColumns) {
  TestDir dir;
  const std::string train = dir.path() + "/train.csv";
  std::ofstream(train) << "c,y,x\n7,1,0.5\n9,0,1.5\n";
  WorkerOptions options = OptionsFor("wide_deep", train);
  options.features = WriteSpec(dir, /*with_group=*/true);
  absl::StatusOr<JobModel> job = BuildJobModel(options);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->config.feature_spec->groups.size(), 1u);
  EXPECT_TRUE(job->format.csv.has_header);
  // "x" has length 2, but a CSV cell holds one value.
  EXPECT_EQ(ForEachExample(train, *job->records,
                           [](Example&) { return absl::OkStatus(); })
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(JobModelTest, ASpecOfEmbeddingGroupsOnlyNeedsNoPassOverTheData) {
  TestDir dir;
  const std::string train = dir.path() + "/train.csv";
  std::ofstream(train) << "c,y\n7,1\n9,0\n";
  const std::string spec = dir.path() + "/groups_only.json";
  std::ofstream(spec) << R"({"label": "y",
      "categorical": [{"name": "c", "kind": "hashed"}],
      "embedding_groups": [{"name": "g", "features": ["c"], "dim": 4}]})";
  WorkerOptions options = OptionsFor("wide_deep", train);
  options.features = spec;
  absl::StatusOr<JobModel> job = BuildJobModel(options);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->config.num_features, 0);
  const std::vector<Example> all = ReadAll(train, *job);
  ASSERT_EQ(all.size(), 2u);
  ASSERT_EQ(all[0].groups.size(), 1u);
  EXPECT_THAT(all[0].groups[0].ids, ElementsAre(7));
}

TEST(JobModelTest, ASpecTheModelCannotTakeIsRefused) {
  TestDir dir;
  const std::string train = dir.path() + "/train.tfrecord";
  std::ofstream(train) << "";
  WorkerOptions options = OptionsFor("mlp", train);
  options.features = WriteSpec(dir, /*with_group=*/true);
  EXPECT_THAT(BuildJobModel(options).status().message(),
              HasSubstr("--features: the spec has embedding groups, which mlp "
                        "does not take"));
  options.model = "logreg";
  EXPECT_THAT(BuildJobModel(options).status().message(),
              HasSubstr("--features: logreg takes LIBSVM feature ids"));
  // TFRecord data (by the file name) without a spec.
  options = OptionsFor("mlp", train);
  EXPECT_THAT(BuildJobModel(options).status().message(),
              HasSubstr("--train_data (tfrecord): TFRecord data needs a "
                        "feature spec (--features)"));
  options.features = dir.path() + "/nowhere.json";
  EXPECT_THAT(BuildJobModel(options).status().message(),
              HasSubstr("--features: "));
}

}  // namespace
}  // namespace distrt
