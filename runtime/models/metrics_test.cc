#include "runtime/models/metrics.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/models/model_test_util.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, BinaryByHand) {
  Metrics metrics(ModelOutput::kBinary, 1);
  // Correct: 0.9 (1), 0.4 (0), 0.5 (1, >= 0.5); wrong: 0.6 (0).
  ASSERT_TRUE(metrics.Add({1, 0, 1, 0}, {0.9f, 0.4f, 0.5f, 0.6f}, 2.0).ok());
  EXPECT_EQ(metrics.count(), 4);
  EXPECT_DOUBLE_EQ(metrics.mean_loss(), 0.5);
  EXPECT_DOUBLE_EQ(metrics.accuracy(), 0.75);
  // 0.9 beats both negatives, 0.5 beats 0.4 only: 3 of 4 pairs.
  EXPECT_DOUBLE_EQ(ExactAuc({1, 0, 1, 0}, {0.9f, 0.4f, 0.5f, 0.6f}), 0.75);
  EXPECT_DOUBLE_EQ(metrics.auc(), 0.75);
  EXPECT_EQ(metrics.ToString(), "loss=0.5000 accuracy=0.7500 auc=0.7500");
}

TEST(MetricsTest, ExactAucAveragesTies) {
  // The positive at 0.5 ties the negative at 0.5 (one half) and beats 0.1;
  // the positive at 0.8 beats both.
  EXPECT_DOUBLE_EQ(ExactAuc({1, 0, 1, 0}, {0.5f, 0.5f, 0.8f, 0.1f}), 3.5 / 4);
  EXPECT_DOUBLE_EQ(ExactAuc({1, 0, 1, 0, 1}, {0.3f, 0.3f, 0.3f, 0.3f, 0.3f}),
                   0.5);
  EXPECT_DOUBLE_EQ(ExactAuc({0, 0, 1}, {0.1f, 0.2f, 0.3f}), 1.0);
  EXPECT_DOUBLE_EQ(ExactAuc({1, 1, 0}, {0.1f, 0.2f, 0.3f}), 0.0);
  EXPECT_TRUE(std::isnan(ExactAuc({1, 1}, {0.1f, 0.2f})));
  EXPECT_TRUE(std::isnan(ExactAuc({}, {})));
}

TEST(MetricsTest, BucketedAucIsCloseToExact) {
  for (uint64_t seed : {1, 2, 3}) {
    const int n = 20000;
    // Labels drawn with probability = score, so the AUC is well inside
    // (0.5, 1).
    const std::vector<float> scores = RandomUniform(n, 0.0f, 1.0f, seed);
    const std::vector<float> draws = RandomUniform(n, 0.0f, 1.0f, seed + 100);
    std::vector<float> labels(n);
    for (int i = 0; i < n; ++i) labels[i] = draws[i] < scores[i] ? 1 : 0;
    Metrics metrics(ModelOutput::kBinary, 1);
    ASSERT_TRUE(metrics.Add(labels, scores, 0).ok());
    const double exact = ExactAuc(labels, scores);
    EXPECT_GT(exact, 0.7);
    EXPECT_NEAR(metrics.auc(), exact, 1e-3);
  }
}

TEST(MetricsTest, MergingHalvesEqualsAddingAll) {
  const int n = 1000;
  const std::vector<float> scores = RandomUniform(n, 0.0f, 1.0f, 5);
  const std::vector<float> draws = RandomUniform(n, 0.0f, 1.0f, 6);
  std::vector<float> labels(n);
  for (int i = 0; i < n; ++i) labels[i] = draws[i] < scores[i] ? 1 : 0;
  const absl::Span<const float> all_labels(labels), all_scores(scores);

  Metrics all(ModelOutput::kBinary, 1);
  ASSERT_TRUE(all.Add(all_labels, all_scores, 600.0).ok());
  Metrics first(ModelOutput::kBinary, 1), second(ModelOutput::kBinary, 1);
  ASSERT_TRUE(
      first.Add(all_labels.first(400), all_scores.first(400), 250.0).ok());
  ASSERT_TRUE(
      second.Add(all_labels.subspan(400), all_scores.subspan(400), 350.0).ok());
  ASSERT_TRUE(first.Merge(second).ok());
  EXPECT_EQ(first.count(), all.count());
  EXPECT_DOUBLE_EQ(first.mean_loss(), all.mean_loss());
  EXPECT_EQ(first.accuracy(), all.accuracy());
  EXPECT_EQ(first.auc(), all.auc());
  EXPECT_EQ(first.ToString(), all.ToString());
}

