#include "runtime/checkpoint/checkpoint_dir.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CheckpointDirTest, Names) {
  EXPECT_EQ(CheckpointDirName(1000), "ckpt-000000001000");
  EXPECT_EQ(CheckpointDirName(1234567890123), "ckpt-1234567890123");
  EXPECT_EQ(ParseCheckpointDirName("ckpt-000000001000"), 1000);
  EXPECT_EQ(ParseCheckpointDirName("ckpt-1234567890123"), 1234567890123);
  for (absl::string_view bad :
       {"ckpt-1000", "ckpt-", "ckpt-+00000001000", "ckpt-00000000100x",
        "ckpt-000000001000/..", "../ckpt-000000001000", "checkpoints"}) {
    EXPECT_EQ(ParseCheckpointDirName(bad), std::nullopt) << bad;
  }

  EXPECT_EQ(ShardFileName(1, 2), "shard-00001-of-00002.ckpt");
  std::optional<ShardFileId> id =
      ParseShardFileName("shard-00001-of-00002.ckpt");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->shard_index, 1);
  EXPECT_EQ(id->num_shards, 2);
  EXPECT_EQ(ParseShardFileName(ShardFileName(123456, 200000))->shard_index,
            123456);
  for (absl::string_view bad :
       {"shard-00002-of-00002.ckpt", "shard-1-of-2.ckpt",
        "shard-00001-of-00002.ckpt.tmp-0123456789abcdef",
        "shard-00001-of-00002", "shard--00001-of-00002.ckpt"}) {
    EXPECT_EQ(ParseShardFileName(bad).has_value(), false) << bad;
  }
}

TEST(CheckpointDirTest, IndexRoundTripAndStrictParsing) {
  TestDir dir;
  EXPECT_THAT(*ReadCheckpointIndex(dir.path()), ElementsAre());
  const std::vector<std::string> names = {CheckpointDirName(100),
                                          CheckpointDirName(200)};
  ASSERT_TRUE(WriteCheckpointIndex(dir.path(), names).ok());
  EXPECT_EQ(*ReadCheckpointIndex(dir.path()), names);
  EXPECT_THAT(*ListDirectory(dir.path()), ElementsAre("checkpoints"));

  const std::string path = JoinPath(dir.path(), "checkpoints");
  ASSERT_TRUE(
      WriteFileAtomically(path, {"# comment\n\nckpt-000000000100\n../x\n"})
          .ok());
  absl::StatusOr<std::vector<std::string>> bad =
      ReadCheckpointIndex(dir.path());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(bad.status().message(),
            path +
                " line 4: \"../x\" is not a checkpoint directory name "
                "(ckpt-<12-digit step>)");
}

TEST(CheckpointDirTest, FinalCheckpointMarker) {
  TestDir dir;
  EXPECT_EQ(*ReadFinalCheckpointMarker(dir.path()), std::nullopt);
  ASSERT_TRUE(
      WriteFinalCheckpointMarker(dir.path(), CheckpointDirName(300)).ok());
  EXPECT_EQ(*ReadFinalCheckpointMarker(dir.path()), CheckpointDirName(300));
  EXPECT_EQ(WriteFinalCheckpointMarker(dir.path(), "../x").code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(RemoveFinalCheckpointMarker(dir.path()).ok());
  EXPECT_EQ(*ReadFinalCheckpointMarker(dir.path()), std::nullopt);
  EXPECT_TRUE(RemoveFinalCheckpointMarker(dir.path()).ok());

  const std::string path = JoinPath(dir.path(), "final_checkpoint");
  ASSERT_TRUE(WriteFileAtomically(path, {"garbage\n"}).ok());
  absl::StatusOr<std::optional<std::string>> bad =
      ReadFinalCheckpointMarker(dir.path());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), HasSubstr(path));
}

TEST(CheckpointDirTest, ResolveCheckpointDir) {
  TestDir dir;
  const std::string root = dir.path();
  EXPECT_EQ(ResolveCheckpointDir("").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::string> missing =
      ResolveCheckpointDir(JoinPath(root, "nope"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(
      missing.status().message(),
      "checkpoint directory " + JoinPath(root, "nope") + " does not exist");

  // Saved but never committed.
  const std::string ckpt100 = JoinPath(root, CheckpointDirName(100));
  const std::string ckpt200 = JoinPath(root, CheckpointDirName(200));
  ASSERT_TRUE(CreateDirectories(ckpt100).ok());
  ASSERT_TRUE(CreateDirectories(ckpt200).ok());
  ASSERT_TRUE(
      WriteFileAtomically(JoinPath(ckpt100, ShardFileName(0, 1)), {"x"}).ok());
  ASSERT_TRUE(
      WriteFileAtomically(JoinPath(ckpt200, ShardFileName(0, 1)), {"x"}).ok());
  absl::StatusOr<std::string> none = ResolveCheckpointDir(root);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(),
              HasSubstr(root + " holds no checkpoint: neither shard files"));
  EXPECT_THAT(none.status().message(),
              HasSubstr("its 2 ckpt-* directories were never committed"));

  // A checkpoint directory designates itself; a root its latest commit,
  // not its newest directory.
  EXPECT_EQ(*ResolveCheckpointDir(ckpt200), ckpt200);
  ASSERT_TRUE(WriteCheckpointIndex(root, {CheckpointDirName(100)}).ok());
  EXPECT_EQ(*ResolveCheckpointDir(root), ckpt100);

  ASSERT_TRUE(WriteCheckpointIndex(root, {CheckpointDirName(300)}).ok());
  EXPECT_EQ(ResolveCheckpointDir(root).status().message(),
            "the latest checkpoint listed in " + JoinPath(root, "checkpoints") +
                ", ckpt-000000000300, does not exist");
  ASSERT_TRUE(WriteCheckpointIndex(root, {}).ok());
  EXPECT_EQ(ResolveCheckpointDir(root).status().message(),
            JoinPath(root, "checkpoints") + " lists no committed checkpoint");
}

}  // namespace
}  // namespace distrt
