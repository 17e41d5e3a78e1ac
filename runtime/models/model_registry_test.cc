#include "runtime/models/model_registry.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ModelRegistryTest, GlobalHasTheBuiltInsAndMakesThem) {
  std::vector<std::string> names = ModelRegistry::Global().Names();
  for (const std::string& builtin : ModelNames()) {
    EXPECT_THAT(names, ::testing::Contains(builtin));
  }
  ModelConfig config;
  config.name = "mlp";
  config.num_features = 3;
  config.num_classes = 4;
  absl::StatusOr<std::unique_ptr<Model>> model =
      ModelRegistry::Global().Create(config);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->name(), "mlp");
  EXPECT_EQ((*model)->outputs_per_example(), 4);
  // What the built-in's own checks say comes through.
  config.num_classes = 1;
  EXPECT_THAT(ModelRegistry::Global().Create(config).status().message(),
              HasSubstr("num_classes must be >= 2"));
}

// A registry of its own: Global() is shared by the whole process.
TEST(ModelRegistryTest, RegistersOnceAndListsWhatItKnows) {
  ModelRegistry registry;
  int made = 0;
  ModelRegistry::Factory factory =
      [&made](
          const ModelConfig& config) -> absl::StatusOr<std::unique_ptr<Model>> {
    ++made;
    ModelConfig linear = config;
    linear.name = "linear";
    return CreateModel(linear);
  };
  ASSERT_TRUE(registry.Register("mine", factory).ok());
  EXPECT_EQ(registry.Register("mine", factory).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Register("", factory).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register("empty", nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(registry.Register("another", factory).ok());
  EXPECT_THAT(registry.Names(), ElementsAre("another", "mine"));
  EXPECT_EQ(made, 0);

  ModelConfig config;
  config.name = "mine";
  config.num_features = 2;
  ASSERT_TRUE(registry.Create(config).ok());
  EXPECT_EQ(made, 1);
  ASSERT_TRUE(
      registry
          .Register(
              "broken",
              [](const ModelConfig&) -> absl::StatusOr<std::unique_ptr<Model>> {
                return nullptr;
              })
          .ok());
  config.name = "broken";
  EXPECT_EQ(registry.Create(config).status().code(),
            absl::StatusCode::kInternal);
  config.name = "theirs";
  absl::Status unknown = registry.Create(config).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      unknown.message(),
      HasSubstr("unknown model name \"theirs\"; known: another, broken, mine"));
}

}  // namespace
}  // namespace distrt
