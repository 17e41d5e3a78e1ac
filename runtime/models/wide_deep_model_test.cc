#include "runtime/models/wide_deep_model.h"

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device/opaque_memory_device.h"
#include "runtime/input/batch.h"
#include "runtime/input/example.h"
#include "runtime/input/feature_spec.h"
#include "runtime/models/model_config.h"
#include "runtime/models/model_test_util.h"
#include "runtime/ps/table_policy.h"
#include "runtime/tensor/tensor.h"

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

// --- The feature-spec form.

NumericFeature Numeric(std::string name, int64_t length) {
  NumericFeature feature;
  feature.name = std::move(name);
  feature.length = length;
  return feature;
}

CategoricalFeature Categorical(std::string name, CategoricalKind kind,
                               int64_t buckets) {
  CategoricalFeature feature;
  feature.name = std::move(name);
  feature.kind = kind;
  feature.buckets = buckets;
  return feature;
}

EmbeddingGroup Group(std::string name, std::vector<std::string> features,
                     int64_t dim, Combiner combiner,
                     std::string weight_feature = "") {
  EmbeddingGroup group;
  group.name = std::move(name);
  group.features = std::move(features);
  group.dim = dim;
  group.combiner = combiner;
  group.weight_feature = std::move(weight_feature);
  return group;
}

// Two groups of different combiners, both weighted, and one numeric
// feature: "a" (identity, 5 buckets, dim 2, mean) and "b" (hashed, dim 1,
// sqrtn).
FeatureSpec SmallSpec() {
  FeatureSpec spec;
  spec.label = "clicked";
  spec.numeric = {Numeric("x", 1)};
  spec.categorical = {Categorical("item", CategoricalKind::kIdentity, 5),
                      Categorical("user", CategoricalKind::kHashed, 0)};
  spec.groups = {Group("a", {"item"}, 2, Combiner::kMean, "item_weight"),
                 Group("b", {"user"}, 1, Combiner::kSqrtn, "user_weight")};
  return spec;
}

// SmallSpec's groups plus an unweighted sum group of two hash_bucket
// features, and numeric features of 3 values in all.
FeatureSpec ThreeGroupSpec() {
  FeatureSpec spec = SmallSpec();
  spec.numeric = {Numeric("x", 1), Numeric("y", 2)};
  spec.categorical.push_back(
      Categorical("site", CategoricalKind::kHashBucket, 7));
  spec.categorical.push_back(
      Categorical("app", CategoricalKind::kHashBucket, 7));
  spec.groups[0].dim = 3;
  spec.groups.push_back(Group("c", {"site", "app"}, 2, Combiner::kSum));
  return spec;
}

Example SpecExample(float label, std::vector<float> dense,
                    std::vector<GroupIds> groups) {
  Example example;
  example.label = label;
  example.dense = std::move(dense);
  example.groups = std::move(groups);
  return example;
}

GroupIds Ids(std::vector<int64_t> ids, std::vector<float> weights = {}) {
  GroupIds group;
  group.ids = std::move(ids);
  group.weights = std::move(weights);
  return group;
}

Batch SpecBatch(const std::vector<Example>& examples) {
  absl::StatusOr<Batch> batch = MakeBatch(examples);
  EXPECT_TRUE(batch.ok()) << batch.status();
  return batch.ok() ? *std::move(batch) : Batch();
}

// n examples of ThreeGroupSpec with 0 to 4 ids per group (repeats within
// and across examples, so also empty bags), weights in [-0.5, 1.5) (some
// pruned by mean and sqrtn) and dense features in [-1, 1).
Batch RandomSpecBatch(int n, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int> count(0, 4);
  std::uniform_real_distribution<float> weight(-0.5f, 1.5f);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const std::vector<int64_t> users = {-7, 3, int64_t{1} << 40, 12345};
  std::vector<Example> examples;
  for (int i = 0; i < n; ++i) {
    Example example;
    example.label = static_cast<float>(i % 2);
    for (int d = 0; d < 3; ++d) example.dense.push_back(value(random));
    example.groups.resize(3);
    for (int g = 0; g < 3; ++g) {
      GroupIds& ids = example.groups[g];
      for (int k = count(random); k > 0; --k) {
        if (g == 0) {
          ids.ids.push_back(random() % 5);
        } else if (g == 1) {
          ids.ids.push_back(users[random() % users.size()]);
        } else {
          ids.ids.push_back(random() % 7);
        }
        if (g < 2) ids.weights.push_back(weight(random));
      }
    }
    examples.push_back(std::move(example));
  }
  return SpecBatch(examples);
}

