#include "runtime/input/input_position.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/input/input_context.h"

namespace distrt {
namespace {

InputPosition SomePosition() {
  InputShard shard;
  shard.files = {"a", "b", "c"};
  shard.index = 1;
  shard.count = 2;
  InputPosition p;
  p.source = DescribeInputSource(shard, 2, 3);
  p.epoch = 5;
  p.step_in_epoch = 17;
  p.records_in_epoch = 1234;
  p.next_file = 3;
  p.cycle_index = 1;
  p.block_index = 2;
  p.slots = {{0, {100, 7, 8}}, {-1, {}}};
  p.slots[1].position.offset = int64_t{1} << 40;
  return p;
}

TEST(InputPositionTest, SerializesAndParsesBack) {
  const InputPosition p = SomePosition();
  absl::StatusOr<InputPosition> back = InputPosition::Parse(p.Serialize());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->source == p.source);
  EXPECT_EQ(back->epoch, 5);
  EXPECT_EQ(back->step_in_epoch, 17);
  EXPECT_EQ(back->records_in_epoch, 1234);
  EXPECT_EQ(back->next_file, 3);
  EXPECT_EQ(back->cycle_index, 1);
  EXPECT_EQ(back->block_index, 2);
  ASSERT_EQ(back->slots.size(), 2u);
  EXPECT_EQ(back->slots[0].file, 0);
  EXPECT_EQ(back->slots[0].position.offset, 100);
  EXPECT_EQ(back->slots[0].position.index, 7);
  EXPECT_EQ(back->slots[0].position.line, 8);
  EXPECT_EQ(back->slots[1].file, -1);
  EXPECT_EQ(back->slots[1].position.offset, int64_t{1} << 40);
}

TEST(InputPositionTest, RejectsWhatIsNotAPosition) {
  const std::string bytes = SomePosition().Serialize();
  EXPECT_EQ(InputPosition::Parse("").status().message(),
            "not an input position: bad magic number");
  // Every truncation is an error, never a crash.
  for (size_t n = 0; n < bytes.size(); ++n) {
    absl::Status status = InputPosition::Parse(bytes.substr(0, n)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << n;
  }
  EXPECT_FALSE(InputPosition::Parse(bytes + "x").ok());
  std::string newer = bytes;
  newer[4] = 9;
  EXPECT_EQ(InputPosition::Parse(newer).status().message(),
            "input position version 9 is not one this build reads (1)");
}

TEST(InputPositionTest, SourcesDifferByWhatTheySay) {
  InputShard shard;
  shard.files = {"a", "b"};
  const InputPosition::Source base = DescribeInputSource(shard, 2, 1);
  EXPECT_TRUE(CheckSameSource(base, DescribeInputSource(shard, 2, 1)).ok());

  InputShard renamed = shard;
  renamed.files = {"a", "c"};
  absl::Status status =
      CheckSameSource(base, DescribeInputSource(renamed, 2, 1));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "the input position is of another input: other file names (or "
            "order)");

  InputShard other = shard;
  other.files = {"a"};
  other.index = 1;
  other.count = 3;
  other.by_record = true;
  status = CheckSameSource(base, DescribeInputSource(other, 1, 4));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "the input position is of another input: files 2 in the "
            "position, 1 here; shard index 0 in the position, 1 here; shard "
            "count 1 in the position, 3 here; by_record 0 in the position, 1 "
            "here; cycle_length 2 in the position, 1 here; block_length 1 in "
            "the position, 4 here");
}

}  // namespace
}  // namespace distrt
