#include "runtime/models/model_config.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ModelConfig Config(const std::string& name) {
  ModelConfig config;
  config.name = name;
  config.num_features = 20;
  config.num_classes = 3;
  config.hidden_units = {8, 4};
  config.embedding_dim = 4;
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.learning_rate = 0.002f;
  config.seed = 42;
  return config;
}

std::unique_ptr<Model> MustCreate(const ModelConfig& config) {
  absl::StatusOr<std::unique_ptr<Model>> model = CreateModel(config);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

const InitializerSpec& Initializer(const ModelVariable& variable) {
  return variable.kind == ModelVariable::Kind::kHashEmbedding
             ? variable.hash_spec.initializer
             : variable.spec.initializer;
}

void ExpectCreateFails(const ModelConfig& config, const std::string& message) {
  absl::StatusOr<std::unique_ptr<Model>> model = CreateModel(config);
  ASSERT_FALSE(model.ok()) << config.name;
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr(message));
}

TEST(ModelConfigTest, CreatesEveryKnownModel) {
  EXPECT_THAT(ModelNames(),
              ElementsAre("linear", "logreg", "mlp", "wide_deep"));
  for (const std::string& name : ModelNames()) {
    std::unique_ptr<Model> model = MustCreate(Config(name));
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(model->name(), name);
    for (const ModelVariable& variable : model->variables()) {
      const OptimizerConfig& optimizer =
          variable.kind == ModelVariable::Kind::kHashEmbedding
              ? variable.hash_spec.optimizer
              : variable.spec.optimizer;
      EXPECT_EQ(optimizer.kind, OptimizerKind::kAdam) << variable.name();
      EXPECT_EQ(optimizer.learning_rate, 0.002f) << variable.name();
    }
  }
}

TEST(ModelConfigTest, ModelsUseTheirFields) {
  std::unique_ptr<Model> mlp = MustCreate(Config("mlp"));
  EXPECT_EQ(mlp->outputs_per_example(), 3);
  EXPECT_EQ(mlp->variables().size(), 6u);
  EXPECT_EQ(mlp->variables()[0].spec.shape, (std::vector<int64_t>{20, 8}));

  std::unique_ptr<Model> wide_deep = MustCreate(Config("wide_deep"));
  EXPECT_EQ(wide_deep->variables()[2].hash_spec.dim, 4);
  EXPECT_EQ(wide_deep->variables()[0].spec.shape,
            (std::vector<int64_t>{20, 1}));

  // The default partitions row-sparse variables into shards of >= 256 KiB:
  // 2^17 rows of 4 bytes make two.
  ModelConfig config = Config("logreg");
  config.num_features = 1 << 17;
  std::unique_ptr<Model> logreg = MustCreate(config);
  const ModelVariable& weights = logreg->variables()[0];
  EXPECT_EQ(weights.kind, ModelVariable::Kind::kRowSparse);
  absl::StatusOr<std::vector<RowRange>> parts =
      PartitionRows(weights.spec, weights.partition);
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(parts->size(), 2u);

  config.partition = PartitionPolicy::FixedShards(5);
  logreg = MustCreate(config);
  EXPECT_EQ(logreg->variables()[0].partition.num_shards, 5);
}

TEST(ModelConfigTest, SpecsAreDeterministic) {
  for (const std::string& name : ModelNames()) {
    std::unique_ptr<Model> a = MustCreate(Config(name));
    std::unique_ptr<Model> b = MustCreate(Config(name));
    ModelConfig other_seed_config = Config(name);
    other_seed_config.seed = 43;
    std::unique_ptr<Model> other_seed = MustCreate(other_seed_config);
    ASSERT_EQ(a->variables().size(), b->variables().size());
    std::set<uint64_t> seeds;
    for (size_t v = 0; v < a->variables().size(); ++v) {
      const ModelVariable& va = a->variables()[v];
      const ModelVariable& vb = b->variables()[v];
      EXPECT_EQ(va.name(), vb.name());
      EXPECT_EQ(va.kind, vb.kind);
      EXPECT_EQ(DescribeSpecDifference(va.spec, vb.spec), "") << va.name();
      EXPECT_EQ(va.hash_spec.dim, vb.hash_spec.dim);
      EXPECT_EQ(Initializer(va).kind, Initializer(vb).kind);
      EXPECT_EQ(Initializer(va).seed, Initializer(vb).seed);
      EXPECT_EQ(Initializer(va).minval, Initializer(vb).minval);
      EXPECT_EQ(Initializer(va).maxval, Initializer(vb).maxval);
      // Every variable its own seed, and another model seed changes them.
      EXPECT_TRUE(seeds.insert(Initializer(va).seed).second) << va.name();
      EXPECT_NE(Initializer(va).seed,
                Initializer(other_seed->variables()[v]).seed);
    }
  }
}

