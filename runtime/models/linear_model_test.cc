#include "runtime/models/linear_model.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/models/model_test_util.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;

std::vector<VariableSlice> Values(std::vector<float> weights, float bias) {
  std::vector<VariableSlice> values(2);
  values[0].dense = std::move(weights);
  values[1].dense = {bias};
  return values;
}

TEST(LinearModelTest, Variables) {
  ModelVariableOptions options;
  options.optimizer.learning_rate = 0.5f;
  const LinearModel model(4, options);
  EXPECT_EQ(model.name(), "linear");
  EXPECT_EQ(model.output(), ModelOutput::kRegression);
  EXPECT_EQ(model.outputs_per_example(), 1);
  ASSERT_EQ(model.variables().size(), 2u);
  EXPECT_EQ(model.variables()[0].name(), "linear/weights");
  EXPECT_EQ(model.variables()[0].spec.shape, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(model.variables()[0].kind, ModelVariable::Kind::kDense);
  EXPECT_EQ(model.variables()[1].name(), "linear/bias");
  EXPECT_EQ(model.variables()[1].spec.shape, (std::vector<int64_t>{1}));
  for (const ModelVariable& variable : model.variables()) {
    EXPECT_EQ(variable.spec.initializer.kind, InitializerSpec::Kind::kZeros);
    EXPECT_EQ(variable.spec.optimizer.learning_rate, 0.5f);
  }
}

TEST(LinearModelTest, LossPredictionsAndGradientsByHand) {
  const LinearModel model(2, ModelVariableOptions());
  const Batch batch = DenseBatch({3, 1}, {{1, 1}, {0, 2}});
  ModelStepResult result;
  ASSERT_TRUE(model.Compute(batch, Values({1, 2}, 0.5f), true, &result).ok());
  // Predictions 3.5 and 4.5; residuals 0.5 and 3.5.
  EXPECT_THAT(result.predictions, ElementsAre(FloatEq(3.5f), FloatEq(4.5f)));
  EXPECT_DOUBLE_EQ(result.loss_sum, 0.25 + 12.25);
  ASSERT_EQ(result.gradients.size(), 2u);
  // 2 * x^T r = 2 * [0.5, 0.5 + 2 * 3.5]; 2 * (0.5 + 3.5).
  EXPECT_THAT(result.gradients[0].dense,
              ElementsAre(FloatEq(1.0f), FloatEq(15.0f)));
  EXPECT_THAT(result.gradients[1].dense, ElementsAre(FloatEq(8.0f)));
}

TEST(LinearModelTest, NoGradientsUnlessAsked) {
  const LinearModel model(2, ModelVariableOptions());
  ModelStepResult result;
  result.gradients.resize(5);
  ASSERT_TRUE(
      model
          .Compute(DenseBatch({3}, {{1, 1}}), Values({1, 2}, 0), false, &result)
          .ok());
  EXPECT_TRUE(result.gradients.empty());
  EXPECT_DOUBLE_EQ(result.loss_sum, 0.0);
}

TEST(LinearModelTest, GradientsMatchCentralDifferences) {
  const LinearModel model(4, ModelVariableOptions());
  const Batch batch =
      RandomDenseBatch(RandomUniform(6, -2.0f, 2.0f, 7), 4, /*seed=*/8);
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, /*seed=*/9, /*scale=*/1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectGradientsMatchNumerical(model, batch, *values, /*eps=*/1e-2f,
                                /*atol=*/2e-3f, /*rtol=*/1e-2f);
}

TEST(LinearModelTest, EmptyBatch) {
  const LinearModel model(3, ModelVariableOptions());
  Batch batch;  // As MakeBatch gives it for no examples.
  batch.offsets = {0};
  std::vector<std::vector<int64_t>> ids;
  ASSERT_TRUE(model.SparseIds(batch, &ids).ok());
  ModelStepResult result;
  ASSERT_TRUE(model.Compute(batch, Values({1, 2, 3}, 4), true, &result).ok());
  EXPECT_EQ(result.loss_sum, 0.0);
  EXPECT_TRUE(result.predictions.empty());
  ASSERT_EQ(result.gradients.size(), 2u);
  EXPECT_THAT(result.gradients[0].dense, ElementsAre(0.0f, 0.0f, 0.0f));
  EXPECT_THAT(result.gradients[1].dense, ElementsAre(0.0f));
}

TEST(LinearModelTest, SparseIdsAreEmptyForDenseVariables) {
  const LinearModel model(2, ModelVariableOptions());
  std::vector<std::vector<int64_t>> ids;
  ASSERT_TRUE(model.SparseIds(DenseBatch({1}, {{1, 2}}), &ids).ok());
  EXPECT_EQ(ids, (std::vector<std::vector<int64_t>>{{}, {}}));
}

TEST(LinearModelTest, BadInputs) {
  const LinearModel model(4, ModelVariableOptions());
  ModelStepResult result;
  std::vector<std::vector<int64_t>> ids;

  const Batch three_features = DenseBatch({1}, {{1, 2, 3}});
  absl::Status s = model.SparseIds(three_features, &ids);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("3 dense features per example, the model expects 4"));
  s = model.Compute(three_features, Values({1, 2, 3, 4}, 0), true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  const Batch batch = DenseBatch({1, NAN}, {{1, 2, 3, 4}, {1, 2, 3, 4}});
  s = model.Compute(batch, Values({1, 2, 3, 4}, 0), true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("example 1: label nan is not finite"));

  const Batch good = DenseBatch({1}, {{1, 2, 3, 4}});
  s = model.Compute(good, Values({1, 2, 3}, 0), true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("\"linear/weights\": got 3 values, its shape has 4"));
  s = model.Compute(good, {}, true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("values of 0 variables, the model has 2"));

  Batch short_labels = good;
  short_labels.labels.clear();
  s = model.Compute(short_labels, Values({1, 2, 3, 4}, 0), true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("batch of 1 examples has 0 labels"));
}

}  // namespace
}  // namespace distrt
