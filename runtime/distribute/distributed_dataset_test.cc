#include "runtime/distribute/distributed_dataset.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

// Records "id" per fake path; the parser makes label id.
class CountingFormat : public RecordFormat {
 public:
  std::map<std::string, int> sizes;  // records per file

  absl::StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path, const RecordPosition& start) const override {
    auto it = sizes.find(path);
    if (it == sizes.end()) return absl::NotFoundError(path);
    return std::make_unique<Reader>(path, it->second, start.index);
  }
  std::string name() const override { return "counting"; }

 private:
  class Parser : public RecordParser {
   public:
    absl::StatusOr<Example> Parse(absl::string_view record,
                                  const RecordLocation&) const override {
      Example example;
      int id = 0;
      if (!absl::SimpleAtoi(record, &id)) {
        return absl::InvalidArgumentError("not a number");
      }
      example.label = static_cast<float>(id);
      return example;
    }
  };
  class Reader : public RecordReader {
   public:
    Reader(std::string path, int size, int64_t next)
        : path_(std::move(path)), size_(size), next_(next) {}
    absl::StatusOr<bool> Next(std::string* record) override {
      if (next_ >= size_) return false;
      // Ids number the records of f0, f1, ... as if one list (files of
      // 100 at most).
      *record = absl::StrCat(std::stoi(path_.substr(1)) * 100 + next_++);
      return true;
    }
    RecordPosition position() const override { return {next_, next_, 0}; }
    const std::string& path() const override { return path_; }
    std::shared_ptr<const RecordParser> parser() const override {
      return parser_;
    }

   private:
    const std::string path_;
    const int64_t size_;
    int64_t next_;
    std::shared_ptr<const RecordParser> parser_ = std::make_shared<Parser>();
  };
};

// Two input workers stream their shards of the same files; together they
// see every record once, under each policy that divides the input.
TEST_F(DistributedDatasetTest, FilesAreShardedOverInputWorkers) {
  auto format = std::make_shared<CountingFormat>();
  format->sizes = {{"f0", 5}, {"f1", 7}, {"f2", 3}};
  for (AutoShardPolicy policy : {AutoShardPolicy::kAuto, AutoShardPolicy::kFile,
                                 AutoShardPolicy::kData}) {
    std::multiset<float> seen;
    std::vector<std::string> logged;
    for (int worker = 0; worker < 2; ++worker) {
      StrategyOptions strategy_options;
      strategy_options.input_workers.count = 2;
      strategy_options.input_workers.index = worker;
      std::unique_ptr<Strategy> strategy =
          *MirroredStrategy::Create(devices_.pointers(), strategy_options);
      DistributeFilesOptions options;
      options.auto_shard = policy;
      // The sharding lines (each epoch's end is logged too).
      options.pipeline.log = [&](absl::string_view line) {
        if (absl::StrContains(line, "sharding")) logged.emplace_back(line);
      };
      absl::StatusOr<std::unique_ptr<InputPipeline>> dataset =
          DistributeFiles(*strategy, {"f2", "f0", "f1"}, format,
                          /*global_batch_size=*/4, options);
      ASSERT_TRUE(dataset.ok()) << dataset.status();
      while (true) {
        absl::StatusOr<InputStep> step = (*dataset)->Next();
        if (!step.ok()) {
          EXPECT_TRUE(absl::IsOutOfRange(step.status())) << step.status();
          break;
        }
        ASSERT_EQ(step->replicas.size(), 2u);
        for (const Batch& batch : step->replicas) {
          EXPECT_LE(batch.size, 2);
          seen.insert(batch.labels.begin(), batch.labels.end());
        }
      }
    }
    std::multiset<float> expected;
    for (int f = 0; f < 3; ++f) {
      for (int r = 0; r < format->sizes["f" + std::to_string(f)]; ++r) {
        expected.insert(static_cast<float>(f * 100 + r));
      }
    }
    EXPECT_EQ(seen, expected) << AutoShardPolicyName(policy);
    ASSERT_EQ(logged.size(), 2u);
    EXPECT_EQ(logged[0],
              policy == AutoShardPolicy::kData
                  ? "DATA sharding: pipeline 1 of 2 keeps every 2nd record "
                    "of 3 files"
                  : "FILE sharding: pipeline 1 of 2 reads 2 of 3 files");
  }
}

}  // namespace
}  // namespace distrt
