#include "runtime/distribute/distributed_dataset.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/local_devices/local_devices.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

std::vector<Example> Examples(int n) {
  std::vector<Example> examples(n);
  for (int i = 0; i < n; ++i) {
    examples[i].label = static_cast<float>(i);
    examples[i].dense = {static_cast<float>(i)};
  }
  return examples;
}

class DistributedDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalDevicesOptions options;
    options.num_cpu_devices = 2;
    options.use_gpus = false;
    devices_ = *CreateLocalDevices(options);
  }
  LocalDevices devices_;
};

TEST_F(DistributedDatasetTest, EachReplicaGetsItsShareOfTheGlobalBatch) {
  std::unique_ptr<Strategy> strategy =
      *MirroredStrategy::Create(devices_.pointers());
  absl::StatusOr<std::unique_ptr<InputPipeline>> dataset =
      DistributeDataset(*strategy, Examples(16), /*global_batch_size=*/8);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  absl::StatusOr<InputStep> step = (*dataset)->Next();
  ASSERT_TRUE(step.ok()) << step.status();
  ASSERT_EQ(step->replicas.size(), 2u);
  EXPECT_EQ(step->replicas[0].labels.size(), 4u);
  EXPECT_EQ(step->replicas[1].labels.size(), 4u);
  // One epoch of 16 examples: two steps, then the end.
  ASSERT_TRUE((*dataset)->Next().ok());
  EXPECT_TRUE(absl::IsOutOfRange((*dataset)->Next().status()));

  absl::Status uneven = DistributeDataset(*strategy, Examples(16), 7).status();
  EXPECT_EQ(uneven.code(), absl::StatusCode::kInvalidArgument);
}

// The function sees the strategy's InputContext: with 3 input workers
// (as parameter-server workers are given), the third pipeline.
TEST_F(DistributedDatasetTest, TheDatasetFunctionGetsTheInputContext) {
  StrategyOptions options;
  options.input_workers.count = 3;
  options.input_workers.index = 2;
  std::unique_ptr<Strategy> strategy =
      *MirroredStrategy::Create(devices_.pointers(), options);
  InputContext seen;
  absl::StatusOr<std::unique_ptr<InputPipeline>> dataset =
      DistributeDatasetsFromFunction(
          *strategy,
          [&](const InputContext& context)
              -> absl::StatusOr<std::vector<Example>> {
            seen = context;
            return Examples(6);
          },
          /*global_batch_size=*/6);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(seen.num_input_pipelines, 3);
  EXPECT_EQ(seen.input_pipeline_id, 2);
  EXPECT_EQ(seen.num_replicas_in_sync, 2);
  EXPECT_EQ((*dataset)->Next()->replicas[1].labels.size(), 3u);

  absl::Status failed =
      DistributeDatasetsFromFunction(
          *strategy,
          [](const InputContext&) -> absl::StatusOr<std::vector<Example>> {
            return absl::NotFoundError("no shard");
          },
          6)
          .status();
  EXPECT_THAT(failed.message(), HasSubstr("no shard"));
}

}  // namespace
}  // namespace distrt
