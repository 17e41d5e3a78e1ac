#include "runtime/models/logreg_model.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/models/model_test_util.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::FloatNear;
using ::testing::HasSubstr;

// Binary cross-entropy from the probability, the textbook way.
double CrossEntropy(double logit, double label) {
  const double p = 1 / (1 + std::exp(-logit));
  return -label * std::log(p) - (1 - label) * std::log(1 - p);
}

std::vector<VariableSlice> Values(std::vector<int64_t> ids,
                                  std::vector<float> rows, float bias) {
  std::vector<VariableSlice> values(2);
  values[0].ids = std::move(ids);
  values[0].rows = std::move(rows);
  values[1].dense = {bias};
  return values;
}

TEST(LogRegModelTest, Variables) {
  ModelVariableOptions options;
  options.partition = PartitionPolicy::FixedShards(3);
  const LogRegModel model(100, options);
  EXPECT_EQ(model.name(), "logreg");
  EXPECT_EQ(model.output(), ModelOutput::kBinary);
  ASSERT_EQ(model.variables().size(), 2u);
  const ModelVariable& weights = model.variables()[0];
  EXPECT_EQ(weights.name(), "logreg/weights");
  EXPECT_EQ(weights.kind, ModelVariable::Kind::kRowSparse);
  EXPECT_EQ(weights.spec.shape, (std::vector<int64_t>{100, 1}));
  EXPECT_EQ(weights.partition.kind, PartitionPolicy::Kind::kFixedShards);
  EXPECT_EQ(weights.partition.num_shards, 3);
  EXPECT_EQ(weights.row_width(), 1);
  EXPECT_EQ(model.variables()[1].name(), "logreg/bias");
  EXPECT_EQ(model.variables()[1].kind, ModelVariable::Kind::kDense);
}

TEST(LogRegModelTest, SparseIdsAreSortedAndDistinct) {
  const LogRegModel model(100, ModelVariableOptions());
  const Batch batch = SparseBatch(
      {1, 0, 1}, {{{42, 1}, {7, 2}}, {}, {{7, 1}, {99, 1}, {0, 3}}});
  std::vector<std::vector<int64_t>> ids;
  ASSERT_TRUE(model.SparseIds(batch, &ids).ok());
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_THAT(ids[0], ElementsAre(0, 7, 42, 99));
  EXPECT_TRUE(ids[1].empty());
}

TEST(LogRegModelTest, LossPredictionsAndGradientsByHand) {
  const LogRegModel model(10, ModelVariableOptions());
  // Logits: 0.25 + 2 * 0.5 = 1.25, and 0.25 + 0.5 - 1 = -0.25.
  const Batch batch = SparseBatch({1, 0}, {{{1, 2}}, {{1, 1}, {3, 1}}});
  ModelStepResult result;
  ASSERT_TRUE(
      model.Compute(batch, Values({1, 3}, {0.5f, -1.0f}, 0.25f), true, &result)
          .ok());
  EXPECT_NEAR(result.loss_sum, CrossEntropy(1.25, 1) + CrossEntropy(-0.25, 0),
              1e-6);
  const float p0 = 1 / (1 + std::exp(-1.25f));
  const float p1 = 1 / (1 + std::exp(0.25f));
  EXPECT_THAT(result.predictions, ElementsAre(FloatEq(p0), FloatEq(p1)));
  ASSERT_EQ(result.gradients.size(), 2u);
  // d logit = p - y per example, times each feature's value.
  EXPECT_THAT(result.gradients[0].ids, ElementsAre(1, 3));
  EXPECT_THAT(result.gradients[0].rows,
              ElementsAre(FloatEq(2 * (p0 - 1) + p1), FloatEq(p1)));
  EXPECT_THAT(result.gradients[1].dense, ElementsAre(FloatEq(p0 - 1 + p1)));
}

TEST(LogRegModelTest, LossIsStableForLargeLogits) {
  const LogRegModel model(2, ModelVariableOptions());
  const Batch batch = SparseBatch({0, 1, 1}, {{{0, 1}}, {{1, 1}}, {{0, 1}}});
  ModelStepResult result;
  ASSERT_TRUE(
      model.Compute(batch, Values({0, 1}, {200, -200}, 0), true, &result).ok());
  // Two confidently wrong examples (200 each) and one confidently right.
  EXPECT_NEAR(result.loss_sum, 400.0, 1e-9);
  EXPECT_THAT(result.predictions, ElementsAre(1.0f, 0.0f, 1.0f));
  EXPECT_THAT(result.gradients[0].rows,
              ElementsAre(FloatNear(1, 1e-6), FloatNear(-1, 1e-6)));
}

