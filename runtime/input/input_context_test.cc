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

TEST(ShardInputTest, Policies) {
  const std::vector<std::string> files = {"c", "a", "e", "b", "d"};
  absl::StatusOr<InputShard> file =
      ShardInput(files, InputContext{2, 0, 1}, AutoShardPolicy::kFile);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_FALSE(file->by_record);
  EXPECT_THAT(file->files, ElementsAre("a", "c", "e"));
  EXPECT_EQ(DescribeShard(*file),
            "FILE sharding: pipeline 1 of 2 reads 3 of 5 files");

  // DATA even with enough files: every file, every 2nd record.
  absl::StatusOr<InputShard> data =
      ShardInput(files, InputContext{2, 1, 1}, AutoShardPolicy::kData);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_TRUE(data->by_record);
  EXPECT_THAT(data->files, ElementsAre("a", "b", "c", "d", "e"));
  EXPECT_TRUE(data->Keeps(3));
  EXPECT_FALSE(data->Keeps(4));
  EXPECT_EQ(DescribeShard(*data),
            "DATA sharding: pipeline 2 of 2 keeps every 2nd record of 5 files");

  absl::StatusOr<InputShard> off =
      ShardInput(files, InputContext{3, 2, 1}, AutoShardPolicy::kOff);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->by_record);
  EXPECT_EQ(off->files.size(), 5u);
  EXPECT_TRUE(off->Keeps(4));
  EXPECT_EQ(DescribeShard(*off),
            "OFF (no sharding): pipeline 3 of 3 reads all 5 files");

  // AUTO: FILE with enough files, DATA with fewer.
  EXPECT_EQ(ShardInput(files, InputContext{5, 0, 1})->policy,
            AutoShardPolicy::kFile);
  absl::StatusOr<InputShard> few = ShardInput(files, InputContext{6, 3, 1});
  ASSERT_TRUE(few.ok());
  EXPECT_EQ(few->policy, AutoShardPolicy::kData);
  EXPECT_EQ(DescribeShard(*few),
            "DATA sharding: pipeline 4 of 6 keeps every 6th record of 5 files");

  absl::Status too_few =
      ShardInput(files, InputContext{6, 0, 1}, AutoShardPolicy::kFile).status();
  EXPECT_EQ(too_few.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(too_few.message(),
            "FILE sharding needs at least as many files as input pipelines: "
            "5 files, 6 pipelines; use DATA or AUTO sharding");
}

TEST(ShardInputTest, ParsesPolicyNames) {
  EXPECT_EQ(*ParseAutoShardPolicy("auto"), AutoShardPolicy::kAuto);
  EXPECT_EQ(*ParseAutoShardPolicy("FILE"), AutoShardPolicy::kFile);
  EXPECT_EQ(*ParseAutoShardPolicy("Data"), AutoShardPolicy::kData);
  EXPECT_EQ(*ParseAutoShardPolicy("off"), AutoShardPolicy::kOff);
  absl::Status bad = ParseAutoShardPolicy("hint").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(),
            "unknown auto-shard policy \"hint\"; use auto, file, data or off");
  for (AutoShardPolicy policy :
       {AutoShardPolicy::kAuto, AutoShardPolicy::kFile, AutoShardPolicy::kData,
        AutoShardPolicy::kOff}) {
    EXPECT_EQ(*ParseAutoShardPolicy(AutoShardPolicyName(policy)), policy);
  }
}

}  // namespace
}  // namespace distrt