TEST(ModelConfigTest, Initializers) {
  std::unique_ptr<Model> mlp = MustCreate(Config("mlp"));
  // Kernels Glorot-uniform: [20, 8] has limit sqrt(6 / 28).
  const InitializerSpec& kernel = Initializer(mlp->variables()[0]);
  EXPECT_EQ(kernel.kind, InitializerSpec::Kind::kUniform);
  EXPECT_FLOAT_EQ(kernel.maxval, std::sqrt(6.0f / 28));
  EXPECT_FLOAT_EQ(kernel.minval, -std::sqrt(6.0f / 28));
  EXPECT_EQ(Initializer(mlp->variables()[1]).kind,
            InitializerSpec::Kind::kZeros);
  for (const char* name : {"linear", "logreg"}) {
    std::unique_ptr<Model> model = MustCreate(Config(name));
    for (const ModelVariable& variable : model->variables()) {
      EXPECT_EQ(Initializer(variable).kind, InitializerSpec::Kind::kZeros)
          << variable.name();
    }
  }
  std::unique_ptr<Model> wide_deep = MustCreate(Config("wide_deep"));
  const InitializerSpec& embedding = Initializer(wide_deep->variables()[2]);
  EXPECT_EQ(embedding.kind, InitializerSpec::Kind::kUniform);
  EXPECT_EQ(embedding.minval, -0.05f);
  EXPECT_EQ(embedding.maxval, 0.05f);
}

TEST(ModelConfigTest, BadConfigs) {
  ExpectCreateFails(Config("resnet"),
                    "unknown model name \"resnet\"; known: linear, logreg, "
                    "mlp, wide_deep");
  for (const std::string& name : ModelNames()) {
    ModelConfig config = Config(name);
    config.num_features = 0;
    ExpectCreateFails(config, "num_features must be >= 1, got 0");
    config = Config(name);
    config.optimizer.learning_rate = -1;
    ExpectCreateFails(config, "optimizer: ");
  }

  ModelConfig config = Config("mlp");
  config.num_classes = 1;
  ExpectCreateFails(config, "num_classes must be >= 2 for mlp, got 1");
  config = Config("logreg");
  config.num_classes = 1;  // Unused by logreg.
  EXPECT_NE(MustCreate(config), nullptr);

  for (const char* name : {"mlp", "wide_deep"}) {
    config = Config(name);
    config.hidden_units = {4, 0};
    ExpectCreateFails(config, "hidden_units[1] must be >= 1, got 0");
  }
  config = Config("linear");
  config.hidden_units = {0};  // Unused by linear.
  EXPECT_NE(MustCreate(config), nullptr);

  config = Config("wide_deep");
  config.embedding_dim = 0;
  ExpectCreateFails(config, "embedding_dim must be in [1, 2^20], got 0");
  config.embedding_dim = (1 << 20) + 1;
  ExpectCreateFails(config, "embedding_dim must be in [1, 2^20]");

  config = Config("logreg");
  config.partition = PartitionPolicy::FixedShards(0);
  ExpectCreateFails(config, "partition: ");

  config = Config("mlp");
  config.num_features = int64_t{1} << 40;
  ExpectCreateFails(config,
                    "variable \"mlp/dense_0/kernel\": shape [1099511627776, 8] "
                    "has more than 2^40 elements");
}

}  // namespace
}  // namespace distrt