TEST(LogRegModelTest, GradientsMatchCentralDifferences) {
  const LogRegModel model(20, ModelVariableOptions());
  const Batch batch =
      RandomSparseBatch({1, 0, 0, 1, 1, 0, 1, 0}, 20, /*max_features=*/5,
                        /*seed=*/3);
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, /*seed=*/4, /*scale=*/1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectGradientsMatchNumerical(model, batch, *values, /*eps=*/1e-2f,
                                /*atol=*/2e-3f, /*rtol=*/1e-2f);
}

TEST(LogRegModelTest, GradientHasTheIdsOfTheValuesGiven) {
  const LogRegModel model(10, ModelVariableOptions());
  const Batch batch = SparseBatch({1}, {{{4, 1}}});
  ModelStepResult result;
  // Rows 2 and 8 are not used by the batch: zero gradient.
  ASSERT_TRUE(
      model.Compute(batch, Values({2, 4, 8}, {1, 0, 1}, 0), true, &result)
          .ok());
  EXPECT_THAT(result.gradients[0].ids, ElementsAre(2, 4, 8));
  EXPECT_THAT(result.gradients[0].rows,
              ElementsAre(0.0f, FloatEq(-0.5f), 0.0f));
}

TEST(LogRegModelTest, EmptyBatch) {
  const LogRegModel model(10, ModelVariableOptions());
  for (Batch batch : {Batch(), SparseBatch({}, {})}) {
    std::vector<std::vector<int64_t>> ids;
    ASSERT_TRUE(model.SparseIds(batch, &ids).ok());
    EXPECT_TRUE(ids[0].empty());
    ModelStepResult result;
    ASSERT_TRUE(model.Compute(batch, Values({}, {}, 1), true, &result).ok());
    EXPECT_EQ(result.loss_sum, 0.0);
    EXPECT_TRUE(result.predictions.empty());
    ASSERT_EQ(result.gradients.size(), 2u);
    EXPECT_TRUE(result.gradients[0].ids.empty());
    EXPECT_THAT(result.gradients[1].dense, ElementsAre(0.0f));
  }
}

TEST(LogRegModelTest, BadInputs) {
  const LogRegModel model(10, ModelVariableOptions());
  std::vector<std::vector<int64_t>> ids;
  ModelStepResult result;

  const Batch big_id = SparseBatch({1, 0}, {{{3, 1}}, {{2, 1}, {10, 1}}});
  absl::Status s = model.SparseIds(big_id, &ids);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("example 1: feature id 10 is outside the model's 10 "
                        "features"));
  const Batch negative_id = SparseBatch({1, 0}, {{}, {{-1, 1}}});
  s = model.SparseIds(negative_id, &ids);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("example 1: feature id -1"));

  const Batch bad_label = SparseBatch({1, 0, 0.5f}, {{}, {}, {{1, 1}}});
  s = model.Compute(bad_label, Values({1}, {0}, 0), true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("example 2: label 0.5 is not 0 or 1"));

  const Batch batch = SparseBatch({1, 0}, {{{3, 1}}, {{5, 1}}});
  s = model.Compute(batch, Values({3}, {0}, 0), true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("\"logreg/weights\": no values for id 5 of example 1"));
  s = model.Compute(batch, Values({5, 3}, {0, 0}, 0), true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("ids are not sorted and distinct"));
  s = model.Compute(batch, Values({3, 5}, {0}, 0), true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("got 1 row values for 2 ids"));

  Batch bad_offsets = batch;
  bad_offsets.offsets = {0, 2, 1};
  s = model.SparseIds(bad_offsets, &ids);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("run from 0 to 1, not from 0 to the 2"));
  Batch decreasing = SparseBatch({1, 0, 1}, {{{1, 1}, {2, 1}}, {}, {{3, 1}}});
  decreasing.offsets = {0, 2, 1, 3};
  s = model.SparseIds(decreasing, &ids);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("example 1: sparse offsets decrease from 2 to 1"));
}

}  // namespace
}  // namespace distrt
