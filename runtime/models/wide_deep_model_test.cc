#include "runtime/models/wide_deep_model.h"

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

float Sigmoid(float z) { return 1 / (1 + std::exp(-z)); }

TEST(WideDeepModelTest, Variables) {
  ModelVariableOptions options;
  options.optimizer.kind = OptimizerKind::kAdagrad;
  options.partition = PartitionPolicy::FixedShards(2);
  const WideDeepModel model(1000, 4, {16, 8}, options);
  EXPECT_EQ(model.name(), "wide_deep");
  EXPECT_EQ(model.output(), ModelOutput::kBinary);
  std::vector<std::string> names;
  for (const ModelVariable& variable : model.variables()) {
    names.push_back(variable.name());
  }
  EXPECT_THAT(names,
              ElementsAre("wide_deep/wide/weights", "wide_deep/wide/bias",
                          "wide_deep/embedding", "wide_deep/dense_0/kernel",
                          "wide_deep/dense_0/bias", "wide_deep/dense_1/kernel",
                          "wide_deep/dense_1/bias", "wide_deep/logit/kernel",
                          "wide_deep/logit/bias"));
  const ModelVariable& wide = model.variables()[0];
  EXPECT_EQ(wide.kind, ModelVariable::Kind::kRowSparse);
  EXPECT_EQ(wide.spec.shape, (std::vector<int64_t>{1000, 1}));
  EXPECT_EQ(wide.partition.num_shards, 2);
  const ModelVariable& embedding = model.variables()[2];
  EXPECT_EQ(embedding.kind, ModelVariable::Kind::kHashEmbedding);
  EXPECT_EQ(embedding.hash_spec.dim, 4);
  EXPECT_EQ(embedding.row_width(), 4);
  EXPECT_EQ(embedding.hash_spec.initializer.kind,
            InitializerSpec::Kind::kUniform);
  EXPECT_EQ(embedding.hash_spec.initializer.minval, -0.05f);
  EXPECT_EQ(embedding.hash_spec.initializer.maxval, 0.05f);
  EXPECT_EQ(embedding.hash_spec.optimizer.kind, OptimizerKind::kAdagrad);
  EXPECT_EQ(model.variables()[3].spec.shape, (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(model.variables()[7].spec.shape, (std::vector<int64_t>{8, 1}));
}

TEST(WideDeepModelTest, SparseIdsForBothSparseVariables) {
  const WideDeepModel model(100, 4, {3}, ModelVariableOptions());
  const Batch batch = SparseBatch({1, 0}, {{{9, 1}, {2, 1}}, {{9, 2}}});
  std::vector<std::vector<int64_t>> ids;
  ASSERT_TRUE(model.SparseIds(batch, &ids).ok());
  ASSERT_EQ(ids.size(), model.variables().size());
  EXPECT_THAT(ids[0], ElementsAre(2, 9));
  EXPECT_THAT(ids[2], ElementsAre(2, 9));
  for (size_t v : {1, 3, 4, 5, 6}) EXPECT_TRUE(ids[v].empty()) << v;
}

TEST(WideDeepModelTest, LossPredictionsAndGradientsByHand) {
  const WideDeepModel model(10, 2, {}, ModelVariableOptions());
  const Batch batch = SparseBatch({1, 0}, {{{1, 2}}, {{1, 1}, {3, 1}}});
  std::vector<VariableSlice> values(5);
  values[0].ids = {1, 3};
  values[0].rows = {0.5f, -1.0f};
  values[1].dense = {0.25f};
  values[2].ids = {1, 3};
  values[2].rows = {1, 0, 0, 2};
  values[3].dense = {0.5f, -0.25f};
  values[4].dense = {0.1f};
  ModelStepResult result;
  ASSERT_TRUE(model.Compute(batch, values, true, &result).ok());
  // Example 0: wide 0.25 + 2 * 0.5, pooled [2, 0], deep 2 * 0.5 + 0.1.
  // Example 1: wide 0.25 + 0.5 - 1, pooled [1, 2], deep 0.5 - 0.5 + 0.1.
  const float z0 = 1.25f + 1.1f;
  const float z1 = -0.25f + 0.1f;
  EXPECT_NEAR(result.loss_sum,
              -std::log(Sigmoid(z0)) - std::log(1 - Sigmoid(z1)), 1e-5);
  EXPECT_THAT(result.predictions,
              ElementsAre(FloatEq(Sigmoid(z0)), FloatEq(Sigmoid(z1))));
  const float d0 = Sigmoid(z0) - 1;
  const float d1 = Sigmoid(z1);
  ASSERT_EQ(result.gradients.size(), 5u);
  EXPECT_THAT(result.gradients[0].ids, ElementsAre(1, 3));
  EXPECT_THAT(result.gradients[0].rows,
              ElementsAre(FloatEq(2 * d0 + d1), FloatEq(d1)));
  EXPECT_THAT(result.gradients[1].dense, ElementsAre(FloatEq(d0 + d1)));
  // Each row gets value * d logit * the logit kernel.
  EXPECT_THAT(result.gradients[2].ids, ElementsAre(1, 3));
  EXPECT_THAT(result.gradients[2].rows,
              ElementsAre(FloatEq((2 * d0 + d1) * 0.5f),
                          FloatEq((2 * d0 + d1) * -0.25f), FloatEq(d1 * 0.5f),
                          FloatEq(d1 * -0.25f)));
  EXPECT_THAT(result.gradients[3].dense,
              ElementsAre(FloatEq(2 * d0 + d1), FloatEq(2 * d1)));
  EXPECT_THAT(result.gradients[4].dense, ElementsAre(FloatEq(d0 + d1)));
}

TEST(WideDeepModelTest, GradientsMatchCentralDifferences) {
  const WideDeepModel model(12, 3, {4, 3}, ModelVariableOptions());
  // Repeated ids within and across examples, and examples with no features.
  const Batch batch = RandomSparseBatch({1, 0, 0, 1, 1, 0, 1, 0, 1, 1}, 12,
                                        /*max_features=*/6, /*seed=*/21);
  ASSERT_GT(batch.ids.size(), 20u);
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, /*seed=*/22, /*scale=*/1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectGradientsMatchNumerical(model, batch, *values, /*eps=*/1e-3f,
                                /*atol=*/2e-3f, /*rtol=*/1e-2f);
}

TEST(WideDeepModelTest, EmptyBatch) {
  const WideDeepModel model(10, 2, {3}, ModelVariableOptions());
  const Batch batch = SparseBatch({}, {});
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, 1, 1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ModelStepResult result;
  ASSERT_TRUE(model.Compute(batch, *values, true, &result).ok());
  EXPECT_EQ(result.loss_sum, 0.0);
  EXPECT_TRUE(result.predictions.empty());
  ASSERT_EQ(result.gradients.size(), 7u);
  EXPECT_TRUE(result.gradients[0].ids.empty());
  EXPECT_TRUE(result.gradients[2].ids.empty());
  for (size_t v : {1, 3, 4, 5, 6}) {
    EXPECT_EQ(result.gradients[v].dense.size(), (*values)[v].dense.size());
    for (float g : result.gradients[v].dense) EXPECT_EQ(g, 0.0f);
  }
}

TEST(WideDeepModelTest, BadInputs) {
  const WideDeepModel model(10, 2, {3}, ModelVariableOptions());
  const Batch batch = SparseBatch({1, 0}, {{{3, 1}}, {{5, 1}}});
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, 1, 1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ModelStepResult result;
  std::vector<std::vector<int64_t>> ids;

  absl::Status s = model.SparseIds(SparseBatch({1}, {{{3, 1}, {12, 1}}}), &ids);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("example 0: feature id 12 is outside"));

  s = model.Compute(SparseBatch({1, 2}, {{{3, 1}}, {{5, 1}}}), *values, true,
                    &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("example 1: label 2 is not 0 or 1"));

  std::vector<VariableSlice> missing = *values;
  missing[2].ids = {3};
  missing[2].rows.resize(2);
  s = model.Compute(batch, missing, true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"wide_deep/embedding\": no values for "
                                     "id 5 of example 1"));

  std::vector<VariableSlice> short_rows = *values;
  short_rows[2].rows.pop_back();
  s = model.Compute(batch, short_rows, true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("\"wide_deep/embedding\": got 3 row values for 2 ids "
                        "of 2 values each"));
}

}  // namespace
}  // namespace distrt