std::vector<std::string> VariableNames(const Model& model) {
  std::vector<std::string> names;
  for (const ModelVariable& variable : model.variables()) {
    names.push_back(variable.name());
  }
  return names;
}

ModelConfig SpecConfig(FeatureSpec spec, std::vector<int> hidden_units) {
  ModelConfig config;
  config.name = "wide_deep";
  config.num_features = 0;   // not used with a spec
  config.embedding_dim = 0;  // not used with a spec
  config.hidden_units = std::move(hidden_units);
  config.seed = 5;
  config.feature_spec = std::make_shared<FeatureSpec>(std::move(spec));
  return config;
}

TEST(WideDeepSpecTest, Variables) {
  ModelVariableOptions options;
  options.optimizer.kind = OptimizerKind::kAdagrad;
  const WideDeepModel model(ThreeGroupSpec(), {16, 8}, options);
  EXPECT_THAT(VariableNames(model),
              ElementsAre("a", "a/wide", "b", "b/wide", "c", "c/wide",
                          "wide_deep/wide/dense", "wide_deep/wide/bias",
                          "wide_deep/dense_0/kernel", "wide_deep/dense_0/bias",
                          "wide_deep/dense_1/kernel", "wide_deep/dense_1/bias",
                          "wide_deep/logit/kernel", "wide_deep/logit/bias"));
  const std::vector<ModelVariable>& variables = model.variables();
  for (int g = 0; g < 3; ++g) {
    const ModelVariable& table = variables[2 * g];
    const ModelVariable& wide = variables[2 * g + 1];
    EXPECT_EQ(table.kind, ModelVariable::Kind::kHashEmbedding);
    EXPECT_EQ(wide.kind, ModelVariable::Kind::kHashEmbedding);
    EXPECT_EQ(wide.hash_spec.dim, 1);
    EXPECT_EQ(wide.hash_spec.initializer.kind, InitializerSpec::Kind::kZeros);
    EXPECT_EQ(table.hash_spec.optimizer.kind, OptimizerKind::kAdagrad);
    EXPECT_EQ(table.hash_spec.initializer.kind,
              InitializerSpec::Kind::kTruncatedNormal);
  }
  EXPECT_EQ(variables[0].hash_spec.dim, 3);
  EXPECT_FLOAT_EQ(variables[0].hash_spec.initializer.stddev,
                  1 / std::sqrt(3.0f));
  EXPECT_EQ(variables[2].hash_spec.dim, 1);
  EXPECT_EQ(variables[4].hash_spec.dim, 2);
  EXPECT_EQ(variables[6].spec.shape, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(variables[7].spec.shape, (std::vector<int64_t>{1}));
  // The deep input: 3 dense features and dims 3 + 1 + 2.
  EXPECT_EQ(variables[8].spec.shape, (std::vector<int64_t>{9, 16}));
  EXPECT_EQ(variables[12].spec.shape, (std::vector<int64_t>{8, 1}));
  // Seeds differ per variable, as SeedInitializers makes them.
  EXPECT_NE(variables[0].hash_spec.initializer.seed,
            variables[2].hash_spec.initializer.seed);
}

// A group's admission and eviction reach both of its tables' specs, which
// CreateHashTable sends to the ps tasks.
TEST(WideDeepSpecTest, GroupPoliciesReachBothTables) {
  FeatureSpec spec = ThreeGroupSpec();
  TablePolicy& policy = spec.groups[2].policy;
  policy.admission.kind = AdmissionKind::kMinCount;
  policy.admission.min_count = 2;
  policy.admission.unknown = UnknownRow::kSharedRow;
  policy.eviction.max_rows = 1000;
  policy.eviction.ttl_steps = 50;
  const WideDeepModel model(spec, {4}, ModelVariableOptions());
  const std::vector<ModelVariable>& variables = model.variables();
  ASSERT_EQ(variables[4].name(), "c");
  ASSERT_EQ(variables[5].name(), "c/wide");
  for (const ModelVariable* table : {&variables[4], &variables[5]}) {
    EXPECT_EQ(DescribePolicyDifference(table->hash_spec.policy, policy), "")
        << table->name();
    EXPECT_EQ(table->hash_spec.policy.eviction.ttl_steps, 50);
  }
  // The groups without one keep the default.
  for (int v = 0; v < 4; ++v) {
    EXPECT_TRUE(variables[v].hash_spec.policy.admits_all()) << v;
    EXPECT_FALSE(variables[v].hash_spec.policy.evicts()) << v;
  }
}

TEST(WideDeepSpecTest, NoNumericFeaturesMeansNoWideDenseWeights) {
  FeatureSpec spec = SmallSpec();
  spec.numeric.clear();
  const WideDeepModel model(spec, {}, ModelVariableOptions());
  EXPECT_THAT(VariableNames(model),
              ElementsAre("a", "a/wide", "b", "b/wide", "wide_deep/wide/bias",
                          "wide_deep/logit/kernel", "wide_deep/logit/bias"));
  EXPECT_EQ(model.variables()[5].spec.shape, (std::vector<int64_t>{3, 1}));
}

TEST(WideDeepSpecTest, SparseIdsPerGroupForTableAndWideWeights) {
  const WideDeepModel model(SmallSpec(), {3}, ModelVariableOptions());
  const Batch batch =
      SpecBatch({SpecExample(1, {0}, {Ids({4, 1}), Ids({9, -2})}),
                 SpecExample(0, {0}, {Ids({1}), Ids({})})});
  std::vector<std::vector<int64_t>> ids;
  ASSERT_TRUE(model.SparseIds(batch, &ids).ok());
  ASSERT_EQ(ids.size(), model.variables().size());
  EXPECT_THAT(ids[0], ElementsAre(1, 4));
  EXPECT_THAT(ids[1], ElementsAre(1, 4));
  EXPECT_THAT(ids[2], ElementsAre(-2, 9));
  EXPECT_THAT(ids[3], ElementsAre(-2, 9));
  for (size_t v = 4; v < ids.size(); ++v) EXPECT_TRUE(ids[v].empty()) << v;
}

// Every combiner case worked by hand with no hidden layers (deep = the
// logit layer on concat(x, pool_a, pool_b)).
TEST(WideDeepSpecTest, LossPredictionsAndGradientsByHand) {
  const WideDeepModel model(SmallSpec(), {}, ModelVariableOptions());
  const Batch batch = SpecBatch({
      SpecExample(1, {2}, {Ids({1, 3}, {1, 3}), Ids({100}, {2})}),
      // No ids in group a: its pooled embedding is zeros.
      SpecExample(0, {-1}, {Ids({}), Ids({100, -7}, {3, 4})}),
      // Weight -1 (mean) and 0 (sqrtn) are left out of the pooling, but
      // still weigh their wide weights.
      SpecExample(1, {0.5f}, {Ids({3, 4}, {2, -1}), Ids({-7}, {0})}),
  });
  std::vector<VariableSlice> values(8);
  values[0].ids = {1, 3, 4};  // a
  values[0].rows = {1, 0, 0, 1, 5, 5};
  values[1].ids = {1, 3, 4};  // a/wide
  values[1].rows = {0.5f, -1, 2};
  values[2].ids = {-7, 100};  // b
  values[2].rows = {3, 0.5f};
  values[3].ids = {-7, 100};  // b/wide
  values[3].rows = {0.25f, -0.5f};
  values[4].dense = {0.1f};                   // wide/dense
  values[5].dense = {0.2f};                   // wide/bias
  values[6].dense = {0.3f, 0.5f, -0.25f, 2};  // logit/kernel: x, a, a, b
  values[7].dense = {0.05f};                  // logit/bias
  ModelStepResult result;
  ASSERT_TRUE(model.Compute(batch, values, true, &result).ok());

  // Example 0: wide 1 * 0.5 + 3 * -1 + 2 * -0.5 + 2 * 0.1 + 0.2 = -3.1;
  // pool_a = (1 [1, 0] + 3 [0, 1]) / 4, pool_b = 2 * 0.5 / sqrt(4);
  // deep = 0.6 + 0.125 - 0.1875 + 1 + 0.05.
  // Example 1: wide 3 * -0.5 + 4 * 0.25 - 0.1 + 0.2; pool_a = 0, pool_b =
  // (3 * 0.5 + 4 * 3) / sqrt(9 + 16); deep = -0.3 + 2.7 * 2 + 0.05.
  // Example 2: wide 2 * -1 - 1 * 2 + 0 * 0.25 + 0.05 + 0.2; pool_a = 2 [0,
  // 1] / 2, pool_b = 0; deep = 0.15 - 0.25 + 0.05.
  const float z0 = -3.1f + 1.5875f;
  const float z1 = -0.4f + 5.15f;
  const float z2 = -3.75f - 0.05f;
  EXPECT_NEAR(result.loss_sum,
              -std::log(Sigmoid(z0)) - std::log(1 - Sigmoid(z1)) -
                  std::log(Sigmoid(z2)),
              1e-5);
  ASSERT_EQ(result.predictions.size(), 3u);
  EXPECT_NEAR(result.predictions[0], Sigmoid(z0), 1e-6);
  EXPECT_NEAR(result.predictions[1], Sigmoid(z1), 1e-6);
  EXPECT_NEAR(result.predictions[2], Sigmoid(z2), 1e-6);

  const float d0 = Sigmoid(z0) - 1;
  const float d1 = Sigmoid(z1);
  const float d2 = Sigmoid(z2) - 1;
  ASSERT_EQ(result.gradients.size(), 8u);
  const auto near = [](float expected) {
    return ::testing::FloatNear(expected, 1e-5f);
  };
  // Each row of a: its pooling factor * d logit * the kernel's a rows.
  EXPECT_THAT(result.gradients[0].ids, ElementsAre(1, 3, 4));
  const float fa1 = 0.25f * d0;
  const float fa3 = 0.75f * d0 + 1.0f * d2;
  EXPECT_THAT(
      result.gradients[0].rows,
      ElementsAre(near(fa1 * 0.5f), near(fa1 * -0.25f), near(fa3 * 0.5f),
                  near(fa3 * -0.25f), near(0), near(0)));
  // The wide weights: weight * d logit, pruned or not.
  EXPECT_THAT(result.gradients[1].rows,
              ElementsAre(near(d0), near(3 * d0 + 2 * d2), near(-d2)));
  EXPECT_THAT(result.gradients[2].ids, ElementsAre(-7, 100));
  EXPECT_THAT(result.gradients[2].rows,
              ElementsAre(near(0.8f * d1 * 2), near((d0 + 0.6f * d1) * 2)));
  EXPECT_THAT(result.gradients[3].rows,
              ElementsAre(near(4 * d1), near(2 * d0 + 3 * d1)));
  EXPECT_THAT(result.gradients[4].dense,
              ElementsAre(near(2 * d0 - d1 + 0.5f * d2)));
  EXPECT_THAT(result.gradients[5].dense, ElementsAre(near(d0 + d1 + d2)));
  EXPECT_THAT(result.gradients[6].dense,
              ElementsAre(near(2 * d0 - d1 + 0.5f * d2), near(0.25f * d0),
                          near(0.75f * d0 + d2), near(0.5f * d0 + 2.7f * d1)));
  EXPECT_THAT(result.gradients[7].dense, ElementsAre(near(d0 + d1 + d2)));
}

class WideDeepSpecGradientsTest
    : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(WideDeepSpecGradientsTest, MatchCentralDifferences) {
  const WideDeepModel model(ThreeGroupSpec(), GetParam(),
                            ModelVariableOptions());
  Batch batch = RandomSpecBatch(10, /*seed=*/31);
  int empty_bags = 0;
  for (const Batch::Group& group : batch.groups) {
    for (int i = 0; i < batch.size; ++i) {
      empty_bags += group.offsets[i] == group.offsets[i + 1];
    }
  }
  ASSERT_GT(empty_bags, 0);
  ASSERT_FALSE(batch.groups[0].weights.empty());
  ASSERT_TRUE(batch.groups[2].weights.empty());
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, /*seed=*/32, /*scale=*/1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectGradientsMatchNumerical(model, batch, *values, /*eps=*/1e-3f,
                                /*atol=*/2e-3f, /*rtol=*/1e-2f);
  // The same without the batch's index of distinct ids (a batch built
  // otherwise): the rows are found by search.
  for (Batch::Group& group : batch.groups) {
    group.distinct_ids.clear();
    group.distinct_index.clear();
  }
  ExpectGradientsMatchNumerical(model, batch, *values, /*eps=*/1e-3f,
                                /*atol=*/2e-3f, /*rtol=*/1e-2f);
}

INSTANTIATE_TEST_SUITE_P(HiddenUnits, WideDeepSpecGradientsTest,
                         ::testing::Values(std::vector<int>{},
                                           std::vector<int>{4},
                                           std::vector<int>{4, 3}));

TEST(WideDeepSpecTest, EmptyBatch) {
  const WideDeepModel model(SmallSpec(), {3}, ModelVariableOptions());
  Batch batch = SpecBatch({});
  ASSERT_TRUE(batch.groups.empty());
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, 1, 1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ModelStepResult result;
  ASSERT_TRUE(model.Compute(batch, *values, true, &result).ok());
  EXPECT_EQ(result.loss_sum, 0.0);
  EXPECT_TRUE(result.predictions.empty());
  ASSERT_EQ(result.gradients.size(), model.variables().size());
  for (size_t v = 0; v < result.gradients.size(); ++v) {
    EXPECT_TRUE(result.gradients[v].ids.empty()) << v;
    for (float g : result.gradients[v].dense) EXPECT_EQ(g, 0.0f) << v;
  }
}

TEST(WideDeepSpecTest, BadBatches) {
  const WideDeepModel model(SmallSpec(), {3}, ModelVariableOptions());
  const Batch batch = SpecBatch({SpecExample(1, {0}, {Ids({1}), Ids({9})}),
                                 SpecExample(0, {1}, {Ids({2}), Ids({})})});
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, 1, 1.0f);
  ASSERT_TRUE(values.ok()) << values.status();
  ModelStepResult result;
  std::vector<std::vector<int64_t>> ids;

  Batch bad_label = batch;
  bad_label.labels[1] = 2;
  absl::Status s = model.Compute(bad_label, *values, true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("example 1: label 2 is not 0 or 1"));

  s = model.SparseIds(
      SpecBatch({SpecExample(1, {0}, {Ids({1}), Ids({}), Ids({})})}), &ids);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("batch has 3 embedding groups, the model's feature "
                        "spec has 2"));

  s = model.SparseIds(SpecBatch({SpecExample(1, {0}, {Ids({1}), Ids({})}),
                                 SpecExample(1, {0}, {Ids({0, 5}), Ids({})})}),
                      &ids);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("example 1: embedding group \"a\": id 5 "
                                     "is outside its 5 buckets [0, 5)"));

  s = model.SparseIds(SpecBatch({SpecExample(1, {0, 0}, {Ids({1}), Ids({})})}),
                      &ids);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("batch has 2 dense features per example, "
                                     "the model expects 1"));

  Batch bad_weights = batch;
  bad_weights.groups[1].weights = {1, 2};
  s = model.Compute(bad_weights, *values, true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      s.message(),
      HasSubstr("embedding group \"b\": batch has 1 ids but 2 weights"));

  Batch bad_offsets = batch;
  bad_offsets.groups[0].offsets = {0, 2, 1};
  s = model.Compute(bad_offsets, *values, true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("embedding group \"a\": offsets run from "
                                     "0 to 1, not from 0 to the 2 ids"));

  std::vector<VariableSlice> missing = *values;
  missing[3].ids = {};
  missing[3].rows = {};
  s = model.Compute(batch, missing, true, &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("\"b/wide\": no values for id 9 of example 0"));
}

