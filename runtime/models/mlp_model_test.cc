#include "runtime/models/mlp_model.h"

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

std::vector<VariableSlice> DenseValues(
    const std::vector<std::vector<float>>& values) {
  std::vector<VariableSlice> slices(values.size());
  for (size_t v = 0; v < values.size(); ++v) slices[v].dense = values[v];
  return slices;
}

TEST(MlpModelTest, Variables) {
  const MlpModel model(5, 3, {8, 4}, ModelVariableOptions());
  EXPECT_EQ(model.name(), "mlp");
  EXPECT_EQ(model.output(), ModelOutput::kMulticlass);
  EXPECT_EQ(model.outputs_per_example(), 3);
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (const ModelVariable& variable : model.variables()) {
    EXPECT_EQ(variable.kind, ModelVariable::Kind::kDense);
    names.push_back(variable.name());
    shapes.push_back(variable.spec.shape);
  }
  EXPECT_THAT(names, ElementsAre("mlp/dense_0/kernel", "mlp/dense_0/bias",
                                 "mlp/dense_1/kernel", "mlp/dense_1/bias",
                                 "mlp/logits/kernel", "mlp/logits/bias"));
  EXPECT_EQ(shapes, (std::vector<std::vector<int64_t>>{
                        {5, 8}, {8}, {8, 4}, {4}, {4, 3}, {3}}));
  const InitializerSpec& kernel = model.variables()[2].spec.initializer;
  EXPECT_EQ(kernel.kind, InitializerSpec::Kind::kUniform);
  EXPECT_FLOAT_EQ(kernel.maxval, std::sqrt(6.0f / 12));
  EXPECT_FLOAT_EQ(kernel.minval, -std::sqrt(6.0f / 12));
  EXPECT_EQ(model.variables()[3].spec.initializer.kind,
            InitializerSpec::Kind::kZeros);
}

TEST(MlpModelTest, SoftmaxRegressionByHand) {
  const MlpModel model(2, 3, {}, ModelVariableOptions());
  const Batch batch = DenseBatch({2, 0}, {{1, 2}, {0, 0}});
  ModelStepResult result;
  ASSERT_TRUE(model
                  .Compute(batch,
                           DenseValues({{1, 0, -1, 0, 2, 1}, {0.5f, 0, 0}}),
                           true, &result)
                  .ok());
  // Logits [1.5, 4, 1] with label 2, and [0.5, 0, 0] with label 0.
  const double sum0 = std::exp(1.5) + std::exp(4.0) + std::exp(1.0);
  const double sum1 = std::exp(0.5) + 2;
  EXPECT_NEAR(result.loss_sum, (std::log(sum0) - 1.0) + (std::log(sum1) - 0.5),
              1e-5);
  const float p0[3] = {static_cast<float>(std::exp(1.5) / sum0),
                       static_cast<float>(std::exp(4.0) / sum0),
                       static_cast<float>(std::exp(1.0) / sum0)};
  const float p1[3] = {static_cast<float>(std::exp(0.5) / sum1),
                       static_cast<float>(1 / sum1),
                       static_cast<float>(1 / sum1)};
  EXPECT_THAT(result.predictions,
              ElementsAre(FloatEq(p0[0]), FloatEq(p0[1]), FloatEq(p0[2]),
                          FloatEq(p1[0]), FloatEq(p1[1]), FloatEq(p1[2])));
  // d logits = p - one-hot; d kernel = x^T d logits (only example 0 has
  // non-zero features); d bias = the column sums.
  ASSERT_EQ(result.gradients.size(), 2u);
  EXPECT_THAT(result.gradients[0].dense,
              ElementsAre(FloatEq(p0[0]), FloatEq(p0[1]), FloatEq(p0[2] - 1),
                          FloatEq(2 * p0[0]), FloatEq(2 * p0[1]),
                          FloatEq(2 * (p0[2] - 1))));
  EXPECT_THAT(result.gradients[1].dense,
              ElementsAre(FloatEq(p0[0] + p1[0] - 1), FloatEq(p0[1] + p1[1]),
                          FloatEq(p0[2] - 1 + p1[2])));
}