TEST(MetricsTest, MulticlassAccuracyByArgmax) {
  Metrics metrics(ModelOutput::kMulticlass, 3);
  ASSERT_TRUE(metrics
                  .Add({2, 0, 1, 1},
                       {0.1f, 0.2f, 0.7f,   // 2: right
                        0.3f, 0.6f, 0.1f,   // 1: wrong
                        0.4f, 0.4f, 0.2f,   // tie, first wins (0): wrong
                        0.2f, 0.5f, 0.3f},  // 1: right
                       4.8)
                  .ok());
  EXPECT_DOUBLE_EQ(metrics.accuracy(), 0.5);
  EXPECT_DOUBLE_EQ(metrics.mean_loss(), 1.2);
  EXPECT_TRUE(std::isnan(metrics.auc()));
  EXPECT_EQ(metrics.ToString(), "loss=1.2000 accuracy=0.5000");
}

TEST(MetricsTest, RegressionRmse) {
  Metrics metrics(ModelOutput::kRegression, 1);
  ASSERT_TRUE(metrics.Add({1, 1}, {1, 2}, 1.0).ok());
  Metrics more(ModelOutput::kRegression, 1);
  ASSERT_TRUE(more.Add({1}, {3}, 4.0).ok());
  ASSERT_TRUE(metrics.Merge(more).ok());
  // Errors 0, 1, 2.
  EXPECT_DOUBLE_EQ(metrics.rmse(), std::sqrt(5.0 / 3));
  EXPECT_DOUBLE_EQ(metrics.mean_loss(), 5.0 / 3);
  EXPECT_EQ(metrics.accuracy(), 0.0);
  EXPECT_EQ(metrics.ToString(), "loss=1.6667 rmse=1.2910");
}

TEST(MetricsTest, Empty) {
  Metrics metrics(ModelOutput::kBinary, 1);
  EXPECT_EQ(metrics.count(), 0);
  EXPECT_EQ(metrics.mean_loss(), 0.0);
  EXPECT_EQ(metrics.accuracy(), 0.0);
  EXPECT_TRUE(std::isnan(metrics.auc()));
  EXPECT_EQ(metrics.ToString(), "loss=0.0000 accuracy=0.0000");
  ASSERT_TRUE(metrics.Add({}, {}, 0).ok());
  // One class only: AUC still undefined.
  ASSERT_TRUE(metrics.Add({1, 1}, {0.2f, 0.9f}, 1.0).ok());
  EXPECT_TRUE(std::isnan(metrics.auc()));
  EXPECT_EQ(Metrics(ModelOutput::kRegression, 1).rmse(), 0.0);
}

TEST(MetricsTest, Errors) {
  Metrics binary(ModelOutput::kBinary, 1);
  absl::Status s = binary.Add({1, 0}, {0.5f}, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("1 predictions for 2 examples"));
  s = binary.Add({1, 2}, {0.5f, 0.5f}, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("example 1: label 2 is not 0 or 1"));
  EXPECT_EQ(binary.count(), 0);  // Nothing added by a failed Add.

  Metrics multiclass(ModelOutput::kMulticlass, 3);
  s = multiclass.Add({3}, {0.2f, 0.3f, 0.5f}, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("example 0: label 3 is not a class id in [0, 3)"));

  s = binary.Merge(multiclass);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cannot merge"));
}

}  // namespace
}  // namespace distrt