TEST(WideDeepSpecTest, CreateModelBuildsTheSpecForm) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      CreateModel(SpecConfig(SmallSpec(), {4}));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->name(), "wide_deep");
  EXPECT_THAT(VariableNames(**model),
              ElementsAre("a", "a/wide", "b", "b/wide", "wide_deep/wide/dense",
                          "wide_deep/wide/bias", "wide_deep/dense_0/kernel",
                          "wide_deep/dense_0/bias", "wide_deep/logit/kernel",
                          "wide_deep/logit/bias"));
  // Without a spec, the LIBSVM form, as before.
  ModelConfig config = SpecConfig(SmallSpec(), {4});
  config.feature_spec = nullptr;
  config.num_features = 10;
  config.embedding_dim = 2;
  model = CreateModel(config);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(VariableNames(**model),
              ElementsAre("wide_deep/wide/weights", "wide_deep/wide/bias",
                          "wide_deep/embedding", "wide_deep/dense_0/kernel",
                          "wide_deep/dense_0/bias", "wide_deep/logit/kernel",
                          "wide_deep/logit/bias"));
}

absl::Status CreateStatus(FeatureSpec spec) {
  return CreateModel(SpecConfig(std::move(spec), {4})).status();
}

TEST(WideDeepSpecTest, BadSpecs) {
  FeatureSpec empty;
  empty.label = "clicked";
  absl::Status s = CreateStatus(empty);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("model config: feature_spec: numeric and "
                                     "embedding_groups are both empty"));

  FeatureSpec zero_dim = SmallSpec();
  zero_dim.groups[1].dim = 0;
  s = CreateStatus(zero_dim);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("model config: feature_spec: embedding_groups[1] "
                        "(\"b\"): dim must be at least 1"));

  FeatureSpec huge_dim = SmallSpec();
  huge_dim.groups[1].dim = (int64_t{1} << 20) + 1;
  s = CreateStatus(huge_dim);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("embedding_groups[1] (\"b\"): dim must "
                                     "be at most 2^20"));

  FeatureSpec clash = SmallSpec();
  clash.groups[1].name = "a/wide";
  s = CreateStatus(clash);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("embedding_groups[1] (\"a/wide\"): its variable "
                        "\"a/wide\" has the name of a variable of "
                        "embedding_groups[0]"));

  FeatureSpec prefixed = SmallSpec();
  prefixed.groups[0].name = "wide_deep/wide/bias";
  s = CreateStatus(prefixed);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("embedding_groups[0] "
                                     "(\"wide_deep/wide/bias\"): name must "
                                     "not start with \"wide_deep/\""));

  // The other fields are still checked.
  ModelConfig config = SpecConfig(SmallSpec(), {0});
  s = CreateModel(config).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("hidden_units[0] must be >= 1"));
}