TEST(MlpModelTest, HiddenLayerAppliesRelu) {
  const MlpModel model(2, 2, {2}, ModelVariableOptions());
  const Batch batch = DenseBatch({0}, {{2, 0.5f}});
  ModelStepResult result;
  // Hidden pre-activations [2, -0.5] -> [2, 0]; logits [2, 0].
  ASSERT_TRUE(
      model
          .Compute(batch,
                   DenseValues({{1, 0, 0, 1}, {0, -1}, {1, 0, 0, 1}, {0, 0}}),
                   true, &result)
          .ok());
  EXPECT_NEAR(result.loss_sum, std::log1p(std::exp(-2.0)), 1e-6);
  // Nothing flows back through the inactive unit: its kernel column and
  // bias get no gradient.
  EXPECT_THAT(result.gradients[0].dense,
              ElementsAre(testing::Ne(0.0f), 0.0f, testing::Ne(0.0f), 0.0f));
  EXPECT_THAT(result.gradients[1].dense, ElementsAre(testing::Ne(0.0f), 0.0f));
}

TEST(MlpModelTest, LossIsStableForLargeLogits) {
  const MlpModel model(1, 3, {}, ModelVariableOptions());
  const Batch batch = DenseBatch({0, 1}, {{1}, {1}});
  ModelStepResult result;
  ASSERT_TRUE(model
                  .Compute(batch, DenseValues({{1000, 0, -1000}, {0, 0, 0}}),
                           true, &result)
                  .ok());
  EXPECT_NEAR(result.loss_sum, 1000.0, 1e-6);
  EXPECT_THAT(result.predictions,
              ElementsAre(1.0f, FloatNear(0, 1e-30), FloatNear(0, 1e-30), 1.0f,
                          FloatNear(0, 1e-30), FloatNear(0, 1e-30)));
}

TEST(MlpModelTest, GradientsMatchCentralDifferences) {
  const MlpModel model(3, 4, {5, 4}, ModelVariableOptions());
  const Batch batch =
      RandomDenseBatch({0, 3, 1, 2, 2, 0, 1, 3}, 3, /*seed=*/11);
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, /*seed=*/12, /*scale=*/1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectGradientsMatchNumerical(model, batch, *values, /*eps=*/1e-3f,
                                /*atol=*/2e-3f, /*rtol=*/1e-2f);
}

TEST(MlpModelTest, EmptyBatch) {
  const MlpModel model(3, 2, {4}, ModelVariableOptions());
  const Batch batch = DenseBatch({}, {});
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, 1, 1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ModelStepResult result;
  ASSERT_TRUE(model.Compute(batch, *values, true, &result).ok());
  EXPECT_EQ(result.loss_sum, 0.0);
  EXPECT_TRUE(result.predictions.empty());
  ASSERT_EQ(result.gradients.size(), 4u);
  for (size_t v = 0; v < 4; ++v) {
    EXPECT_EQ(result.gradients[v].dense.size(), (*values)[v].dense.size());
    for (float g : result.gradients[v].dense) EXPECT_EQ(g, 0.0f);
  }
}

TEST(MlpModelTest, BadInputs) {
  const MlpModel model(2, 3, {4}, ModelVariableOptions());
  const Batch good = DenseBatch({0}, {{1, 2}});
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, good, 1, 1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ModelStepResult result;

  for (float label : {1.5f, 3.0f, -1.0f, NAN}) {
    const Batch batch = DenseBatch({0, label}, {{1, 2}, {3, 4}});
    const absl::Status s = model.Compute(batch, *values, true, &result);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("example 1: label "));
    EXPECT_THAT(s.message(), HasSubstr("is not a class id in [0, 3)"));
  }

  const Batch wide = DenseBatch({0}, {{1, 2, 3}});
  std::vector<std::vector<int64_t>> ids;
  EXPECT_EQ(model.SparseIds(wide, &ids).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.Compute(wide, *values, true, &result).code(),
            absl::StatusCode::kInvalidArgument);

  std::vector<VariableSlice> short_values = *values;
  short_values[2].dense.pop_back();
  const absl::Status s = model.Compute(good, short_values, true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("\"mlp/logits/kernel\": got 11 values, its shape has "
                        "12"));
}

}  // namespace
}  // namespace distrt
