#include "runtime/input/input_context.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(InputContextTest, PerReplicaBatchSize) {
  InputContext context{2, 1, 4};
  absl::StatusOr<int64_t> per_replica = context.GetPerReplicaBatchSize(64);
  ASSERT_TRUE(per_replica.ok());
  EXPECT_EQ(*per_replica, 16);
  absl::Status uneven = context.GetPerReplicaBatchSize(10).status();
  EXPECT_EQ(uneven.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(uneven.message(),
            "the global batch size 10 does not divide evenly over 4 replicas; "
            "use a multiple of 4 such as 8 or 12");
  EXPECT_THAT(context.GetPerReplicaBatchSize(3).status().message(),
              HasSubstr("such as 4"));
  EXPECT_FALSE(context.GetPerReplicaBatchSize(0).ok());
  EXPECT_FALSE((InputContext{2, 2, 1}).Validate().ok());
  EXPECT_FALSE((InputContext{2, 0, 0}).Validate().ok());
}

// How many times each (file, record) is read over all pipelines, for files
// of `records` records each.
std::map<std::string, int> ReadsPerRecord(const std::vector<std::string>& files,
                                          int pipelines, int records) {
  std::map<std::string, int> reads;
  for (int p = 0; p < pipelines; ++p) {
    absl::StatusOr<InputShard> shard =
        ShardInput(files, InputContext{pipelines, p, 1});
    EXPECT_TRUE(shard.ok()) << shard.status();
    if (!shard.ok()) continue;
    for (const std::string& file : shard->files) {
      for (int r = 0; r < records; ++r) {
        if (shard->Keeps(r)) ++reads[absl::StrCat(file, "#", r)];
      }
    }
  }
  return reads;
}

TEST(ShardInputTest, EveryRecordIsReadExactlyOnce) {
  for (int num_files : {1, 2, 3, 7}) {
    for (int pipelines : {1, 2, 3, 4}) {
      std::vector<std::string> files;
      for (int f = 0; f < num_files; ++f) files.push_back(absl::StrCat("f", f));
      std::map<std::string, int> reads = ReadsPerRecord(files, pipelines, 10);
      EXPECT_EQ(reads.size(), static_cast<size_t>(num_files * 10))
          << num_files << " files, " << pipelines << " pipelines";
      for (const auto& [record, count] : reads) {
        EXPECT_EQ(count, 1) << record;
      }
    }
  }
}

TEST(ShardInputTest, ByFileWhenThereAreEnoughFiles) {
  absl::StatusOr<InputShard> shard =
      ShardInput({"c", "a", "e", "b", "d"}, InputContext{2, 1, 1});
  ASSERT_TRUE(shard.ok());
  EXPECT_FALSE(shard->by_record);
  EXPECT_THAT(shard->files, ElementsAre("b", "d"));  // sorted, every 2nd

  absl::StatusOr<InputShard> by_record =
      ShardInput({"only"}, InputContext{3, 2, 1});
  ASSERT_TRUE(by_record.ok());
  EXPECT_TRUE(by_record->by_record);
  EXPECT_TRUE(by_record->Keeps(5));
  EXPECT_FALSE(by_record->Keeps(6));
  EXPECT_FALSE(ShardInput({}, InputContext{}).ok());
}

}  // namespace
}  // namespace distrt