// As device_path_test for the LIBSVM form: on a device whose memory the
// host cannot read (a GPU's path), the results equal the host's bit for
// bit, dense gradients also when written into the caller's device buffer.
TEST(WideDeepSpecTest, SameOnADeviceWithOpaqueMemory) {
  absl::StatusOr<std::unique_ptr<Model>> created =
      CreateModel(SpecConfig(ThreeGroupSpec(), {6, 5}));
  ASSERT_TRUE(created.ok()) << created.status();
  const Model& model = **created;
  const Batch batch = RandomSpecBatch(9, /*seed=*/41);
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(model, batch, /*seed=*/42, 0.5f);
  ASSERT_TRUE(values.ok()) << values.status();
  ModelStepResult on_host;
  ASSERT_TRUE(model.Compute(batch, *values, true, &on_host).ok());

  OpaqueMemoryDevice device(0);
  ModelStepResult on_device;
  absl::Status s = model.ComputeOn(device, batch, *values, true,
                                   /*dense_gradients=*/nullptr, &on_device);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(on_device.loss_sum, on_host.loss_sum);
  EXPECT_EQ(on_device.predictions, on_host.predictions);
  ASSERT_EQ(on_device.gradients.size(), on_host.gradients.size());
  for (size_t v = 0; v < on_host.gradients.size(); ++v) {
    EXPECT_EQ(on_device.gradients[v].dense, on_host.gradients[v].dense) << v;
    EXPECT_EQ(on_device.gradients[v].ids, on_host.gradients[v].ids) << v;
    EXPECT_EQ(on_device.gradients[v].rows, on_host.gradients[v].rows) << v;
  }

  DenseGradientBuffer buffer;
  int64_t size = 1;  // a spare float first, so offset 0 is not assumed
  for (const VariableSlice& value : *values) {
    buffer.offsets.push_back(size);
    size += static_cast<int64_t>(value.dense.size());
  }
  absl::StatusOr<Tensor> packed =
      Tensor::Create(DType::kFloat32, {size}, device.allocator());
  ASSERT_TRUE(packed.ok());
  buffer.base = static_cast<float*>(packed->raw_data());
  ModelStepResult buffered;
  s = model.ComputeOn(device, batch, *values, true, &buffer, &buffered);
  ASSERT_TRUE(s.ok()) << s;
  std::vector<float> downloaded(size);
  ASSERT_TRUE(
      device.allocator()
          ->CopyToHost(packed->raw_data(), downloaded.data(), packed->bytes())
          .ok());
  EXPECT_TRUE(std::isnan(downloaded[0])) << "written outside the offsets";
  for (size_t v = 0; v < values->size(); ++v) {
    const bool dense = model.variables()[v].kind == ModelVariable::Kind::kDense;
    const std::vector<float>& expected = on_host.gradients[v].dense;
    if (dense) {
      EXPECT_TRUE(buffered.gradients[v].dense.empty()) << v;
    }
    const std::vector<float> got(downloaded.begin() + buffer.offsets[v],
                                 downloaded.begin() + buffer.offsets[v] +
                                     static_cast<int64_t>(expected.size()));
    EXPECT_EQ(got, expected) << model.variables()[v].name();
    EXPECT_EQ(buffered.gradients[v].rows, on_host.gradients[v].rows) << v;
  }
  EXPECT_GT(device.bytes_from_host(), 0);
}

}  // namespace
}  // namespace distrt
